"""Row reads and writes of a dense buffer at a run-time index (what TensorArray offers in TF).

`write_row(buffer, index, value)` returns `buffer` with row `index` (axis 0) replaced by `value`;
XLA updates it in place inside a compiled loop. `read_row(buffer, index)` returns that row. A
recurrent loop collects its per-step outputs with `write_row` into a [time, ...] buffer, so each
step costs one row, not the whole buffer.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable, register_gradient, register_op
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops


def _index_ok(index) -> None:
    if index.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"the row index must be int32 or int64, got {index.dtype.name}")
    if index.shape.rank not in (None, 0):
        raise ValueError(f"the row index must be a scalar, got shape {index.shape}")


def _write_infer(op) -> list:
    buffer, index, value = op.inputs
    _index_ok(index)
    if value.dtype != buffer.dtype:
        raise TypeError(f"cannot write a {value.dtype.name} row into a {buffer.dtype.name} buffer")
    row = buffer.shape[1:]
    if not row.is_compatible_with(value.shape):
        raise ValueError(
            f"a row of a buffer of shape {buffer.shape} has shape {row}, got {value.shape}"
        )
    return [(buffer.dtype, buffer.shape)]


def _write_kernel(buffer, index, value, **_):
    if buffer.shape[0] == 0:
        # No row to write: a loop over zero steps still traces its body (never run) once.
        return buffer
    return jax.lax.dynamic_update_index_in_dim(buffer, value.astype(buffer.dtype), index, 0)


register_op("WriteRow", infer=_write_infer, kernel=_write_kernel)


@register_gradient("WriteRow")
def _write_row_grad(op, grad):
    _, index, value = op.inputs
    if op.get_attr("write_once"):
        # Each row is written once (TensorArray's contract): row `index` of the old buffer is
        # never read, so the buffer's gradient passes through unchanged. Inside a loop this
        # keeps the gradient buffer loop-invariant, so no copy of it is made per iteration.
        return [grad, None, read_row(grad, index)]
    return [write_row(grad, index, _zeros_like_row(grad)), None, read_row(grad, index)]


def _read_infer(op) -> list:
    buffer, index = op.inputs
    _index_ok(index)
    return [(buffer.dtype, buffer.shape[1:])]


def _read_kernel(buffer, index):
    if buffer.shape[0] == 0:
        # No row to read: a loop over zero steps (dynamic_rnn over [batch, 0, depth]) still
        # traces its body once in the compiled engine, though the body never runs; a row of
        # zeros keeps that trace valid. Out-of-range indices of a non-empty buffer clamp, as
        # XLA's dynamic slices do.
        return jnp.zeros(buffer.shape[1:], buffer.dtype)
    return jax.lax.dynamic_index_in_dim(buffer, index, 0, keepdims=False)


register_op("ReadRow", infer=_read_infer, kernel=_read_kernel)


@register_gradient("ReadRow")
def _read_row_grad(op, grad):
    buffer, index = op.inputs
    zeros = fill_ops.zeros(fill_ops.shape(buffer), buffer.dtype)
    return [write_row(zeros, index, grad), None]


def _zeros_like_row(buffer: Tensor) -> Tensor:
    return core_ops.apply_op("ZerosLikeRow", [buffer], name="zeros_row").outputs[0]


register_op(
    "ZerosLikeRow",
    infer=lambda op: [(op.inputs[0].dtype, op.inputs[0].shape[1:])],
    kernel=lambda buffer: jnp.zeros(buffer.shape[1:], buffer.dtype),
)
not_differentiable("ZerosLikeRow")


def write_row(
    buffer: Any, index: Any, value: Any, write_once: bool = False, name: str | None = None
) -> Tensor:
    """`buffer` with row `index` replaced by `value` (the buffer is not changed in place).

    write_once: promise that every row is written at most once, into a buffer whose initial
      contents get no gradient (as TensorArray's writes): then the gradient of the buffer is
      the incoming gradient unchanged (its initial contents receive every row's gradient).
    """
    buffer = core_ops.convert_to_tensor(buffer)
    if not isinstance(index, Tensor):
        index = core_ops.convert_to_tensor(index, dtype=dtypes.int32)
    value = core_ops.convert_to_tensor(value, dtype=buffer.dtype)
    attrs = {"write_once": bool(write_once)}
    return core_ops.apply_op("WriteRow", [buffer, index, value], attrs, name=name).outputs[0]


def read_row(buffer: Any, index: Any, name: str | None = None) -> Tensor:
    """Row `index` of `buffer`."""
    buffer = core_ops.convert_to_tensor(buffer)
    if not isinstance(index, Tensor):
        index = core_ops.convert_to_tensor(index, dtype=dtypes.int32)
    return core_ops.apply_op("ReadRow", [buffer, index], name=name).outputs[0]
