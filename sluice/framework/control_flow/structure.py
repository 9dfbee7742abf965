"""Questions about graph structure, answered in one place.

Every engine, pass and gradient rule asks here instead of matching op types itself:
  is_loop_merge(op)          a loop variable's Merge (one input from a NextIteration)
  is_loop_switch(op)         a loop variable's Switch (on its loop's LoopCond)
  is_back_edge(op, t)        input `t` of `op` is a loop's back edge (NextIteration -> Merge)
  is_loop_constant_enter(op, loop)
  variable_handle_of(t)      the VarHandleOp a resource tensor comes from
  variable_name_of(t)        ... and that variable's shared name
  ASSIGN_OPS, is_assign(op)  the ops that write a variable
  VARIABLE_READS             the stateful ops that only read a variable's state
  is_unit_counter(x, loop)   a loop variable that starts at 0 and adds 1 every iteration
  constant_int(t)            a scalar int known while building, through Enter and Identity
A while loop's own iteration counter is not searched for: `while_loop` records it on its
`WhileContext` (`ctx.counter`, with `ctx.maximum_iterations`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice.framework.ir.graph import Operation, Tensor

ASSIGN_OPS = frozenset(
    {
        "AssignVariableOp",
        "AssignAddVariableOp",
        "AssignSubVariableOp",
        "ResourceScatterUpdate",
        "ResourceScatterAdd",
        "ResourceScatterSub",
    }
)
VARIABLE_READS = frozenset({"ReadVariableOp", "VarHandleOp", "VarIsInitializedOp"})


def is_loop_merge(op: Operation) -> bool:
    return op.type == "Merge" and any(t.op.type == "NextIteration" for t in op.inputs)


def is_loop_switch(op: Operation) -> bool:
    return op.type == "Switch" and op.inputs[1].op.type == "LoopCond"


def is_back_edge(op: Operation, t: Tensor) -> bool:
    """True when input `t` of `op` carries a value to the next iteration of a loop."""
    return op.type == "Merge" and t.op.type == "NextIteration"


def is_loop_constant_enter(op: Operation, loop: Any) -> bool:
    """An Enter of `loop` that gives every iteration the same value (a captured tensor)."""
    return (
        op.type == "Enter" and bool(op.get_attr("is_constant")) and op.control_flow_context is loop
    )


def is_assign(op: Operation) -> bool:
    return op.type in ASSIGN_OPS


def variable_handle_of(t: Tensor) -> Operation | None:
    """The VarHandleOp whose handle `t` is (through Enters, Identities, Switches), or None."""
    while t.op.type != "VarHandleOp":
        if not t.op.inputs:
            return None
        t = t.op.inputs[0]
    return t.op


def variable_name_of(t: Tensor) -> str | None:
    """The shared name of the variable whose handle `t` is, or None."""
    handle = variable_handle_of(t)
    return None if handle is None else handle.get_attr("shared_name")


def constant_int(t: Tensor) -> int | None:
    """The value of a scalar int known while building the graph, through Enters and Identities."""
    while t.op.type in ("Enter", "Identity"):
        t = t.op.inputs[0]
    if t.op.type != "Const":
        return None
    value = np.asarray(t.op.get_attr("value"))
    return int(value) if value.ndim == 0 and value.dtype.kind in "iu" else None


def loop_merge_of_body_value(t: Tensor, loop: Any) -> Operation | None:
    """The loop Merge of `loop` behind `t` = Identity*(Switch(merge, LoopCond)[1]), or None."""
    while t.op.type == "Identity":
        t = t.op.inputs[0]
    switch = t.op
    if not is_loop_switch(switch) or t.value_index != 1:
        return None
    merge = switch.inputs[0].op
    if not is_loop_merge(merge) or merge.control_flow_context is not loop:
        return None
    return merge


def is_unit_counter(x: Tensor, loop: Any) -> bool:
    """`x` (a loop Merge's output) is a loop variable of `loop` that starts at 0 and has 1 added
    every iteration: the user's own counter (dynamic_rnn's time), which while_loop cannot record."""
    merge = x.op
    if x is getattr(loop, "counter", None):
        return True
    if not is_loop_merge(merge) or merge.control_flow_context is not loop or x.value_index != 0:
        return False
    if constant_int(merge.inputs[0].op.inputs[0]) != 0:
        return False
    step = merge.inputs[1].op.inputs[0].op
    while step.type == "Identity":  # while_loop wraps every body result in an Identity
        step = step.inputs[0].op
    if step.type != "AddV2":
        return False
    a, b = step.inputs
    if constant_int(b) != 1:
        a, b = b, a
    if constant_int(b) != 1 or a.op.type != "Identity":
        return False
    switch = a.op.inputs[0].op
    return is_loop_switch(switch) and a.op.inputs[0].value_index == 1 and switch.inputs[0] is x
