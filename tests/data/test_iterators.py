"""Iterators: get_next tensors fed by the session (one element per run, OutOfRangeError at the
end), initializable and reinitializable iterators, the prefetch thread, compiled steps."""

import threading
import time

import numpy as np
import pytest

import sluice as sl

ENGINES = ["compiled", "interpreted"]


def session(engine="compiled"):
    return sl.Session(config=sl.SessionConfig(engine=engine))


@pytest.mark.parametrize("engine", ENGINES)
def test_one_element_per_run_then_out_of_range(engine):
    ds = sl.data.Dataset.from_tensor_slices((np.arange(3), np.arange(3) * 10))
    a, b = ds.make_one_shot_iterator().get_next()
    with session(engine) as sess:
        assert [tuple(int(v) for v in sess.run([a, b, a + b])) for _ in range(3)] == [
            (0, 0, 0),
            (1, 10, 11),
            (2, 20, 22),
        ]
        for _ in range(2):  # stays at the end, as TF1's does
            with pytest.raises(sl.errors.OutOfRangeError, match="End of sequence"):
                sess.run(a)


def test_tf1_end_of_input_loop_and_compat_alias():
    nxt = sl.compat.v1.data.make_one_shot_iterator(sl.data.Dataset.range(4)).get_next()
    seen = []
    with session() as sess:
        while True:
            try:
                seen.append(int(sess.run(nxt)))
            except sl.errors.OutOfRangeError:
                break
    assert seen == [0, 1, 2, 3]


@pytest.mark.parametrize("engine", ENGINES)
def test_initializable_iterator_is_fed_at_initializer_time_and_restarts(engine):
    x = sl.placeholder(sl.float32, [None, 2])
    it = sl.data.Dataset.from_tensor_slices(x).batch(2).make_initializable_iterator()
    batch = it.get_next()
    assert batch.shape.as_list() == [None, 2]
    with session(engine) as sess:
        with pytest.raises(sl.errors.FailedPreconditionError, match="not been initialized"):
            sess.run(batch)
        first = np.arange(6, dtype=np.float32).reshape(3, 2)
        sess.run(it.initializer, {x: first})
        np.testing.assert_allclose(sess.run(batch), first[:2], rtol=1e-6)
        second = -np.ones((1, 2), np.float32)
        sess.run(it.initializer, {x: second})  # restarts on the new feed
        np.testing.assert_allclose(sess.run(batch), second, rtol=1e-6)
        with pytest.raises(sl.errors.OutOfRangeError):
            sess.run(batch)


def test_reinitializable_iterator_switches_datasets():
    train = sl.data.Dataset.range(10).batch(4)
    val = sl.data.Dataset.range(100, 103).batch(4)
    it = sl.data.Iterator.from_structure(train.output_types, train.output_shapes)
    nxt = it.get_next()
    train_init, val_init = it.make_initializer(train), it.make_initializer(val)
    with session() as sess:
        sess.run(train_init)
        assert sess.run(nxt).tolist() == [0, 1, 2, 3]
        sess.run(val_init)
        assert sess.run(nxt).tolist() == [100, 101, 102]
        sess.run(train_init)
        assert sess.run(nxt).tolist() == [0, 1, 2, 3]
    with pytest.raises(TypeError, match="output types"):
        it.make_initializer(sl.data.Dataset.from_tensor_slices(np.zeros(3, np.float32)))


def test_each_session_keeps_its_own_position():
    nxt = sl.data.Dataset.range(5).make_one_shot_iterator().get_next()
    with session() as a, session() as b:
        assert [int(a.run(nxt)), int(a.run(nxt)), int(b.run(nxt)), int(a.run(nxt))] == [0, 1, 0, 2]


def test_training_loop_over_get_next_compiles_once_and_matches_numpy():
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(12, 3)).astype(np.float32)
    ys = (xs @ np.array([1.0, -2.0, 0.5], np.float32)).reshape(-1, 1)
    x, y = sl.data.Dataset.from_tensor_slices((xs, ys)).batch(4).make_one_shot_iterator().get_next()
    w = sl.Variable(np.zeros((3, 1), np.float32))
    loss = sl.reduce_mean(sl.square(sl.matmul(x, w) - y))
    train = sl.train.GradientDescentOptimizer(0.1).minimize(loss)
    w_np = np.zeros((3, 1), np.float32)
    with session() as sess:
        sess.run(sl.global_variables_initializer())
        steps, compiles = 0, []
        while True:
            meta = sl.RunMetadata()
            try:
                sess.run(train, run_metadata=meta)
            except sl.errors.OutOfRangeError:
                break
            assert meta.engine == "compiled"
            compiles.append(meta.compiles)
            xb, yb = xs[4 * steps : 4 * steps + 4], ys[4 * steps : 4 * steps + 4]
            w_np -= 0.1 * 2 * xb.T @ (xb @ w_np - yb) / len(xb)
            steps += 1
        assert steps == 3 and compiles[1:] == [0, 0]  # later steps reuse the compiled one
        np.testing.assert_allclose(sess.run(w), w_np, rtol=1e-5, atol=1e-6)


def test_prefetch_makes_elements_ahead_of_the_steps():
    made = []

    def gen():
        for i in range(20):
            made.append(i)
            yield i

    ahead = sl.data.Dataset.from_generator(gen, sl.int64, []).prefetch(5)
    nxt = ahead.make_one_shot_iterator().get_next()
    with session() as sess:
        assert sess.run(nxt) == 0
        deadline = time.time() + 5
        while len(made) < 6 and time.time() < deadline:
            time.sleep(0.01)
        assert len(made) >= 6  # made while nothing asked for them
        assert [int(sess.run(nxt)) for _ in range(4)] == [1, 2, 3, 4]


def test_the_producer_thread_stops_on_reinitialisation_and_close():
    stopped = []

    def gen():
        try:
            for i in range(10**6):
                yield i
        finally:
            stopped.append(threading.current_thread().name)

    x = sl.placeholder(sl.int64, [])
    ds = sl.data.Dataset.from_generator(gen, sl.int64, []).take(x)
    it = ds.make_initializable_iterator()
    nxt = it.get_next()
    sess = session()
    sess.run(it.initializer, {x: -1})
    assert sess.run(nxt) == 0
    sess.run(it.initializer, {x: -1})
    deadline = time.time() + 5
    while len(stopped) < 1 and time.time() < deadline:
        time.sleep(0.01)
    assert len(stopped) == 1
    assert sess.run(nxt) == 0
    sess.close()
    while len(stopped) < 2 and time.time() < deadline:
        time.sleep(0.01)
    assert len(stopped) == 2


def test_errors_of_the_pipeline_surface_in_run():
    def fails(v):
        out = sl.py_func(lambda a: np.int64(10 // (int(a) - 2)), [v], sl.int64)
        out.set_shape([])
        return out

    nxt = sl.data.Dataset.range(4).map(fails).make_one_shot_iterator().get_next()
    with session() as sess:
        assert [int(sess.run(nxt)), int(sess.run(nxt))] == [-5, -10]
        with pytest.raises(sl.errors.OpError, match="ZeroDivisionError"):
            sess.run(nxt)


def test_one_shot_iterator_cannot_capture_a_placeholder_or_a_variable():
    # TF1 captures a one-shot iterator's tensors by value: it rejects both when it is built
    x = sl.placeholder(sl.float32, [None])
    with pytest.raises(ValueError, match="Cannot capture a placeholder"):
        sl.data.Dataset.from_tensor_slices(x * 2.0).make_one_shot_iterator()
    v = sl.Variable(np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="Cannot capture a stateful node"):
        sl.data.Dataset.from_tensor_slices(v).make_one_shot_iterator()
    constant = sl.constant([1.0, 2.0]) * 3.0  # a computed constant is fine
    nxt = sl.data.Dataset.from_tensor_slices(constant).make_one_shot_iterator().get_next()
    with session() as sess:
        assert [float(sess.run(nxt)), float(sess.run(nxt))] == [3.0, 6.0]


def test_get_next_and_dequeue_inside_control_flow_fail_when_built():
    it = sl.data.Dataset.range(5).make_one_shot_iterator()
    q = sl.FIFOQueue(3, [sl.int64], [[]])
    flag = sl.placeholder(sl.bool, [])
    with pytest.raises(NotImplementedError, match="IteratorGetNext.*inside a cond"):
        sl.cond(flag, it.get_next, lambda: sl.constant(-1, sl.int64))
    with pytest.raises(NotImplementedError, match="QueueDequeueV2.*while loop"):
        sl.while_loop(
            lambda i, acc: i < 3,
            lambda i, acc: (i + 1, acc + q.dequeue()),
            [0, sl.constant(0, sl.int64)],
        )
    nxt = it.get_next()  # outside, the same iterator works
    doubled = sl.cond(flag, lambda: nxt * 2, lambda: nxt)
    with session() as sess:
        assert [int(sess.run(doubled, {flag: f})) for f in (True, False)] == [0, 1]


@pytest.mark.parametrize("engine", ENGINES)
def test_each_get_next_op_advances_and_iterators_share_a_run(engine):
    it = sl.data.Dataset.range(10).make_one_shot_iterator()
    first, second = it.get_next(), it.get_next()  # two ops: each takes an element in a run
    other = sl.data.Dataset.range(100, 103).make_one_shot_iterator().get_next()
    with session(engine) as sess:
        a, b, c = sess.run([first, second, other])
        assert sorted([int(a), int(b)]) == [0, 1] and int(c) == 100
        assert int(sess.run(first * 10 + other)) == 20 + 101  # a fetch derived from both


def test_sessions_closed_leave_no_threads():
    def producers():
        return {t for t in threading.enumerate() if t.name == "sluice-data-prefetch"}

    ds = sl.data.Dataset.range(10**9).map(lambda v: v * 2).prefetch(2)
    before = producers()
    for _ in range(5):
        nxt = ds.make_one_shot_iterator().get_next()
        with session() as sess:
            sess.run(nxt)
            assert len(producers() - before) >= 2  # the iterator's and the prefetch's
    deadline = time.time() + 5
    while producers() - before and time.time() < deadline:
        time.sleep(0.01)
    assert not producers() - before
