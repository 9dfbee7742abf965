"""Where the time of a compiled step goes, kernel by kernel, grouped by what each kernel does.

Used by `python -m benchmarks.step_breakdown --profile`. XLA:CPU reports one profiler event per
kernel it runs (with `--xla_cpu_enable_xprof_traceme=true`, which `enable()` sets before JAX
starts its backend); the optimized HLO says what each kernel is and whether it sits in a loop
body. Categories:

- matmul: a dot (or a fusion around one: XLA:CPU's YNNPACK fusions), or sluice's panel matmul
  (a custom call), in a loop body or not;
- stack write / stack read: a dynamic-update-slice or dynamic-slice fusion (saving a loop value
  for the gradient, or reading it back);
- buffer init: a broadcast that fills a buffer (the zeros of the stacks before a loop);
- copy, convolution, reduction, and elementwise for every other fusion.

Times are summed over all events of the profiled steps and divided by the step count; kernels
of a step may overlap (XLA:CPU runs independent kernels concurrently), so the sum can exceed
the step's wall time.
"""

from __future__ import annotations

import collections
import glob
import gzip
import json
import os
import re
import tempfile
from typing import Callable

FLAG = "--xla_cpu_enable_xprof_traceme=true"

_COMPUTATION = re.compile(r"^(?:ENTRY )?%(\S+) \(")
_INSTRUCTION = re.compile(r"^\s+(?:ROOT )?%(\S+) = \S+ (\S+?)\((.*)$")


def enable() -> None:
    """Asks XLA:CPU for per-kernel profiler events; call before JAX initialises its backend."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "xprof_traceme" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {FLAG}".strip()


def classify(hlo_text: str) -> dict[str, tuple[str, bool]]:
    """instruction name -> (category, inside a loop body) for every kernel of an HLO module."""
    bodies: dict[str, list[str]] = {}  # computation -> its instruction lines
    current = None
    for line in hlo_text.splitlines():
        m = _COMPUTATION.match(line)
        if m:
            current = m.group(1)
            bodies[current] = []
        elif current is not None and line.startswith("  "):
            bodies[current].append(line)
    loop_bodies = set()
    for lines in bodies.values():
        for line in lines:
            loop_bodies.update(re.findall(r"body=%(\S+?)[,}\s]", line))
    # computations called from a loop body are inside it too (fusions' and nested loops')
    changed = True
    while changed:
        changed = False
        for name in list(loop_bodies):
            for line in bodies.get(name, []):
                for callee in re.findall(r"(?:calls|body|condition|to_apply)=%(\S+?)[,}\s]", line):
                    if callee not in loop_bodies:
                        loop_bodies.add(callee)
                        changed = True
    kinds = {}
    for comp, lines in bodies.items():
        for line in lines:
            m = _INSTRUCTION.match(line)
            if not m:
                continue
            name, opcode, rest = m.groups()
            called = re.findall(r"calls=%(\S+?)[,}\s]", rest)
            inner = " ".join(" ".join(bodies.get(c, [])) for c in called)
            category = _category(opcode, inner)
            if opcode == "custom-call" and "panel_matmul" in rest:
                category = "matmul"  # sluice's own kernel (sluice/framework/native)
            kinds[name] = (category, comp in loop_bodies)
    return kinds


def _category(opcode: str, inner: str) -> str:
    if opcode == "dot" or " dot(" in inner:
        return "matmul"
    if opcode == "convolution" or " convolution(" in inner:
        return "convolution"
    if opcode == "dynamic-update-slice" or "dynamic-update-slice(" in inner:
        return "stack write"
    if opcode == "dynamic-slice" or "dynamic-slice(" in inner:
        return "stack read"
    if opcode == "copy" or (inner and _only(inner, "copy")):
        return "copy"
    if opcode == "broadcast" or (inner and _only(inner, "broadcast")):
        return "buffer init"
    if opcode in ("reduce", "reduce-window") or " reduce(" in inner:
        return "reduction"
    if opcode in ("fusion", "concatenate", "transpose", "slice", "pad") or inner:
        return "elementwise"
    return "other"


def _only(inner: str, opcode: str) -> bool:
    ops = set(re.findall(r"= \S+ ([a-z-]+)\(", inner)) - {"parameter", "constant", "bitcast"}
    return ops == {opcode}


def profile(step: Callable[[], object], hlo_text: str, steps: int = 5) -> dict:
    """{(category, in loop): ms per step} from `steps` runs of `step` under the profiler."""
    import jax

    kinds = classify(hlo_text)
    with tempfile.TemporaryDirectory() as folder:
        with jax.profiler.trace(folder):
            for _ in range(steps):
                jax.block_until_ready(step())
        files = glob.glob(f"{folder}/**/*.trace.json.gz", recursive=True)
        if not files:
            return {}
        with gzip.open(files[0]) as f:
            events = json.load(f)["traceEvents"]
    totals: dict = collections.Counter()
    for e in events:
        if e.get("ph") == "X" and e.get("name") in kinds:
            totals[kinds[e["name"]]] += e["dur"] / 1e3 / steps
    return dict(totals)


def print_profile(totals: dict, wall_ms: float) -> None:
    if not totals:
        print("    (no kernel events: was XLA_FLAGS set before JAX started?)")
        return
    print(f"    {'kernels':28s} {'ms/step':>9s} {'share':>7s}")
    whole = sum(totals.values())
    for (category, in_loop), ms in sorted(totals.items(), key=lambda kv: -kv[1]):
        where = "in loops" if in_loop else "outside loops"
        print(f"    {category + ', ' + where:28s} {ms:9.2f} {ms / whole:7.1%}")
    print(f"    {'sum of kernels':28s} {whole:9.2f}   (step wall time {wall_ms:.2f} ms)")
