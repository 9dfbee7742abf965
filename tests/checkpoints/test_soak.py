"""Soak test: a training script saving every step (`soak_script.py`) is killed with SIGKILL at
100 random moments and relaunched each time; it ends with exactly the values of an
uninterrupted run, at most max_to_keep checkpoint files on disk and no temporary file.

Most kills land at a random instant within a step (training or saving) after a random number
of saves; one in ten at a random instant of the start-up (import, restore). After every kill
the directory's latest checkpoint must load and be no older than the one before. Slow: about
five minutes on two cores.
"""

import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from sluice import train
from sluice._tf1.checkpoints import atomic, h5_format

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "soak_script.py")
KILLS, TOTAL_STEPS, MAX_TO_KEEP = 100, 1500, 3


def _launch(directory):
    return subprocess.Popen(
        [sys.executable, SCRIPT, str(directory), str(TOTAL_STEPS), str(MAX_TO_KEEP)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _kill_at_random(proc, rng):
    """SIGKILLs `proc` at a random moment; returns False if it finished first."""
    if rng.random() < 0.1:
        time.sleep(rng.uniform(0.0, 1.5))  # somewhere in the start-up
    else:
        if proc.stdout.readline() != "ready\n":
            return False
        for _ in range(rng.randrange(0, 8)):
            if proc.stdout.readline() != "saved\n":
                return False
        time.sleep(rng.uniform(0.0, 0.05))  # somewhere in the next step
    if proc.poll() is not None:
        return False
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return True


def _step_of_latest(directory):
    latest = train.latest_checkpoint(str(directory))
    if latest is None:
        return -1
    return int(h5_format.read_checkpoint(latest).arrays["global_step"])


def _check_after_a_kill(directory, last_step):
    files = os.listdir(directory)
    # the kept ones, plus at most one complete but unlisted file and two temporaries
    assert len([f for f in files if f.endswith(".h5")]) <= MAX_TO_KEEP + 1, files
    assert len([f for f in files if atomic.is_temporary(f)]) <= 2, files
    step = _step_of_latest(directory)
    assert step >= last_step
    return step


@pytest.mark.slow
def test_a_training_script_killed_100_times_ends_like_an_uninterrupted_one(tmp_path):
    rng = random.Random(2024)
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    whole.mkdir(), killed.mkdir()
    started = time.time()
    kills, last_step, procs = 0, -1, []
    try:
        while kills < KILLS:
            proc = _launch(killed)
            procs.append(proc)
            if _kill_at_random(proc, rng):
                kills += 1
                last_step = _check_after_a_kill(killed, last_step)
            else:
                assert proc.wait() == 0, proc.stderr.read()
                pytest.fail(f"the script finished after {kills} kills; raise TOTAL_STEPS")
            proc.stdout.close()
            proc.stderr.close()
        assert last_step < TOTAL_STEPS - 100
        final = _launch(killed)
        out, err = final.communicate(timeout=600)
        assert final.returncode == 0 and out.endswith("done\n"), err
        kill_phase = time.time() - started
        uninterrupted = _launch(whole)
        out, err = uninterrupted.communicate(timeout=900)
        assert uninterrupted.returncode == 0 and out.endswith("done\n"), err
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    expected = np.load(tmp_path / "final-whole.npz")
    got = np.load(tmp_path / "final-killed.npz")
    assert sorted(got.files) == sorted(expected.files) and len(expected.files) >= 6
    for name in expected.files:
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
    assert int(got["global_step"]) == TOTAL_STEPS
    kept = range(TOTAL_STEPS - MAX_TO_KEEP + 1, TOTAL_STEPS + 1)  # each with its meta graph
    assert sorted(os.listdir(killed)) == sorted(
        [".checkpoint.json.lock", "checkpoint.json"]
        + [f"model-{s}.{suffix}" for s in kept for suffix in ("h5", "meta")]
    )
    print(f"{kills} kills, restored up to step {last_step}; kill phase {kill_phase:.0f} s")
