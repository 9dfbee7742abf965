"""A process killed (SIGKILL) at random moments while it saves checkpoints in a loop never leaves
the latest listed checkpoint unloadable.

The fast test's child (`saver_child.py`) runs exactly the file protocol of `Saver.save` without
importing JAX, so it starts in a fraction of a second and can be killed 20 times; the slow test's
child is a real training script with a Saver (and `test_soak.py` kills one 100 times).
"""

import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import sluice as sl
from sluice import train

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "saver_child.py")


def _graph_of_the_child():
    w = sl.Variable(np.zeros((256, 256), np.float32), name="w")
    b = sl.Variable(np.zeros([64], np.float64), name="b")
    step = train.get_or_create_global_step()
    return w, b, step, train.Saver()


def _spawn_script(script, *args):
    proc = subprocess.Popen([sys.executable, script, *map(str, args)], stdout=subprocess.PIPE)
    assert proc.stdout.readline() == b"ready\n", "the child did not start"
    return proc


def _spawn(code, *args):
    proc = subprocess.Popen(
        [sys.executable, "-c", code, REPO, *map(str, args)], stdout=subprocess.PIPE, cwd=REPO
    )
    assert proc.stdout.readline() == b"ready\n", "the child did not start"
    return proc


def _kill(proc):
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()


def test_sigkill_while_saving_leaves_the_latest_checkpoint_loadable(tmp_path):
    rng = random.Random(0)
    w, b, step, saver = _graph_of_the_child()
    restored = []
    with sl.Session() as sess:
        start = 1
        for _ in range(20):
            _kill_after(_spawn_script(CHILD, tmp_path, start, 0), rng.uniform(0.0, 0.25))
            latest = train.latest_checkpoint(str(tmp_path))
            if latest is None:  # killed before its first save completed
                assert not restored
                continue
            saver.restore(sess, latest)
            s = int(sess.run(step))
            np.testing.assert_array_equal(sess.run(w), np.full((256, 256), s, np.float32))
            np.testing.assert_array_equal(sess.run(b), np.full([64], -s, np.float64))
            assert sess._state.random_counts == {"dropout/random_uniform": s}
            assert not restored or s >= restored[-1]
            restored.append(s)
            start = s + 1
        assert len(restored) >= 15 and restored[-1] > restored[0]
        # A run that finishes cleans up after the killed ones: max_to_keep files, no temporaries.
        proc = subprocess.run(
            [sys.executable, CHILD, str(tmp_path), str(start), "4"], capture_output=True, check=True
        )
        assert proc.stdout == b"ready\n"
        kept = [f"model-{s}.h5" for s in range(start + 1, start + 4)]
        # sorted as strings: "model-100.h5" comes before "model-98.h5"
        assert sorted(os.listdir(tmp_path)) == sorted(
            [".checkpoint.json.lock", "checkpoint.json", *kept]
        )


def _kill_after(proc, seconds):
    time.sleep(seconds)
    _kill(proc)


TRAINING_CHILD = r"""
import os, sys
repo, directory = sys.argv[1], sys.argv[2]
sys.path.insert(0, repo)
import numpy as np
import sluice as sl
import sluice.train as train
w = sl.Variable(np.zeros((256, 256), np.float32), name="w")
b = sl.Variable(np.zeros([64], np.float64), name="b")
step = train.get_or_create_global_step()
loss = sl.reduce_sum(sl.square(w - 1.0)) + sl.to_float(sl.reduce_sum(sl.square(b + 1.0)))
train_op = train.AdamOptimizer(0.01).minimize(loss, global_step=step)
saver = train.Saver(max_to_keep=3)
with sl.Session() as sess:
    latest = train.latest_checkpoint(directory)
    saver.restore(sess, latest) if latest else sess.run(sl.global_variables_initializer())
    sess.run(train_op)
    saver.save(sess, os.path.join(directory, "model"), global_step=step)
    print("ready", flush=True)
    while True:
        sess.run(train_op)
        saver.save(sess, os.path.join(directory, "model"), global_step=step)
"""


@pytest.mark.slow
def test_sigkill_of_a_training_script_with_a_saver(tmp_path):
    rng = random.Random(1)
    w = sl.Variable(np.zeros((256, 256), np.float32), name="w")
    b = sl.Variable(np.zeros([64], np.float64), name="b")
    step = train.get_or_create_global_step()
    loss = sl.reduce_sum(sl.square(w - 1.0)) + sl.to_float(sl.reduce_sum(sl.square(b + 1.0)))
    train.AdamOptimizer(0.01).minimize(loss, global_step=step)
    saver = train.Saver()
    last = 0
    with sl.Session() as sess:
        for _ in range(10):
            _kill_after(_spawn(TRAINING_CHILD, tmp_path), rng.uniform(0.0, 1.0))
            saver.restore(sess, train.latest_checkpoint(str(tmp_path)))
            s = int(sess.run(step))
            assert s > last
            last = s
