"""The partitions of one run execute at the same time, one executor thread per device (the
default driver), and a run always ends, under that driver and under the one-thread scheduler
(`partition_threads=False`): an error in one partition stops the others and is raised, a
deadline passed raises DeadlineExceededError. Every run here goes through a watchdog, so a hang
fails the test instead of stalling the suite.

Overlap is shown by events, not by speed: kernel spies (the interpreter's `kernel_cache`, as in
test_cond.py) record when each partition's ops run. Wall-time ratios prove little on the 2-core
machines the suite runs on, where one JAX matmul may already use both cores. The spy tests run
in the interpreted engine, where each op calls its kernel; under "auto" a partition's fused ops
run as one compiled program (the spies would be traced into it, not called), on the same
executor threads."""

import functools
import threading
import time

import jax
import numpy as np
import pytest

import sluice as sl
from sluice.framework.interpreter.plan import kernel_cache

WATCHDOG_S = 60.0


def run_watched(fetch, feeds=None, options=None, session=None, **config):
    """`session.run(fetch, feeds, options)` on a thread (in a new session of `SessionConfig(
    **config)` when none is given); fails the test if it has not ended within WATCHDOG_S.
    Returns the run's value or raises its error."""
    outcome = {}
    sess = session or sl.Session(config=sl.SessionConfig(**config))

    def target():
        try:
            outcome["value"] = sess.run(fetch, feeds, options=options)
        except BaseException as err:  # noqa: BLE001  (re-raised on the test's thread)
            outcome["error"] = err

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(WATCHDOG_S)
    assert not thread.is_alive(), f"the run hung for more than {WATCHDOG_S} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def spy_on(tensor, before=None, after=None):
    """Calls `before()` before `tensor`'s kernel runs and `after(result)` once its result is
    computed (the result waited for: JAX dispatches asynchronously)."""
    op = tensor.op
    original = functools.partial(op.op_def.kernel, **op.attrs)

    def spy(*args):
        if before is not None:
            before()
        result = original(*args)
        if after is not None:
            after(jax.block_until_ready(result))
        return result

    kernel_cache[op] = spy


# Both engines, and both drivers of the partitions: a thread each, or turns on one thread.
CONFIGS = [
    pytest.param(
        {"engine": engine, "partition_threads": threads},
        id=f"{engine}-{'threads' if threads else 'scheduler'}",
    )
    for engine in ("auto", "interpreted")
    for threads in (True, False)
]
N = 64  # elements: large enough for the device kernels that spies replace, not host ones


def test_two_partitions_meet_at_a_barrier():
    # Each partition's op waits until the other partition's op has started: with one executor
    # after another, the first to run would wait for ever (here: until the barrier's timeout).
    barrier = threading.Barrier(2, timeout=20)
    threads = {}
    x = sl.placeholder(sl.float32, [N], name="x")
    with sl.device("/cpu:1"):
        a = sl.sin(x)
    with sl.device("/cpu:2"):
        b = sl.cos(x)
    for name, t in (("a", a), ("b", b)):
        spy_on(
            t,
            before=lambda name=name: (
                barrier.wait(),
                threads.setdefault(name, threading.current_thread()),
            ),
        )
    value = np.linspace(0, 1, N, dtype=np.float32)
    got_a, got_b = run_watched([a, b], {x: value}, engine="interpreted")
    np.testing.assert_allclose(got_a, np.sin(value), rtol=1e-6)
    np.testing.assert_allclose(got_b, np.cos(value), rtol=1e-6)
    assert threads["a"] is not threads["b"]
    assert threads["a"].name.endswith("CPU:1") and threads["b"].name.endswith("CPU:2")


def matmul_chain(device: str, m: sl.Tensor, length: int):
    """h <- tanh(h @ m), `length` times from h = m, on `device`: its first MatMul and last op."""
    with sl.device(device):
        first = sl.matmul(m, m)
        h = sl.tanh(first)
        for _ in range(length - 1):
            h = sl.tanh(sl.matmul(h, m))
    return first, h


def test_expensive_chains_on_two_devices_overlap_in_time():
    # Two independent chains of 8 matmuls of 768x768 (~0.25 s each on one core), on cpu:1 and
    # cpu:2. The event log gives each chain's interval, from its first op's start to its last
    # op's result: run one after the other, the intervals would be disjoint; they must meet.
    events = {}
    m = sl.placeholder(sl.float32, [768, 768], name="m")
    lasts = []
    for device in ("/cpu:1", "/cpu:2"):
        first, last = matmul_chain(device, m, length=8)
        spy_on(first, before=lambda d=device: events.setdefault((d, "start"), time.perf_counter()))
        spy_on(last, after=lambda _, d=device: events.setdefault((d, "end"), time.perf_counter()))
        lasts.append(last)
    value = np.random.RandomState(0).randn(768, 768).astype(np.float32) / np.float32(768**0.5)
    run_watched(lasts, {m: value}, engine="interpreted")
    start_1, end_1 = events["/cpu:1", "start"], events["/cpu:1", "end"]
    start_2, end_2 = events["/cpu:2", "start"], events["/cpu:2", "end"]
    assert start_1 < end_1 and start_2 < end_2
    assert start_1 < end_2 and start_2 < end_1, events


@pytest.mark.parametrize("config", CONFIGS)
def test_an_error_in_one_partition_is_raised_while_another_waits_on_its_recv(config):
    x = sl.placeholder(sl.float32, [N], name="x")
    with sl.device("/cpu:1"):
        checked = sl.check_numerics(sl.log(x), "log of x")
    with sl.device("/cpu:2"):
        out = checked * 2.0  # cpu:2 waits for checked's Recv
    with sl.Session(config=sl.SessionConfig(**config)) as sess:
        with pytest.raises(sl.errors.InvalidArgumentError, match="log of x"):
            run_watched(out, {x: -np.ones(N, np.float32)}, session=sess)
        # the next run of the same graph starts clean
        np.testing.assert_allclose(
            run_watched(out, {x: np.ones(N, np.float32)}, session=sess), np.zeros(N)
        )


@pytest.mark.parametrize("config", CONFIGS)
def test_an_error_inside_a_distributed_loop_is_raised(config):
    # The body on cpu:1 fails at iteration 30 (log of a negative number), while cpu:0 waits in
    # the loop for the body's value of that iteration.
    with sl.device("/cpu:0"):

        def body(i, x):
            with sl.device("/cpu:1"):
                y = sl.check_numerics(sl.log(29.5 - sl.cast(i, sl.float32)), "in the body")
            return i + 1, x + y

        _, x = sl.while_loop(
            lambda i, x: i < 100, body, [sl.constant(0), sl.constant(0.0)], parallel_iterations=10
        )
    with pytest.raises(sl.errors.InvalidArgumentError, match="in the body"):
        run_watched(x, **config)


@pytest.mark.parametrize("config", CONFIGS)
def test_an_error_stops_a_busy_partition_that_never_waits(config):
    # cpu:2 runs a loop of 10**9 iterations entirely on its own, so it never waits on a Recv;
    # cpu:1's error must still stop it.
    x = sl.placeholder(sl.float32, [N], name="x")
    with sl.device("/cpu:1"):
        checked = sl.check_numerics(sl.log(x), "log of x")
    with sl.device("/cpu:2"):
        _, busy = sl.while_loop(
            lambda i, s: i < 10**9,
            lambda i, s: (i + 1, s * 0.5),
            [sl.constant(0), sl.constant(1.0)],
        )
    with pytest.raises(sl.errors.InvalidArgumentError, match="log of x"):
        run_watched([checked, busy], {x: -np.ones(N, np.float32)}, **config)


def endless_distributed_loop():
    """A loop of 10**9 iterations whose body runs on cpu:1, its variables on cpu:0."""
    n = sl.placeholder(sl.int32, [], name="n")
    with sl.device("/cpu:0"):

        def body(i, x):
            with sl.device("/cpu:1"):
                x = x * 0.5 + 1.0
            return i + 1, x

        _, x = sl.while_loop(lambda i, x: i < n, body, [sl.constant(0), sl.constant(0.0)])
    return n, x


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("split", [True, False])
def test_a_run_past_its_timeout_raises_deadline_exceeded(split, config):
    if split:
        n, x = endless_distributed_loop()
    else:
        n = sl.placeholder(sl.int32, [], name="n")
        _, x = sl.while_loop(
            lambda i, x: i < n,
            lambda i, x: (i + 1, x * 0.5 + 1.0),
            [sl.constant(0), sl.constant(0.0)],
        )
    options = sl.RunOptions(timeout_in_ms=300)
    with sl.Session(config=sl.SessionConfig(**config)) as sess:
        start = time.monotonic()
        with pytest.raises(sl.errors.DeadlineExceededError):
            run_watched(x, {n: 10**9}, options=options, session=sess)
        assert time.monotonic() - start < 10.0  # 0.3 s and the time to notice, on a busy machine
        # the session still runs the graph, within the deadline when it is short enough
        assert run_watched(x, {n: 3}, options=options, session=sess) == 1.75
