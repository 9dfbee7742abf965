"""Hypothesis fuzzing of the checkpoint reader (`h5_fuzz_worker.py`): every load of a mutated
checkpoint returns the exact saved values or raises DataLossError/InvalidArgumentError naming
the file; never another exception, a hang (the child runs under a timeout) or a large
allocation (its address space is limited to 3 GiB, while mutations declare up to 2**40 bytes).
The default run tries 60 mutations (deterministically; 150 took 5 times the CPU, 10 s, as
Hypothesis grows its examples); the slow one thousands."""

import os
import random
import subprocess
import sys

import pytest

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "h5_fuzz_worker.py")


def _fuzz(tmp_path, examples, timeout, *seed):
    try:
        proc = subprocess.run(
            [sys.executable, WORKER, str(tmp_path), str(examples), *map(str, seed)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"the reader hung on a mutated checkpoint (no result in {timeout} s): {err}")
    assert proc.returncode == 0 and "fuzz: ok" in proc.stdout, proc.stdout + proc.stderr


def test_mutated_checkpoints_load_exactly_or_fail_cleanly(tmp_path):
    _fuzz(tmp_path, 60, 120)


@pytest.mark.slow
def test_mutated_checkpoints_many(tmp_path):
    _fuzz(tmp_path, 5000, 1800, random.randrange(2**32))
