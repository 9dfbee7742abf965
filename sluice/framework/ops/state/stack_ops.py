"""Stacks that save forward loop values for the backward loop.

A stack is an immutable value (an empty tuple, or `(entry, rest)`), threaded through a loop as a
loop variable: StackPushV2 returns the stack with one more entry, StackPopV2 returns the rest and
the top entry. Because each push consumes the previous push's result, pushes (and pops) are
ordered by data edges, whatever `parallel_iterations` lets run concurrently. Entries go through
the session's `StackMemory`, which accounts their bytes and swaps them to host memory when asked.
"""

from __future__ import annotations

from sluice.framework.ir import dtypes
from sluice.framework.ir.registry import not_differentiable, register_op
from sluice.framework.ir.tensor_shape import TensorShape

EMPTY_STACK: tuple = ()


def _stack_infer(op) -> list:
    return [(dtypes.resource, TensorShape([]))]


def _new_stack_kernel(ctx, **_):
    return EMPTY_STACK


def _push_infer(op) -> list:
    stack, value = op.inputs
    if stack.dtype != dtypes.resource:
        raise TypeError(f"input 0 must be a stack, got a {stack.dtype.name} tensor")
    if value.dtype != op.get_attr("elem_dtype"):
        raise TypeError(
            f"pushed value has dtype {value.dtype.name},"
            f" the stack holds {op.get_attr('elem_dtype').name}"
        )
    return [(dtypes.resource, TensorShape([]))]


def _push_kernel(ctx, stack, value, *, swap_memory, **_):
    return (ctx.stack_memory.push(value, swap_memory), stack)


def _pop_infer(op) -> list:
    return [
        (dtypes.resource, TensorShape([])),
        (op.get_attr("elem_dtype"), op.get_attr("elem_shape")),
    ]


def _pop_kernel(ctx, stack, **_):
    if not stack:
        raise IndexError(
            "pop from an empty stack: the backward loop ran more often than the forward loop"
        )
    entry, rest = stack
    return rest, ctx.stack_memory.pop(entry, rest[0] if rest else None)


register_op("StackV2", infer=_stack_infer, kernel=_new_stack_kernel, stateful=True)
register_op("StackPushV2", infer=_push_infer, kernel=_push_kernel, stateful=True)
register_op("StackPopV2", infer=_pop_infer, kernel=_pop_kernel, stateful=True)
not_differentiable("StackV2", "StackPushV2", "StackPopV2")
