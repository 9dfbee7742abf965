"""Cost of a cond with an expensive branch in the compiled engine: select vs lax.cond.

    y = cond(p, lambda: x * 2.0, lambda: tanh(x @ w) chained `depth` times)   x, w: n x n
    fetched: sum(y) (and sum(d sum(y) / dx)), so that a step moves no large array to the host

With the expensive branch untaken (p = True), a select computes it anyway and throws it away;
a lax.cond (what the compiled engine now emits for such a region) skips it. With it taken
(p = False), both do the same work. "select" is the earlier lowering, got back by forcing
`cond_regions.can_branch` to False while the step is compiled. The "+ gradient" rows also
fetch d sum(y) / dx: `sl.gradients` builds a cond's backward ops in a gradient cond context on
the same predicate, so they form a region of their own and lower by the same rule.
Run: python -m benchmarks.cond_cost [--n 1024] [--depth 4] [--repeats 10]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from unittest import mock

import jax
import numpy as np

import sluice as sl
from sluice.framework.compiler import cond_regions


def time_steps(n: int, depth: int, repeats: int, lowering: str, gradient: bool) -> dict:
    """Median milliseconds of one step, per predicate value."""
    rng = np.random.default_rng(0)
    g = sl.Graph()
    with g.as_default():
        x = sl.Variable(rng.normal(size=(n, n)).astype(np.float32), name="x")
        p = sl.placeholder(sl.bool, [], name="p")
        w = sl.constant((rng.normal(size=(n, n)) / np.sqrt(n)).astype(np.float32))

        def expensive():
            h = x
            for _ in range(depth):
                h = sl.tanh(sl.matmul(h, w))
            return h

        y = sl.reduce_sum(sl.cond(p, lambda: x * 2.0, expensive))
        fetches = [y] + ([sl.reduce_sum(sl.gradients(y, [x])[0])] if gradient else [])
    forced = mock.patch.object(cond_regions, "can_branch", lambda region: False)
    result = {}
    with sl.Session(graph=g, config=sl.SessionConfig(engine="compiled")) as sess:
        sess.run(sl.global_variables_initializer())
        with forced if lowering == "select" else contextlib.nullcontext():
            sess.run(fetches, {p: True})  # compiles the step
        for pred, label in ((True, "untaken"), (False, "taken")):
            sess.run(fetches, {p: pred})
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                sess.run(fetches, {p: pred})
                times.append((time.perf_counter() - start) * 1e3)
            result[label] = statistics.median(times)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    print(
        f"cond_cost: {args.depth} chained {args.n}x{args.n} matmuls in one branch, median of "
        f"{args.repeats}, jax {jax.__version__} on {jax.devices()[0].platform}"
    )
    print(f"{'step':24s} {'expensive untaken ms':>22s} {'expensive taken ms':>20s}")
    for gradient in (False, True):
        for lowering in ("select", "lax.cond"):
            r = time_steps(args.n, args.depth, args.repeats, lowering, gradient)
            name = lowering + (" + gradient" if gradient else "")
            print(f"{name:24s} {r['untaken']:>22.2f} {r['taken']:>20.2f}")


if __name__ == "__main__":
    main()
