"""Which ops the interpreted engine fuses: convex groups of pure ops within one frame.

A fused group runs when all its outside inputs have arrived, so it must be convex: no path may
leave the group and come back into it, or the group would wait on its own output. Groups are
found without searching paths. Give every op a stage: the most ops that cannot be fused (control
flow, stateful ops) on any path from the graph's sources to it, not counting loop back edges
(NextIteration feeds the next iteration, never the same one). Stages never decrease along an
edge, and increase across an op that cannot be fused. A group is a connected set of fusible ops
of one stage, joined by their data and control edges. A loop's Exit counts as following every
op of its loop: a path may enter the loop through an Enter and reach the Exit only through a
back edge, in a later iteration, and still lead back to the group. A path out of it and back would
pass an unfusible op (the stage rises) or a fusible op of a higher stage (else it would be in the
group), so it cannot come back to the group's stage: every group is convex. Edges between fusible
ops never cross a frame (only Enter and Exit do), so a group lies in one frame and one iteration.
"""

from __future__ import annotations

from sluice.framework.control_flow.context import while_context_of
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ir.string_values import on_strings


def fusible(op: Operation) -> bool:
    """Pure ops with a kernel: no control-flow primitive, no state, no effect outside the graph."""
    op_def = op.op_def
    return not (
        op_def.control_flow
        or op_def.stateful
        or op_def.host_only
        or op_def.kernel is None
        or op.type == "Placeholder"
        or on_strings(op)  # NumPy on the host (see `registry.register_string_kernel`)
    )


def fusion_groups(
    ops: list[Operation], fed: set[Tensor], device_of: dict | None = None
) -> list[list[Operation]]:
    """The convex groups of at least two fusible ops among `ops` (a pruned graph), each listed in
    an order that runs producers first. With `device_of` (a placement), a group holds ops of one
    device, and an edge between devices counts as an op that cannot be fused: a path that leaves
    for another device and comes back rises a stage, so groups stay convex across partitions."""
    inside = set(ops)
    producers = {
        op: [t.op for t in op.inputs if t not in fed and t.op in inside]
        + [c for c in op.control_inputs if c in inside]
        for op in ops
    }
    # Stages leave out back edges (out of NextIteration). An Exit waits for its whole loop, back
    # edges included: a path into a loop through an Enter may reach the Exit only through a later
    # iteration.
    stage_inputs = {op: [p for p in producers[op] if p.type != "NextIteration"] for op in ops}
    for loop, members in _loop_members(ops).items():
        for op in members:
            if op.type == "Exit" and op.control_flow_context is loop:
                stage_inputs[op] = stage_inputs[op] + [
                    m for m in members if not (m.type == "Exit" and m.control_flow_context is loop)
                ]
    order = _topological_order(ops, stage_inputs)
    can_fuse = {op: fusible(op) for op in order}
    stage: dict[Operation, int] = {}
    if device_of is None:
        for op in order:
            stage[op] = max((stage[p] + (not can_fuse[p]) for p in stage_inputs[op]), default=0)
    else:
        for op in order:
            here = device_of[op]
            stage[op] = max(
                (
                    stage[p] + (not can_fuse[p] or device_of[p] is not here)
                    for p in stage_inputs[op]
                ),
                default=0,
            )
    parent = {op: op for op in order if can_fuse[op]}

    def find(op: Operation) -> Operation:
        while parent[op] is not op:
            parent[op] = parent[parent[op]]
            op = parent[op]
        return op

    for op in parent:
        for p in producers[op]:
            if (
                p in parent
                and stage[p] == stage[op]
                and (device_of is None or device_of[p] is device_of[op])
            ):
                parent[find(p)] = find(op)
    groups: dict[Operation, list[Operation]] = {}
    for op in order:
        if op in parent:
            groups.setdefault(find(op), []).append(op)
    return [group for group in groups.values() if len(group) > 1]


def _loop_members(ops: list[Operation]) -> dict:
    """Each while loop -> the ops among `ops` inside it, nested loops included."""
    members: dict = {}
    for op in ops:
        loop = while_context_of(op.control_flow_context)
        while loop is not None:
            members.setdefault(loop, []).append(op)
            loop = while_context_of(loop.outer_context)
    return members


def _topological_order(ops: list[Operation], producers: dict) -> list[Operation]:
    """Producers before consumers (`producers` leaves out the loop back edges)."""
    waiting = {op: 0 for op in ops}
    consumers: dict[Operation, list[Operation]] = {op: [] for op in ops}
    for op in ops:
        for p in producers[op]:
            waiting[op] += 1
            consumers[p].append(op)
    order = [op for op in ops if waiting[op] == 0]
    for op in order:  # grows while it is walked
        for c in consumers[op]:
            waiting[c] -= 1
            if waiting[c] == 0:
                order.append(c)
    return order
