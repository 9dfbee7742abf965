"""Ops that pick elements by index or condition: GatherV2 (`gather`) and GatherV2Grad, its
gradient's scatter-add; Select and SelectV2 (`where`, `where_v2` with x and y) and Where (`where`
without them: the coordinates of true elements).

The gradient of a gather along axis 0 is an IndexedSlices (the output gradient's slices at the
gathered indices), as TF's; along another axis it is dense: the output gradient added into zeros
of the params' shape at the gathered positions (duplicate indices accumulate).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable, register_gradient
from sluice.framework.ir.tensor_shape import TensorShape, broadcast_shapes
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import (
    INDEX_DTYPES,
    as_int_tensor,
    host_ints,
    int_values,
    maybe_host_value,
    register_array_op,
    require_index_dtype,
    require_vector,
    static_axis,
)
from sluice.framework.ops.core.shape_rules import constant_value, require_same_dtype


# -- GatherV2 -------------------------------------------------------------------------------------
def _gather_infer(op) -> list:
    params, indices, axis_tensor = op.inputs
    if indices.dtype not in INDEX_DTYPES:
        raise TypeError(f"indices must be int32 or int64, got {indices.dtype.name}")
    axis = static_axis(axis_tensor, params.shape.rank)
    batch_dims = op.get_attr("batch_dims")
    if batch_dims < 0:
        if indices.shape.rank is None:
            return [(params.dtype, TensorShape(None))]
        batch_dims += indices.shape.rank
    if axis is None or indices.shape.rank is None:
        return [(params.dtype, TensorShape(None))]
    if not 0 <= batch_dims <= min(axis, indices.shape.rank):
        raise ValueError(
            f"batch_dims ({batch_dims}) must be in [0, axis] and at most the rank of indices"
        )
    p, i = params.shape.dims, indices.shape.dims
    if not TensorShape(p[:batch_dims]).is_compatible_with(i[:batch_dims]):
        raise ValueError(f"the first {batch_dims} (batch) dims of params and indices must match")
    value, d = constant_value(indices), p[axis]
    if value is not None and d is not None and value.size and (value.min() < 0 or value.max() >= d):
        bad = value[(value < 0) | (value >= d)].flat[0]
        raise ValueError(f"indices contain {bad}, which is not in [0, {d}) (dimension {axis})")
    return [(params.dtype, TensorShape(p[:axis] + i[batch_dims:] + p[axis + 1 :]))]


def _gather_kernel(params, indices, axis, *, batch_dims, **_):
    (axis,) = host_ints(axis, "GatherV2's axis")
    axis %= params.ndim
    if batch_dims < 0:
        batch_dims += indices.ndim
    size = params.shape[axis]
    concrete = maybe_host_value(indices)
    if concrete is not None and concrete.size and (concrete.min() < 0 or concrete.max() >= size):
        bad = concrete[(concrete < 0) | (concrete >= size)].flat[0]
        raise ValueError(f"GatherV2: indices contain {bad}, which is not in [0, {size})")
    # a traced out-of-range index gathers zeros (TF's GPU behaviour): send negatives past the end
    indices = jnp.where(indices < 0, size, indices)

    def take(p, i):
        return jnp.take(p, i, axis=axis - batch_dims, mode="fill", fill_value=0)

    for _ in range(batch_dims):
        take = jax.vmap(take)
    return take(params, indices)


register_array_op("GatherV2", infer=_gather_infer, kernel=_gather_kernel, host_inputs=(2,))
# GatherV2's gradient gives IndexedSlices, which densify with a segment sum, a higher family:
# it is in array_grads.py


@export("gather")
def gather(
    params: Any,
    indices: Any,
    validate_indices: Any = None,
    name: str | None = None,
    axis: Any = None,
    batch_dims: int = 0,
) -> Tensor:
    """The slices of `params` along `axis` at `indices`: output shape is params.shape[:axis] +
    indices.shape[batch_dims:] + params.shape[axis + 1:]. Out-of-range indices raise."""
    del validate_indices  # deprecated in TF1: indices are always validated
    p = core_ops.convert_to_tensor(params)
    i = core_ops.convert_to_tensor(indices)
    axis = as_int_tensor(0 if axis is None else axis, "gather's axis")
    attrs = {"batch_dims": int(batch_dims)}
    return core_ops.apply_op("GatherV2", [p, i, axis], attrs, name).outputs[0]


def _gather_grad_infer(op) -> list:
    dy, indices, axis_tensor, params_shape = op.inputs
    if indices.dtype not in INDEX_DTYPES:
        raise TypeError(f"indices must be int32 or int64, got {indices.dtype.name}")
    require_index_dtype(params_shape, "params_shape")
    require_vector(params_shape, "params_shape")
    dims = int_values(params_shape)
    static_axis(axis_tensor, None if dims is None else len(dims))  # checks it
    return [(dy.dtype, TensorShape(dims))]


def _gather_grad_kernel(dy, indices, axis, params_shape, *, batch_dims, **_):
    """Adds `dy` into zeros of `params_shape` where GatherV2 read it (repeats accumulate)."""
    shape = host_ints(params_shape, "GatherV2Grad's params_shape")
    (axis,) = host_ints(axis, "GatherV2Grad's axis")
    axis %= len(shape)
    if batch_dims < 0:
        batch_dims += indices.ndim
    # out-of-range indices gathered zeros; negative ones are sent past the end and dropped
    indices = jnp.where(indices < 0, shape[axis], indices)

    def scatter(z, i, d):
        return z.at[(slice(None),) * (axis - batch_dims) + (i,)].add(d, mode="drop")

    for _ in range(batch_dims):
        scatter = jax.vmap(scatter)
    return scatter(jnp.zeros(shape, dy.dtype), indices, dy)


register_array_op(
    "GatherV2Grad", infer=_gather_grad_infer, kernel=_gather_grad_kernel, host_inputs=(2, 3)
)


@register_gradient("GatherV2Grad")
def _gather_grad_grad(op, grad):
    _, indices, axis, _ = op.inputs
    batch_dims = op.get_attr("batch_dims")
    return [gather(grad, indices, axis=axis, batch_dims=batch_dims), None, None, None]


# -- Select, SelectV2, Where ----------------------------------------------------------------------
def _require_bool(condition: Tensor) -> None:
    if condition.dtype != dtypes.bool_:
        raise TypeError(f"condition must be a bool tensor, got {condition.dtype.name}")


def _select_infer(op) -> list:
    cond, x, y = op.inputs
    _require_bool(cond)
    require_same_dtype(x, y)
    if not x.shape.is_compatible_with(y.shape):
        raise ValueError(f"x and y must have the same shape, got {x.shape} and {y.shape}")
    shape = x.shape.merge_with(y.shape)
    c = cond.shape
    if c.rank in (None, 0) or shape.rank is None:
        pass
    elif c.rank == shape.rank:
        if not c.is_compatible_with(shape):
            raise ValueError(f"condition of shape {c} does not match x and y of shape {shape}")
    elif c.rank != 1 or not TensorShape(c.dims).is_compatible_with(shape.dims[:1]):
        raise ValueError(
            f"condition must be a scalar, have the shape of x ({shape}) or be a vector of its "
            f"first dimension, got shape {c}"
        )
    return [(x.dtype, shape)]


def _select_kernel(cond, x, y, **_):
    if cond.ndim == 1 and x.ndim > 1:  # selects whole rows
        cond = jnp.reshape(cond, cond.shape + (1,) * (x.ndim - 1))
    return jnp.where(cond, x, y)


register_array_op("Select", infer=_select_infer, kernel=_select_kernel, select_safe=True)


@register_gradient("Select")
def _select_grad(op, grad):
    cond = op.inputs[0]
    zeros = fill_ops.zeros_like(grad)
    dx = core_ops.apply_op("Select", [cond, grad, zeros]).outputs[0]
    dy = core_ops.apply_op("Select", [cond, zeros, grad]).outputs[0]
    return [None, dx, dy]


def _select_v2_infer(op) -> list:
    cond, x, y = op.inputs
    _require_bool(cond)
    require_same_dtype(x, y)
    shape = broadcast_shapes(x.shape, y.shape)
    shape = None if shape is None else broadcast_shapes(cond.shape, shape)
    if shape is None:
        raise ValueError(
            f"condition, x and y of shapes {cond.shape}, {x.shape}, {y.shape} do not broadcast"
        )
    return [(x.dtype, shape)]


register_array_op(
    "SelectV2",
    infer=_select_v2_infer,
    kernel=lambda cond, x, y, **_: jnp.where(cond, x, y),
    select_safe=True,
)
# SelectV2's gradient sums with a reduction, a higher family: it is in array_grads.py


def _where_infer(op) -> list:
    rank = op.inputs[0].shape.rank
    return [(dtypes.int64, TensorShape([None, rank]))]


register_array_op(
    "Where",
    infer=_where_infer,
    kernel=lambda cond, **_: jnp.argwhere(cond).astype(jnp.int64),
    jit=False,  # the number of rows depends on the values
)
not_differentiable("Where")


@export("where")
def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """With `x` and `y`: elements of `x` where `condition` is true, else of `y` (a vector
    condition picks whole rows, as in TF1; other shapes broadcast). With neither: the
    coordinates of the true (non-zero) elements of `condition`, an int64 [num_true, rank]."""
    cond = core_ops.convert_to_tensor(condition)
    if x is None and y is None:
        return core_ops.apply_op("Where", [cond], name=name).outputs[0]
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    x, y = core_ops.convert_n([x, y])
    # Select picks whole rows for a vector condition; when a rank is not known yet (a
    # sequence_length fed without a static shape) it is the only op that is right either way.
    maybe_rows = cond.shape.rank in (None, 1) and (x.shape.rank is None or x.shape.rank > 1)
    rows = maybe_rows and (cond.shape.rank == 1 or x.shape.is_compatible_with(y.shape))
    op_type = "Select" if rows else "SelectV2"
    return core_ops.apply_op(op_type, [cond, x, y], name=name).outputs[0]


@export("where_v2")
def where_v2(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """Like `where`, but `condition`, `x` and `y` always broadcast (NumPy's `where`)."""
    cond = core_ops.convert_to_tensor(condition)
    if x is None and y is None:
        return core_ops.apply_op("Where", [cond], name=name).outputs[0]
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    x, y = core_ops.convert_n([x, y])
    return core_ops.apply_op("SelectV2", [cond, x, y], name=name).outputs[0]
