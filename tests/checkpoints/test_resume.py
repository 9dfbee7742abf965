"""Exact resume: a training script stopped after k steps and restarted from its latest checkpoint
produces the same losses, step for step, as the uninterrupted run (optimizer state, global step,
random-number state and the data position are all restored)."""

import os

import numpy as np
import optax
import pytest

import sluice as sl
from sluice import optimizers, train

BATCH = 8


def _cnn(x_data, y_data):
    """A small CNN with dropout: conv 3x3 -> relu -> max-pool -> dense, softmax cross-entropy."""
    x = sl.placeholder(sl.float32, [None, 8, 8, 1], name="x")
    y = sl.placeholder(sl.int32, [None], name="y")
    kernel = sl.Variable(sl.truncated_normal([3, 3, 1, 4], stddev=0.3, seed=1), name="conv/kernel")
    bias = sl.Variable(sl.zeros([4]), name="conv/bias")
    h = sl.nn.max_pool(
        sl.nn.relu(sl.nn.conv2d(x, kernel, [1, 1, 1, 1], "SAME") + bias),
        [1, 2, 2, 1],
        [1, 2, 2, 1],
        "VALID",
    )
    h = sl.nn.dropout(sl.reshape(h, [-1, 4 * 4 * 4]), rate=0.25, seed=2)
    dense = sl.Variable(sl.truncated_normal([64, 3], stddev=0.1, seed=3), name="dense/kernel")
    logits = sl.matmul(h, dense)
    loss = sl.reduce_mean(sl.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    return x, y, loss


def _lstm(x_data, y_data):
    """dynamic_rnn over a BasicLSTMCell, dropout on the last output, a dense regression head."""
    from sluice import cells

    x = sl.placeholder(sl.float32, [None, 5, 3], name="x")
    y = sl.placeholder(sl.float32, [None, 1], name="y")
    outputs, _ = cells.dynamic_rnn(cells.BasicLSTMCell(6), x, dtype=sl.float32)
    last = sl.nn.dropout(outputs[:, -1, :], rate=0.2, seed=5)
    head = sl.Variable(sl.random_normal([6, 1], stddev=0.3, seed=6), name="head/kernel")
    loss = sl.reduce_mean(sl.square(sl.matmul(last, head) - y))
    return x, y, loss


def _data(kind):
    rng = np.random.RandomState(0)
    if kind == "cnn":
        x = rng.normal(size=(40, 8, 8, 1)).astype(np.float32)
        return x, (x.sum(axis=(1, 2, 3)) > 0).astype(np.int32) + (x[:, 0, 0, 0] > 1).astype(
            np.int32
        )
    x = rng.normal(size=(40, 5, 3)).astype(np.float32)
    return x, x.sum(axis=(1, 2))[:, None].astype(np.float32) * 0.1


def training_script(kind, make_optimizer, ckpt_dir, total_steps, stop_after=None, engine="auto"):
    """What a user's script does: build, restore the latest checkpoint if there is one (else
    initialise), train with a checkpoint every step, stop after `stop_after` steps of this run."""
    os.makedirs(ckpt_dir, exist_ok=True)
    g = sl.Graph()
    with g.as_default():
        sl.set_random_seed(1234)
        x_data, y_data = _data(kind)
        x, y, loss = (_cnn if kind == "cnn" else _lstm)(x_data, y_data)
        step = train.get_or_create_global_step()
        # The data position belongs to the script; keeping it in a Variable checkpoints it.
        position = sl.Variable(np.int64(0), trainable=False, name="data_position")
        train_op = make_optimizer().minimize(loss, global_step=step)
        with sl.control_dependencies([train_op]):
            advance = position.assign_add(np.int64(BATCH), read_value=False)
        saver = train.Saver(max_to_keep=2)
        losses = []
        with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
            latest = train.latest_checkpoint(ckpt_dir)
            if latest:
                saver.restore(sess, latest)
            else:
                sess.run(sl.global_variables_initializer())
            while sess.run(step) < total_steps and (stop_after is None or len(losses) < stop_after):
                pos = int(sess.run(position))
                epoch, offset = divmod(pos, len(x_data))
                order = np.random.RandomState(epoch).permutation(len(x_data))
                idx = order[offset : offset + BATCH]
                value, _ = sess.run([loss, advance], {x: x_data[idx], y: y_data[idx]})
                losses.append(value)
                saver.save(sess, f"{ckpt_dir}/model", global_step=step)
    return losses


# The CNN runs on the default engine (compiled); the LSTM on the interpreted one, whose per-op
# kernels the three graphs of the test share (compiling the LSTM's training step three times
# would take most of the test's time). Together they cover both engines.
@pytest.mark.parametrize(
    "kind, make_optimizer, engine",
    [
        ("cnn", lambda: train.AdamOptimizer(0.01), "auto"),
        ("lstm", lambda: train.RMSPropOptimizer(0.01, momentum=0.5), "interpreted"),
    ],
)
def test_stopped_and_resumed_run_matches_uninterrupted(kind, make_optimizer, engine, tmp_path):
    total = 7  # crosses an epoch boundary of the 40 examples (5 batches of 8)

    def run(directory, **kw):
        return training_script(
            kind, make_optimizer, str(tmp_path / directory), total, engine=engine, **kw
        )

    whole = run("whole")
    first = run("parts", stop_after=3)
    rest = run("parts")
    assert len(whole) == total and len(first) == 3 and len(rest) == total - 3
    np.testing.assert_array_equal(np.array(first + rest), np.array(whole))
    assert len(set(np.round(whole, 6))) > 1  # it trained


@pytest.mark.parametrize(
    "make_optimizer",
    [
        lambda: train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
        lambda: train.AdagradOptimizer(0.1),
        lambda: optimizers.AdamW(0.05, global_clipnorm=1.0),
        lambda: optimizers.SGD(optax.exponential_decay(0.1, 2, 0.5)),
    ],
    ids=["momentum", "adagrad", "adamw", "sgd_schedule"],
)
def test_optimizer_state_round_trip(make_optimizer, tmp_path):
    """Save after 2 steps, take 2 more; a fresh session restored from the save takes the same 2."""
    w = sl.Variable(np.array([1.0, -2.0, 3.0], np.float32), name="w")
    loss = sl.reduce_sum(np.array([1.0, 4.0, 0.5], np.float32) * sl.square(w - 0.5))
    opt = make_optimizer()
    train_op = opt.minimize(loss, global_step=train.get_or_create_global_step())
    saver = train.Saver()
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        sess.run([train_op, train_op])
        path = saver.save(sess, str(tmp_path / "model"))
        sess.run(train_op)
        sess.run(train_op)
        expected = sess.run(w)
    with sl.Session() as sess:
        saver.restore(sess, path)
        sess.run(train_op)
        sess.run(train_op)
        np.testing.assert_array_equal(sess.run(w), expected)
