"""The training script of the soak test (`test_soak.py`), run in a subprocess:

    python soak_script.py DIRECTORY TOTAL_STEPS MAX_TO_KEEP

A small model (dense layer, dropout, Adam) trained on data drawn from the step number, with a
`Saver` checkpoint after every step into DIRECTORY. It restores the latest checkpoint if there
is one, prints "ready", trains up to TOTAL_STEPS (printing "saved" after each save) and then
writes every variable's final value to DIRECTORY/../final-<name of DIRECTORY>.npz and prints
"done". Killed and relaunched any number of times, it must end with the values of an
uninterrupted run.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import numpy as np  # noqa: E402

import sluice as sl  # noqa: E402
from sluice import train  # noqa: E402


def batch(step: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.RandomState(step)
    x = rng.normal(size=(8, 6)).astype(np.float32)
    return x, (x @ np.arange(6, dtype=np.float32)[:, None] * 0.1).astype(np.float32)


def main(directory: str, total: int, max_to_keep: int) -> None:
    sl.set_random_seed(7)
    x = sl.placeholder(sl.float32, [None, 6], name="x")
    y = sl.placeholder(sl.float32, [None, 1], name="y")
    kernel = sl.Variable(sl.random_normal([6, 1], stddev=0.3, seed=1), name="dense/kernel")
    bias = sl.Variable(sl.zeros([1]), name="dense/bias")
    hidden = sl.nn.dropout(x, rate=0.2, seed=2)
    loss = sl.reduce_mean(sl.square(sl.matmul(hidden, kernel) + bias - y))
    step = train.get_or_create_global_step()
    train_op = train.AdamOptimizer(0.01).minimize(loss, global_step=step)
    saver = train.Saver(max_to_keep=max_to_keep)
    with sl.Session(config=sl.SessionConfig(engine="interpreted")) as sess:
        latest = train.latest_checkpoint(directory)
        if latest:
            saver.restore(sess, latest)
        else:
            sess.run(sl.global_variables_initializer())
        print("ready", flush=True)
        while (current := int(sess.run(step))) < total:
            xs, ys = batch(current)
            sess.run(train_op, {x: xs, y: ys})
            saver.save(sess, os.path.join(directory, "model"), global_step=step)
            print("saved", flush=True)
        values = {v.op.name.replace("/", "."): sess.run(v) for v in sl.global_variables()}
    parent, name = os.path.split(os.path.abspath(directory))
    np.savez(os.path.join(parent, f"final-{name}.npz"), **values)
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
