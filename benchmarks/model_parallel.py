"""Model parallelism: graphs split across devices, as the control-flow paper evaluates them.

    python -m benchmarks.model_parallel [--repeats 5] [--devices 4] [--only w5,lstm,feed]

(a) W5's loop (shared/WORKLOADS.md) with its `x` update on a second device and its counter and
    predicate on the first, in the partitioned interpreter, against the same loop on one device
    (microseconds per iteration and their ratio): the cost of a distributed loop, whose
    predicate goes to the other device every iteration (a Send/Recv pair and a control loop).
(b) A 4-layer LSTM (`MultiRNNCell` of `DeviceWrapper`-ed cells, one layer per device, the
    paper's model-parallel layout) trained one step at a time, with `parallel_iterations` 1 and
    32, as a ratio to the same model on one device in the same engine. With 32 iterations in
    flight, layer k+1 of step t runs beside layer k of step t+1 on another device (the paper's
    pipelining); with 1, the devices take turns.
(c) A 20 MiB fed vector read in a loop body on the second device while the loop runs on the
    first (its Enter placed with the reader on the second device, or with a reader on the first
    one), against the same loop on one device: milliseconds per iteration, from the times of two
    trip counts, and per run. The feed crosses once per run, so the split loop should cost about
    what the one-device loop does; when it crossed at every use (issue 25) it cost 14-41 ms more
    per iteration.

On a machine without several accelerators, run it with virtual CPU devices (this module sets
`XLA_FLAGS=--xla_force_host_platform_device_count=N` when it starts JAX and the flag is unset);
they share the CPU's cores, so (b) shows the scheduling more than a speed-up.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time


def _devices_flag(count: int) -> None:
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={count}"


def _median(values: list[float]) -> float:
    return statistics.median(values)


def w5_split(n: int, repeats: int, split: bool, engine: str, threads: bool = True) -> list[float]:
    """Microseconds per iteration of W5, with the x update on device 1 when `split`; `threads`
    False runs the partitions by turns on one thread (`SessionConfig.partition_threads`)."""
    import sluice as sl

    g = sl.Graph()
    with g.as_default():
        limit = sl.placeholder(sl.int32, [], name="N")

        def body(i, x):
            with sl.device("/device:CPU:1" if split else None):
                x = x * 0.999 + 1.0
            return i + 1, x

        with sl.device("/device:CPU:0"):
            _, x = sl.while_loop(lambda i, x: i < limit, body, (sl.constant(0), sl.constant(0.0)))
    times = []
    config = sl.SessionConfig(engine=engine, partition_threads=threads)
    with sl.Session(graph=g, config=config) as sess:
        sess.run(x, {limit: 10})
        for _ in range(repeats):
            start = time.perf_counter()
            sess.run(x, {limit: n})
            times.append((time.perf_counter() - start) / n * 1e6)
    return times


def lstm_step_times(
    devices: int,
    parallel_iterations: int,
    repeats: int,
    engine: str,
    steps: int = 20,
    batch: int = 32,
    units: int = 256,
) -> list[float]:
    """Milliseconds per training step of a 4-layer LSTM, one layer per device (`devices` > 1)
    or all on one device."""
    import numpy as np

    import sluice as sl

    g = sl.Graph()
    with g.as_default():
        sl.set_random_seed(0)
        x = sl.placeholder(sl.float32, [batch, steps, units], name="x")
        cells = []
        for layer in range(4):
            cell = sl.nn.rnn_cell.BasicLSTMCell(units)
            if devices > 1:
                cell = sl.nn.rnn_cell.DeviceWrapper(cell, f"/device:CPU:{layer % devices}")
            cells.append(cell)
        outputs, _ = sl.nn.dynamic_rnn(
            sl.nn.rnn_cell.MultiRNNCell(cells),
            x,
            dtype=sl.float32,
            parallel_iterations=parallel_iterations,
        )
        loss = sl.reduce_mean(sl.square(outputs))
        train = sl.train.GradientDescentOptimizer(0.01).minimize(
            loss, colocate_gradients_with_ops=True
        )
        init = sl.global_variables_initializer()
    data = np.random.default_rng(0).normal(size=(batch, steps, units)).astype(np.float32)
    times = []
    with sl.Session(graph=g, config=sl.SessionConfig(engine=engine)) as sess:
        sess.run(init)
        sess.run([train, loss], {x: data})  # warm-up: plans, kernels
        for _ in range(repeats):
            start = time.perf_counter()
            sess.run([train, loss], {x: data})
            times.append((time.perf_counter() - start) * 1e3)
    return times


def feed_in_loop_times(
    repeats: int, engine: str, layout: str, short: int = 5, long: int = 45, mib: float = 20
) -> tuple[float, float]:
    """(ms per iteration, ms per run of `short` iterations) of a loop on CPU:0 whose body reads
    a fed `mib` MiB vector: on CPU:1 (`layout` "reader": its Enter placed there too), on CPU:0
    and then CPU:1 ("elsewhere": the Enter placed on CPU:0), or all on CPU:0 ("one")."""
    import numpy as np

    import sluice as sl

    size = int(mib * 1024 * 1024) // 4
    reader = "/device:CPU:0" if layout == "one" else "/device:CPU:1"
    g = sl.Graph()
    with g.as_default():
        n = sl.placeholder(sl.int32, [], name="n")
        big = sl.placeholder(sl.float32, [size], name="big")

        def body(i, acc):
            here = big[1] if layout == "elsewhere" else 0.0
            with sl.device(reader):
                there = big[0] * 2.0
            return i + 1, acc + here + there

        with sl.device("/device:CPU:0"):
            _, out = sl.while_loop(lambda i, acc: i < n, body, (sl.constant(0), sl.constant(0.0)))
    data = np.ones(size, np.float32)
    runs: dict[int, list[float]] = {short: [], long: []}
    with sl.Session(graph=g, config=sl.SessionConfig(engine=engine)) as sess:
        sess.run(out, {n: short, big: data})
        for _ in range(repeats):
            for iterations in (short, long):
                start = time.perf_counter()
                sess.run(out, {n: iterations, big: data})
                runs[iterations].append((time.perf_counter() - start) * 1e3)
    per_run = _median(runs[short])
    return (_median(runs[long]) - per_run) / (long - short), per_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--devices", type=int, default=4)
    parser.add_argument("--iterations", type=int, default=5000, help="W5's N")
    parser.add_argument("--only", default="w5,lstm,feed")
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = parser.parse_args()
    _devices_flag(args.devices)
    import jax

    results: dict = {"devices": [str(d) for d in jax.devices()]}
    only = set(args.only.split(","))
    if "w5" in only:
        for engine in ("interpreted", "auto"):
            one = _median(w5_split(args.iterations, args.repeats, False, "interpreted"))
            two = _median(w5_split(args.iterations, args.repeats, True, engine))
            results[f"w5_{engine}"] = {
                "one_device_us": one,
                "two_devices_us": two,
                "ratio": two / one,
            }
            print(
                f"(a) W5, {engine:11s}: one device {one:7.2f} us/iteration, split over two "
                f"{two:7.2f} us/iteration, ratio {two / one:.2f}"
            )
            turns = _median(w5_split(args.iterations, args.repeats, True, engine, False))
            results[f"w5_{engine}_one_thread"] = {"two_devices_us": turns, "ratio": turns / one}
            print(
                f"(a) W5, {engine:11s}: split over two, partitions by turns on one thread "
                f"{turns:7.2f} us/iteration, ratio {turns / one:.2f}"
            )
    if "lstm" in only:
        compiled = _median(lstm_step_times(1, 32, args.repeats, "compiled"))
        results["lstm_compiled_one_device_ms"] = compiled
        print(
            f"(b) 4-layer LSTM, the compiled engine on one device (one jax.jit step): "
            f"{compiled:8.1f} ms/step"
        )
        for engine in ("interpreted", "auto"):
            for pi in (1, 32):
                one = _median(lstm_step_times(1, pi, args.repeats, "interpreted"))
                many = _median(lstm_step_times(args.devices, pi, args.repeats, engine))
                results[f"lstm_{engine}_pi{pi}"] = {
                    "one_device_ms": one,
                    "devices_ms": many,
                    "ratio": many / one,
                }
                print(
                    f"(b) 4-layer LSTM, {engine:11s}, parallel_iterations={pi:2d}: one "
                    f"device {one:8.1f} ms/step, {args.devices} devices {many:8.1f} ms/step, "
                    f"ratio {many / one:.2f}"
                )
    if "feed" in only:
        per_iteration, per_run = feed_in_loop_times(args.repeats, "interpreted", "one")
        results["feed_one_device"] = {"ms_per_iteration": per_iteration, "ms_per_run_of_5": per_run}
        print(
            f"(c) 20 MiB feed read in a loop, interpreted, all on CPU:0      : "
            f"{per_iteration:6.2f} ms/iteration, {per_run:6.1f} ms/run of 5 iterations"
        )
        for engine in ("interpreted", "auto"):
            for layout, where in (
                ("reader", "its Enter on CPU:1"),
                ("elsewhere", "its Enter on CPU:0"),
            ):
                per_iteration, per_run = feed_in_loop_times(args.repeats, engine, layout)
                results[f"feed_{engine}_{layout}"] = {
                    "ms_per_iteration": per_iteration,
                    "ms_per_run_of_5": per_run,
                }
                print(
                    f"(c) 20 MiB feed read in a loop, {engine:11s}, {where:18s}: "
                    f"{per_iteration:6.2f} ms/iteration, {per_run:6.1f} ms/run of 5 iterations"
                )
    if args.json:
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
