"""TF1's queues and queue runners: FIFO/random-shuffle/padding queues as host ops, the input
producers with a Coordinator (the PTB model's input), batch and shuffle_batch of graph tensors."""

import pathlib
import subprocess
import sys
import threading

import numpy as np
import pytest

import sluice as sl

ENGINES = ["compiled", "interpreted"]


def session(engine="compiled"):
    return sl.Session(config=sl.SessionConfig(engine=engine))


def drain(sess, fetch):
    out = []
    while True:
        try:
            out.append(sess.run(fetch))
        except sl.errors.OutOfRangeError:
            return out


@pytest.mark.parametrize("engine", ENGINES)
def test_fifo_queue_enqueue_dequeue_size_close(engine):
    q = sl.FIFOQueue(4, [sl.int32, sl.float32], shapes=[[], [2]])
    enq = q.enqueue_many([[1, 2, 3], np.arange(6, dtype=np.float32).reshape(3, 2)])
    i, v = q.dequeue()
    many = q.dequeue_many(2)
    up_to = q.dequeue_up_to(2)
    assert many[1].shape.as_list() == [2, 2] and up_to[0].shape.as_list() == [None]
    with session(engine) as sess:
        sess.run(enq)
        assert sess.run(q.size()) == 3
        got = sess.run([i, v, i * 10])
        assert got[0] == 1 and got[2] == 10 and got[1].tolist() == [0.0, 1.0]
        sess.run(q.enqueue([7, [8.0, 9.0]]))
        ids, rows = sess.run(many)
        assert ids.tolist() == [2, 3] and rows.tolist() == [[2, 3], [4, 5]]
        sess.run(q.close())
        assert sess.run(q.is_closed())
        with pytest.raises(sl.errors.CancelledError, match="is closed"):
            sess.run(enq)
        assert sess.run(up_to)[0].tolist() == [7]  # a smaller final batch once closed
        with pytest.raises(sl.errors.OutOfRangeError, match="closed and has insufficient"):
            sess.run(i)


def test_queue_construction_errors():
    with pytest.raises(ValueError, match="fully defined"):
        sl.FIFOQueue(2, [sl.float32], shapes=[[None]])
    q = sl.FIFOQueue(2, [sl.float32], shapes=[[3]])
    with pytest.raises(ValueError, match="incompatible"):
        q.enqueue([np.zeros(2, np.float32)])


def test_random_shuffle_and_padding_queues():
    q = sl.RandomShuffleQueue(10, 2, [sl.int64], shapes=[[]], seed=4)
    with session() as sess:
        sess.run(q.enqueue_many([np.arange(8)]))
        sess.run(q.close())
        got = [int(v) for v in drain(sess, q.dequeue())]
    assert sorted(got) == list(range(8)) and got != list(range(8))
    pq = sl.PaddingFIFOQueue(4, [sl.int32], shapes=[[None]])
    x = sl.placeholder(sl.int32, [None])
    with session() as sess:
        for row in ([1], [2, 3, 4], [5, 6]):
            sess.run(pq.enqueue([x]), {x: row})
        np.testing.assert_array_equal(
            sess.run(pq.dequeue_many(3)), [[1, 0, 0], [2, 3, 4], [5, 6, 0]]
        )


@pytest.mark.parametrize("engine", ENGINES)
def test_ptb_style_range_input_producer_with_a_coordinator(engine):
    raw = np.arange(40, dtype=np.int32)
    batch_size, num_steps = 2, 4
    data = raw.reshape(batch_size, -1)
    epoch_size = (data.shape[1] - 1) // num_steps
    i = sl.train.range_input_producer(epoch_size, shuffle=False).dequeue()
    if engine == "interpreted":  # the PTB model's own spelling
        x = sl.strided_slice(data, [0, i * num_steps], [batch_size, (i + 1) * num_steps])
        y = sl.strided_slice(data, [0, i * num_steps + 1], [batch_size, (i + 1) * num_steps + 1])
    else:  # a strided slice with a traced range does not compile; a slice of static size does
        x = sl.slice(data, sl.stack([0, i * num_steps]), [batch_size, num_steps])
        y = sl.slice(data, sl.stack([0, i * num_steps + 1]), [batch_size, num_steps])
    with session(engine) as sess:
        coord = sl.train.Coordinator()
        threads = sl.train.start_queue_runners(sess=sess, coord=coord)
        assert threads and all(t.daemon for t in threads)
        for step in range(2 * epoch_size):  # wraps around: num_epochs=None repeats
            xv, yv = sess.run([x, y])
            k = step % epoch_size
            np.testing.assert_array_equal(xv, data[:, k * num_steps : (k + 1) * num_steps])
            np.testing.assert_array_equal(yv, data[:, k * num_steps + 1 : (k + 1) * num_steps + 1])
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=5)
        assert not any(t.is_alive() for t in threads)


def test_input_producer_epochs_then_out_of_range():
    i = sl.train.range_input_producer(5, num_epochs=2, shuffle=True, seed=1).dequeue()
    with session() as sess:
        coord = sl.train.Coordinator()
        threads = sl.train.start_queue_runners(sess, coord)
        got = [int(v) for v in drain(sess, i)]
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=5)
    assert len(got) == 10 and sorted(got[:5]) == sorted(got[5:]) == list(range(5))


def test_slice_input_producer_and_batch_of_graph_tensors():
    images = np.arange(12, dtype=np.float32).reshape(6, 2)
    labels = np.arange(6, dtype=np.int64) * 10
    image, label = sl.train.slice_input_producer([images, labels], num_epochs=1, shuffle=False)
    doubled = image * 2.0
    xb, yb = sl.train.batch([doubled, label], batch_size=4, allow_smaller_final_batch=True)
    assert xb.shape.as_list() == [None, 2]
    with sl.Graph().as_default():  # a runner of its own would take indices from this queue
        assert isinstance(sl.train.batch(sl.constant(1), batch_size=2), sl.Tensor)
    with session() as sess:
        coord = sl.train.Coordinator()
        threads = sl.train.start_queue_runners(sess, coord)
        batches = drain(sess, [xb, yb])
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=5)
    assert [len(b[1]) for b in batches] == [4, 2]
    np.testing.assert_allclose(np.concatenate([b[0] for b in batches]), images * 2, rtol=1e-6)
    np.testing.assert_array_equal(np.concatenate([b[1] for b in batches]), labels)


def test_shuffle_batch_sees_every_element_once():
    value = sl.train.range_input_producer(12, num_epochs=1, shuffle=False).dequeue()
    batch = sl.train.shuffle_batch(
        {"v": value},
        batch_size=5,
        capacity=12,
        min_after_dequeue=3,
        seed=2,
        allow_smaller_final_batch=True,
    )
    assert set(batch) == {"v"}
    with session() as sess:
        coord = sl.train.Coordinator()
        threads = sl.train.start_queue_runners(sess, coord)
        got = np.concatenate([b["v"] for b in drain(sess, batch)])
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=5)
    assert sorted(got.tolist()) == list(range(12)) and got.tolist() != list(range(12))


def test_a_runner_error_is_reraised_by_join():
    nxt = sl.data.Dataset.range(3).make_initializable_iterator().get_next()  # never initialised
    q = sl.FIFOQueue(2, [sl.int64], shapes=[[]])
    sl.train.add_queue_runner(sl.train.QueueRunner(q, [q.enqueue([nxt])]))
    with session() as sess:
        coord = sl.train.Coordinator()
        threads = sl.train.start_queue_runners(sess, coord)
        with pytest.raises(sl.errors.FailedPreconditionError, match="not been initialized"):
            coord.join(threads, stop_grace_period_secs=5)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_closing_the_session_releases_blocked_runner_threads():
    q = sl.FIFOQueue(1, [sl.int32], shapes=[[]])
    runner = sl.train.QueueRunner(q, [q.enqueue([sl.constant(1)])])
    sl.train.add_queue_runner(runner)
    sess = session()
    threads = sl.train.start_queue_runners(sess)  # no coordinator: nothing asks them to stop
    assert sess.run(q.dequeue()) == 1
    sess.close()
    for t in threads:
        t.join(5)
    assert not any(t.is_alive() for t in threads)
    # without a coordinator the thread raises, and the runner keeps the error, as TF1's does
    assert [type(e) for e in runner.exceptions_raised] == [sl.errors.CancelledError]
    with pytest.raises(ValueError, match="No default session"):
        sl.train.start_queue_runners()


def test_coordinator_stop_on_exception_keeps_the_first_error():
    coord = sl.train.Coordinator()

    def work():
        with coord.stop_on_exception():
            raise ValueError("bad input")

    t = threading.Thread(target=work)
    t.start()
    with pytest.raises(ValueError, match="bad input"):
        coord.join([t])
    assert coord.should_stop() and coord.joined


def test_queue_runners_round_trip_through_a_meta_graph(tmp_path):
    i = sl.train.range_input_producer(3, shuffle=False).dequeue()
    sl.add_to_collection("next_index", i)
    sl.train.export_meta_graph(str(tmp_path / "input.meta"))
    with sl.Graph().as_default() as g:
        sl.train.import_meta_graph(str(tmp_path / "input.meta"))
        (runner,) = g.get_collection("queue_runners")
        assert [op.type for op in runner.enqueue_ops] == ["QueueEnqueueV2"]
        index = g.get_collection("next_index")[0]
        with session() as sess:
            coord = sl.train.Coordinator()
            threads = sl.train.start_queue_runners(sess, coord)
            assert [int(sess.run(index)) for _ in range(4)] == [0, 1, 2, 0]
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)


# -- regressions found by the independent check (issue 17, item 3) ----------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_dequeue_many_of_zero_is_an_empty_batch(engine):
    q = sl.FIFOQueue(4, [sl.float32, sl.int32], [[2], []])
    with session(engine) as sess:
        sess.run(q.enqueue_many([np.ones((2, 2), np.float32), [1, 2]]))
        values, ids = sess.run(q.dequeue_many(0))
        assert values.shape == (0, 2) and values.dtype == np.float32 and ids.shape == (0,)
        assert int(sess.run(q.size())) == 2


_EXIT_SCRIPT = """
import numpy as np, sluice as sl
m = np.ones((32, 32), np.float32)
q = sl.FIFOQueue(10 ** 6, [sl.float32], [[]])
enqueue = q.enqueue([sl.reduce_sum(sl.matmul(sl.constant(m), sl.constant(m)))])
for _ in range(2):
    sl.train.add_queue_runner(sl.train.QueueRunner(q, [enqueue]))
mapped = sl.data.Dataset.range(10 ** 9).map(lambda i: sl.reduce_sum(sl.matmul(
    sl.constant(m), sl.constant(m))) + sl.cast(i, sl.float32)).prefetch(4)
nxt = mapped.make_one_shot_iterator().get_next()
sess = sl.Session()
threads = sl.train.start_queue_runners(sess)  # daemon threads, never stopped by the script
print(sess.run(q.dequeue()), sess.run(nxt))
"""


def test_the_interpreter_exits_cleanly_with_runners_and_iterators_still_running():
    # daemon threads inside a JAX call at finalization used to abort the process (SIGABRT)
    root = pathlib.Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", _EXIT_SCRIPT], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "terminate called" not in done.stderr and "Traceback" not in done.stderr
