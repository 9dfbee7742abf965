"""The nodes a partition adds to its plan: Send, Recv and the control loop's primitives.

They carry the same dispatch record as a `PlanNode` (see `plan`), so the executor runs them by the
whitepaper's rules like any other node: a Send deposits its input (or its dead bit) in the
rendezvous under its key and the tag's frame and iteration; a Recv takes the value with the same
key (waiting for it without blocking its executor) and forwards it, dead or alive; both run as
their token is delivered (arrival CUT). The control loop's Enter, Merge, Switch, NextIteration
and Exit are the ordinary primitives on a scalar.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice.framework.interpreter.kinds import (
    CUT,
    ENTER,
    GATHER,
    IMMEDIATE,
    MERGE,
    NEXT,
    NORMAL,
    RECV,
    SEND,
    SWITCH,
)
from sluice.framework.prune import DEAD


class PartitionNode:
    """A node with no graph op behind it; `name` says what it is in errors and traces."""

    __slots__ = (
        "name",
        "op",
        "kind",
        "arrival",
        "num_inputs",
        "num_pending",
        "edges",
        "fetch_ports",
        "num_ops",
        "dead_outputs",
        "frame_name",
        "is_constant",
        "parallel_iterations",
        "merge_indices",
        "edge",
        "key",
        "value",
    )

    def __init__(
        self,
        name: str,
        kind: int,
        num_inputs: int,
        num_pending: int,
        num_outputs: int,
        arrival: int | None = None,
    ):
        self.name = name
        self.op = None
        self.kind = kind
        self.num_inputs = num_inputs
        self.num_pending = num_pending
        self.arrival = (
            arrival if arrival is not None else (IMMEDIATE if num_pending == 1 else GATHER)
        )
        self.edges: list[tuple[int, Any, int]] = []
        self.fetch_ports: list[tuple[int, int]] = []
        self.num_ops = 1
        self.dead_outputs = (DEAD,) * num_outputs
        self.frame_name = None
        self.is_constant = False
        self.parallel_iterations = 0
        self.merge_indices = tuple(np.int32(i) for i in range(num_inputs))
        self.edge = None  # a Send's or Recv's CutEdge
        self.key = None  # ... and its rendezvous key, less the tag
        self.value = None  # a constant's value

    def compute(self, ctx: Any, inputs: Any) -> tuple:
        return (self.value,)  # the control loop's constant, its only NORMAL node

    def __repr__(self) -> str:
        return f"<{self.name}>"


def send_node(edge: Any) -> PartitionNode:
    name = f"Send {edge.edge_name} to {edge.dst_device.name}"
    node = PartitionNode(name, SEND, 1, 1, 0, arrival=CUT)
    if edge.tensor is None:
        node.num_inputs = 0  # a control edge: only the dead bit travels
    node.edge, node.key = edge, edge.key
    return node


def recv_node(edge: Any, triggered: bool) -> PartitionNode:
    """A Recv; `triggered` when a control loop's Merge triggers it once per iteration."""
    name = f"Recv {edge.edge_name} from {edge.src_device.name}"
    node = PartitionNode(name, RECV, 0, 1 if triggered else 0, 1, arrival=CUT)
    node.edge, node.key = edge, edge.key
    return node


class ControlLoopNodes:
    """The nodes of one control loop (see `partitioner`); wired by the plan."""

    def __init__(self, loop: Any):
        frame = loop.frame.name
        where = f"control loop of {frame} on {loop.device.name}"
        self.start = None
        if loop.outer is None:
            self.start = PartitionNode(f"{where}: start", NORMAL, 0, 0, 1)
            self.start.value = np.int32(0)
        self.enter = PartitionNode(f"{where}: Enter", ENTER, 1, 1, 1)
        self.enter.frame_name = frame
        self.enter.parallel_iterations = int(loop.frame.parallel_iterations)
        # Merge too runs as its token comes (from the Enter, then from NextIteration): it only
        # starts the iteration's Recvs and hands the Switch its token. The Switch waits in the
        # ready queue, so a run of iterations never recurses.
        self.merge = PartitionNode(f"{where}: Merge", MERGE, 2, 2, 2, arrival=CUT)
        self.switch = PartitionNode(f"{where}: Switch", SWITCH, 2, 2, 2)
        # no Exit: it would have no consumer, and run (dead) in every iteration. NextIteration
        # runs as its token comes (all it does is start the next iteration's Merge).
        self.next = PartitionNode(f"{where}: NextIteration", NEXT, 1, 1, 1, arrival=CUT)

    def nodes(self) -> list[PartitionNode]:
        found = [self.enter, self.merge, self.switch, self.next]
        return ([self.start] if self.start is not None else []) + found
