"""Times the workloads of shared/WORKLOADS.md for sluice and a hand-written JAX baseline.

    python -m benchmarks [--only W1,W5] [--steps 20] [--peers] [--json benchmarks/results.json]

For each workload and engine: compile (first-step) time, then the median and minimum ms per
step over `--steps` steps after warm-up, and the ratio to the JAX baseline timed in the same
process; a step ends when its loss is a NumPy value on the host, in every row. W5 reports
microseconds per loop iteration. With --peers, PyTorch and TensorFlow 1.x graph mode are timed
too when installed (optional; never needed by the tests).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from typing import Any, Callable

import jax
import numpy as np

from benchmarks import jax_baseline, sluice_impl
from benchmarks.workloads import W1, W2, W3, W4, W5_NAME


def _to_host(value: Any) -> None:
    # Every row ends with the step's loss on the host, as a training loop that logs it does:
    # sess.run returns NumPy (TF1 semantics), so the JAX and PyTorch rows pay that copy too.
    np.asarray(value)


def time_steps(run: Callable, args: tuple, steps: int, warmup: int = 2) -> dict:
    start = time.perf_counter()
    _to_host(run(*args))
    compile_s = time.perf_counter() - start
    for _ in range(warmup):
        _to_host(run(*args))
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        _to_host(run(*args))
        times.append((time.perf_counter() - start) * 1e3)
    return {
        "compile_s": compile_s,
        "median_ms": statistics.median(times),
        "min_ms": min(times),
        "steps": steps,
    }


# --passes: the compiled engine with each loop pass alone and with both (the default is none)
PASS_ROWS = {
    "hoist pass": ("hoist_input_projection",),
    "batch-grad pass": ("batch_weight_gradient",),
    "both passes": ("hoist_input_projection", "batch_weight_gradient"),
}


def bench_rnn(w, steps: int, engines: list[str], peers: bool, passes: bool = False) -> dict:
    x, y = w.data()
    rows = {"jax": time_steps(jax_baseline.rnn_step(w), (x, y), steps)}
    for engine in engines:
        run, _ = sluice_impl.rnn_step(w, engine)
        rows[f"sluice {engine}"] = time_steps(run, (x, y), steps)
    if passes:
        for label, subset in PASS_ROWS.items():
            run, _ = sluice_impl.rnn_step(w, "compiled", graph_passes=subset)
            rows[f"sluice {label}"] = time_steps(run, (x, y), steps)
    if peers:
        from benchmarks import peers as peer_impl

        rows.update(peer_impl.rnn(w, x, y, steps, time_steps))
    return rows


def bench_swap(w, steps: int) -> dict:
    """The time overhead of swap_memory=True on W2, per engine."""
    x, y = w.data()
    rows = {"jax": time_steps(jax_baseline.rnn_step(w), (x, y), steps)}
    for engine, n in (("compiled", steps), ("interpreted", 3)):
        for swap in (False, True):
            # a 16 MiB limit makes the interpreter's policy swap (W2 saves ~45 MB per step)
            run, _ = sluice_impl.rnn_step(w, engine, swap_memory=swap, device_memory_limit=16 << 20)
            rows[f"sluice {engine}{' swap' if swap else ''}"] = time_steps(run, (x, y), n, warmup=1)
    return rows


def bench_vgg(w, steps: int, engines: list[str], peers: bool) -> dict:
    x, y = w.data()
    rows = {"jax": time_steps(jax_baseline.vgg_step(w), (x, y), steps)}
    for engine in engines:
        run, _ = sluice_impl.vgg_step(w, engine)
        rows[f"sluice {engine}"] = time_steps(run, (x, y), steps)
    if peers:
        from benchmarks import peers as peer_impl

        rows.update(peer_impl.vgg(w, x, y, steps, time_steps))
    return rows


def bench_while(steps: int, n_compiled: int, n_interpreted: int) -> dict:
    rows = {}
    loop = jax_baseline.while_loop_run()
    rows["jax"] = _per_iteration(time_steps(loop, (n_compiled,), steps), n_compiled)
    run, _ = sluice_impl.while_loop_run("compiled")
    rows["sluice compiled"] = _per_iteration(time_steps(run, (n_compiled,), steps), n_compiled)
    run, _ = sluice_impl.while_loop_run("interpreted")
    rows["sluice interpreted"] = _per_iteration(
        time_steps(run, (n_interpreted,), max(3, steps // 4)), n_interpreted
    )
    return rows


def _per_iteration(row: dict, n: int) -> dict:
    row = dict(row)
    row["n"] = n
    row["median_us_per_iter"] = row["median_ms"] * 1e3 / n
    row["min_us_per_iter"] = row["min_ms"] * 1e3 / n
    return row


def print_table(name: str, rows: dict, unit: str = "ms") -> None:
    base = rows["jax"]
    key = "median_ms" if unit == "ms" else "median_us_per_iter"
    low = "min_ms" if unit == "ms" else "min_us_per_iter"
    print(f"\n{name}")
    print(
        f"  {'engine':22s} {'median ' + unit:>12s} {'min ' + unit:>10s} {'ratio':>7s}"
        f" {'compile s':>10s}"
    )
    for engine, row in rows.items():
        ratio = row[key] / base[key]
        print(
            f"  {engine:22s} {row[key]:12.3f} {row[low]:10.3f} {ratio:7.2f}"
            f" {row['compile_s']:10.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="W1,W2,W3,W4,W5")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument(
        "--interpreted",
        action="store_true",
        help="also time the interpreted engine on W1-W4 (slow)",
    )
    parser.add_argument(
        "--peers", action="store_true", help="also time PyTorch and TF1 if installed"
    )
    parser.add_argument(
        "--passes",
        action="store_true",
        help="also time W1-W3 compiled with each loop pass alone and with both",
    )
    parser.add_argument(
        "--swap",
        action="store_true",
        help="time the overhead of swap_memory=True on W2 (interpreted is slow)",
    )
    parser.add_argument("--json", default="benchmarks/results.json")
    parser.add_argument(
        "--w5-n",
        type=int,
        default=1_000_000,
        help="W5 iterations for compiled engines (a GPU runs ~1e5/s: use fewer there)",
    )
    args = parser.parse_args()
    only = set(args.only.split(","))
    engines = ["compiled"] + (["interpreted"] if args.interpreted else [])
    machine = (
        f"{platform.processor() or platform.machine()}, {jax.devices()[0].device_kind},"
        f" jax {jax.__version__}"
    )
    print(f"sluice benchmarks on {machine}; {args.steps} timed steps per row")
    results: dict = {"machine": machine, "workloads": {}}
    for w in (W1, W2, W3):
        if w.name.split()[0] in only:
            rows = bench_rnn(w, args.steps, engines, args.peers, args.passes)
            print_table(w.name, rows)
            results["workloads"][w.name] = rows
    if args.swap:
        rows = bench_swap(W2, max(3, args.steps // 2))
        print_table("W2 lstm_long, swap_memory overhead", rows)
        results["workloads"]["W2 swap_memory"] = rows
    if "W4" in only:
        rows = bench_vgg(W4, max(5, args.steps // 4), engines, args.peers)
        print_table(W4.name, rows)
        results["workloads"][W4.name] = rows
    if "W5" in only:
        rows = bench_while(args.steps, args.w5_n, 10_000)
        print_table(W5_NAME, rows, unit="us/iter")
        results["workloads"][W5_NAME] = rows
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2, default=float)
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
