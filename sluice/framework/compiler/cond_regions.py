"""Cond regions of the compiled engine: what one `sl.cond` built, as one unit of its frame.

A cond region is the ops of a cond's two branch contexts (with the conds and while loops nested
in them) and the Merges that close it. `fold_cond_regions` makes each region one unit of its
frame's order (like a child frame) and classifies it; `lowering_cond` lowers it, to a select or
to one `jax.lax.cond`:

    if pred is known while tracing or is dead:     select    (the untaken side is dead: free)
    elif region.cheap:                             select
    elif not region.branchable:                    select
    else:                                          lax.cond

Cheap and safe (`is_cheap_and_safe`): every op of the region, at any depth, is one whose
registry entry says `select_safe` (elementwise ops defined on every input, shape ops,
Switch/Merge/Identity/Const, variable reads: no matmul, conv, reduction, gather, division,
logarithm, loop, stack, assignment or random op), every output has a fully known shape, and the
outputs hold at most CHEAP_ELEMENTS elements in all. Computing such a region on both sides costs
about what the select itself costs, and a garbage input cannot make it fault, run long or leave
a NaN behind; a `lax.cond` would only add a branch (on a GPU, a device-to-host copy of the
predicate) and stop XLA from fusing across it.

A region cannot branch (`can_branch`) when an op of its own (not of a loop inside it) pushes on
a stack, whose per-iteration writes must stay in the enclosing loop, when a loop inside it
swaps saved values to host memory, which a branch of an XLA conditional cannot hold, or when an
op in it checks values (CheckNumerics): its failure must reach the step's outputs.

The gradient of a cond is a cond region too: `sl.gradients` builds the gradient ops of a branch
in a `GradCondContext` of that branch (on the same predicate, nested in the backward loop when
the cond is in a loop), entered through the Switch of grad(Merge) and left through the Merge of
grad(Switch). It is lowered by the same rule, so the gradient of an expensive branch that was
not taken costs nothing either.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sluice.framework.compiler.frame import Frame, topological_order
from sluice.framework.control_flow.cond_context import CondContext
from sluice.framework.control_flow.context import output_context
from sluice.framework.ir.graph import Operation, Tensor

CHEAP_ELEMENTS = 1 << 16  # all outputs of a region that stays a select, in elements


@dataclasses.dataclass(eq=False)
class CondRegion:
    """One cond of a frame: its branch ops, nested units and closing Merges, as one unit."""

    pred: Tensor  # the cond's pred_id: every capture Switch of both branches switches on it
    contexts: dict[int, CondContext] = dataclasses.field(default_factory=dict)  # branch -> ctx
    members: list = dataclasses.field(default_factory=list)  # its units of the enclosing order
    order: list = dataclasses.field(default_factory=list)  # ops, Frames, CondRegions; deps first
    ops: list[Operation] = dataclasses.field(default_factory=list)  # every op, at any depth
    cheap: bool = False  # is_cheap_and_safe
    branchable: bool = True  # can_branch


def is_cheap_and_safe(region: CondRegion) -> bool:
    """True when both branches may simply be computed (see the module docstring)."""
    if any(isinstance(u, Frame) for u in _walk(region)):
        return False
    elements = 0
    for op in region.ops:
        if not op.op_def.select_safe:
            return False
        for t in op.outputs:
            if not t.shape.is_fully_defined():
                return False
            elements += t.shape.num_elements()
    return elements <= CHEAP_ELEMENTS


def can_branch(region: CondRegion) -> bool:
    """False when the region must stay a select (see the module docstring)."""
    for u in _walk(region):
        if isinstance(u, Frame):
            if u.ctx.swap_memory or any(op.op_def.check is not None for op in u.ops):
                return False
        elif isinstance(u, Operation) and (u.type == "StackPushV2" or u.op_def.check is not None):
            return False
    return True


def _walk(region: CondRegion):
    """The region's ops (nested conds included) and loops, with the loops nested in those."""
    for u in region.members:
        yield u
        if isinstance(u, Frame):
            yield from _frames_in(u)


def _frames_in(frame: Frame):
    for child in frame.children:
        yield child
        yield from _frames_in(child)


# -- grouping a frame's order into regions ------------------------------------------------------
def fold_cond_regions(frame: Frame, deps: dict) -> list:
    """`frame.order` with each cond region's ops and child frames replaced by one CondRegion,
    ordered again by `deps` (each op's or child frame's units it depends on). Where a region
    cannot be one unit (a dependency cycle through it), its ops stay units of their own."""
    return _fold(frame.order, deps, {frame.ctx})


def _fold(units: list, deps: dict, level: set) -> list:
    regions: dict[Tensor, CondRegion] = {}
    home: dict[Any, CondRegion] = {}
    for u in units:
        branch = _branch_of(u, level)
        if branch is not None:
            region = regions.setdefault(branch.pred, CondRegion(branch.pred))
            region.contexts[branch.branch] = branch
            region.members.append(u)
            home[u] = region
    if not regions:
        return list(units)
    for region in regions.values():
        region.order = _fold(region.members, deps, set(region.contexts.values()))
        region.ops = [op for u in region.members for op in _ops_of(u)]
        region.cheap = is_cheap_and_safe(region)
        region.branchable = can_branch(region)
    folded = [u for u in units if u not in home] + list(regions.values())
    present = set(folded)
    folded_deps = {}
    for u in folded:
        members = u.members if isinstance(u, CondRegion) else [u]
        sources = {home.get(d, d) for m in members for d in deps[m]}
        folded_deps[u] = {d for d in sources if d in present and d is not u}
    order = topological_order(folded, folded_deps)
    return order if len(order) == len(folded) else list(units)


def _branch_of(unit: Any, level: set) -> CondContext | None:
    """The outermost cond branch below the contexts `level` that `unit` (an op or a child frame)
    lies in; for a Merge closing a cond of this level, that cond's branch; else None."""
    ctx = unit.control_flow_context if isinstance(unit, Operation) else unit.ctx.outer_context
    found = None
    while ctx not in level:
        if ctx is None or ctx.is_while:
            return None  # a Merge closing the enclosing cond: a member of that cond itself
        if isinstance(ctx, CondContext):
            found = ctx
        ctx = ctx.outer_context
    if found is None and isinstance(unit, Operation) and unit.type == "Merge":
        found = _closed_branch(unit)
    return found


def _closed_branch(merge: Operation) -> CondContext | None:
    """For a Merge of `sl.cond` (one input from each branch of one cond), one of its branches."""
    if len(merge.inputs) != 2:
        return None
    branches = [output_context(t.op) for t in merge.inputs]
    if not all(isinstance(b, CondContext) for b in branches):
        return None
    (a, b), home = branches, merge.control_flow_context
    if a.pred is not b.pred or {a.branch, b.branch} != {0, 1}:
        return None
    return a if a.outer_context is home and b.outer_context is home else None


def _ops_of(unit: Any) -> list[Operation]:
    """An op, or every op of a loop and of the loops nested in it."""
    if isinstance(unit, Operation):
        return [unit]
    out = list(unit.ops)
    for child in unit.children:
        out.extend(_ops_of(child))
    return out
