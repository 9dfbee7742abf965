"""examples/ptb_word_lm_tf1_style.py trains at a tiny size, writes checkpoints with meta graphs
and TensorBoard events; examples/ptb_word_lm_resume.py goes on from those files alone, as the
training script itself would have gone on."""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(REPO, "examples")
TINY = ["--model", "tiny", "--text_fraction", "0.02"]


def _run(script: str, *args: str, jax_cache: str = "") -> subprocess.CompletedProcess:
    """Runs an example in a fresh interpreter, as a user would. With `jax_cache`, the runs share
    JAX's persistent compilation cache there: the resumed graph compiles to the same steps."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    if jax_cache:
        env.update(
            JAX_COMPILATION_CACHE_DIR=jax_cache, JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0"
        )
    done = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, script), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"{script} {args} failed:\n{done.stdout}\n{done.stderr}"
    return done


def _perplexities(output: str) -> dict[int, tuple[float, float]]:
    """{epoch: (train, valid)} from either script's output."""
    train = {
        int(e): float(p) for e, p in re.findall(r"Epoch: (\d+) Train Perplexity: ([\d.]+)", output)
    }
    valid = {
        int(e): float(p) for e, p in re.findall(r"Epoch: (\d+).*Valid Perplexity: ([\d.]+)", output)
    }
    return {e: (train[e], valid[e]) for e in train}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One epoch of training, then one epoch more from the files alone."""
    run_dir = str(tmp_path_factory.mktemp("ptb"))
    cache = str(tmp_path_factory.mktemp("jax_cache"))
    first = _run(
        "ptb_word_lm_tf1_style.py",
        "--save_path",
        run_dir,
        "--max_max_epoch",
        "1",
        *TINY,
        jax_cache=cache,
    )
    files_after_training = sorted(os.listdir(run_dir))
    second = _run("ptb_word_lm_resume.py", "--save_path", run_dir, "--epochs", "1", jax_cache=cache)
    return run_dir, first.stdout, files_after_training, second.stdout


def test_training_writes_checkpoints_meta_graphs_and_a_log(trained):
    run_dir, output, files, _ = trained
    assert _perplexities(output).keys() == {1}
    checkpoints = [f for f in files if re.fullmatch(r"model-\d+\.h5", f)]
    assert checkpoints, files
    for name in checkpoints:  # every checkpoint has its meta graph beside it, as TF1 names it
        assert name[: -len(".h5")] + ".meta" in files
    with open(os.path.join(run_dir, "perplexity.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(float(r["step"])) for r in rows][:1] == [1]


def test_training_writes_tensorboard_scalars(trained):
    from tests.summary.readers import event_files, read_events  # skips without tensorboardX

    run_dir = trained[0]
    events = [e for path in event_files(run_dir) for e in read_events(path)]
    scalars = {(v.tag, e.step): v.simple_value for e in events for v in e.summary.value}
    tags = {tag for tag, _ in scalars}
    assert {"Train/Training_Loss", "Train/Learning_Rate", "Valid/Validation_Loss"} <= tags
    assert any(e.graph_def for e in events)  # the Supervisor writes the graph for TensorBoard


def test_resume_goes_on_from_the_files_alone(trained):
    run_dir, first, _, second = trained
    assert "resumed from" in second and "epoch 1" in second
    assert _perplexities(second).keys() == {2}
    train_1 = _perplexities(first)[1][0]
    train_2 = _perplexities(second)[2][0]
    assert train_2 < train_1  # it trained on, from the trained weights (not from scratch)
    steps = sorted(
        int(re.fullmatch(r"model-(\d+)\.h5", f).group(1))
        for f in os.listdir(run_dir)
        if re.fullmatch(r"model-\d+\.h5", f)
    )
    assert len(steps) >= 2 and steps[-1] > steps[0]
    assert os.path.exists(os.path.join(run_dir, f"model-{steps[-1]}.meta"))


@pytest.mark.slow
def test_resumed_training_equals_uninterrupted_training(tmp_path):
    """Two epochs in one run give the perplexities of one epoch then a resume from files."""
    cache = str(tmp_path / "jax_cache")
    straight = _run(
        "ptb_word_lm_tf1_style.py",
        "--save_path",
        str(tmp_path / "a"),
        "--max_max_epoch",
        "2",
        *TINY,
        jax_cache=cache,
    )
    _run(
        "ptb_word_lm_tf1_style.py",
        "--save_path",
        str(tmp_path / "b"),
        "--max_max_epoch",
        "1",
        *TINY,
        jax_cache=cache,
    )
    resumed = _run(
        "ptb_word_lm_resume.py",
        "--save_path",
        str(tmp_path / "b"),
        "--epochs",
        "1",
        jax_cache=cache,
    )
    assert _perplexities(resumed.stdout)[2] == pytest.approx(
        _perplexities(straight.stdout)[2], rel=1e-5
    )
