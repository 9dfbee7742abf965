"""Gradients of a loop split over three devices: each stack lives on the device of the value it
saves, `swap_memory` swaps per device, and the gradients equal the one-device graph's."""

import numpy as np
import pytest

import sluice as sl

STEPS = 30
WIDTH = 64  # 512 bytes of float64 per saved value: above the swap threshold set below


def build(split, swap_memory=False):
    x0 = sl.placeholder(sl.float64, [WIDTH], name="x0")
    w = sl.Variable(np.linspace(0.5, 1.5, WIDTH), name="w")
    with sl.device("/cpu:1" if split else None):
        w2 = sl.Variable(np.linspace(1.0, 0.1, WIDTH), name="w2")

    def body(i, x):
        with sl.device("/cpu:1" if split else None):
            y = sl.tanh(x * w2)
        with sl.device("/cpu:2" if split else None):
            z = sl.sin(y) * w + x
        return i + 1, z

    _, x = sl.while_loop(
        lambda i, x: i < STEPS, body, [sl.constant(0), x0], swap_memory=swap_memory
    )
    grads = sl.gradients(sl.reduce_sum(x * x), [x0, w, w2], colocate_gradients_with_ops=split)
    return x0, grads


def run(split, swap_memory=False, config=None):
    g = sl.Graph()
    with g.as_default():
        x0, grads = build(split, swap_memory)
        meta = sl.RunMetadata()
        with sl.Session(config=config or sl.SessionConfig(engine="interpreted")) as sess:
            sess.run(sl.global_variables_initializer())
            values = sess.run(grads, {x0: np.linspace(-1, 1, WIDTH)}, run_metadata=meta)
    return values, meta


def test_each_device_keeps_the_stacks_of_its_own_values():
    values, meta = run(split=True)
    reference, _ = run(split=False)
    for got, want in zip(values, reference):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    by_device = {p.device[-5:]: p.stack_stats for p in meta.partitions}
    assert sorted(by_device) == ["CPU:0", "CPU:1", "CPU:2"]
    # one stack per device: x on cpu:0 (the loop variable, which Mul's gradient needs), y on
    # cpu:1 (tanh's output) and sin's input on cpu:2, each pushed and popped once an iteration
    for stats in by_device.values():
        assert stats.pushes == STEPS and stats.pops == STEPS
        assert stats.device_bytes == 0 and stats.host_bytes == 0


@pytest.mark.parametrize("threads", [True, False])
def test_swap_memory_swaps_on_every_device_and_keeps_the_gradients(threads):
    config = sl.SessionConfig(
        engine="interpreted",
        device_memory_limit=4096,
        swap_threshold_bytes=256,
        partition_threads=threads,
    )
    values, meta = run(split=True, swap_memory=True, config=config)
    reference, _ = run(split=False)
    for got, want in zip(values, reference):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    for part in meta.partitions:
        stats = part.stack_stats
        assert stats.swapped_out > 0 and stats.swapped_in == stats.swapped_out
        # device-resident stack bytes stay near the device's 70% share of its 4 KB
        assert stats.peak_device_bytes <= 0.7 * 4096 + 2 * WIDTH * 8


def test_every_value_sent_is_received(monkeypatch):
    # Sends and Recvs pair up exactly, the dead ones of a loop's last iteration and of untaken
    # branches included: the rendezvous is empty after the run.
    from sluice.framework.interpreter import partitioned

    made = []

    class Watched(partitioned.Rendezvous):
        def __init__(self):
            super().__init__()
            made.append(self)

    monkeypatch.setattr(partitioned, "Rendezvous", Watched)
    n = sl.placeholder(sl.int32, [])
    x0 = sl.placeholder(sl.float64, [3])

    def body(i, x):
        with sl.device("/cpu:1"):
            y = sl.cond(i % 2 < 1, lambda: sl.tanh(x), lambda: x * 0.5)
        return i + 1, y + 0.1

    _, x = sl.while_loop(lambda i, x: i < n, body, [sl.constant(0), x0])
    (g,) = sl.gradients(sl.reduce_sum(x), x0)
    with sl.Session() as sess:
        for trips in (0, 1, 7):
            sess.run([x, g], {n: trips, x0: np.ones(3)})
            assert made[-1].pending() == (0, 0)
