"""A fed value crosses to each device that reads it once per run, however many iterations of a
loop read it there (issue 25): the partition of that device gets it from the host, on its
device, before the run (none goes to a device that does not read it), and a loop-invariant
Enter read on another device is copied there rather than sent every iteration. Every copy is
counted: JAX's implicit ones between devices are disallowed (its transfer guard), and the
explicit ones (`jax.device_put`) are counted by a spy."""

import jax
import numpy as np
import pytest

import sluice as sl

from .split import ENGINES, by_device

SIZE = 4096  # elements of the fed vector: above the host kernels' limit, so it is a device value
BIG = np.arange(SIZE, dtype=np.float32)


@pytest.fixture
def copies(monkeypatch):
    """The devices a vector of the fed shape was `jax.device_put` to, in order; JAX's implicit
    copies between devices are errors meanwhile (in every thread: the global setting)."""
    put = jax.device_put
    seen = []

    def spy(x, device=None, *args, **kwargs):
        if getattr(x, "shape", None) == (SIZE,) and device is not None:
            seen.append(device)
        return put(x, device, *args, **kwargs)

    monkeypatch.setattr(jax, "device_put", spy)
    guard = jax.config.jax_transfer_guard_device_to_device
    jax.config.update("jax_transfer_guard_device_to_device", "disallow")
    yield seen
    jax.config.update("jax_transfer_guard_device_to_device", guard)


def read_in_loop(on_both: bool):
    """A loop on CPU:0 whose body reads the fed vector on CPU:1 (and on CPU:0 too, first, with
    `on_both`, so its Enter is placed on CPU:0)."""
    n = sl.placeholder(sl.int32, [], name="n")
    big = sl.placeholder(sl.float32, [SIZE], name="big")

    def body(i, acc):
        here = big[1] if on_both else 0.0
        with sl.device("/cpu:1"):
            there = big[2] * 2.0
        return i + 1, acc + here + there

    with sl.device("/cpu:0"):
        _, out = sl.while_loop(lambda i, acc: i < n, body, (sl.constant(0), sl.constant(0.0)))
    return n, big, out, (1.0 if on_both else 0.0) + 4.0


def read_in_nested_loops():
    """The vector read on CPU:0 in an outer loop and on CPU:1 in an inner one: the inner Enter
    stays on CPU:0 with its first reader, so CPU:1 copies both Enters."""
    n = sl.placeholder(sl.int32, [], name="n")
    big = sl.placeholder(sl.float32, [SIZE], name="big")

    def outer(j, total):
        def inner(i, acc):
            here = big[3]
            with sl.device("/cpu:1"):
                there = big[2]
            return i + 1, acc + here + there

        _, acc = sl.while_loop(lambda i, acc: i < 2, inner, (sl.constant(0), big[1]))
        return j + 1, total + acc

    with sl.device("/cpu:0"):
        _, out = sl.while_loop(lambda j, t: j < n, outer, (sl.constant(0), sl.constant(0.0)))
    return n, big, out, 1.0 + 2 * (3.0 + 2.0)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda: read_in_loop(on_both=False), id="enter-on-the-reader"),
        pytest.param(lambda: read_in_loop(on_both=True), id="enter-on-another-device"),
        pytest.param(read_in_nested_loops, id="nested-loops"),
    ],
)
def test_a_feed_crosses_once_per_run_whatever_the_iterations(copies, engine, build):
    n, big, out, per_iteration = build()
    cpu1 = jax.devices()[1]
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        for iterations in (1, 2, 7):
            copies.clear()
            metadata = sl.RunMetadata()
            got = sess.run(out, {n: iterations, big: BIG}, run_metadata=metadata)
            assert got == pytest.approx(per_iteration * iterations)
            # from the host, once to each device whose partition reads it (CPU:1 always)
            assert cpu1 in copies and len(copies) == len(set(copies)), (iterations, copies)
            for part in by_device(metadata).values():  # and none by a Send, in any iteration
                assert part.bytes_sent < BIG.nbytes, (part.device, iterations)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_partition_that_does_not_read_a_feed_gets_no_copy(copies, engine):
    big = sl.placeholder(sl.float32, [SIZE], name="big")
    with sl.device("/cpu:0"):
        first = big[1] + 1.0
    with sl.device("/cpu:2"):
        second = sl.constant(2.0) * 3.0
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        assert sess.run([first, second], {big: BIG}) == [2.0, 6.0]
    assert copies == [jax.devices()[0]]  # from the host to its reader only, none to CPU:2
