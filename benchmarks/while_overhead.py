"""W5 of shared/WORKLOADS.md: per-iteration cost of a scalar while loop.

    (i, x) -> (i + 1, x * 0.999 + 1.0) while i < N, forward only, N fed at run time.

Times sluice's interpreted engine (N = 10,000) and a `jax.lax.while_loop` under `jax.jit`
(N = 1,000,000) in one process and prints microseconds per iteration (median and min).
Run: python benchmarks/while_overhead.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import jax
import jax.numpy as jnp

import sluice as sl


def time_sluice(n: int, repeats: int, engine: str = "interpreted") -> list[float]:
    g = sl.Graph()
    with g.as_default():
        limit = sl.placeholder(sl.int32, [], name="N")
        _, x = sl.while_loop(
            lambda i, x: i < limit,
            lambda i, x: (i + 1, x * 0.999 + 1.0),
            (sl.constant(0), sl.constant(0.0)),
        )
    times = []
    with sl.Session(graph=g, config=sl.SessionConfig(engine=engine)) as sess:
        sess.run(x, {limit: 10})  # warm-up: plans and per-op kernels
        for _ in range(repeats):
            start = time.perf_counter()
            sess.run(x, {limit: n})
            times.append((time.perf_counter() - start) / n * 1e6)
    return times


def time_jax(n: int, repeats: int) -> list[float]:
    @jax.jit
    def loop(limit):
        return jax.lax.while_loop(
            lambda s: s[0] < limit,
            lambda s: (s[0] + 1, s[1] * jnp.float32(0.999) + jnp.float32(1.0)),
            (jnp.int32(0), jnp.float32(0.0)),
        )[1]

    loop(jnp.int32(10)).block_until_ready()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        loop(jnp.int32(n)).block_until_ready()
        times.append((time.perf_counter() - start) / n * 1e6)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n-interpreted", type=int, default=10_000)
    parser.add_argument("--n-compiled", type=int, default=1_000_000)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    rows = {
        "sluice interpreted": (args.n_interpreted, time_sluice(args.n_interpreted, args.repeats)),
        "jax.lax.while_loop (jit)": (args.n_compiled, time_jax(args.n_compiled, args.repeats)),
    }
    print(
        f"W5 while_overhead, {args.repeats} repeats,"
        f" jax {jax.__version__} on {jax.devices()[0].platform}"
    )
    print(f"{'engine':28s} {'N':>10s} {'median us/iter':>15s} {'min us/iter':>12s}")
    for name, (n, times) in rows.items():
        print(f"{name:28s} {n:>10d} {statistics.median(times):>15.3f} {min(times):>12.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({k: {"n": n, "us_per_iter": t} for k, (n, t) in rows.items()}, f, indent=2)


if __name__ == "__main__":
    main()
