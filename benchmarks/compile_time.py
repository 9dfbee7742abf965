"""Compile time of char-rnn's training graph, statically unrolled and as a dynamic_rnn loop.

    python -m benchmarks.compile_time [--steps 20] [--unrolled] [--only static,dynamic]

For each graph (see `benchmarks.char_rnn`): the time to build it; the first `Session.run` of a
training step, split into planning (pruning, the Plan, grouping frames, finding repeats),
tracing the lowering into a jaxpr, lowering the jaxpr to StableHLO and XLA's compile (JAX's own
compile events), the rest being the run itself; the step after an op was added to the graph
(an assign, as char-rnn adds once per epoch: it must not compile again); and the median and
minimum of `--steps` steady-state steps. `--unrolled` adds the static graph with repeats not
rolled (`SessionConfig(roll_repeats=False)`), which is what every static graph compiled before
rolling existed: expect minutes on a small CPU.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import statistics
import time
from typing import Any, Iterator

import jax

import sluice as sl
from benchmarks import char_rnn
from sluice.framework import session as session_module

_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "xla",
}


@dataclasses.dataclass
class Report:
    graph: str
    ops: int
    build_s: float
    first_step_s: float
    plan_s: float
    trace_s: float
    lower_s: float
    xla_s: float
    after_new_op_s: float
    compiles_after_new_op: int
    step_ms_median: float
    step_ms_min: float
    rolled: list


@contextlib.contextmanager
def timed_planning(phases: dict[str, float]) -> Iterator[None]:
    """Adds the time the session spends making its Plan and CompiledStep objects to
    `phases["plan"]` (seconds) while entered."""

    def timed(cls):
        class Timed(cls):  # a subclass: the session still recognises its instances
            def __init__(self, *args, **kwargs):
                start = time.perf_counter()
                try:
                    super().__init__(*args, **kwargs)
                finally:
                    phases["plan"] += time.perf_counter() - start

        return Timed

    plan, step = session_module.Plan, session_module.CompiledStep
    session_module.Plan, session_module.CompiledStep = timed(plan), timed(step)
    try:
        yield
    finally:
        session_module.Plan, session_module.CompiledStep = plan, step


@contextlib.contextmanager
def _timed_phases(phases: dict[str, float]) -> Iterator[None]:
    """Adds JAX's compile events and the session's planning to `phases` (seconds)."""

    def listen(event: str, duration: float, **_: Any) -> None:
        if event in _EVENTS:
            phases[_EVENTS[event]] += duration

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        with timed_planning(phases):
            yield
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)


def measure(name: str, static: bool, roll: bool, steps: int) -> Report:
    model = char_rnn.CharRnn()
    start = time.perf_counter()
    g = char_rnn.build(model, static)
    build_s = time.perf_counter() - start
    # (spelled so that the script also runs on a sluice from before rolling and
    # RunMetadata.compiles)
    config = sl.SessionConfig(**({} if roll else {"roll_repeats": False}))
    sess = sl.Session(graph=g.graph, config=config)
    sess.run(g.init)
    x, y = model.data()
    state = sess.run(g.initial_state)
    initial = jax.tree_util.tree_leaves(g.initial_state)
    fetches = [g.loss, g.final_state, g.train]

    def step(meta: sl.RunMetadata | None = None) -> None:
        nonlocal state
        feed = {g.inputs: x, g.targets: y, **dict(zip(initial, jax.tree_util.tree_leaves(state)))}
        _, state, _ = sess.run(fetches, feed, run_metadata=meta)

    phases = dict.fromkeys(["plan", "trace", "lower", "xla"], 0.0)
    meta = sl.RunMetadata()
    with _timed_phases(phases):
        start = time.perf_counter()
        step(meta)
        first_s = time.perf_counter() - start
    rolled = [op for p, op in meta.graph_passes if p == "roll_repeats"]
    with g.graph.as_default():  # char-rnn's once-per-epoch learning-rate assign
        sess.run(g.lr.assign(model.learning_rate * 0.97))
    after = sl.RunMetadata()
    start = time.perf_counter()
    step(after)
    after_s = time.perf_counter() - start
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1e3)
    sess.close()
    return Report(
        name,
        len(g.graph.get_operations()),
        build_s,
        first_s,
        phases["plan"],
        phases["trace"],
        phases["lower"],
        phases["xla"],
        after_s,
        getattr(after, "compiles", -1),
        statistics.median(times),
        min(times),
        rolled,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="steady-state steps timed")
    parser.add_argument("--only", default="static,dynamic", help="graphs: static, dynamic")
    parser.add_argument(
        "--unrolled",
        action="store_true",
        help="also the static graph with roll_repeats=False (slow)",
    )
    parser.add_argument("--json", help="write the reports to this file")
    args = parser.parse_args()
    wanted = args.only.split(",")
    runs = [(f"{g}", g == "static", True) for g in ("static", "dynamic") if g in wanted]
    if args.unrolled:
        runs.append(("static, not rolled", True, False))
    reports = []
    print(f"char-rnn: {char_rnn.CharRnn()}")
    print(
        f"{'graph':<20}{'ops':>6}{'build':>8}{'first':>8}{'plan':>7}{'trace':>7}{'lower':>7}"
        f"{'xla':>7}{'+op':>7}{'step ms':>9}{'min':>7}  rolled"
    )
    for name, static, roll in runs:
        r = measure(name, static, roll, args.steps)
        reports.append(r)
        print(
            f"{r.graph:<20}{r.ops:>6}{r.build_s:>8.2f}{r.first_step_s:>8.2f}{r.plan_s:>7.2f}"
            f"{r.trace_s:>7.2f}{r.lower_s:>7.2f}{r.xla_s:>7.2f}{r.after_new_op_s:>7.2f}"
            f"{r.step_ms_median:>9.1f}{r.step_ms_min:>7.1f}  {len(r.rolled)} scans",
            flush=True,
        )
    print(
        "seconds, except step ms; +op: the first step after an assign was added "
        f"(compiles: {[r.compiles_after_new_op for r in reports]})"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump([dataclasses.asdict(r) for r in reports], f, indent=1)


if __name__ == "__main__":
    main()
