"""Loops whose body ops on a second device are driven by the values sent to them
(`partitioner.SenderDriven`): that device gets no control loop and no predicate, each value
makes its iteration there, and the sender's end-of-frame message ends the loop there. In both
partition drivers: the values equal one device's, dead values (a loop's last iteration, an
untaken branch) cross and are received, the body's constants get their signal, an error in the
body on the far device stops the run, and loops the rule does not cover keep a control loop."""

import numpy as np
import pytest

import sluice as sl
from sluice.framework.interpreter import partitioned

from .split import by_device, on

X0 = np.array([0.3, -0.7, 1.1])


@pytest.fixture
def mailboxes(monkeypatch):
    """The rendezvous of each run, to check that nothing was left in it."""
    made = []

    class Watched(partitioned.Rendezvous):
        def __init__(self):
            super().__init__()
            made.append(self)

    monkeypatch.setattr(partitioned, "Rendezvous", Watched)
    return made


def run(build, split, threads=True, metadata=None, **feeds):
    with sl.Graph().as_default():
        fetches, feed_dict = build(split, **feeds)
        config = sl.SessionConfig(engine="interpreted", partition_threads=threads)
        with sl.Session(config=config) as sess:
            return sess.run(fetches, feed_dict, run_metadata=metadata)


def w5(split, trips=9, parallel_iterations=10):
    """W5's loop: the counter and predicate on cpu:0, the x update on cpu:1."""
    n = sl.placeholder(sl.int32, [])
    x0 = sl.placeholder(sl.float64, [3])
    with on("/cpu:0", split):

        def body(i, x):
            with on("/cpu:1", split):
                x = x * 0.999 + 1.0
            return i + 1, x

        i, x = sl.while_loop(
            lambda i, x: i < n, body, [sl.constant(0), x0], parallel_iterations=parallel_iterations
        )
    return (i, x), {n: trips, x0: X0}


def cond_in_body(split):
    """A cond on cpu:1 in the body, its predicate from the counter cpu:0 sends: one branch's
    values are dead in each iteration; then a second loop driven on cpu:1 the same way."""
    n = sl.placeholder(sl.int32, [])
    x0 = sl.placeholder(sl.float64, [3])
    with on("/cpu:0", split):

        def body(i, x):
            with on("/cpu:1", split):
                x = sl.cond(i % 2 < 1, lambda: sl.sin(x) + 1.0, lambda: x * 0.5)
            return i + 1, x

        _, x = sl.while_loop(lambda i, x: i < n, body, [sl.constant(0), x0])

        def body2(i, y):
            with on("/cpu:1", split):
                y = y - sl.cast(i, sl.float64) * 0.25
            return i + 1, y

        _, y = sl.while_loop(lambda i, y: i < 4, body2, [sl.constant(0), x])
    return (x, y), {n: 5, x0: X0}


def body_with_effects(split, limit=10.0):
    """cpu:1's body prints with a constant of the body (which takes nothing but the loop's
    pivot) and asserts on its value; the assert fails once x reaches `limit`."""
    n = sl.placeholder(sl.int32, [])
    with on("/cpu:0", split):

        def body(i, x):
            with on("/cpu:1", split):
                y = x * 0.5 + 1.0
                check = sl.debugging.Assert(sl.reduce_all(y < limit), [y])
                y = sl.Print(y, [sl.constant(7.0, sl.float64)], "body constant: ")
                with sl.control_dependencies([check]):
                    y = sl.identity(y)
            return i + 1, y

        _, x = sl.while_loop(
            lambda i, x: i < n, body, [sl.constant(0), sl.constant(0.0, sl.float64)]
        )
    return x, {n: 3}


def random_in_body(split):
    """A body op on cpu:1 that takes no value from the loop (a random draw): cpu:1 keeps a
    control loop to fire it in each iteration, and only while the predicate is true."""
    n = sl.placeholder(sl.int32, [])
    with on("/cpu:0", split):

        def body(i, x):
            with on("/cpu:1", split):
                draw = sl.random.uniform([], 0.0, 1.0, dtype=sl.float64)
            return i + 1, x + draw * 0.0 + 1.0

        i, x = sl.while_loop(
            lambda i, x: i < n, body, [sl.constant(0), sl.constant(0.0, sl.float64)]
        )
    return (i, x), {n: 4}


@pytest.mark.parametrize("threads", [True, False])
@pytest.mark.parametrize("trips, parallel_iterations", [(9, 10), (9, 1), (0, 10)])
def test_body_on_far_device_runs_without_control_loop(
    threads, trips, parallel_iterations, mailboxes
):
    metadata = sl.RunMetadata()
    build = lambda split: w5(split, trips, parallel_iterations)  # noqa: E731
    i, x = run(build, True, threads, metadata)
    want_i, want_x = run(build, False)
    assert i == want_i == trips
    np.testing.assert_allclose(x, want_x, rtol=1e-12)
    parts = by_device(metadata)
    assert parts["CPU:1"].control_loops == 0
    assert (parts["CPU:0"].sends, parts["CPU:1"].recvs) == (1, 1)  # no predicate crosses
    # x in each of trips + 1 iterations (the last one dead), and back
    assert parts["CPU:0"].values_sent == parts["CPU:1"].values_sent == trips + 1
    assert mailboxes[-1].pending() == (0, 0)


@pytest.mark.parametrize("threads", [True, False])
def test_dead_branches_and_two_loops_driven_on_one_device(threads, mailboxes):
    metadata = sl.RunMetadata()
    got = run(cond_in_body, True, threads, metadata)
    want = run(cond_in_body, False)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    assert by_device(metadata)["CPU:1"].control_loops == 0
    assert mailboxes[-1].pending() == (0, 0)


@pytest.mark.parametrize("threads", [True, False])
def test_body_constants_and_effects(threads, capfd, mailboxes):
    x = run(body_with_effects, True, threads)
    assert x == run(body_with_effects, False) == 1.75
    # printed in the 3 live iterations only: not in the last, dead one
    assert capfd.readouterr().err.count("body constant: [7]") == 6
    assert mailboxes[0].pending() == (0, 0)


@pytest.mark.parametrize("threads", [True, False])
def test_error_in_body_on_far_device_stops_the_run(threads):
    build = lambda split: body_with_effects(split, limit=1.6)  # noqa: E731
    with pytest.raises(sl.errors.InvalidArgumentError, match="assertion failed"):
        run(build, True, threads)


@pytest.mark.parametrize("threads", [True, False])
def test_body_op_taking_no_loop_value_keeps_a_control_loop(threads, mailboxes):
    metadata = sl.RunMetadata()
    i, x = run(random_in_body, True, threads, metadata)
    assert (i, x) == (4, 4.0)
    assert by_device(metadata)["CPU:1"].control_loops == 1
    assert mailboxes[-1].pending() == (0, 0)


def test_values_going_back_and_forth_take_no_turn_each(monkeypatch):
    # cpu:0 waits for cpu:1's x in every iteration: instead of a turn of each partition per
    # iteration (600 here), a partition with nothing left to run runs the other's work and
    # reads what it sent back within its turn (`_Turns.help_others`). The partitions by turns
    # on one thread: with a thread each, a drain that seems to block (a loaded machine) makes
    # the run go back to turns.
    turns = []
    turn = partitioned._Turns.turn

    def counted(self):
        turns.append(self.device.name)
        turn(self)

    monkeypatch.setattr(partitioned._Turns, "turn", counted)
    i, x = run(lambda split: w5(split, trips=300), True, threads=False)
    assert i == 300
    np.testing.assert_allclose(x, run(lambda split: w5(split, trips=300), False)[1], rtol=1e-12)
    assert len(turns) < 150
