"""examples/vgg_tf1_style.py: stopped after a few steps and run again, it restores its latest
checkpoint and continues with the same losses as an uninterrupted run. Plus its helpers."""

from __future__ import annotations

import csv
import functools
import importlib.util
import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.examples.in_process import exit_of_example

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(REPO, "examples")
SCRIPT = os.path.join(EXAMPLES, "vgg_tf1_style.py")
# A narrow VGG11 with small batches: each run starts a process and compiles one training step.
SMALL = ["--config", "vgg11", "--width", "16", "--batch-size", "16", "--save-every", "2"]


def _load(module: str):
    spec = importlib.util.spec_from_file_location(module, os.path.join(EXAMPLES, module + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(*args: str, jax_cache: str = "") -> subprocess.CompletedProcess:
    """Runs the example in a fresh interpreter (as a user would), sluice importable from REPO.
    With `jax_cache`, the runs share JAX's persistent compilation cache there: the later runs
    load the training step the first one compiled (which takes most of a run's time)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    if jax_cache:
        env.update(
            JAX_COMPILATION_CACHE_DIR=jax_cache, JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0"
        )
    command = [sys.executable, SCRIPT, *args]
    return subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def _history(run_dir) -> list[tuple[int, float]]:
    with open(os.path.join(run_dir, "history.csv"), newline="") as f:
        return [(int(row["step"]), float(row["loss"])) for row in csv.DictReader(f)]


def _checkpoint_steps(run_dir) -> list[int]:
    names = [n for n in os.listdir(run_dir) if n.startswith("model-") and n.endswith(".h5")]
    return sorted(int(n[len("model-") : -len(".h5")]) for n in names)


@pytest.mark.slow  # three processes, each compiling VGG: a minute; test_resume.py covers the rest
def test_second_run_resumes_from_the_latest_checkpoint(tmp_path):
    pytest.importorskip("sklearn")
    parts, whole = str(tmp_path / "parts"), str(tmp_path / "whole")
    run = functools.partial(_run, jax_cache=str(tmp_path / "jax_cache"))

    first = run(*SMALL, "--run-dir", parts, "--steps", "3")
    assert first.returncode == 0, first.stderr
    assert "restored" not in first.stdout
    assert [s for s, _ in _history(parts)] == [1, 2, 3]
    assert _checkpoint_steps(parts) == [2, 3]  # every 2 steps, and when the run ends

    second = run(*SMALL, "--run-dir", parts, "--steps", "3")
    assert second.returncode == 0, second.stderr
    assert f"restored {os.path.join(parts, 'model-3.h5')}" in second.stdout
    assert [s for s, _ in _history(parts)] == [1, 2, 3, 4, 5, 6]  # the global step went on
    assert _checkpoint_steps(parts) == [2, 3, 4, 6]
    with open(os.path.join(parts, "checkpoint.json")) as f:
        assert "model-6.h5" in json.dumps(json.load(f))

    # The same six steps in one run: the resumed run took the same batches, dropout masks and
    # Adam moments, so its losses are the uninterrupted run's, bit for bit.
    uninterrupted = run(*SMALL, "--run-dir", whole, "--steps", "6")
    assert uninterrupted.returncode == 0, uninterrupted.stderr
    np.testing.assert_array_equal(
        [loss for _, loss in _history(parts)], [loss for _, loss in _history(whole)]
    )
    for result in (first, second, uninterrupted):
        assert "interpreted" not in result.stderr  # the training step runs compiled
    if importlib.util.find_spec("matplotlib"):
        assert os.path.getsize(os.path.join(parts, "loss_curve.png")) > 0

    # Other model settings do not restore silently into the same directory.
    changed = run(*SMALL[:2], "--width", "8", *SMALL[4:], "--run-dir", parts, "--steps", "1")
    assert changed.returncode != 0
    assert "--width 16 (now 8)" in changed.stderr


def test_missing_scikit_learn_says_what_to_install(tmp_path, monkeypatch):
    args = ["--run-dir", str(tmp_path), "--steps", "1"]
    stop = exit_of_example(SCRIPT, args, monkeypatch, "sklearn")
    # a message as the exit status: Python prints it and exits with 1, no traceback
    assert isinstance(stop.code, str) and "pip install scikit-learn" in stop.code


def test_batches_follow_from_the_step():
    data = _load("_data")
    images, labels = np.arange(10, dtype=np.float32)[:, None], np.arange(10)
    epoch0 = [data.batch_at(images, labels, step, 3)[1] for step in range(3)]
    seen = np.concatenate(epoch0)
    assert len(set(seen)) == 9  # one epoch: 3 full batches of distinct examples, 1 left over
    again = data.batch_at(images, labels, 1, 3)[1]
    np.testing.assert_array_equal(again, epoch0[1])  # a pure function of the step
    assert not np.array_equal(data.batch_indices(10, 3, 3), data.batch_indices(10, 3, 0))
    np.testing.assert_array_equal(
        data.upsample(np.array([[[[1.0], [2.0]]]]), 2)[0, :, :, 0], [[1, 1, 2, 2], [1, 1, 2, 2]]
    )


def test_progress_bar_and_training_log(tmp_path):
    progress = _load("_progress")
    out = io.StringIO()  # not a terminal: one line per bar
    bar = progress.ProgressBar(4, "epoch 1/2", stream=out)
    for done in range(1, 5):
        bar.update(done, loss=1.0 / done)
    bar.close("loss 0.52")
    assert out.getvalue().count("\n") == 1 and out.getvalue().startswith("epoch 1/2 4/4")

    tty = io.StringIO()
    bar = progress.ProgressBar(4, "epoch 2/2", start=2, stream=tty, interactive=True)
    bar.update(3, loss=0.5)
    assert "[" in tty.getvalue() and "3/4" in tty.getvalue() and "ETA" in tty.getvalue()
    bar.close()
    assert tty.getvalue().endswith("\n")

    path = str(tmp_path / "history.csv")
    log = progress.TrainingLog(path, ("loss", "acc"))
    for step in range(1, 5):
        log.append(step, loss=float(step))
    log.append(5, loss=5.0, acc=0.5)
    log = progress.TrainingLog(path, ("loss", "acc"))  # read back, then a resume from step 3
    assert log.column("acc") == ([5], [0.5])
    log.truncate(after_step=3)
    assert progress.TrainingLog(path, ("loss", "acc")).column("loss") == ([1, 2, 3], [1, 2, 3])
    with pytest.raises(ValueError, match="columns"):
        progress.TrainingLog(path, ("loss",))
