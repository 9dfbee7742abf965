"""The partitioner: one subgraph per device, joined by Send/Recv pairs (whitepaper §6).

Every edge that placement cuts becomes one Send on the source's device and one Recv on the
destination's, one pair per (tensor, destination device) however many ops there use the tensor;
a cut control edge gets a pair too, carrying only the dead bit. A pair is keyed by the source
device, the destination device and the tensor's name; at run time the frame and iteration of the
value complete the key (see `rendezvous`), so values of different iterations never meet.

A loop-invariant Enter (`is_constant`: it hands the same value to every iteration) whose value
another device reads is not cut: that device runs a copy of the Enter (`Partition.enters`), fed
by the Enter's own input (a feed, a local value, or one Send/Recv pair outside the loop), so the
value crosses once per run instead of once per iteration. A cut after the Enter would send it
again in every iteration (a 20 MB feed read by a loop on another device cost ~20 ms each).

A Recv outside every loop is a source node of its partition. A Recv inside a loop needs a
per-iteration trigger in its partition, which may hold nothing else of that loop: for every
(loop, device) with a cut edge inside the loop, the destination device gets a control loop,

    Enter(0) -> Merge -> Switch(pred) -> NextIteration -> Merge,   Switch:0 -> Exit

whose Switch takes the loop's predicate (received from the device of the LoopCond when that is
another one), and whose Merge fires once per iteration and triggers the loop's Recvs there.
Nested loops stack their control loops: the outer control loop's Merge feeds the inner one's
Enter; the outermost Enter takes a constant. A device that holds only an outer loop's nodes gets
no inner control loop. This is TensorFlow's construction, with the frame leader (the device of
the LoopCond) broadcasting the predicate to every participating device each iteration.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sluice.framework.control_flow.context import output_context, while_context_of
from sluice.framework.ir import errors
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.placement.devices import LocalDevice, local_devices


@dataclasses.dataclass(eq=False)
class CutEdge:
    """One Send/Recv pair: `tensor` (None for a control edge from `src`) to `dst_device`."""

    src: Operation
    tensor: Tensor | None
    src_device: LocalDevice
    dst_device: LocalDevice
    frame: Any  # the WhileContext both ends are in, or None outside every loop

    @property
    def edge_name(self) -> str:
        return self.tensor.name if self.tensor is not None else f"^{self.src.name}"

    @property
    def key(self) -> tuple[str, str, str]:
        """(source device, destination device, tensor): the rendezvous key, less the frame and
        iteration that the run adds."""
        return (self.src_device.name, self.dst_device.name, self.edge_name)


@dataclasses.dataclass(eq=False)
class ControlLoop:
    """The control-loop state machine of one loop on one device (see the module docstring)."""

    frame: Any  # the WhileContext
    device: LocalDevice
    outer: ControlLoop | None  # the control loop of the enclosing loop on this device
    predicate: Tensor  # the loop's LoopCond output
    predicate_edge: CutEdge | None  # how the predicate comes, when it is computed elsewhere


@dataclasses.dataclass(eq=False)
class Partition:
    """The subgraph one device runs."""

    device: LocalDevice
    ops: list[Operation]
    sends: list[CutEdge]
    recvs: list[CutEdge]
    control_loops: list[ControlLoop]
    # copies of loop-invariant Enters placed elsewhere whose value this device reads
    enters: list[Operation] = dataclasses.field(default_factory=list)

    def recv_frame(self, edge: CutEdge) -> ControlLoop | None:
        """The control loop that triggers a Recv inside a loop (None: a source node)."""
        if edge.frame is None:
            return None
        for loop in self.control_loops:
            if loop.frame is edge.frame:
                return loop
        raise errors.InternalError(None, edge.src, f"No control loop for Recv {edge.key}.")


def partition(
    ops: list[Operation],
    placement: dict[Operation, LocalDevice],
    fed: set[Tensor],
    fed_ops: frozenset[Operation],
) -> list[Partition]:
    """Splits a pruned graph (`ops` in creation order) by device, in the order of
    `local_devices()` (the default device's partition first, when it has ops)."""
    by_device: dict[LocalDevice, Partition] = {}
    for op in ops:
        device = placement[op]
        part = by_device.get(device)
        if part is None:
            part = by_device[device] = Partition(device, [], [], [], [])
        part.ops.append(op)
    edges: dict[tuple, CutEdge] = {}

    def cut(src: Operation, tensor: Tensor | None, dst_device: LocalDevice) -> CutEdge:
        key = (tensor if tensor is not None else src, dst_device)
        edge = edges.get(key)
        if edge is None:
            frame = while_context_of(output_context(src))
            edge = edges[key] = CutEdge(src, tensor, placement[src], dst_device, frame)
            by_device[placement[src]].sends.append(edge)
            by_device[dst_device].recvs.append(edge)
        return edge

    mirrored: dict[tuple[Operation, LocalDevice], Any] = {}  # (Enter, device) -> its frame

    def bring(t: Tensor, device: LocalDevice) -> None:
        """Makes `t`, computed on another device, available on `device`."""
        if not _is_invariant_enter(t.op):
            cut(t.op, t, device)
        elif (t.op, device) not in mirrored:
            mirrored[(t.op, device)] = while_context_of(output_context(t.op))
            by_device[device].enters.append(t.op)
            source = t.op.inputs[0]
            if source not in fed and placement[source.op] is not device:
                bring(source, device)  # a feed needs nothing: every partition is fed

    for op in ops:
        device = placement[op]
        for t in op.inputs:
            if t not in fed and placement[t.op] is not device:
                bring(t, device)
        for c in op.control_inputs:
            if c not in fed_ops and placement[c] is not device:
                cut(c, None, device)

    loop_conds = {
        while_context_of(op.control_flow_context): op for op in ops if op.type == "LoopCond"
    }
    control_loops: dict[tuple[Any, LocalDevice], ControlLoop] = {}

    def control_loop(frame: Any, device: LocalDevice) -> ControlLoop:
        loop = control_loops.get((frame, device))
        if loop is not None:
            return loop
        outer_frame = while_context_of(frame.outer_context)
        outer = control_loop(outer_frame, device) if outer_frame is not None else None
        cond = loop_conds.get(frame)
        if cond is None:
            raise errors.InternalError(
                None,
                None,
                f"The loop {frame.name!r} spans devices but has no LoopCond in the "
                "graph that runs: a cross-device loop needs its predicate.",
            )
        predicate = cond.outputs[0]
        edge = cut(cond, predicate, device) if placement[cond] is not device else None
        loop = control_loops[(frame, device)] = ControlLoop(frame, device, outer, predicate, edge)
        by_device[device].control_loops.append(loop)
        return loop

    for edge in list(edges.values()):  # a predicate edge added on the way needs no second loop
        if edge.frame is not None:
            control_loop(edge.frame, edge.dst_device)
    for (_, device), frame in mirrored.items():  # its iterations need the loop's predicate
        control_loop(frame, device)
    for part in by_device.values():  # outer loops first, so an inner one finds its outer Merge
        part.control_loops.sort(key=lambda loop: _depth(loop.frame))
    order = {device: i for i, device in enumerate(local_devices())}
    return sorted(by_device.values(), key=lambda part: order[part.device])


def _is_invariant_enter(op: Operation) -> bool:
    # with control inputs, a copy would have to wait for them too: those stay cut
    return op.type == "Enter" and bool(op.get_attr("is_constant")) and not op.control_inputs


def _depth(frame: Any) -> int:
    depth = 0
    while frame is not None:
        depth += 1
        frame = while_context_of(frame.outer_context)
    return depth
