"""Saver: round trip, the h5 layout, the state file, max_to_keep, and every error it names."""

import json
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np
import pytest

import sluice as sl
from sluice import train
from sluice._tf1.checkpoints import checkpoint_state, keeper


def _model():
    w = sl.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="dense/kernel")
    b = sl.Variable(np.array([0.5, -1.5], np.float64), name="dense/bias")
    step = train.get_or_create_global_step()
    return w, b, step


def _saved(tmp_path, steps=(1,), **saver_kw):
    _, _, step = _model()
    saver = train.Saver(**saver_kw)
    paths = []
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        for s in steps:
            sess.run(step.assign(s))
            paths.append(saver.save(sess, str(tmp_path / "model"), global_step=step))
    return saver, paths


def test_round_trip_needs_no_initialisation(tmp_path):
    w, b, step = _model()
    saver = train.Saver()
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        sess.run([w.assign(w * 2.0), step.assign(7)])
        path = saver.save(sess, str(tmp_path / "model"), global_step=step)
        expected = sess.run([w, b, step])
    assert path == str(tmp_path / "model-7.h5")
    assert train.latest_checkpoint(str(tmp_path)) == path
    with sl.Session() as sess:
        saver.restore(sess, path)
        got = sess.run([w, b, step])
    for a, e in zip(got, expected):
        np.testing.assert_array_equal(a, e)
        assert a.dtype == e.dtype


def test_layout_is_readable_with_h5py_alone(tmp_path):
    _, (path,) = _saved(tmp_path, steps=(3,))
    with h5py.File(path, "r") as f:
        assert f.attrs["format"] == b"sluice.checkpoint"
        assert f.attrs["format_version"] == 1 and f.attrs["global_step"] == 3
        assert f.attrs["num_variables"] == 3
        kernel = f["variables/dense/kernel"]
        np.testing.assert_array_equal(kernel[()], np.arange(6, dtype=np.float32).reshape(2, 3))
        assert kernel.attrs["dtype"] == b"float32" and "crc32" in kernel.attrs
        assert f["variables/dense/bias"].dtype == np.float64
        assert f["variables/global_step"][()] == 3
        assert list(f["random_state"]) == ["counts", "op_names"]
    assert train.list_variables(str(tmp_path)) == [
        ("dense/bias", [2]),
        ("dense/kernel", [2, 3]),
        ("global_step", []),
    ]
    np.testing.assert_array_equal(train.load_variable(path, "dense/bias"), [0.5, -1.5])


def test_state_file_lists_relative_paths_and_a_moved_directory_restores(tmp_path):
    os.makedirs(tmp_path / "a")
    _saved(tmp_path / "a", steps=(1, 2))
    with open(tmp_path / "a" / "checkpoint.json") as fh:
        state = json.load(fh)
    assert state["all_model_checkpoint_paths"] == ["model-1.h5", "model-2.h5"]
    assert state["model_checkpoint_path"] == "model-2.h5"
    shutil.move(str(tmp_path / "a"), str(tmp_path / "b"))
    latest = train.latest_checkpoint(str(tmp_path / "b"))
    assert latest == str(tmp_path / "b" / "model-2.h5")
    with sl.Graph().as_default(), sl.Session() as sess:
        _, _, step = _model()
        train.Saver().restore(sess, latest)
        assert sess.run(step) == 2


def test_max_to_keep_also_deletes_checkpoints_of_an_earlier_process(tmp_path):
    _, paths = _saved(tmp_path, steps=(1, 2, 3), max_to_keep=5)
    assert all(os.path.exists(p) for p in paths)
    # a new process (a new graph and Saver) with a smaller max_to_keep
    with sl.Graph().as_default():
        saver, _ = _saved(tmp_path, steps=(4,), max_to_keep=2)
    files = sorted(f for f in os.listdir(tmp_path) if f.endswith(".h5"))
    assert files == ["model-3.h5", "model-4.h5"]
    assert saver.last_checkpoints == [str(tmp_path / "model-3.h5"), str(tmp_path / "model-4.h5")]


def test_unlisted_checkpoints_of_the_prefix_are_adopted(tmp_path):
    """A crash between writing a checkpoint and updating the state file leaves an unlisted
    file; the next Saver adopts it (and applies max_to_keep to it) and removes the temporaries
    of dead processes, but not those of a live one."""
    _, paths = _saved(tmp_path, steps=(1, 2), max_to_keep=3)
    shutil.copy(paths[-1], tmp_path / "model-3.h5")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / f".model-4.h5.tmp-{dead.pid}-0123abcd").write_bytes(b"partial")
    (tmp_path / f".model-6.h5.tmp-{os.getppid()}-0123abcd").write_bytes(b"being written")
    (tmp_path / "other-9.h5").write_bytes(b"not ours")
    with sl.Graph().as_default():
        _saved(tmp_path, steps=(5,), max_to_keep=3)
    assert sorted(os.listdir(tmp_path)) == [
        ".checkpoint.json.lock",
        f".model-6.h5.tmp-{os.getppid()}-0123abcd",
        "checkpoint.json",
        "model-2.h5",
        "model-2.meta",
        "model-3.h5",
        "model-5.h5",
        "model-5.meta",
        "other-9.h5",
    ]


def test_max_to_keep_none_keeps_and_lists_all(tmp_path):
    _, paths = _saved(tmp_path, steps=range(1, 8), max_to_keep=None)
    assert all(os.path.exists(p) for p in paths)
    assert checkpoint_state.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths == paths


def test_keep_checkpoint_every_n_hours_preserves_old_checkpoints(tmp_path, monkeypatch):
    clock = iter(np.arange(0.0, 100.0) * 1800.0)  # a save every half hour
    monkeypatch.setattr(keeper, "_now", lambda: float(next(clock)))
    _saved(tmp_path, steps=range(1, 7), max_to_keep=2, keep_checkpoint_every_n_hours=1.0)
    kept = sorted(f for f in os.listdir(tmp_path) if f.endswith(".h5"))
    with open(tmp_path / "checkpoint.json") as fh:
        state = json.load(fh)
    assert state["all_model_checkpoint_paths"] == ["model-5.h5", "model-6.h5"]
    assert state["preserved_checkpoint_paths"] == ["model-2.h5", "model-4.h5"]
    assert kept == ["model-2.h5", "model-4.h5", "model-5.h5", "model-6.h5"]


def test_random_state_is_restored(tmp_path):
    noise = sl.random_uniform([5], seed=3)
    dropped = sl.nn.dropout(sl.ones([6]), rate=0.5, seed=4)
    saver = train.Saver(allow_empty=True)
    with sl.Session() as sess:
        sess.run([noise, dropped])
        path = saver.save(sess, str(tmp_path / "rng"))
        expected = [sess.run([noise, dropped]) for _ in range(2)]
    with sl.Session() as sess:
        saver.restore(sess, path)
        got = [sess.run([noise, dropped]) for _ in range(2)]
    for (a, b), (c, d) in zip(got, expected):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)


def test_var_list_dict_and_subset_restore(tmp_path):
    _, (path,) = _saved(tmp_path)
    with sl.Graph().as_default():
        renamed = sl.Variable(np.zeros([2], np.float64), name="bias_copy")
        saver = train.Saver({"dense/bias": renamed})  # explicit var_list: a subset restore
        with sl.Session() as sess:
            saver.restore(sess, path)
            np.testing.assert_array_equal(sess.run(renamed), [0.5, -1.5])


_INVALID, _MISSING, _LOSS = (
    sl.errors.InvalidArgumentError,
    sl.errors.NotFoundError,
    sl.errors.DataLossError,
)


@pytest.mark.parametrize(
    "what, make_path, error, message",
    [
        ("directory", lambda d, p: str(d), _INVALID, r"is a directory.*latest_checkpoint"),
        ("missing", lambda d, p: str(d / "nope-3.h5"), _MISSING, r"nope-3\.h5.*does not exist"),
        (
            "text file",
            lambda d, p: _write(d / "notes.h5", b"hello"),
            _INVALID,
            r"notes\.h5.*not an HDF5 file",
        ),
        (
            "foreign h5",
            lambda d, p: _foreign_h5(d / "keras.h5"),
            _INVALID,
            r"keras\.h5.*not a sluice checkpoint",
        ),
        ("truncated", lambda d, p: _truncate(p), _LOSS, r"model-1\.h5.*(corrupt|truncated)"),
        (
            "bit flip",
            lambda d, p: _flip_bit(p, "dense/kernel"),
            _LOSS,
            r"model-1\.h5.*variable 'dense/kernel' fails its checksum",
        ),
    ],
)
def test_bad_files_say_which_and_what_was_expected(tmp_path, what, make_path, error, message):
    saver, (path,) = _saved(tmp_path)
    bad = make_path(tmp_path, path)
    with sl.Session() as sess, pytest.raises(error, match=message):
        saver.restore(sess, bad)
    with pytest.raises(ValueError, match="None"):
        saver.restore(None, None)


def test_restore_into_a_different_graph_names_every_mismatch(tmp_path):
    _, (path,) = _saved(tmp_path)
    with sl.Graph().as_default():
        sl.Variable(np.zeros([3, 2], np.float32), name="dense/kernel")  # transposed
        sl.Variable(np.zeros([2], np.float32), name="dense/bias")  # float32, saved float64
        sl.Variable(np.zeros([4], np.float32), name="dense_1/kernel")  # not in the file
        with sl.Session() as sess, pytest.raises(sl.errors.InvalidArgumentError) as info:
            train.Saver().restore(sess, path)
    text = str(info.value)
    assert "in the graph but not in the checkpoint: ['dense_1/kernel']" in text
    assert "in the checkpoint but not in the graph: ['global_step']" in text
    assert "dense/kernel: shape [2, 3] in the checkpoint, (3, 2) in the graph" in text
    assert "dense/bias: dtype float64 in the checkpoint, float32 in the graph" in text


def test_saver_construction_errors(tmp_path):
    with pytest.raises(ValueError, match="No variables to save"):
        train.Saver()
    sl.Variable(1.0, name="layer")
    with pytest.raises(ValueError, match="'.self' is reserved"):
        train.Saver({"w/.self": sl.global_variables()[0]})
    saver = train.Saver({"a": sl.global_variables()[0]})
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        with pytest.raises(ValueError, match="Parent directory .* doesn't exist"):
            saver.save(sess, str(tmp_path / "missing" / "model"))


def _write(path, data):
    path.write_bytes(data)
    return str(path)


def _foreign_h5(path):
    with h5py.File(path, "w") as f:
        f.create_dataset("dense/kernel", data=np.zeros([2, 3]))
    return str(path)


def _truncate(path):
    size = os.path.getsize(path)
    with open(path, "r+b") as fh:
        fh.truncate(size // 2)
    return path


def _flip_bit(path, name):
    with h5py.File(path, "r") as f:
        offset = f["variables"][name].id.get_offset()
    with open(path, "r+b") as fh:
        fh.seek(offset + 5)
        byte = fh.read(1)[0]
        fh.seek(offset + 5)
        fh.write(bytes([byte ^ 0x10]))
    return path


def test_a_variable_named_like_the_scope_of_others_round_trips(tmp_path):
    # "w" beside "w/ExponentialMovingAverage" and "w/a/b" (TF1's EMA shadows): HDF5 cannot hold
    # a dataset and a group at one path, so "w" is stored at "w/.self"
    w = sl.Variable([1.0, 2.0], name="w")
    shadow = sl.Variable([3.0, 4.0], name="w/ExponentialMovingAverage")
    deep = sl.Variable(5.0, name="w/a/b")
    saver = train.Saver()
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "model"))
        sess.run([w.assign([0.0, 0.0]), shadow.assign([0.0, 0.0]), deep.assign(0.0)])
        saver.restore(sess, path)
        got = sess.run([w, shadow, deep])
    np.testing.assert_array_equal(got[0], [1.0, 2.0])
    np.testing.assert_array_equal(got[1], [3.0, 4.0])
    assert got[2] == 5.0
    assert sorted(name for name, _ in train.list_variables(path)) == [
        "w",
        "w/ExponentialMovingAverage",
        "w/a/b",
    ]
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["variables/w/.self"][()], [1.0, 2.0])
