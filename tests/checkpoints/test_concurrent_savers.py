"""Two processes saving into one directory (two runs pointed at the same folder, or a relaunch
while the old job still lives) never crash each other and never lose a finished checkpoint:
every checkpoint on disk is listed, every listed one loads, max_to_keep holds over both, and no
temporary file is left behind.

The fast test's children (`saver_child.py`) run the file protocol of `Saver.save` without JAX;
the slow one runs two real training scripts with a `Saver`.
"""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from sluice import train
from sluice._tf1.checkpoints import atomic, dir_lock, h5_format

from .saver_child import expected_arrays

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = os.path.join(HERE, "saver_child.py")

SAVES, MAX_TO_KEEP, SIZE = 50, 3, 4


def _run_together(commands, env=None, timeout=120):
    """Starts the commands, lets them all begin saving at once, waits; returns their stderr."""
    pipes = dict(stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    procs = [subprocess.Popen(c, env=env, **pipes) for c in commands]
    try:
        for proc in procs:
            assert proc.stdout.readline() == b"ready\n", proc.stderr.read().decode()
        for proc in procs:
            proc.stdin.write(b"go\n")
            proc.stdin.flush()
        results = [proc.communicate(timeout=timeout) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for proc, (_, err) in zip(procs, results):
        assert proc.returncode == 0, err.decode()
    return [err.decode() for _, err in results]


def _check_directory(directory, starts):
    """Every listed checkpoint loads with the values its step was saved with; the files on disk
    are exactly the listed ones (at most max_to_keep), plus the state and lock files."""
    state = train.get_checkpoint_state(str(directory))
    listed = state.all_model_checkpoint_paths
    assert 1 <= len(listed) <= MAX_TO_KEEP
    assert state.model_checkpoint_path == listed[-1]
    for path in listed:
        step = int(re.search(r"-(\d+)\.h5$", path).group(1))
        assert any(s <= step < s + SAVES for s in starts)
        checkpoint = h5_format.read_checkpoint(path)
        for name, value in expected_arrays(step, SIZE).items():
            np.testing.assert_array_equal(checkpoint.arrays[name], value)
        assert checkpoint.random_counts == {"dropout/random_uniform": step}
    files = sorted(os.listdir(directory))
    assert not [f for f in files if atomic.is_temporary(f)]
    own = ["checkpoint.json", dir_lock.lock_filename("checkpoint.json")]
    assert files == sorted([os.path.basename(p) for p in listed] + own)


def test_two_processes_saving_50_times_each_into_one_directory(tmp_path):
    starts = (1000, 2000)
    command = [sys.executable, CHILD, str(tmp_path)]
    arguments = [str(SAVES), str(MAX_TO_KEEP), str(SIZE), "1"]
    _run_together([command + [str(s)] + arguments for s in starts])
    _check_directory(tmp_path, starts)


def test_a_relaunch_beside_a_live_job_leaves_its_temporary_files_alone(tmp_path):
    """A new saver's first save removes the temporary files of dead processes only."""
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        live_tmp = tmp_path / f".model-7.h5.tmp-{live.pid}-0123456789abcdef"
        dead_tmp = tmp_path / f".model-7.h5.tmp-{dead.pid}-0123456789abcdef"
        dead_state_tmp = tmp_path / f".checkpoint.json.tmp-{dead.pid}-0123456789abcdef"
        for path in (live_tmp, dead_tmp, dead_state_tmp):
            path.write_bytes(b"partial")
        command = [sys.executable, CHILD, str(tmp_path), "1", "2", str(MAX_TO_KEEP), str(SIZE)]
        subprocess.run(command, check=True, capture_output=True)
        assert live_tmp.exists()
        assert not dead_tmp.exists() and not dead_state_tmp.exists()
    finally:
        live.kill()
        live.wait()


TRAINING_CHILD = r"""
import os, sys
directory, start = sys.argv[1], int(sys.argv[2])
import numpy as np
import sluice as sl
from sluice import train
w = sl.Variable(np.zeros(4, np.float32), name="w")
step = train.get_or_create_global_step()
saver = train.Saver(max_to_keep=3)
with sl.Session() as sess:
    sess.run(sl.global_variables_initializer())
    print("ready", flush=True)
    sys.stdin.readline()
    for s in range(start, start + 50):
        sess.run([w.assign(np.full(4, s, np.float32)), step.assign(s)])
        saver.save(sess, os.path.join(directory, "model"), global_step=step)
"""


@pytest.mark.slow
def test_two_training_scripts_with_a_saver_in_one_directory(tmp_path):
    repo = os.path.dirname(os.path.dirname(HERE))
    env = dict(os.environ, PYTHONPATH=repo + os.pathsep + os.environ.get("PYTHONPATH", ""))
    commands = [[sys.executable, "-c", TRAINING_CHILD, str(tmp_path), str(s)] for s in (1000, 2000)]
    _run_together(commands, env=env)
    listed = train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths
    assert len(listed) == 3
    for path in listed:
        step = int(re.search(r"-(\d+)\.h5$", path).group(1))
        np.testing.assert_array_equal(train.load_variable(path, "w"), np.full(4, step))
    assert sorted(f for f in os.listdir(tmp_path) if f.endswith(".h5")) == sorted(
        os.path.basename(p) for p in listed
    )
