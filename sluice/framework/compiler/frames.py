"""Groups a pruned graph's ops by while frame, in an order the compiled engine can trace.

`build_frames(ops)` gives the root Frame; each Frame holds its ops, its child frames (nested
loops) and `order`: its ops, child frames and cond regions (see `lowering_cond`), dependencies
first, with a loop's back edges (NextIteration -> Merge) left out. With `roll=True`, copies of one
computation that a Python loop built in the root frame become one unit each (a `Repeat`, lowered
as one scan; see `repeats`).
"""

from __future__ import annotations

from typing import Any, Iterable

from sluice.framework.compiler.cond_regions import fold_cond_regions
from sluice.framework.compiler.frame import Frame, NotLowerable, all_ops, topological_order
from sluice.framework.compiler.repeats import find_repeats
from sluice.framework.control_flow.context import while_context_of
from sluice.framework.control_flow.structure import is_back_edge
from sluice.framework.ir.graph import Operation, Tensor


def build_frames(
    ops: list[Operation],
    fed: Iterable[Tensor] = (),
    fetched: Iterable[Tensor] = (),
    roll: bool = False,
) -> Frame:
    """Groups the pruned ops by while frame and orders each frame's ops and child frames; with
    `roll`, folds the root frame's repeats (`fed`: tensors given by the run, `fetched`: those it
    returns)."""
    frames: dict[Any, Frame] = {}

    def frame_of(ctx: Any) -> Frame:
        if ctx not in frames:
            parent = None
            if ctx is not None:
                outer = while_context_of(ctx.outer_context)
                parent = frame_of(outer)
            frames[ctx] = Frame(ctx, parent)
            if parent is not None:
                parent.children.append(frames[ctx])
        return frames[ctx]

    root = frame_of(None)
    for op in ops:
        if op.type in ("Enter", "Exit", "NextIteration") and not _in_a_loop(op):
            raise NotLowerable(
                f"{op.type} op {op.name} belongs to no while_loop (a loop wired by hand from the "
                "primitives): the compiled engine lowers the loops while_loop builds"
            )
    owner: dict[Operation, Frame] = {}
    for op in ops:
        ctx = op.control_flow_context
        loop = while_context_of(ctx)
        frame = frame_of(loop)
        frame.ops.append(op)
        owner[op] = frame
    for frame in frames.values():
        _order_frame(frame, owner)
    if roll:
        root.order = roll_repeats(root.order, ops, set(fed), set(fetched))
    return root


def roll_repeats(units: list, ops: list[Operation], fed: set, fetched: set) -> list:
    """`units` (a frame's order) with the ops of each repeat replaced by the Repeat, ordered
    again; `units` unchanged when there is none (or the new order would have a cycle)."""
    repeats = find_repeats(units, ops, fed, fetched)
    if not repeats:
        return units
    rolled = {op for r in repeats for op in r.ops}
    folded = [u for u in units if u not in rolled] + repeats
    unit_of = {op: u for u in folded for op in _ops_of(u)}
    deps: dict[Any, set] = {}
    for u in folded:
        sources = {
            unit_of.get(src)
            for op in _ops_of(u)
            for src in [t.op for t in op.inputs] + list(op.control_inputs)
        }
        deps[u] = {d for d in sources if d is not None and d is not u}
    order = topological_order(folded, deps)
    return order if len(order) == len(folded) else units


def _ops_of(unit: Any) -> list[Operation]:
    """The ops of a unit of a frame's order: an op, a child frame, a cond region, a repeat."""
    if isinstance(unit, Operation):
        return [unit]
    return all_ops(unit) if isinstance(unit, Frame) else list(unit.ops)


def _order_frame(frame: Frame, owner: dict[Operation, Frame]) -> None:
    """Kahn's order of a frame's ops (without its Enters and Exits) and its child frames, with
    the ops and child frames of each cond region grouped into one `CondRegion` unit."""

    def unit(op: Operation) -> Any:
        """The op itself if it is evaluated in this frame's body, the child frame holding it if it
        is nested, None if it is given from outside (or is this frame's Enter or Exit)."""
        f = owner.get(op)
        if f is frame:
            return None if op.type in ("Enter", "Exit") else op
        while f is not None and f.parent is not frame:
            f = f.parent
        return f

    units: list[Any] = [op for op in frame.ops if op.type not in ("Enter", "Exit")] + frame.children
    deps: dict[Any, set] = {u: set() for u in units}
    for u in units:
        sources: list[Operation] = []
        if isinstance(u, Frame):
            for op in u.ops:
                if op.type == "Enter":
                    sources.extend(t.op for t in op.inputs)
                    sources.extend(op.control_inputs)
        else:
            for t in u.inputs:
                if is_back_edge(u, t):
                    continue
                sources.append(t.op)
            sources.extend(u.control_inputs)
        for src in sources:
            d = unit(src)
            if d is not None and d is not u:
                deps[u].add(d)
    frame.order = topological_order(units, deps)
    if len(frame.order) != len(units):
        raise NotLowerable("a cycle other than a loop back edge was found")
    frame.order = fold_cond_regions(frame, deps)


def _in_a_loop(op: Operation) -> bool:
    return while_context_of(op.control_flow_context) is not None
