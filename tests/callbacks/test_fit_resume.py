"""BackupAndRestore: a fit killed with SIGKILL mid-epoch and run again in a new process resumes
at the last backup's step and reproduces the uninterrupted run: every step's loss and metrics,
the CSV log (one header, each epoch once) and the final weights. Optimizer state, BatchNorm
statistics, dropout draws (also inside the LSTM's loop), shuffling and running metrics must all
be restored for that, with the built-in train step as with one of the model's own ("custom").
The LSTM variant (compiling its step takes a few seconds in each of the
three processes) is marked slow, as are "dense-dp", all of it under DataParallel over 4 devices,
and "dense", whose three processes repeat "custom"'s with Keras's built-in step."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "resume_script.py")


def _run(work_dir, *args):
    return subprocess.run(
        [sys.executable, SCRIPT, str(work_dir), *map(str, args)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def _steps(work_dir):
    with open(work_dir / "steps.jsonl") as fh:
        return [json.loads(line) for line in fh]


@pytest.mark.parametrize(
    "kind",
    [
        # the built-in train step's exact resume is in the default run in-process
        # (tests/data/test_keras_fit.py::test_backup_and_restore_resumes_mid_epoch_past_the_ba...,
        # tests/distribution/test_fit_resume_distributed.py); "custom" is the same dense model
        # killed and resumed in new processes
        pytest.param("dense", marks=pytest.mark.slow),
        "custom",
        pytest.param("dense-dp", marks=pytest.mark.slow),
        pytest.param("lstm", marks=pytest.mark.slow),
    ],
)
def test_killed_fit_resumes_at_the_exact_step(kind, tmp_path):
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    whole.mkdir(), parts.mkdir()
    assert _run(whole, kind).returncode == 0
    killed = _run(
        parts, kind, 7
    )  # in epoch 1 (5 steps per epoch), after its step 2; backups every 2 steps
    assert killed.returncode == -9, killed.stderr
    assert os.path.exists(parts / "backup" / "checkpoint.json")
    resumed = _run(parts, kind)
    assert resumed.returncode == 0, resumed.stderr

    expected, got = _steps(whole), _steps(parts)
    assert len(expected) == 15
    # the killed run did 7 steps; the rerun restarts after the last backup (step 6) and redoes 7
    assert [(s["epoch"], s["batch"]) for s in got[7:9]] == [(1, 1), (1, 2)]
    assert got[:7] == expected[:7]
    assert got[7:] == expected[6:]
    assert len({s["loss"] for s in expected}) == 15  # dropout and shuffling made every step differ
    with open(whole / "log.csv") as a, open(parts / "log.csv") as b:
        whole_csv, parts_csv = a.read(), b.read()
    assert parts_csv == whole_csv and parts_csv.count("epoch") == 1
    np.testing.assert_array_equal(np.load(parts / "weights.npy"), np.load(whole / "weights.npy"))
    assert not os.path.exists(parts / "backup")  # deleted when fit ended normally
