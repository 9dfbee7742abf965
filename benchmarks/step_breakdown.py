"""Where a compiled sluice step's time goes, next to the hand-written JAX step.

    python -m benchmarks.step_breakdown [--only W1,W4] [--steps 30] [--profile] [--no-passes]

Per workload: the JAX baseline's step; `Session.run`; the compiled step's jitted function called
directly (no session bookkeeping, feeds already on the device), and the number of kernels
(fusions and custom calls) in each optimized XLA program. A gap between the session and the
direct call is host overhead; a gap between the direct call and JAX is the lowered graph.
`--profile` adds, for both programs, the time of their kernels grouped by what they do
(matmuls in loops and outside, stack writes, buffer initialisation, elementwise fusions: see
`benchmarks.kernel_profile`); `--no-passes` lowers sluice's RNN steps without the loop passes
(`SessionConfig(graph_passes=())`), to see what they change.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time

import jax
import numpy as np

from benchmarks import jax_baseline, kernel_profile, sluice_impl
from benchmarks.workloads import W1, W2, W3, W4


def median_ms(fn, steps: int) -> float:
    for _ in range(3):
        jax.block_until_ready(fn())
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def kernel_count(hlo_text: str) -> int:
    """Top-level kernels XLA launches: fusions, custom calls (cuDNN, cuBLAS) and loops' bodies."""
    # over all computations, so a loop body's kernels count once
    return len(re.findall(r"= \S+ (?:fusion|custom-call|convolution|dot)\(", hlo_text))


def breakdown(
    w, steps: int, dump: str | None = None, profile: bool = False, passes: bool = True
) -> None:
    x, y = w.data()
    is_rnn = hasattr(w, "cell")
    base = (jax_baseline.rnn_step if is_rnn else jax_baseline.vgg_step)(w)
    if is_rnn:
        run, sess = sluice_impl.rnn_step(w, "compiled", graph_passes=None if passes else ())
    else:
        run, sess = sluice_impl.vgg_step(w, "compiled")
    print(f"\n{w.name}")
    print(f"  jax baseline step          {median_ms(lambda: base(x, y), steps):9.3f} ms")
    to_numpy_ms = median_ms(lambda: np.asarray(base(x, y)), steps)
    print(f"  jax step + loss to NumPy   {to_numpy_ms:9.3f} ms")
    print(f"  sluice Session.run         {median_ms(lambda: run(x, y), steps):9.3f} ms")
    step = next(s for s in sess._compiled.values() if getattr(s, "feeds", None))  # not the init
    state, feeds = sess._state, [jax.device_put(x), jax.device_put(y)]
    numpy_in_ms = median_ms(lambda: np.asarray(step.run(state, [x, y])[0]), steps)
    print(f"  CompiledStep.run, NumPy in {numpy_in_ms:9.3f} ms")
    device_in_ms = median_ms(lambda: step.run(state, feeds), steps)
    print(f"  CompiledStep.run           {device_in_ms:9.3f} ms")

    def direct():
        variables = state.variables
        written = {h: variables.pop(h) for h in step.written}
        read = {h: variables[h] for h in step.handles - step.written}
        out = step._jitted(written, read, {}, feeds)
        variables.update(out[2])
        return out

    direct_ms = median_ms(direct, steps)
    print(f"  sluice jitted step alone   {direct_ms:9.3f} ms")
    variables = state.variables
    args = (
        {h: variables[h] for h in step.written},
        {h: variables[h] for h in step.handles - step.written},
        {},
        feeds,
    )
    ours = jax.jit(step._step).lower(*args).compile().as_text()
    theirs = base.compiled_text(x, y)
    if dump:
        tag = w.name.split()[0]
        for who, text in (("sluice", ours), ("jax", theirs)):
            with open(f"{dump}/{tag}_{who}.hlo.txt", "w") as f:
                f.write(text)
    print(f"  kernels in the XLA program: sluice {kernel_count(ours)}, JAX {kernel_count(theirs)}")
    if profile:
        print("  sluice's kernels:")
        kernel_profile.print_profile(kernel_profile.profile(direct, ours), direct_ms)
        print("  the JAX baseline's kernels:")
        base_ms = median_ms(lambda: base(x, y), steps)
        kernel_profile.print_profile(kernel_profile.profile(lambda: base(x, y), theirs), base_ms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="W1,W3,W4")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--dump", help="write both optimized XLA programs into this folder")
    parser.add_argument("--profile", action="store_true", help="time kernels by category")
    parser.add_argument("--no-passes", action="store_true", help="RNNs without the loop passes")
    args = parser.parse_args()
    if args.profile:
        kernel_profile.enable()  # before JAX starts its backend
    print(f"step breakdown on {jax.devices()[0].device_kind}, jax {jax.__version__}")
    for w in (W1, W2, W3, W4):
        if w.name.split()[0] in args.only.split(","):
            breakdown(w, args.steps, args.dump, args.profile, not args.no_passes)


if __name__ == "__main__":
    main()
