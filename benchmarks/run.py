"""Times the workloads of shared/WORKLOADS.md for sluice, a hand-written JAX baseline and peers.

    python -m benchmarks [--only W1,W5] [--steps 20] [--peers] [--keras-fit] [--json PATH]

Rows of W1-W3: `jax` (benchmarks/jax_baseline.py), `sluice TF1` (`dynamic_rnn` over
`BasicLSTMCell`/`GRUCell`, Adam, the compiled engine: benchmarks/sluice_impl.py), `sluice keras`
(Sequential LSTM/GRU + Dense, Adam, `train_on_batch`: benchmarks/keras_impl.py) and, with
--peers, `pytorch` and `tf1 graph` when installed (benchmarks/peers.py; PyTorch is the optional
`bench` extra). W4 has the same rows but Keras's; W5 reports microseconds per loop iteration.
A step ends when its loss is a NumPy value on the host, in every row.

Per row: the first call's time (compile), then the median and minimum ms per step over `--steps`
steps, timed alternately with the workload's other rows in one sitting (`time_rows`), its ratio
to the JAX row and to the PyTorch row (step time over theirs: below 1 is faster), and its
achieved GFLOP/s: the step's FLOPs counted from the model's shapes (benchmarks/flops.py says
how, and how the count compares with XLA's) over the median step time, and that as a fraction
of the rate of one float32 2048x2048 matmul measured at the start of the same run ("of
matmul": how far the step is from what this machine does on the friendliest work; the best of
7 calls, as the median of a matmul on a loaded machine is the load's). The matmul is measured
again at the end; the two differ when the machine's load changed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import time
from typing import Any, Callable

import jax
import numpy as np

from benchmarks import flops, jax_baseline, keras_impl, sluice_impl
from benchmarks.peer_process import PeerProcess, Timed
from benchmarks.workloads import W1, W2, W3, W4, W5_NAME


def _to_host(value: Any) -> None:
    # Every row ends with the step's loss on the host, as a training loop that logs it does:
    # sess.run returns NumPy (TF1 semantics), so the JAX and PyTorch rows pay that copy too.
    np.asarray(value)


def time_steps(run: Callable, args: tuple, steps: int, warmup: int = 2) -> dict:
    """One row timed alone: its first call (compile), `warmup` calls, then `steps` timed calls."""
    return time_rows({"row": (run, args)}, steps, warmup, rounds=1)["row"]


def time_rows(runs: dict, steps: int, warmup: int = 2, rounds: int = 5) -> dict:
    """Rows timed alternately in one sitting: each row's first call (compile) and warm-up, then
    `rounds` rounds in which every row runs steps/rounds timed steps in turn, so that load from
    elsewhere on the machine falls on all rows alike. `runs` maps a row to (run, args).

    Each row's turn starts with one untimed step: the row before it may leave threads busy
    (PyTorch's OpenMP workers spin for milliseconds after a parallel region, in this process
    or in the peer's own) and the caches filled with its data."""
    rows, times = {}, {}
    for name, (run, args) in runs.items():
        start = time.perf_counter()
        _to_host(run(*args))
        rows[name] = {"compile_s": time.perf_counter() - start}
        for _ in range(warmup):
            _to_host(run(*args))
        times[name] = []
    rounds = max(1, min(rounds, steps))
    for r in range(rounds):
        for name, (run, args) in runs.items():
            _to_host(run(*args))
            for _ in range(steps * (r + 1) // rounds - steps * r // rounds):
                start = time.perf_counter()
                result = run(*args)
                _to_host(result)
                elapsed = (time.perf_counter() - start) * 1e3
                # a step run in another process is timed there, without the pipe's round trip
                times[name].append(float(result) if isinstance(result, Timed) else elapsed)
    for name, row in rows.items():
        row.update(median_ms=statistics.median(times[name]), min_ms=min(times[name]), steps=steps)
    return rows


MATMUL_N = 2048  # the reference matmul: [N, N] @ [N, N] in float32

# --passes: the TF1 rows (all loop passes, the default) beside the compiled engine without any
# and with each one alone, to see what each pass is worth
PASS_ROWS = {
    "no passes": (),
    "hoist pass only": ("hoist_input_projection",),
    "batch-grad pass only": ("batch_weight_gradient",),
    "transpose pass only": ("transpose_invariant_weight",),
    "packed pass only": ("packed_recurrent_matmul",),
    "defaults and hoist": (
        "batch_weight_gradient",
        "transpose_invariant_weight",
        "packed_recurrent_matmul",
        "hoist_input_projection",
    ),
    # the defaults without sluice's native kernel: what a machine without it runs
    "no native kernel": ("batch_weight_gradient", "transpose_invariant_weight"),
}
KERAS_FIT_STEPS = 10  # --keras-fit: training steps per timed fit


def bench_rnn(
    w, steps: int, engines: list[str], peers: bool, passes: bool = False, keras_fit: bool = False
) -> dict:
    x, y = w.data()
    runs = {"jax": jax_baseline.rnn_step(w)}
    for engine in engines:
        runs[_tf1_row(engine)] = sluice_impl.rnn_step(w, engine)[0]
    runs["sluice keras"] = keras_impl.rnn_step(w)
    if keras_fit:
        runs["sluice keras fit"] = keras_impl.fit_step(w, KERAS_FIT_STEPS)
    if passes:
        for label, subset in PASS_ROWS.items():
            runs[f"sluice {label}"] = sluice_impl.rnn_step(w, "compiled", graph_passes=subset)[0]
    if peers:
        from benchmarks import peers as peer_impl

        runs.update(peer_impl.rnn_runs(w))
    with _own_process_peers(w, peers, runs):
        rows = time_rows({name: (run, (x, y)) for name, run in runs.items()}, steps)
    if keras_fit:
        rows["sluice keras fit"] = _per_step(rows["sluice keras fit"], KERAS_FIT_STEPS)
    return rows


def _tf1_row(engine: str) -> str:
    return "sluice TF1" if engine == "compiled" else f"sluice TF1 {engine}"


def _per_step(row: dict, k: int) -> dict:
    """A row whose calls each ran k training steps, per step (its compile_s stays per call)."""
    return {**row, "median_ms": row["median_ms"] / k, "min_ms": row["min_ms"] / k, "per_call": k}


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
    runs = {"jax": jax_baseline.vgg_step(w)}
    for engine in engines:
        runs[_tf1_row(engine)] = sluice_impl.vgg_step(w, engine)[0]
    if peers:
        from benchmarks import peers as peer_impl

        runs.update(peer_impl.vgg_runs(w))
    with _own_process_peers(w, peers, runs):
        return time_rows({name: (run, (x, y)) for name, run in runs.items()}, steps)


# --torch-threads and --torch-flush-denormal, for the peers' own process too
PEER_SETTINGS = {"threads": 0, "flush_denormal": False}


@contextlib.contextmanager
def _own_process_peers(w, peers: bool, runs: dict):
    """Adds each peer's row run in a process of its own ("<peer>, own process": no sluice
    imported there, so its C allocator is as the peer's users have it; see
    benchmarks/peer_process.py) to `runs` while the rows are timed."""
    if not peers:
        yield
        return
    settings = (PEER_SETTINGS["threads"], PEER_SETTINGS["flush_denormal"])
    child = PeerProcess.for_workload(w.name.split()[0], *settings)
    try:
        for name in child.names:
            runs[f"{name}, own process"] = child.run(name)
        yield
    finally:
        child.close()


def bench_while(steps: int, n_compiled: int, n_interpreted: int) -> dict:
    rows = {}
    loop = jax_baseline.while_loop_run()
    rows["jax"] = _per_iteration(time_steps(loop, (n_compiled,), steps), n_compiled)
    run, _ = sluice_impl.while_loop_run("compiled")
    rows["sluice TF1"] = _per_iteration(time_steps(run, (n_compiled,), steps), n_compiled)
    run, _ = sluice_impl.while_loop_run("interpreted")
    rows["sluice TF1 interpreted"] = _per_iteration(
        time_steps(run, (n_interpreted,), max(3, steps // 4)), n_interpreted
    )
    return rows


def _per_iteration(row: dict, n: int) -> dict:
    row = dict(row)
    row["n"] = n
    row["median_us_per_iter"] = row["median_ms"] * 1e3 / n
    row["min_us_per_iter"] = row["min_ms"] * 1e3 / n
    return row


def count_flops(w, xla: bool) -> dict:
    """Our count of w's step (flops.py) and, with `xla`, XLA's count of the JAX baseline's step:
    its scan unrolled so that every time step counts (XLA counts a loop's body once)."""
    counted = flops.step_flops(w).as_dict()
    if xla:
        x, y = w.data()
        if hasattr(w, "cell"):
            lowered = jax_baseline.rnn_step(w, unroll=True).lowered(x, y)
        else:
            lowered = jax_baseline.vgg_step(w).lowered(x, y)
        counted["xla"] = flops.xla_flops(lowered)
        counted["xla_over_ours"] = counted["xla"] / counted["total"]
    return counted


def add_rates(rows: dict, step_flops: int, matmul_gflops: float) -> None:
    """Each row's GFLOP/s, its fraction of the matmul rate and its ratios to the JAX and
    PyTorch rows (step time over theirs: below 1 is faster)."""
    for row in rows.values():
        row["gflops"] = step_flops / (row["median_ms"] * 1e-3) / 1e9
        row["of_matmul"] = row["gflops"] / matmul_gflops
        for peer, key in (("jax", "vs_jax"), ("pytorch", "vs_pytorch")):
            if peer in rows:
                row[key] = row["median_ms"] / rows[peer]["median_ms"]


def print_table(name: str, rows: dict, unit: str = "ms") -> None:
    key = "median_ms" if unit == "ms" else "median_us_per_iter"
    low = "min_ms" if unit == "ms" else "min_us_per_iter"
    base = rows["jax"]
    rates = "gflops" in base
    print(f"\n{name}")
    header = f"  {'engine':22s} {'median ' + unit:>12s} {'min ' + unit:>10s} {'vs jax':>7s}"
    if rates:
        header += f" {'vs torch':>8s} {'GFLOP/s':>8s} {'of matmul':>9s}"
    print(header + f" {'compile s':>10s}")
    for engine, row in rows.items():
        line = f"  {engine:22s} {row[key]:12.3f} {row[low]:10.3f} {row[key] / base[key]:7.2f}"
        if rates:
            vs_torch = f"{row['vs_pytorch']:8.2f}" if "vs_pytorch" in row else f"{'':8s}"
            line += f" {vs_torch} {row['gflops']:8.2f} {row['of_matmul']:9.1%}"
        print(line + f" {row['compile_s']:10.2f}")


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
        "--torch-threads",
        type=int,
        help="torch.set_num_threads for the pytorch rows (default: torch's own, the cores)",
    )
    parser.add_argument(
        "--torch-flush-denormal",
        action="store_true",
        help="torch.set_flush_denormal(True) for the pytorch rows (XLA flushes denormals by"
        " default; PyTorch does not, and its W2 LSTM slows ~10x on Intel CPUs as values go"
        " denormal)",
    )
    parser.add_argument(
        "--passes",
        action="store_true",
        help="also time W1-W3 compiled without the loop passes and with each one alone",
    )
    parser.add_argument(
        "--keras-fit",
        action="store_true",
        help=f"also time the Keras model's fit ({KERAS_FIT_STEPS} steps per call) on W1-W3",
    )
    parser.add_argument(
        "--swap",
        action="store_true",
        help="time the overhead of swap_memory=True on W2 (interpreted is slow)",
    )
    parser.add_argument(
        "--no-xla-flops",
        action="store_true",
        help="skip XLA's FLOP count of the JAX baseline (lowering W2 unrolled takes seconds)",
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
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores,"
        f" {jax.devices()[0].device_kind}, jax {jax.__version__}"
    )
    print(f"sluice benchmarks on {machine}; {args.steps} timed steps per row")
    PEER_SETTINGS.update(threads=args.torch_threads or 0, flush_denormal=args.torch_flush_denormal)
    if args.peers and args.torch_threads:
        from benchmarks import peers as peer_impl

        peer_impl.set_torch_threads(args.torch_threads)
    if args.peers and args.torch_flush_denormal:
        from benchmarks import peers as peer_impl

        peer_impl.set_torch_flush_denormal()
    matmul = flops.matmul_rate(MATMUL_N)
    print(
        f"float32 matmul {MATMUL_N}x{MATMUL_N} (jitted, best of {matmul['repeats']}):"
        f" {matmul['best_gflops']:.1f} GFLOP/s (median {matmul['median_gflops']:.1f});"
        " each row's 'of matmul' is its rate over the best"
    )
    results: dict = {
        "machine": machine,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "torch_threads": args.torch_threads,
        "torch_flush_denormal": args.torch_flush_denormal,
        "matmul": {"before": matmul},
        "flops": {},
        "workloads": {},
    }

    def finish(w, rows: dict) -> None:
        counted = count_flops(w, xla=not args.no_xla_flops)
        add_rates(rows, counted["total"], matmul["best_gflops"])
        note = f"{counted['total'] / 1e9:.3f} GFLOP per step"
        if "xla" in counted:
            note += f"; XLA counts {counted['xla'] / 1e9:.3f} ({counted['xla_over_ours']:.2f}x)"
        print_table(f"{w.name} ({note})", rows)
        results["flops"][w.name] = counted
        results["workloads"][w.name] = rows

    for w in (W1, W2, W3):
        if w.name.split()[0] in only:
            finish(w, bench_rnn(w, args.steps, engines, args.peers, args.passes, args.keras_fit))
    if args.swap:
        rows = bench_swap(W2, max(3, args.steps // 2))
        print_table("W2 lstm_long, swap_memory overhead", rows)
        results["workloads"]["W2 swap_memory"] = rows
    if "W4" in only:
        finish(W4, bench_vgg(W4, max(5, args.steps // 4), engines, args.peers))
    if "W5" in only:
        rows = bench_while(args.steps, args.w5_n, 10_000)
        print_table(W5_NAME, rows, unit="us/iter")
        results["workloads"][W5_NAME] = rows
    after = flops.matmul_rate(MATMUL_N)
    results["matmul"]["after"] = after
    print(
        f"\nfloat32 matmul again after the workloads: best {after['best_gflops']:.1f} GFLOP/s"
        f" ({after['best_gflops'] / matmul['best_gflops']:.2f}x the first),"
        f" median {after['median_gflops']:.1f}"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2, default=float)
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
