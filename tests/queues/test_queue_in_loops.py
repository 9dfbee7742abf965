"""TF1 queues as control-flow tests use them (issue 25): `capacity=-1` is unbounded, and an
enqueue inside a while body or a cond branch pushes each time it runs (TF's testWhileQueue)."""

import threading

import pytest

import sluice as sl

ENGINES = ["compiled", "interpreted"]


def session(engine):
    return sl.Session(config=sl.SessionConfig(engine=engine))


def test_a_negative_capacity_is_unbounded():
    q = sl.FIFOQueue(-1, sl.int32)
    shuffled = sl.RandomShuffleQueue(-1, 5, sl.int32)
    with session("compiled") as sess:
        sess.run(q.enqueue_many([list(range(1000))]))
        sess.run(shuffled.enqueue_many([list(range(100))]))
        assert sess.run(q.size()) == 1000 and sess.run(shuffled.size()) == 100
        assert sess.run(q.dequeue_many(3)).tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="got 0"):
        sl.FIFOQueue(0, sl.int32)


@pytest.mark.parametrize("engine", ENGINES)
def test_enqueue_inside_a_while_body_pushes_every_iteration_in_order(engine):
    q = sl.FIFOQueue(-1, sl.int32)

    def body(i):
        with sl.control_dependencies([q.enqueue((i,))]):
            return sl.identity(i + 1)

    r = sl.while_loop(lambda i: i < 10, body, [sl.constant(0)], parallel_iterations=1)
    metadata = sl.RunMetadata()
    with session(engine) as sess:
        assert sess.run(r, run_metadata=metadata) == 10
        assert metadata.engine == engine  # the compiled step pushes from inside itself
        assert [sess.run(q.dequeue()) for _ in range(10)] == list(range(10))
        assert sess.run(q.size()) == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_enqueue_on_a_cond_branch_pushes_only_when_taken(engine):
    q = sl.FIFOQueue(10, [sl.float32])
    x = sl.placeholder(sl.float32, [])

    def push():
        with sl.control_dependencies([q.enqueue(x * 2.0)]):
            return sl.identity(x)

    out = sl.cond(x > 0, push, lambda: sl.identity(x))
    with session(engine) as sess:
        for value in [1.0, -1.0, 3.0]:
            sess.run(out, {x: value})
        assert sess.run(q.size()) == 2
        assert sess.run(q.dequeue_many(2)).tolist() == [2.0, 6.0]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_loop_filling_a_full_queue_waits_for_another_threads_dequeue(engine):
    # TF1 runs steps concurrently: the loop's enqueue waits for space while the main thread's
    # dequeue runs (the step held the session's lock while it waited: both hung)
    q = sl.FIFOQueue(1, sl.int32)

    def body(i):
        with sl.control_dependencies([q.enqueue(i)]):
            return i + 1

    r = sl.while_loop(lambda i: i < 4, body, [sl.constant(0)], parallel_iterations=1)
    dequeue = q.dequeue()
    with session(engine) as sess:
        sess.run(q.size())  # the queue exists before the producer runs
        results, got = [], []
        producer = threading.Thread(target=lambda: results.append(sess.run(r)), daemon=True)
        consumer = threading.Thread(
            target=lambda: got.extend(int(sess.run(dequeue)) for _ in range(4)), daemon=True
        )
        producer.start()
        consumer.start()
        for thread in (producer, consumer):
            thread.join(10)
        assert results == [4] and got == [0, 1, 2, 3]
