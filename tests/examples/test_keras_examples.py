"""The Keras-style examples (examples/lstm_text.py, lstm_sequence.py, vgg.py) with tiny settings:
stopped by --steps and run again, each continues from its BackupAndRestore backup with the same
losses as an uninterrupted run, and a larger --epochs trains further. Plus their data helpers."""

from __future__ import annotations

import csv
import functools
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.examples.in_process import exit_of_example

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(REPO, "examples")

# Two training steps per epoch (the tiny data divided by the batch size), tiny layers.
TINY = {
    "lstm_text": [
        "--text-fraction",
        "0.01",
        "--seq-length",
        "16",
        "--units",
        "16",
        "--embedding",
        "8",
        "--batch-size",
        "128",
        "--sample-length",
        "20",
    ],
    "lstm_sequence": [
        "--per-class",
        "20",
        "--units",
        "8",
        "--embedding",
        "4",
        "--batch-size",
        "40",
    ],
    "vgg": ["--config", "vgg11", "--width", "16", "--train-images", "64", "--batch-size", "32"],
}


def _run(example: str, *args: str, jax_cache: str = "", python_prelude: str = ""):
    """Runs an example in a fresh interpreter (as a user would), sluice importable from REPO.
    With `jax_cache`, the runs share JAX's persistent compilation cache there, so the later
    runs load the steps the first one compiled."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    if jax_cache:
        env.update(
            JAX_COMPILATION_CACHE_DIR=jax_cache, JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0"
        )
    script = os.path.join(EXAMPLES, example + ".py")
    command = [sys.executable, script, *args]
    if python_prelude:  # run the script after some setup code, as `python script.py` would
        launch = (
            f"{python_prelude}; import runpy, sys; sys.path.insert(0, {EXAMPLES!r}); "
            f"sys.argv = {[script, *args]!r}; runpy.run_path({script!r}, run_name='__main__')"
        )
        command = [sys.executable, "-c", launch]
    result = subprocess.run(
        command, check=False, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    assert "interpreted" not in result.stderr  # the steps run compiled
    return result


def _history(run_dir: str) -> dict[str, list[float]]:
    """CSVLogger's history.csv as {column: values}."""
    with open(os.path.join(run_dir, "history.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    return {key: [float(row[key]) for row in rows] for key in rows[0]}


@pytest.mark.slow
@pytest.mark.parametrize("example", sorted(TINY))
def test_stopped_run_resumes_exactly_and_trains_further(example, tmp_path):
    if example == "vgg":
        pytest.importorskip("sklearn")
    parts, whole = str(tmp_path / "parts"), str(tmp_path / "whole")
    run = functools.partial(_run, example, *TINY[example], jax_cache=str(tmp_path / "jax_cache"))

    first = run("--run-dir", parts, "--epochs", "2", "--steps", "3")  # 1 epoch and 1 step
    assert "stopped after 3 steps" in first.stdout
    assert _history(parts)["epoch"] == [0]
    assert os.path.exists(os.path.join(parts, "backup", "checkpoint.json"))

    second = run("--run-dir", parts, "--epochs", "2")  # restores the backup of epoch 1
    assert "fit restores the backup" in second.stdout
    assert "Epoch 1/2" not in second.stdout and "Epoch 2/2" in second.stdout
    assert _history(parts)["epoch"] == [0, 1]

    # The same two epochs in one run: the resumed run took the same batches, dropout masks and
    # Adam moments, so its losses and metrics are the uninterrupted run's, bit for bit.
    run("--run-dir", whole, "--epochs", "2")
    assert _history(parts) == _history(whole)

    further = run("--run-dir", parts, "--epochs", "3")  # the backup was kept: epoch 3 only
    assert "Epoch 2/3" not in further.stdout and "Epoch 3/3" in further.stdout
    history = _history(parts)
    assert history["epoch"] == [0, 1, 2]
    assert all(np.isfinite(history["loss"]))
    assert os.listdir(os.path.join(parts, "checkpoints"))
    if importlib.util.find_spec("matplotlib"):
        assert os.path.getsize(os.path.join(parts, "loss_curve.png")) > 0
    if example == "lstm_text":
        assert "--- temperature 0.5 ---" in further.stdout

    again = run("--run-dir", parts, "--epochs", "3")
    assert "already trained 3 epochs" in again.stdout
    assert "Epoch" not in again.stdout
    assert _history(parts)["epoch"] == [0, 1, 2]


def test_lstm_sequence_resumes_exactly(tmp_path):
    """The quick version of the test above, for the smallest example."""
    parts, whole = str(tmp_path / "parts"), str(tmp_path / "whole")
    run = functools.partial(
        _run,
        "lstm_sequence",
        *TINY["lstm_sequence"],
        "--epochs",
        "2",
        jax_cache=str(tmp_path / "jax_cache"),
    )
    assert "stopped after 3 steps" in run("--run-dir", parts, "--steps", "3").stdout
    resumed = run("--run-dir", parts).stdout
    assert "fit restores the backup" in resumed
    assert "Epoch 1/2" not in resumed and "Epoch 2/2" in resumed
    assert "held-out names: loss" in resumed
    run("--run-dir", whole)
    assert _history(parts)["epoch"] == [0, 1]
    assert _history(parts) == _history(whole)


@pytest.mark.slow
def test_lstm_sequence_with_a_bidirectional_gru(tmp_path):
    args = [*TINY["lstm_sequence"], "--cell", "gru", "--bidirectional", "--epochs", "1"]
    result = _run("lstm_sequence", *args, "--run-dir", str(tmp_path))
    assert "bidirectional" in result.stdout.lower() and "held-out names: loss" in result.stdout


def test_vgg_without_scikit_learn_says_what_to_install(tmp_path, monkeypatch):
    script = os.path.join(EXAMPLES, "vgg.py")
    stop = exit_of_example(script, ["--run-dir", str(tmp_path)], monkeypatch, "sklearn")
    # a message as the exit status: Python prints it and exits with 1, no traceback
    assert isinstance(stop.code, str) and "pip install scikit-learn" in stop.code


def _load_data_module():
    spec = importlib.util.spec_from_file_location("_data", os.path.join(EXAMPLES, "_data.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_python_docs_and_next_char_windows():
    data = _load_data_module()
    docs = data.load_python_docs()
    assert len(docs.text) > 400_000 and docs.text.isascii()
    assert "assignment statement" in docs.text
    assert docs.vocabulary == "".join(sorted(set(docs.text)))
    ids = docs.encode("for x in y:")
    assert docs.decode(ids) == "for x in y:"
    with pytest.raises(ValueError, match="not in the vocabulary"):
        docs.encode("\u00e9")

    inputs, targets = data.next_char_windows(np.arange(10), 3)  # windows 0-2, 3-5, 6-8
    np.testing.assert_array_equal(inputs, [[0, 1, 2], [3, 4, 5], [6, 7, 8]])
    np.testing.assert_array_equal(targets, [[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    assert data.next_char_windows(np.arange(9), 3)[0].shape == (2, 3)  # 8 has no next id
    with pytest.raises(ValueError, match="no window"):
        data.next_char_windows(np.arange(3), 3)


def test_character_names():
    data = _load_data_module()
    names = data.load_character_names(per_class=10, max_length=32, test_fraction=0.2, seed=1)
    assert names.train_ids.shape == (40, 32) and names.test_ids.shape == (10, 32)
    assert names.class_names == ("letter", "mark", "number", "punctuation", "symbol")
    labels = np.concatenate([names.train_labels, names.test_labels])
    np.testing.assert_array_equal(np.bincount(labels), [10] * 5)  # balanced
    ids = np.concatenate([names.train_ids, names.test_ids])
    assert ids.min() == 0 and ids.max() <= len(names.alphabet)
    for row in ids:  # the padding comes after the name, as the Embedding's mask requires
        length = np.count_nonzero(row)
        assert np.all(row[:length] > 0) and np.all(row[length:] == 0)
    again = data.load_character_names(per_class=10, max_length=32, test_fraction=0.2, seed=1)
    np.testing.assert_array_equal(again.train_ids, names.train_ids)  # seeded
