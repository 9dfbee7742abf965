"""The nodes a partition adds to its plan: Send, Recv and the control loop's primitives.

They carry the same dispatch record as a `PlanNode` (see `plan`), so the executor runs them by the
whitepaper's rules like any other node: a Send deposits its input (or its dead bit) in the
rendezvous under its key and the tag's frame and iteration; a Recv takes the value with the same
key (waiting for it without blocking its executor) and forwards it, dead or alive; both run as
their token is delivered (arrival CUT). A control loop is its Enter (the ordinary primitive) and
one CONTROL_LOOP node standing for its Merge, Switch and NextIteration (see `ControlLoopNodes`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice.framework.interpreter.kinds import (
    CONTROL_LOOP,
    CUT,
    ENTER,
    GATHER,
    IMMEDIATE,
    NORMAL,
    RECV,
    SEND,
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
        "pivot",
        "expected",
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
        self.key = None  # ... and its rendezvous key, less the tag: the CutEdge itself
        self.value = None  # a constant's value
        self.pivot = None  # a control loop's PivotEdges
        self.expected = 0  # a sender-driven Recv's: how many values come in each iteration

    def compute(self, ctx: Any, inputs: Any) -> tuple:
        return (self.value,)  # the control loop's constant, its only NORMAL node

    def __repr__(self) -> str:
        return f"<{self.name}>"


def send_node(edge: Any) -> PartitionNode:
    name = f"Send {edge.edge_name} to {edge.dst_device.name}"
    node = PartitionNode(name, SEND, 1, 1, 0, arrival=CUT)
    if edge.tensor is None:
        node.num_inputs = 0  # a control edge: only the dead bit travels
    node.edge, node.key = edge, edge  # hashed by identity: both ends have it
    return node


def recv_node(edge: Any, triggered: bool) -> PartitionNode:
    """A Recv; `triggered` when a control loop's Merge triggers it once per iteration."""
    name = f"Recv {edge.edge_name} from {edge.src_device.name}"
    node = PartitionNode(name, RECV, 0, 1 if triggered else 0, 1, arrival=CUT)
    node.edge, node.key = edge, edge  # hashed by identity: both ends have it
    return node


class PivotEdges(PartitionNode):
    """The consumers of a control loop's true output (its Switch's output 1, standing in for the
    loop body's pivot, see `partitioner`): edges only, delivered by the control loop node, never
    run."""

    def __init__(self, where: str):
        super().__init__(f"{where}: body", CONTROL_LOOP, 0, 1, 2)


class ControlLoopNodes:
    """The nodes of one control loop (see `partitioner`); wired by the plan.

    The partitioner's loop `Enter -> Merge -> Switch(pred) -> NextIteration -> Merge` is one
    CONTROL_LOOP node here, `loop`, after its Enter. Its input 0 is the Enter's token, input 1
    the iteration's predicate. The executor runs it as each token comes (arrival CUT): the token
    of input 0 starts an iteration (the Merge's firing: `loop`'s own edges, to the Recvs it
    triggers and to inner control loops' Enters, get it at once); once the predicate has come
    too, the Switch's true output goes to the body (`pivot`'s edges: dead when the predicate is
    false or dead, or the iteration's token was), and a true predicate starts the next iteration
    with the same token, from the ready queue, so a run of iterations never recurses. No Exit:
    it would have no consumer. Five dispatches per iteration were three nodes' here, one queue
    turn and two gathers.
    """

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
        self.loop = PartitionNode(where, CONTROL_LOOP, 2, 2, 1, arrival=CUT)
        self.loop.pivot = self.pivot = PivotEdges(where)

    def nodes(self) -> list[PartitionNode]:
        found = [self.enter, self.loop]
        return ([self.start] if self.start is not None else []) + found
