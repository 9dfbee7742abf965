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
    NORMAL,
    RECV,
    SEND,
)
from sluice.framework.interpreter.plan_node import PlanNode


def send_node(edge: Any) -> Any:
    name = f"Send {edge.edge_name} to {edge.dst_device.name}"
    node = PlanNode.without_op(name, SEND, 1, 1, 0, arrival=CUT)
    if edge.tensor is None:
        node.num_inputs = 0  # a control edge: only the dead bit travels
    node.edge, node.key = edge, edge  # hashed by identity: both ends have it
    return node


def recv_node(edge: Any, triggered: bool) -> Any:
    """A Recv; `triggered` when a control loop's Merge triggers it once per iteration."""
    name = f"Recv {edge.edge_name} from {edge.src_device.name}"
    node = PlanNode.without_op(name, RECV, 0, 1 if triggered else 0, 1, arrival=CUT)
    node.edge, node.key = edge, edge  # hashed by identity: both ends have it
    return node


def pivot_edges(where: str) -> Any:
    """The consumers of a control loop's true output (its Switch's output 1, standing in for the
    loop body's pivot, see `partitioner`): edges only, delivered by the control loop node, never
    run."""
    return PlanNode.without_op(f"{where}: body", CONTROL_LOOP, 0, 1, 2)


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
            self.start = PlanNode.without_op(f"{where}: start", NORMAL, 0, 0, 1)
            self.start.value = np.int32(0)
        self.enter = PlanNode.without_op(f"{where}: Enter", ENTER, 1, 1, 1)
        self.enter.frame_name = frame
        self.enter.parallel_iterations = int(loop.frame.parallel_iterations)
        self.loop = PlanNode.without_op(where, CONTROL_LOOP, 2, 2, 1, arrival=CUT)
        self.loop.pivot = self.pivot = pivot_edges(where)

    def nodes(self) -> list[Any]:
        found = [self.enter, self.loop]
        return ([self.start] if self.start is not None else []) + found
