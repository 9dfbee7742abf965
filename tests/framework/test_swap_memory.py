"""swap_memory=True: stack entries move to host memory under the TF stack.cc policy."""

import numpy as np

import sluice as sl
from sluice.framework.ir.x64 import x64_scope

STEPS, WIDTH = 40, 1024  # each saved float32 entry is 4 KB, above the 2 KB threshold


def build(swap_memory):
    x0 = sl.placeholder(sl.float32, [WIDTH])
    w = sl.constant(np.linspace(0.5, 1.0, WIDTH, dtype=np.float32))
    _, x = sl.while_loop(
        lambda i, x: i < STEPS,
        lambda i, x: (i + 1, sl.tanh(x * w)),
        (sl.constant(0), x0),
        swap_memory=swap_memory,
    )
    (dx0,) = sl.gradients(sl.reduce_sum(x), [x0])
    return x0, dx0


def run(swap_memory, limit):
    g = sl.Graph()
    with g.as_default():
        x0, dx0 = build(swap_memory)
    meta = sl.RunMetadata()
    # the interpreter's stacks run the swap policy entry by entry (the compiled engine, which
    # can size this loop's buffers from `i < STEPS`, moves whole buffers instead)
    config = sl.SessionConfig(engine="interpreted", device_memory_limit=limit)
    with sl.Session(graph=g, config=config) as s:
        value = s.run(dx0, {x0: np.linspace(-1, 1, WIDTH).astype(np.float32)}, run_metadata=meta)
    return value, meta.stack_stats


def test_without_swapping_device_resident_stacks_grow_with_the_trip_count():
    _, stats = run(swap_memory=False, limit=64 * 1024)
    entry = WIDTH * 4
    assert stats.peak_device_bytes >= STEPS * entry
    assert stats.swapped_out == 0 and stats.peak_host_bytes == 0


def test_swapping_bounds_device_resident_stacks_and_keeps_gradients():
    limit = 64 * 1024
    reference, _ = run(swap_memory=False, limit=limit)
    value, stats = run(swap_memory=True, limit=limit)
    np.testing.assert_array_equal(value, reference)
    entry = WIDTH * 4
    assert stats.swapped_out > 0 and stats.swapped_in == stats.swapped_out
    assert stats.peak_device_bytes <= 0.7 * limit + 2 * entry
    assert stats.peak_host_bytes >= (STEPS - 20) * entry
    assert stats.device_bytes == 0 and stats.host_bytes == 0  # every entry was popped


def test_small_entries_are_never_swapped():
    g = sl.Graph()
    with g.as_default():
        x0 = sl.placeholder(sl.float32, [4])
        _, x = sl.while_loop(
            lambda i, x: i < 10,
            lambda i, x: (i + 1, sl.tanh(x)),
            (sl.constant(0), x0),
            swap_memory=True,
        )
        (dx0,) = sl.gradients(sl.reduce_sum(x), [x0])
    meta = sl.RunMetadata()
    with sl.Session(graph=g, config=sl.SessionConfig(device_memory_limit=1)) as s:
        s.run(dx0, {x0: np.ones(4, np.float32)}, run_metadata=meta)
    assert meta.stack_stats.swapped_out == 0


def test_compiled_engine_keeps_swapped_stack_buffers_in_host_memory():
    import jax
    import jax.numpy as jnp

    def build_bounded():
        x0 = sl.placeholder(sl.float32, [WIDTH])
        w = sl.constant(np.linspace(0.5, 1.0, WIDTH, dtype=np.float32))
        _, x = sl.while_loop(
            lambda i, x: i < STEPS,
            lambda i, x: (i + 1, sl.tanh(x * w)),
            (sl.constant(0), x0),
            swap_memory=True,
            maximum_iterations=STEPS,
        )
        return x0, sl.gradients(sl.reduce_sum(x), [x0])[0]

    feed_value = np.linspace(-1, 1, WIDTH).astype(np.float32)
    results = {}
    for engine in ("interpreted", "compiled"):
        g = sl.Graph()
        with g.as_default():
            x0, dx0 = build_bounded()
        with sl.Session(graph=g, config=sl.SessionConfig(engine=engine)) as s:
            results[engine] = s.run(dx0, {x0: feed_value})
            if engine == "compiled":
                (step,) = s._compiled.values()
                with x64_scope():  # traced by hand: in sluice's JAX setting, as run does
                    jaxpr = str(jax.make_jaxpr(step._step)({}, {}, {}, [jnp.asarray(feed_value)]))
    np.testing.assert_allclose(results["compiled"], results["interpreted"], rtol=1e-6)
    # The saved buffers are placed in host memory (XLA:CPU treats the placement as a no-op).
    assert "<host>" in jaxpr
