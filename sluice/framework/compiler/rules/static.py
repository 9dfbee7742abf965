"""Lowering rules of ops whose value is known while tracing: a constant keeps its NumPy value
(no device array), and a shape query reads the static shape of its input's traced value."""

from __future__ import annotations

import numpy as np

from sluice.framework.compiler.rules.context import OpContext
from sluice.framework.ir import registry


def _const(ctx: OpContext) -> list:
    return [(ctx.op.get_attr("value"), ctx.live)]


def _shape(ctx: OpContext) -> list:
    shape = np.shape(ctx.values[0])
    return [(np.asarray(shape, ctx.op.outputs[0].dtype), ctx.live)]


def _size(ctx: OpContext) -> list:
    shape = np.shape(ctx.values[0])
    return [(np.asarray(np.prod(shape, dtype=np.int64), ctx.op.outputs[0].dtype), ctx.live)]


def _rank(ctx: OpContext) -> list:
    shape = np.shape(ctx.values[0])
    return [(np.asarray(len(shape), ctx.op.outputs[0].dtype), ctx.live)]


registry.register_lowering("Const", _const)
registry.register_lowering("Shape", _shape)
registry.register_lowering("Size", _size)
registry.register_lowering("Rank", _rank)
