"""Data-parallel scaling: W1 and W4 under `sl.distribution.DataParallel` on 1, 2 and 4 devices.

    python -m benchmarks.scaling [--workloads W1,W4] [--devices 1,2,4] [--repeats 25]
        [--steps 1] [--batch-per-device W1=32,W4=4] [--json PATH] [--quick]

Each workload (shared/WORKLOADS.md) is built with the TF1 graph API, its placeholders shaped
[None, ...], and run by one session per configuration, all in one process:

  - "none": `sl.Session()` with no distribution, fed the per-device batch;
  - "k=1", "k=2", "k=4": `SessionConfig(distribution=DataParallel(devices[:k]))`, fed k times
    the per-device batch (weak scaling: the work per device is fixed).

The configurations take turns, `--steps` timed steps each per round (none, k=1, k=2, ...,
then k=1, k=2, ..., none, and so on), so a shared machine's slow spells fall on all of them.
The table gives the median and minimum ms per step over every timed step, compile
(first-step) time apart, `time(k) / time(k=1)` (ideal 1.0: each device does the same work
whatever k) and the overhead of DataParallel on one device against no distribution. A step
ends when its loss is a NumPy value on the host, as in `benchmarks.run`.

Before timing, each workload is checked: the losses of the first 3 steps on k devices equal
those of a session without distribution fed the same global batch, within 1e-5 relative.

Without several accelerators the devices are virtual CPU devices (this module sets
`XLA_FLAGS=--xla_force_host_platform_device_count=4` before JAX starts, unless a count is set
already; the flag leaves GPU and TPU platforms alone). Virtual devices share the machine's
cores: k times the work on the same cores, so there time(k) / time(1) grows with k, to about
k where one device's step already keeps every core busy (XLA's intra-op threads), or more with
the all-reduce; never below k / cores. The ratios then show the cost of the split, not a
speed-up; the DataParallel overhead on one device is meaningful on any machine.
"""

from __future__ import annotations

import os

# Before JAX starts (it reads XLA_FLAGS once): several host devices to build meshes from.
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
    ).strip()

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from typing import Any, Callable  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402

import sluice as sl  # noqa: E402
from benchmarks.sluice_impl import TrainGraph, rnn_graph, vgg_graph  # noqa: E402
from benchmarks.workloads import W1, W4, RnnWorkload, VggWorkload  # noqa: E402

WORKLOADS = {"W1": W1, "W4": W4}
# per device; W4's 32 (WORKLOADS.md) takes seconds a step at k=4 on a small CPU: shrunk by default
DEFAULT_BATCH = {"W1": 32, "W4": 4}
CHECK_STEPS = 3
CHECK_RTOL = 1e-5


def build_graph(w: RnnWorkload | VggWorkload) -> TrainGraph:
    return rnn_graph(w) if isinstance(w, RnnWorkload) else vgg_graph(w)


@dataclasses.dataclass
class Config:
    """One timed configuration: a session (with `devices` devices, or None: no distribution)
    and the batch it is fed."""

    label: str
    devices: int | None
    run: Callable[..., Any]
    global_batch: int
    compile_s: float = 0.0
    times_ms: list = dataclasses.field(default_factory=list)


def make_session(w: RnnWorkload | VggWorkload, devices: list | None) -> tuple[Any, TrainGraph]:
    """A fresh session over a fresh graph of `w`, under DataParallel on `devices` (None: no
    distribution), its variables initialized."""
    tg = build_graph(w)
    distribution = None if devices is None else sl.distribution.DataParallel(devices=devices)
    config = sl.SessionConfig(engine="compiled", distribution=distribution)
    sess = sl.Session(graph=tg.graph, config=config)
    sess.run(tg.init)
    return sess, tg


def stepper(sess: Any, tg: TrainGraph, x: np.ndarray, y: np.ndarray) -> Callable[..., Any]:
    """run(run_metadata=None) -> the loss of one training step on (x, y)."""
    feed = {tg.x: x, tg.y: y}
    return lambda run_metadata=None: sess.run([tg.loss, tg.train], feed, run_metadata=run_metadata)[
        0
    ]


def first_losses(name: str, run: Callable[..., Any]) -> tuple[list[float], float]:
    """The losses of the first CHECK_STEPS steps, and the first step's time (compile included).

    Raises:
      SystemExit: the step did not run as one compiled program (under a distribution, the
        interpreter's fallback is correct but not parallel: nothing to time).
    """
    metadata = sl.RunMetadata()
    start = time.perf_counter()
    losses = [float(run(metadata))]
    compile_s = time.perf_counter() - start
    if metadata.engine != "compiled":
        raise SystemExit(f"{name}: the step ran {metadata.engine}, not compiled")
    losses += [float(run()) for _ in range(CHECK_STEPS - 1)]
    return losses, compile_s


def rel_diff(a: list[float], b: list[float]) -> float:
    return max(abs(p - q) / max(abs(q), 1e-30) for p, q in zip(a, b))


def setup(w: RnnWorkload | VggWorkload, batch: int, ks: list[int]) -> tuple[list[Config], dict]:
    """The sessions of one workload, compiled, checked (first 3 losses against no distribution
    on the same global batch) and warmed up."""
    devices = jax.devices()
    data = dataclasses.replace(w, batch=batch * max(ks)).data()
    configs, check = [], {}
    sess, tg = make_session(w, None)
    none = Config("none", None, stepper(sess, tg, data[0][:batch], data[1][:batch]), batch)
    none_losses, none.compile_s = first_losses(f"{w.name}, no distribution", none.run)
    configs.append(none)
    for k in ks:
        x, y = data[0][: k * batch], data[1][: k * batch]
        sess, tg = make_session(w, devices[:k])
        config = Config(f"k={k}", k, stepper(sess, tg, x, y), k * batch)
        losses, config.compile_s = first_losses(f"{w.name} on {k} devices", config.run)
        if k == 1:
            reference = none_losses  # the same batch
        else:  # one device without distribution, on this global batch
            sess, tg = make_session(w, None)
            reference, _ = first_losses(f"{w.name}, no distribution", stepper(sess, tg, x, y))
        diff = rel_diff(losses, reference)
        check[f"k={k}"] = {"losses": losses, "reference": reference, "max_rel_diff": diff}
        if diff > CHECK_RTOL:
            raise SystemExit(
                f"{w.name}: losses on {k} devices {losses} differ from one device's "
                f"{reference} on the same batch (relative {diff:.2e} > {CHECK_RTOL})"
            )
        configs.append(config)
    for config in configs:  # warm-up: two more steps each
        config.run()
        config.run()
    return configs, check


def time_alternating(configs: list[Config], repeats: int, steps: int) -> None:
    """`steps` timed steps of each configuration in turn, `repeats` times round; each round
    starts one configuration later, so no configuration is always first."""
    for r in range(repeats):
        for config in configs[r % len(configs) :] + configs[: r % len(configs)]:
            for _ in range(steps):
                start = time.perf_counter()
                np.asarray(config.run())
                config.times_ms.append((time.perf_counter() - start) * 1e3)


def summarize(configs: list[Config]) -> dict:
    rows = {}
    for c in configs:
        rows[c.label] = {
            "devices": c.devices,
            "global_batch": c.global_batch,
            "compile_s": c.compile_s,
            "steps": len(c.times_ms),
            "median_ms": statistics.median(c.times_ms),
            "min_ms": min(c.times_ms),
        }
    one = rows.get("k=1")
    for row in rows.values():
        if row["devices"] is not None and one is not None:
            row["ratio_to_k1"] = row["median_ms"] / one["median_ms"]
        row["samples_per_s"] = row["global_batch"] / row["median_ms"] * 1e3
    return rows


def print_table(name: str, batch: int, rows: dict, check: dict) -> None:
    print(f"\n### {name}, {batch} samples per device\n")
    print(
        "| config | devices | global batch | median ms | min ms | time(k)/time(1) "
        "| samples/s | compile s |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, r in rows.items():
        ratio = f"{r['ratio_to_k1']:.2f}" if "ratio_to_k1" in r else "-"
        print(
            f"| {label} | {r['devices'] or '- (no distribution)'} | {r['global_batch']} "
            f"| {r['median_ms']:.2f} | {r['min_ms']:.2f} | {ratio} | {r['samples_per_s']:.0f} "
            f"| {r['compile_s']:.2f} |"
        )
    if "k=1" in rows:
        overhead = rows["k=1"]["median_ms"] / rows["none"]["median_ms"] - 1
        low = rows["k=1"]["min_ms"] / rows["none"]["min_ms"] - 1
        print(
            f"\nDataParallel on one device against no distribution: {overhead:+.1%} (median), "
            f"{low:+.1%} (min); goal <= 5%"
        )
    diffs = ", ".join(f"{k} {c['max_rel_diff']:.1e}" for k, c in check.items())
    print(
        f"Check, first {CHECK_STEPS} losses against one device on the same global batch "
        f"(max relative difference): {diffs}"
    )


def parse_batches(text: str | None, names: list[str]) -> dict[str, int]:
    """`--batch-per-device`: "16" (every workload) or "W1=32,W4=4" (the rest default)."""
    batches = {name: DEFAULT_BATCH[name] for name in names}
    for item in (text or "").split(","):
        if not item:
            continue
        name, _, value = item.rpartition("=")
        for key in [name] if name else names:
            batches[key] = int(value)
    return batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="W1,W4", help="some of W1,W4")
    parser.add_argument(
        "--devices",
        default=None,
        help="mesh sizes k, k=1 the baseline (default 1,2,4; 1,2 with --quick)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=25,
        help="rounds over the configurations (each times --steps steps)",
    )
    parser.add_argument(
        "--steps", type=int, default=1, help="timed steps per configuration per round"
    )
    parser.add_argument(
        "--batch-per-device",
        default=None,
        help=f"samples per device: N, or e.g. W4=8 (default {DEFAULT_BATCH})",
    )
    parser.add_argument("--json", default=None, help="also write the results to this file")
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: W1 only, devices 1,2, 1 round of 3 steps"
    )
    args = parser.parse_args()
    names = ["W1"] if args.quick else args.workloads.split(",")
    repeats, steps = (1, 3) if args.quick else (args.repeats, args.steps)
    unknown = set(names) - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workloads {sorted(unknown)}; expected some of {list(WORKLOADS)}")
    devices = args.devices or ("1,2" if args.quick else "1,2,4")
    ks = sorted({int(k) for k in devices.split(",")} | {1})
    available = jax.devices()
    if max(ks) > len(available):
        print(f"only {len(available)} devices: skipping k > {len(available)}")
        ks = [k for k in ks if k <= len(available)]
    batches = parse_batches(args.batch_per_device, names)

    kind = available[0].device_kind
    machine = (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"{len(available)} x {kind} ({available[0].platform}), jax {jax.__version__}"
    )
    print(f"sluice DataParallel scaling on {machine}")
    print(
        f"per-device batch fixed ({', '.join(f'{n} {batches[n]}' for n in names)}), global "
        f"batch k x that; {repeats} rounds x {steps} timed steps per configuration, taking "
        f"turns; compile time apart"
    )
    if available[0].platform == "cpu":
        print(
            f"NOTE: the {len(available)} devices are virtual CPU devices sharing "
            f"{os.cpu_count()} cores: time(k)/time(1) is 1.0 only on real devices; here k "
            f"devices do k times the work on the same cores, so it grows with k, between "
            f"k/{os.cpu_count()} and k (or more, with the all-reduce)."
        )
    results: dict = {"machine": machine, "repeats": repeats, "steps": steps, "workloads": {}}
    for name in names:
        w = WORKLOADS[name]
        configs, check = setup(w, batches[name], ks)
        time_alternating(configs, repeats, steps)
        rows = summarize(configs)
        print_table(w.name, batches[name], rows, check)
        results["workloads"][w.name] = {
            "batch_per_device": batches[name],
            "rows": rows,
            "check": check,
        }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2, default=float)
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
