"""Static facts about a while frame that its lowering needs: bound, trip count, state it
writes, saved stacks."""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice.framework.compiler.frame import Frame, NotLowerable, all_ops
from sluice.framework.compiler.liveness import is_concrete
from sluice.framework.control_flow.structure import (
    constant_int,
    is_assign,
    is_back_edge,
    is_loop_merge,
    is_loop_switch,
    is_unit_counter,
    variable_name_of,
)
from sluice.framework.ir.graph import Operation, Tensor

# the primitives that exist only to wire a while loop: its lowering binds them as a whole
LOOP_PRIMITIVES = frozenset({"Enter", "Exit", "NextIteration", "LoopCond"})


def lowered_with_loop(op: Operation) -> bool:
    """True for the ops `Lowering.run_loop` binds around its lax loop rather than lowering one
    by one: the loop primitives, and each loop variable's Merge and Switch."""
    return op.type in LOOP_PRIMITIVES or is_loop_merge(op) or is_loop_switch(op)


def loop_bound(ctx: Any, outer_env: dict) -> int | None:
    """The loop's maximum_iterations as an int: given statically, or a tensor whose value is
    known while tracing (such as a dimension of a fed input's shape)."""
    bound = ctx.maximum_iterations
    if isinstance(bound, int):
        return bound
    forward = getattr(ctx, "forward_context", None)
    if bound is None and forward is not None:  # a backward loop runs as often as its forward one
        bound = forward.maximum_iterations
        if isinstance(bound, int):
            return bound
    if isinstance(bound, Tensor) and bound in outer_env:
        value = outer_env[bound][0]
        if is_concrete(value):
            return int(value)
    return None


def counter_limit(frame: Frame, loop_cond: Operation, pred_env: dict) -> int | None:
    """An upper bound of the loop's trip count read off its predicate, for a loop written without
    maximum_iterations in TF1's usual way: `while_loop(lambda t, ...: t < n, ...)` with `t` a
    counter from 0 by 1 and `n` known while tracing (a constant, or computed from shapes, such
    as a fed input's dimension). `pred_env` holds the values of the predicate's first evaluation.
    None when no such term bounds the predicate."""
    terms, stack = [], [loop_cond.inputs[0]]
    while stack:
        t = stack.pop()
        if t.op.type == "LogicalAnd":  # every conjunct bounds the loop on its own
            stack.extend(t.op.inputs)
        else:
            terms.append(t)
    limits = []
    for t in terms:
        if t.op.type not in ("Less", "LessEqual") or not is_unit_counter(t.op.inputs[0], frame.ctx):
            continue
        entry = pred_env.get(t.op.inputs[1])
        n = constant_int(t.op.inputs[1])
        if (
            n is None
            and entry is not None
            and is_concrete(entry[0])
            and np.ndim(entry[0]) == 0
            and np.asarray(entry[0]).dtype.kind in "iu"
            and _invariant_in(t.op.inputs[1], frame)
        ):  # else it may change after the test
            n = int(np.asarray(entry[0]))
        if n is not None:  # at least 1: a stack buffer needs a row even if the loop never runs
            limits.append(max(1, n + (t.op.type == "LessEqual")))
    return min(limits) if limits else None


def _invariant_in(x: Tensor, frame: Frame) -> bool:
    """`x` has one value in every iteration: no value it is computed from inside the frame
    comes from a loop variable (a Merge) or a stateful op (a variable the body may assign)."""
    members, seen, stack = set(frame.ops), set(), [x.op]
    while stack:
        op = stack.pop()
        if op in seen or op not in members:
            continue
        if op.type == "Merge" or op.op_def.stateful:
            return False
        seen.add(op)
        stack.extend(t.op for t in op.inputs)
    return True


def counts_to(frame: Frame, loop_cond: Operation, bound: int) -> bool:
    terms, stack = [], [loop_cond.inputs[0]]
    while stack:
        t = stack.pop()
        if t.op.type == "LogicalAnd":
            stack.extend(t.op.inputs)
        else:
            terms.append(t)
    for t in terms:
        if t.op.type != "Less" or constant_int(t.op.inputs[1]) != bound:
            return False
        if not is_unit_counter(t.op.inputs[0], frame.ctx):
            return False
    return bool(terms)


def never_entered(frame: Frame, env: dict) -> bool:
    """True when a loop variable enters the frame dead (known while tracing): it never runs."""
    return any(env[e.inputs[0]][1] is False for e in frame.enters if not e.get_attr("is_constant"))


def ancestors_in_frame(op: Operation, frame: Frame) -> set:
    members = set(frame.ops)
    seen: set = set()
    stack = [op]
    while stack:
        o = stack.pop()
        if o in seen or o not in members:
            continue
        seen.add(o)
        for t in o.inputs:
            if not is_back_edge(o, t):
                stack.append(t.op)
        stack.extend(o.control_inputs)
    return seen


def state_written(frame: Frame) -> tuple[set, set]:
    handles, randoms = set(), set()
    for op in all_ops(frame):
        if is_assign(op):
            handles.add(variable_name_of(op.inputs[0]))
        elif op.op_def.stateful and "seed" in op.attrs:
            randoms.add(op.name)
    return handles, randoms


def pushes_in(frame: Frame) -> bool:
    return any(op.type == "StackPushV2" for op in frame.ops)


def push_of_chain(merge_op: Operation, frame: Frame) -> Operation:
    """The StackPushV2 of a stack loop variable (the chain from its Merge to its NextIteration)."""
    stack = [merge_op.inputs[1].op.inputs[0].op]
    seen = set()
    while stack:
        op = stack.pop()
        if op in seen or op is merge_op:
            continue
        seen.add(op)
        if op.type == "StackPushV2":
            return op
        if op.type == "Merge":
            stack.extend(t.op for t in op.inputs)
        elif op.type in ("Switch", "Identity"):
            stack.append(op.inputs[0].op)
    raise NotLowerable(f"no stack push found for loop variable {merge_op.name}")
