"""Two devices work on different iterations of one loop at once (the paper's pipelining).

A two-layer recurrence, layer 1 on cpu:1 and layer 2 on cpu:2: layer 2 of step t needs layer 1
of step t, but layer 1 of step t+1 needs nothing of layer 2. With `parallel_iterations` > 1,
cpu:1 computes step t+1 while cpu:2 computes step t, so some layer-1 op runs during some
layer-2 op; with `parallel_iterations=1` an iteration ends before the next one starts, so never.
Spies make each layer's op take 20 ms (a sleep, which lets the other executor thread run) and
log its interval; the test compares intervals, not speeds.
"""

import functools
import time

import numpy as np
import pytest

import sluice as sl
from sluice.framework.interpreter.plan import kernel_cache

STEPS = 8
SLOW_S = 0.02


def slow_spy(tensor, log, layer):
    op = tensor.op
    kernel = functools.partial(op.op_def.kernel, **op.attrs)

    def spy(*args):
        start = time.perf_counter()
        time.sleep(SLOW_S)
        result = kernel(*args)
        log.append((layer, start, time.perf_counter()))
        return result

    kernel_cache[op] = spy


def two_layer_loop(parallel_iterations, log):
    xs = sl.placeholder(sl.float32, [STEPS, 64], name="xs")

    def body(t, h1, h2):
        with sl.device("/cpu:1"):
            layer1 = sl.tanh(h1 + sl.gather(xs, t))
        with sl.device("/cpu:2"):
            layer2 = sl.tanh(h2 + layer1)
        slow_spy(layer1, log, 1)
        slow_spy(layer2, log, 2)
        return t + 1, layer1, layer2

    with sl.device("/cpu:0"):
        zeros = sl.zeros([64])
        _, h1, h2 = sl.while_loop(
            lambda t, h1, h2: t < STEPS,
            body,
            [sl.constant(0), zeros, zeros],
            parallel_iterations=parallel_iterations,
        )
    return xs, h1, h2


def overlaps(log):
    """Pairs of a layer-1 op and a layer-2 op whose intervals intersect."""
    ones = [(s, e) for layer, s, e in log if layer == 1]
    twos = [(s, e) for layer, s, e in log if layer == 2]
    return sum(1 for s1, e1 in ones for s2, e2 in twos if s1 < e2 and s2 < e1)


def expected(values):
    h1 = h2 = np.zeros(64, np.float32)
    for x in values:
        h1 = np.tanh(h1 + x)
        h2 = np.tanh(h2 + h1)
    return h1, h2


@pytest.mark.parametrize("parallel_iterations, pipelined", [(1, False), (8, True)])
def test_devices_work_on_different_iterations_at_once(parallel_iterations, pipelined):
    log = []
    xs, h1, h2 = two_layer_loop(parallel_iterations, log)
    values = np.random.default_rng(0).normal(size=(STEPS, 64)).astype(np.float32)
    with sl.Session(config=sl.SessionConfig(engine="interpreted")) as sess:
        got1, got2 = sess.run([h1, h2], {xs: values})
    want1, want2 = expected(values)
    np.testing.assert_allclose(got1, want1, rtol=1e-5)
    np.testing.assert_allclose(got2, want2, rtol=1e-5)
    assert len(log) == 2 * STEPS
    if pipelined:
        assert overlaps(log) >= STEPS // 2, log
    else:
        assert overlaps(log) == 0, log
