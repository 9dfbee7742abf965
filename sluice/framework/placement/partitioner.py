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

Two cheaper stand-ins, since a distributed loop pays for its control nodes every iteration:
- A device that holds one of the loop's own Merges (a loop variable's) needs no control loop to
  trigger its Recvs: that Merge fires once in every iteration, the last included, and never
  waits for a value of its own iteration, exactly as the control loop's Merge does
  (`Partition.triggers`).
- The loop body's pivot (the Identity of a loop Switch's true output, on which TF1 makes the
  body's input-less ops depend) is live exactly in the iterations whose predicate is true. A
  control edge from it to another device is not cut: there, a loop Switch of the same loop, or
  the control loop's Switch, gives the same signal from the predicate the device has anyway
  (`Partition.pivots`), without a Send/Recv pair per iteration.
- A device that holds only body ops of a top-level loop, fed by devices that hold the loop's
  Merges, needs no control loop at all: the values sent to it make its iterations there, and
  each sender's end-of-frame message ends the loop there (`SenderDriven`). W5's loop split in
  two sends one value each way per iteration, and no predicate.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sluice.framework.control_flow.context import output_context, while_context_of
from sluice.framework.control_flow.structure import is_loop_merge, is_loop_switch
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
        """(source device, destination device, tensor): what the edge is. The rendezvous keys
        its values by the CutEdge itself (both partitions' plans have it; hashed by identity,
        faster than this tuple), with the frame and iteration that the run adds."""
        return (self.src_device.name, self.dst_device.name, self.edge_name)

    def __repr__(self) -> str:  # in a rendezvous key, in errors
        return repr(self.key)


@dataclasses.dataclass(eq=False)
class ControlLoop:
    """The control-loop state machine of one loop on one device (see the module docstring)."""

    frame: Any  # the WhileContext
    device: LocalDevice
    outer: Any  # the enclosing loop's trigger on this device (see `Partition.triggers`), or None
    predicate: Tensor  # the loop's LoopCond output
    predicate_edge: CutEdge | None  # how the predicate comes, when it is computed elsewhere


@dataclasses.dataclass(eq=False)
class SenderDriven:
    """A loop whose iterations on one device are made by the values that come for them.

    For a device that holds only body ops of a top-level loop, fed by the device that holds the
    loop's Merges: each value sent to it carries its iteration's tag, so its first value of an
    iteration makes that iteration there. The device needs no control loop and no predicate:
    its Recvs need no trigger, since the sender's Sends fire once in every iteration, the
    last (dead) one included. The loop body's pivot is not needed either: every op here
    takes a value that is dead exactly when the pivot is (it depends on the loop Switch's true
    output), except ops that take nothing but the pivot (constants of the body), which get a
    live signal when an iteration is made and whose consumers are all such ops. Each sender sends
    one end-of-frame message when the loop has ended there (`senders` of them end it here)."""

    frame: Any  # the WhileContext
    senders: list  # the devices that send values of the loop here
    recvs: int  # how many values come in each iteration (the loop's Recvs here)


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
    # each loop with work here -> what fires here once per iteration: its ControlLoop, or one of
    # the loop's own Merges placed here (a Merge op)
    triggers: dict = dataclasses.field(default_factory=dict)
    # a loop pivot on another device whose control edges end here -> its stand-in here: a loop
    # Switch of the same loop placed here (its output 1) or a ControlLoop (its Switch's output 1)
    pivots: dict = dataclasses.field(default_factory=dict)
    # loops whose iterations here are made by the values that come (see `SenderDriven`)
    driven: dict = dataclasses.field(default_factory=dict)  # frame -> SenderDriven
    # pivots on another device whose control edges here are dropped (`SenderDriven`) -> loop
    dropped_pivots: dict = dataclasses.field(default_factory=dict)
    # loops with a receiver driven by this device's values: frame -> the receivers' devices, each
    # sent an end-of-frame message when the loop ends here
    frame_ends: dict = dataclasses.field(default_factory=dict)

    def recv_frame(self, edge: CutEdge) -> Any:
        """What triggers a Recv inside a loop: a ControlLoop or a loop Merge op (None: the
        Recv is a source node)."""
        if edge.frame is None:
            return None
        trigger = self.triggers.get(edge.frame)
        if trigger is None:
            trigger = self.driven.get(edge.frame)
        if trigger is None:
            raise errors.InternalError(None, edge.src, f"No control loop for Recv {edge.key}.")
        return trigger


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
    pivots: list[tuple[Operation, Any, LocalDevice]] = []  # (pivot, its loop, consumer's device)
    loop_merges: dict[tuple[Any, LocalDevice], Operation] = {}  # (loop, device) -> a Merge there
    loop_switches: dict[tuple[Any, LocalDevice], Operation] = {}
    for op in ops:
        if is_loop_merge(op):
            loop_merges.setdefault((while_context_of(op.control_flow_context), placement[op]), op)
        elif op.type == "Switch" and is_loop_switch(op):
            loop_switches.setdefault((while_context_of(op.control_flow_context), placement[op]), op)

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
                loop = _pivot_loop(c)
                if loop is None:
                    cut(c, None, device)
                elif c not in by_device[device].pivots:
                    by_device[device].pivots[c] = loop_switches.get((loop, device))
                    pivots.append((c, loop, device))

    loop_conds = {
        while_context_of(op.control_flow_context): op for op in ops if op.type == "LoopCond"
    }
    control_loops: dict[tuple[Any, LocalDevice], ControlLoop] = {}

    def trigger(frame: Any, device: LocalDevice) -> Any:
        """What fires once per iteration of `frame` on `device`: a loop Merge, else a control
        loop."""
        found = by_device[device].triggers.get(frame)
        if found is None:
            found = loop_merges.get((frame, device))
            if found is None:
                found = control_loop(frame, device)
            by_device[device].triggers[frame] = found
        return found

    def control_loop(frame: Any, device: LocalDevice) -> ControlLoop:
        loop = control_loops.get((frame, device))
        if loop is not None:
            return loop
        outer_frame = while_context_of(frame.outer_context)
        outer = trigger(outer_frame, device) if outer_frame is not None else None
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
        by_device[device].triggers.setdefault(frame, loop)
        return loop

    for (frame, device), driven in _sender_driven(
        ops, placement, edges, loop_merges, mirrored
    ).items():
        part = by_device[device]
        part.driven[frame] = driven
        for pivot in [p for p, loop in part.pivots.items() if _pivot_loop(p) is frame]:
            del part.pivots[pivot]
            part.dropped_pivots[pivot] = frame
        for sender in driven.senders:
            by_device[sender].frame_ends.setdefault(frame, []).append(device)
    pivots = [
        (p, frame, device) for p, frame, device in pivots if frame not in by_device[device].driven
    ]
    for pivot, frame, device in pivots:  # first: a stand-in without a Switch here needs a loop
        if by_device[device].pivots[pivot] is None:
            by_device[device].pivots[pivot] = control_loop(frame, device)
    for edge in list(edges.values()):  # a predicate edge added on the way needs no second loop
        if edge.frame is not None and edge.frame not in by_device[edge.dst_device].driven:
            trigger(edge.frame, edge.dst_device)
    for (_, device), frame in mirrored.items():  # its iterations need the loop's predicate
        trigger(frame, device)
    for part in by_device.values():  # outer loops first, so an inner one finds its outer Merge
        part.control_loops.sort(key=lambda loop: _depth(loop.frame))
    order = {device: i for i, device in enumerate(local_devices())}
    return sorted(by_device.values(), key=lambda part: order[part.device])


_LOOP_OPS = frozenset(("Enter", "Exit", "NextIteration", "LoopCond"))


def _sender_driven(
    ops: list[Operation],
    placement: dict[Operation, LocalDevice],
    edges: dict[tuple, CutEdge],
    loop_merges: dict[tuple[Any, LocalDevice], Operation],
    mirrored: dict[tuple[Operation, LocalDevice], Any],
) -> dict[tuple[Any, LocalDevice], SenderDriven]:
    """The (loop, device) pairs whose iterations on the device can be made by the values that
    come (see `SenderDriven`): a top-level loop, none of whose Merges, Switches, Enters, Exits,
    NextIterations or inner loops are on the device, whose values all come from devices that
    hold one of the loop's Merges and all depend on the loop Switch's true output (dead
    exactly when the predicate is false), and whose ops there each take such a value, from
    another device or from an op there that does, or take nothing but the loop's pivot and are
    pure, with consumers only there."""
    incoming: dict[tuple[Any, LocalDevice], list[CutEdge]] = {}
    for edge in edges.values():
        if edge.frame is not None:
            incoming.setdefault((edge.frame, edge.dst_device), []).append(edge)
    candidates = {
        key: found
        for key, found in incoming.items()
        if while_context_of(key[0].outer_context) is None and key not in loop_merges
    }
    if not candidates:
        return {}
    for _, device in mirrored:  # a copied Enter needs the loop's frame made by its Enter
        for key in [k for k in candidates if k[1] is device]:
            del candidates[key]
    frame_of = {op: while_context_of(op.control_flow_context) for op in ops}
    gated: set[Any] = set()  # ops and tensors dead whenever their loop's predicate is false
    for op in ops:
        frame = frame_of[op]
        if frame is None or op.type in _LOOP_OPS or is_loop_merge(op) or op.type == "Merge":
            continue
        if is_loop_switch(op):
            gated.add(op.outputs[1])
        if any(t in gated for t in op.inputs) or any(c in gated for c in op.control_inputs):
            gated.add(op)
            gated.update(op.outputs)
    found = {}
    for (frame, device), cut_edges in candidates.items():
        if all(
            (frame, e.src_device) in loop_merges and e.src in gated for e in cut_edges
        ) and _body_only(frame, device, ops, placement, frame_of):
            senders = list(dict.fromkeys(e.src_device for e in cut_edges))
            found[(frame, device)] = SenderDriven(frame, senders, len(cut_edges))
    return found


def _body_only(
    frame: Any,
    device: LocalDevice,
    ops: list[Operation],
    placement: dict[Operation, LocalDevice],
    frame_of: dict[Operation, Any],
) -> bool:
    """Whether `device`'s ops in `frame` (see `_sender_driven`) are body ops only, each taking a
    received value or an op's there that does (or pure and taking only the loop's pivot)."""
    here = [op for op in ops if placement[op] is device]
    received: set[Operation] = set()  # ops here that take a value from the loop's body
    pivot_only: set[Operation] = set()
    for op in here:
        inner = frame_of[op]
        if inner is None:
            continue
        if inner is not frame:
            if _within(inner, frame):
                return False  # an inner loop's ops: its frames need its Enters here
            continue
        if op.type in _LOOP_OPS or op.type == "Switch" and is_loop_switch(op) or is_loop_merge(op):
            return False
        sources = [t.op for t in op.inputs] + [
            c
            for c in op.control_inputs
            if not (placement[c] is not device and _pivot_loop(c) is frame)
        ]
        if any(placement[s] is not device or s in received for s in sources):
            received.add(op)
        elif sources or op.op_def.stateful:
            return False  # fed by something that fires once per run, or a side effect
        else:
            pivot_only.add(op)
    for op in here:  # a pivot-only op is live in the last iteration: its consumers are not
        for t in op.inputs:
            if t.op in pivot_only and op not in received:
                return False
    for op in pivot_only:
        if any(placement.get(c, device) is not device for t in op.outputs for c in t.consumers()):
            return False
    return bool(received)


def _within(ctx: Any, frame: Any) -> bool:
    """Whether while context `ctx` is nested inside `frame`."""
    ctx = while_context_of(ctx.outer_context)
    while ctx is not None:
        if ctx is frame:
            return True
        ctx = while_context_of(ctx.outer_context)
    return False


def _pivot_loop(op: Operation) -> Any:
    """The loop whose body pivot `op` is (an Identity of a loop Switch's true output, whose
    data comes from the loop's Merge: live exactly when the iteration's predicate is true), or
    None."""
    if op.type != "Identity" or op.control_inputs:
        return None
    switch = op.inputs[0].op
    if op.inputs[0].value_index != 1 or switch.type != "Switch" or not is_loop_switch(switch):
        return None
    if not is_loop_merge(switch.inputs[0].op):
        return None
    return while_context_of(switch.control_flow_context)


def _is_invariant_enter(op: Operation) -> bool:
    # with control inputs, a copy would have to wait for them too: those stay cut
    return op.type == "Enter" and bool(op.get_attr("is_constant")) and not op.control_inputs


def _depth(frame: Any) -> int:
    depth = 0
    while frame is not None:
        depth += 1
        frame = while_context_of(frame.outer_context)
    return depth
