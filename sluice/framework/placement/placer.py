"""The placer: which device of this process runs each op of a pruned graph.

Ops that must share a device are grouped first (TF1's colocation constraints):
  - `colocate_with` groups (`op.colocation_groups()`), which gradients built with
    `colocate_gradients_with_ops=True` carry too;
  - an op with a resource input (a variable's handle or a stack) and the op that made it, so a
    variable's reads, writes and (through the optimizer's `colocate_with`) slots share its device;
  - the control-flow ops of one loop variable or captured value: a Switch and an Exit with their
    data input, an Enter and a NextIteration with their first consumer (TF's
    OptimizeControlFlowColocation), so a loop variable's Enter, Merge, Switch, NextIteration and
    Exit stay together.
A group's device is the request of its first member that has one; a stack's group lives on the
device of the value it saves. Groups with no request are placed, in creation order, by one rule:
with the first input that is already placed; an op with no inputs (a constant, a source) with
its consumers when they all request one device; else the default device (the first device of
the default backend: GPU:0 on a GPU machine, CPU:0 here).

A request for a device that does not exist, or for a device type that cannot run the op (an op
that runs on the host only, requested on a GPU), is an InvalidArgumentError naming the op, its
request and the devices there are, unless `allow_soft_placement`, which then takes the lowest
device of the requested type, or the default device. (A host-only op with no request stays with
the rest: its kernel runs on the host wherever it is placed, as before devices were placed.)
A graph without any request is placed on the default device at once.
"""

from __future__ import annotations

import sys
from typing import Iterable

from sluice.framework.ir import dtypes, errors
from sluice.framework.ir.device_spec import DeviceSpec
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.placement.devices import (
    LocalDevice,
    default_device,
    local_devices,
    matching_devices,
)


class _Groups:
    """Union-find over ops; `find` gives a group's representative."""

    def __init__(self):
        self.parent: dict[Operation, Operation] = {}

    def find(self, op: Operation) -> Operation:
        parent = self.parent
        root = parent.setdefault(op, op)
        while parent[root] is not root:
            parent[root] = parent[parent[root]]
            root = parent[root]
        return root

    def union(self, a: Operation, b: Operation) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra is not rb:
            if rb.id < ra.id:  # the earliest op leads: its request wins
                ra, rb = rb, ra
            self.parent[rb] = ra


def place(
    ops: Iterable[Operation],
    fed: set[Tensor],
    allow_soft_placement: bool = False,
    log_device_placement: bool = False,
) -> dict[Operation, LocalDevice]:
    """The device of every op of a pruned graph (`ops` in creation order)."""
    ops = list(ops)
    if not any(op.device for op in ops):  # nothing asked for: all on the default device
        device = default_device()
        placed = dict.fromkeys(ops, device)
        if log_device_placement:
            _log(ops, placed)
        return placed
    inside = set(ops)
    consumers: dict[Operation, list[Operation]] = {op: [] for op in ops}
    for op in ops:
        for t in op.inputs:
            if t not in fed and t.op in inside:
                consumers[t.op].append(op)
    groups = _colocation_groups(ops, fed, inside, consumers)

    members: dict[Operation, list[Operation]] = {}
    for op in ops:
        members.setdefault(groups.find(op), []).append(op)
    placed: dict[Operation, LocalDevice] = {}
    group_device: dict[Operation, LocalDevice] = {}
    for op in ops:
        leader = groups.find(op)
        device = group_device.get(leader)
        if device is None:
            device = _group_device(members[leader], placed, consumers, fed, allow_soft_placement)
            group_device[leader] = device
        placed[op] = device
    if log_device_placement:
        _log(ops, placed)
    return placed


def _log(ops: list[Operation], placed: dict[Operation, LocalDevice]) -> None:
    sys.stderr.write("".join(f"{op.name}: ({op.type}): {placed[op].name}\n" for op in ops))


def _colocation_groups(
    ops: list[Operation],
    fed: set[Tensor],
    inside: set[Operation],
    consumers: dict[Operation, list[Operation]],
) -> _Groups:
    groups = _Groups()
    graph = ops[0].graph if ops else None
    for op in ops:
        groups.find(op)
        for group_name in op.colocation_groups():
            target_name = group_name[len("loc:@") :] if group_name.startswith("loc:@") else None
            if target_name and target_name != op.name:
                try:
                    target = graph.get_operation_by_name(target_name)
                except KeyError:
                    continue
                if target in inside:
                    groups.union(op, target)
        for t in op.inputs:
            if t in fed or t.op not in inside:
                continue
            if t.dtype == dtypes.resource:
                groups.union(op, t.op)
        if (
            op.type in ("Switch", "Exit")
            and op.inputs
            and op.inputs[0] not in fed
            and op.inputs[0].op in inside
        ):
            groups.union(op, op.inputs[0].op)
        elif op.type in ("Enter", "NextIteration") and consumers[op]:
            groups.union(op, consumers[op][0])
    return groups


def _group_device(
    members: list[Operation],
    placed: dict[Operation, LocalDevice],
    consumers: dict[Operation, list[Operation]],
    fed: set[Tensor],
    soft: bool,
) -> LocalDevice:
    """The device of a group, decided when its first member (in creation order) is reached."""
    for op in members:
        if op.type == "StackPushV2":  # a stack lives with the value it saves
            value = op.inputs[1]
            if value.op in placed:
                return placed[value.op]
    for op in members:
        if op.device:
            return _requested(op, soft)
    for op in members:
        for t in op.inputs:
            if t not in fed and t.op in placed:
                return placed[t.op]
    first = members[0]
    if not first.inputs:  # a generator goes where its consumers all ask to be
        requests = {c.device for c in consumers[first]}
        if len(requests) == 1 and "" not in requests:
            return _requested(consumers[first][0], soft)
    return default_device()


def _requested(op: Operation, soft: bool) -> LocalDevice:
    """The device `op` explicitly asks for, checked."""
    spec = DeviceSpec.from_string(op.device)
    candidates = matching_devices(spec)
    if candidates:
        device = candidates[0]
        if _can_run(op, device):
            return device
        if not soft:
            raise errors.InvalidArgumentError(
                None,
                op,
                f"Cannot assign a device for operation {op.name}: could not satisfy explicit "
                f"device specification '{op.device}' because no supported kernel for "
                f"{device.device_type} devices is available: a {op.type} op runs on the host "
                "(CPU) only. Pass allow_soft_placement=True in the SessionConfig to place it on "
                "a device that can run it.",
            )
        return _feasible(op, device)
    if not soft:
        names = ", ".join(d.name for d in local_devices())
        raise errors.InvalidArgumentError(
            None,
            op,
            f"Cannot assign a device for operation {op.name}: {op.type} op was explicitly "
            f"assigned to {op.device} but available devices are [ {names} ]. Make sure the "
            "device specification refers to a valid device, or pass allow_soft_placement=True "
            "in the SessionConfig.",
        )
    same_type = matching_devices(DeviceSpec(device_type=spec.device_type))
    return _feasible(op, same_type[0] if same_type else default_device())


def _can_run(op: Operation, device: LocalDevice) -> bool:
    return not op.op_def.host_only or device.device_type == "CPU"


def _feasible(op: Operation, device: LocalDevice) -> LocalDevice:
    if _can_run(op, device):
        return device
    return matching_devices(DeviceSpec(device_type="CPU"))[0]
