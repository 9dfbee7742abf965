"""Lowering rules of the stacks a while loop's gradient saves values on (StackV2 and its push
and pop).

A stack has no value of its own while tracing: a push records its value in `OpContext.pushes`,
which the enclosing loop returns as one row per iteration, and the loop leaves a `StackBuffer`
of those rows for its backward loop, where the pop in backward iteration j reads row N - 1 - j.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from sluice.framework.compiler.buffers import StackBuffer, memory
from sluice.framework.compiler.frame import NotLowerable
from sluice.framework.compiler.rules.context import OpContext
from sluice.framework.ir import registry


def _new_stack(ctx: OpContext) -> list:
    return [(None, ctx.live)]


def _push(ctx: OpContext) -> list:
    stack, value = ctx.values
    ctx.pushes[ctx.op] = (value, ctx.live)
    return [(stack, ctx.live)]


def _pop(ctx: OpContext) -> list:
    stack = ctx.values[0]
    if not isinstance(stack, StackBuffer):
        raise NotLowerable(f"stack pop {ctx.op.name} outside a loop over its saved values")
    if stack.static is not None:
        value = stack.static
    else:
        index = jnp.clip(stack.count - 1 - ctx.iteration, 0, None)
        value = jax.tree_util.tree_map(lambda v: saved_row(v, index), stack.values)
        if stack.on_host:  # bring the one row back to the device
            value = jax.device_put(value, memory("device"))
    return [(stack, ctx.live), (value, ctx.live)]


def saved_row(values: Any, index: Any) -> Any:
    """Row `index` of a stack's buffer. A buffer of no rows belongs to a loop that ran zero
    times (dynamic_rnn over zero steps), whose backward loop is traced though it never runs:
    a row of zeros keeps that trace valid."""
    if values.shape[0] == 0:
        return jnp.zeros(values.shape[1:], values.dtype)
    return jax.lax.dynamic_index_in_dim(values, index, 0, keepdims=False)


registry.register_lowering("StackV2", _new_stack, dead_inputs=True)
registry.register_lowering("StackPushV2", _push, dead_inputs=True)
registry.register_lowering("StackPopV2", _pop, dead_inputs=True)
