"""`sl.flags`, `sl.app` and `sl.logging`: TF1's `tf.flags` (absl's parsing rules), `tf.app.run`
and `tf.logging` (levels, TF1's output format, the every-n / first-n helpers)."""

import logging as py_logging
import sys

import pytest

import sluice as sl
from sluice._tf1 import flags
from sluice._tf1 import logging as tf1_logging

# -- flags ---------------------------------------------------------------------------------------


@pytest.fixture
def fv():
    """A FlagValues of its own, with one flag of every kind."""
    values = flags.FlagValues()
    flags.DEFINE_string("name", "ptb", "data set", flag_values=values)
    flags.DEFINE_integer("batch_size", 20, "examples per step", lower_bound=1, flag_values=values)
    flags.DEFINE_float("lr", 1.0, "learning rate", flag_values=values)
    flags.DEFINE_boolean("use_fp16", False, "half floats", flag_values=values)
    flags.DEFINE_bool("shuffle", True, "shuffle", flag_values=values)
    flags.DEFINE_list("layers", "a,b", "layer names", flag_values=values)
    flags.DEFINE_enum("model", "small", ["small", "medium", "large"], "size", flag_values=values)
    flags.DEFINE_multi_string("tag", [], "tags", flag_values=values)
    return values


def test_defaults_before_any_flag_and_the_unparsed_access_error(fv):
    with pytest.raises(flags.UnparsedFlagAccessError, match="--lr before flags were parsed"):
        fv.lr
    assert fv(["prog"]) == ["prog"]
    assert (
        fv.name,
        fv.batch_size,
        fv.lr,
        fv.use_fp16,
        fv.shuffle,
        fv.layers,
        fv.model,
        fv.tag,
    ) == ("ptb", 20, 1.0, False, True, ["a", "b"], "small", [])
    assert fv["batch_size"].using_default_value and fv.is_parsed()


def test_flag_spellings_and_the_arguments_left_over(fv):
    rest = fv(
        [
            "prog",
            "--name=wiki",
            "input.txt",
            "--batch_size",
            "64",
            "-lr=0.5",
            "--use_fp16",
            "--noshuffle",
            "--layers=x, y,z",
            "--model",
            "large",
            "--tag=a",
            "--tag",
            "b",
            "--",
            "--name=ignored",
        ]
    )
    assert rest == ["prog", "input.txt", "--name=ignored"]
    assert (
        fv.name,
        fv.batch_size,
        fv.lr,
        fv.use_fp16,
        fv.shuffle,
        fv.layers,
        fv.model,
        fv.tag,
    ) == ("wiki", 64, 0.5, True, False, ["x", "y", "z"], "large", ["a", "b"])
    assert isinstance(fv.batch_size, int) and isinstance(fv.lr, float)
    fv(["prog", "--use_fp16=false", "--shuffle=1", "--batch_size=0x10"])
    assert (fv.use_fp16, fv.shuffle, fv.batch_size) == (False, True, 16)


def test_bad_values_and_unknown_flags_raise_absls_errors(fv):
    with pytest.raises(flags.IllegalFlagValueError, match="flag --batch_size=abc"):
        fv(["prog", "--batch_size=abc"])
    with pytest.raises(
        flags.IllegalFlagValueError, match="flag --batch_size=abc: invalid literal for int"
    ):
        fv(["prog", "--batch_size=abc"])
    # absl's syntactic help names the common bounds: lower_bound=1 is "a positive integer"
    with pytest.raises(flags.IllegalFlagValueError, match="0 is not a positive integer"):
        fv(["prog", "--batch_size=0"])
    with pytest.raises(flags.IllegalFlagValueError, match="could not convert string to float"):
        fv(["prog", "--lr=fast"])
    bounded = flags.FlagValues()
    flags.DEFINE_integer("depth", 3, "", lower_bound=2, upper_bound=8, flag_values=bounded)
    flags.DEFINE_integer("seed", 3, "", lower_bound=0, flag_values=bounded)
    flags.DEFINE_float("rate", 0.5, "", lower_bound=0.1, flag_values=bounded)
    for argv, words in (
        (["--depth=9"], "9 is not an integer in the range \\[2, 8\\]"),
        (["--seed=-1"], "-1 is not a non-negative integer"),
        (["--rate=0"], "0.0 is not number >= 0.1"),
    ):
        with pytest.raises(flags.IllegalFlagValueError, match=words):
            bounded(["prog", *argv])
    assert bounded(["prog", "--seed=0o17", "--depth=0x8"]) and (bounded.seed, bounded.depth) == (
        15,
        8,
    )
    with pytest.raises(flags.IllegalFlagValueError, match="one of <small|medium|large>"):
        fv(["prog", "--model=huge"])
    with pytest.raises(flags.IllegalFlagValueError, match="Non-boolean"):
        fv(["prog", "--use_fp16=maybe"])
    with pytest.raises(flags.IllegalFlagValueError, match="does not take an argument"):
        fv(["prog", "--nouse_fp16=true"])
    with pytest.raises(flags.Error, match="Missing value for flag --lr"):
        fv(["prog", "--lr"])
    with pytest.raises(flags.UnrecognizedFlagError, match="'batch_sise'. Did you mean: batch_size"):
        fv(["prog", "--batch_sise=3"])
    assert fv(["prog", "--unknown=3", "x"], known_only=True) == ["prog", "--unknown=3", "x"]
    with pytest.raises(TypeError, match="bare string"):
        fv("prog --lr=1")


def test_set_delete_redefine_alias_and_required(fv):
    fv(["prog"])
    fv.lr = 0.25
    assert fv.lr == 0.25 and not fv["lr"].using_default_value
    with pytest.raises(flags.UnrecognizedFlagError):
        fv.nope = 1
    with pytest.raises(AttributeError):
        fv.nope
    with pytest.raises(flags.DuplicateFlagError, match="'lr' is defined twice"):
        flags.DEFINE_float("lr", 2.0, "again", flag_values=fv)
    del fv.lr
    assert "lr" not in fv
    flags.DEFINE_float("lr", 2.0, "again", flag_values=fv)
    flags.DEFINE_alias("learning_rate", "lr", flag_values=fv)
    flags.DEFINE_string("data_path", None, "where the data is", flag_values=fv)
    flags.mark_flag_as_required("data_path", flag_values=fv)
    with pytest.raises(flags.IllegalFlagValueError, match="--data_path must have a value"):
        fv(["prog", "--learning_rate=3"])
    fv(["prog", "--learning_rate=3", "--data_path=/tmp"])
    assert (fv.lr, fv.learning_rate, fv.data_path) == (3.0, 3.0, "/tmp")
    assert fv.flag_values_dict()["lr"] == 3.0


def test_the_global_flags_parse_sys_argv_when_first_read_as_tf1s(monkeypatch):
    flags.DEFINE_integer("test_global_steps", 3, "steps")
    try:
        monkeypatch.setattr(sys, "argv", ["prog", "--test_global_steps=9", "--other=1"])
        flags.FLAGS.unparse_flags()
        assert flags.FLAGS.test_global_steps == 9  # parsed now, unknown flags tolerated
        assert sl.flags is sl.app.flags and sl.flags.FLAGS is flags.FLAGS
    finally:
        del flags.FLAGS.test_global_steps
        flags.FLAGS.unparse_flags()


def test_help_lists_flags_with_defaults(fv):
    text = fv.get_help()
    assert "--batch_size: examples per step\n    (default: '20')\n    (an integer)" in text
    assert "--[no]use_fp16: half floats\n    (default: 'false')" in text


# -- app -----------------------------------------------------------------------------------------
def test_app_run_parses_flags_and_exits_with_mains_status(fv, capsys):
    seen = []

    def main(argv):
        seen.append((argv, fv.batch_size))
        return 3

    with pytest.raises(SystemExit) as exit_info:
        sl.app.run(main, ["prog", "--batch_size=7", "pos", "--undefined=1"], flag_values=fv)
    assert exit_info.value.code == 3
    assert seen == [(["prog", "pos", "--undefined=1"], 7)]  # TF1 hands unknown flags to main

    with pytest.raises(SystemExit) as exit_info:
        sl.app.run(main, ["prog", "--batch_size=x"], flag_values=fv)
    assert exit_info.value.code == 1
    assert "FATAL Flags parsing error: flag --batch_size=x" in capsys.readouterr().err

    with pytest.raises(SystemExit) as exit_info:
        sl.app.run(main, ["prog", "--helpfull"], flag_values=fv)
    assert exit_info.value.code == 1 and len(seen) == 1
    out = capsys.readouterr().out
    assert "flags:" in out and "--batch_size: examples per step" in out


# -- logging -------------------------------------------------------------------------------------
def test_levels_are_tf1s_and_verbosity_sets_the_sluice_logger():
    assert (
        sl.logging.DEBUG,
        sl.logging.INFO,
        sl.logging.WARN,
        sl.logging.WARNING,
        sl.logging.ERROR,
        sl.logging.FATAL,
    ) == (10, 20, 30, 30, 40, 50)
    logger = py_logging.getLogger("sluice")
    old = logger.level
    try:
        sl.logging.set_verbosity(sl.logging.ERROR)
        assert sl.logging.get_verbosity() == 40 and logger.level == 40
    finally:
        logger.setLevel(old)


def test_messages_reach_the_sluice_logger_from_the_callers_line(caplog):
    caplog.set_level(sl.logging.DEBUG, logger="sluice")
    sl.logging.info("step %d", 5)
    sl.logging.warn("careful")
    sl.logging.fatal("bad")
    sl.logging.log_if(sl.logging.ERROR, "shown %s", True, "yes")
    sl.logging.log_if(sl.logging.ERROR, "hidden", False)
    sl.logging.vlog(sl.logging.DEBUG, "v")
    got = [(r.name, r.levelname, r.getMessage()) for r in caplog.records]
    assert got == [
        ("sluice", "INFO", "step 5"),
        ("sluice", "WARNING", "careful"),
        ("sluice", "CRITICAL", "bad"),
        ("sluice", "ERROR", "shown yes"),
        ("sluice", "DEBUG", "v"),
    ]
    assert {r.filename for r in caplog.records} == {"test_app_flags_logging.py"}


def test_log_every_n_and_log_first_n_count_calls_per_line(caplog):
    caplog.set_level(sl.logging.INFO, logger="sluice")
    for i in range(7):
        sl.logging.log_every_n(sl.logging.INFO, "every %d", 3, i)
        sl.logging.log_first_n(sl.logging.INFO, "first %d", 2, i)
    assert [r.getMessage() for r in caplog.records] == [
        "every 0",
        "first 0",
        "first 1",
        "every 3",
        "every 6",
    ]


def test_first_use_prints_tf1s_format_to_stderr_when_logging_is_unconfigured(monkeypatch, capsys):
    monkeypatch.setattr(py_logging.getLogger(), "handlers", [])
    monkeypatch.setattr(tf1_logging, "_configured", False)
    logger = py_logging.getLogger("sluice")
    before = list(logger.handlers)
    try:
        sl.logging.warning("loss is %.1f", 2.5)
        sl.logging.info("not shown at the default verbosity")
        assert sl.logging.get_verbosity() == sl.logging.WARN
    finally:
        for handler in logger.handlers[len(before) :]:
            logger.removeHandler(handler)
    captured = capsys.readouterr()
    assert captured.err == "WARNING:sluice:loss is 2.5\n" and captured.out == ""
