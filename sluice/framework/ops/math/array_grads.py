"""Gradients of array ops that sum, or that give sparse slices: Fill, Tile, BroadcastTo, Pad and
PadV2, SelectV2 (their gradients sum over the copies or the broadcast axes) and GatherV2 (an
IndexedSlices along axis 0, which densifies with a segment sum).

The array ops are the lowest family, below the reductions and IndexedSlices, so these gradients
are registered here, once all of them exist, as TF1 keeps `array_grad.py` apart from
`array_ops.py` and JAX fills `ad.primitive_jvps` after defining its primitives. Each op's module
says that its gradient is here; every other array op has its gradient beside it.
"""

from __future__ import annotations

import numpy as np

from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import register_gradient
from sluice.framework.ops.array import array_ops, fill_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import int_values
from sluice.framework.ops.core.shape_rules import constant_value
from sluice.framework.ops.math.indexed_slices import IndexedSlices
from sluice.framework.ops.math.math_grad_util import sum_to_inputs
from sluice.framework.ops.math.reduction_ops import reduce_sum


# -- fill_ops -------------------------------------------------------------------------------------
@register_gradient("Fill")
def _fill_grad(op, grad):
    return [None, reduce_sum(grad)]


# -- broadcast_ops --------------------------------------------------------------------------------
@register_gradient("Tile")
def _tile_grad(op, grad):
    """Sums the copies: the gradient seen as [m0, d0, m1, d1, ...], summed over the m axes."""
    x, multiples = op.inputs
    rank, values = x.shape.rank, int_values(multiples)
    if rank is None and values is not None:
        rank = len(values)
    if rank is None:
        raise ValueError(f"the gradient of Tile needs the rank of its input, got {x.shape}")
    multiples = fill_ops.cast(multiples, dtypes.int32)
    cut = array_ops.reshape(join_ops.stack([multiples, fill_ops.shape(x)], axis=1), [-1])
    dx = reduce_sum(array_ops.reshape(grad, cut), list(range(0, 2 * rank, 2)))
    dx.set_shape(x.shape)
    return [dx, None]


@register_gradient("BroadcastTo")
def _broadcast_to_grad(op, grad):
    x = op.inputs[0]  # broadcast against the output, whose shape `grad` has
    return [sum_to_inputs(grad, None, x, grad)[0], None]


# -- join_ops -------------------------------------------------------------------------------------
@register_gradient("Pad")
@register_gradient("PadV2")
def _pad_grad(op, grad):
    """The block of the gradient where the input was; the padding value gets the rest."""
    x, paddings = op.inputs[:2]
    size = fill_ops.shape(x, out_type=paddings.dtype)
    dx = core_ops.apply_op("Slice", [grad, paddings[:, 0], size]).outputs[0]
    if op.type == "Pad":
        return [dx, None]
    return [dx, None, reduce_sum(grad) - reduce_sum(dx)]


# -- gather_ops -----------------------------------------------------------------------------------
@register_gradient("GatherV2")
def _gather_grad(op, grad):
    """Along axis 0 (a constant 0, as TF checks it), an IndexedSlices: the output gradient's
    slices at the gathered indices, so a large table's gradient is never dense. Otherwise dense
    (GatherV2Grad)."""
    params, indices, axis = op.inputs
    if op.get_attr("batch_dims") == 0 and _is_constant_zero(axis):
        return [_gathered_slices(params, indices, grad), None, None]
    attrs = {"batch_dims": op.get_attr("batch_dims")}
    inputs = [grad, indices, axis, fill_ops.shape(params)]
    return [core_ops.apply_op("GatherV2Grad", inputs, attrs).outputs[0], None, None]


def _is_constant_zero(axis: Tensor) -> bool:
    value = constant_value(axis)
    return value is not None and value.size == 1 and int(value.reshape(-1)[0]) == 0


def _gathered_slices(params: Tensor, indices: Tensor, grad: Tensor) -> IndexedSlices:
    """grad (shape indices.shape + params.shape[1:]) as slices of params at flat indices."""
    dense_shape = fill_ops.shape(params)
    if indices.shape.rank != 1:
        size = join_ops.stack([fill_ops.size(indices)])
        grad = array_ops.reshape(grad, join_ops.concat([size, dense_shape[1:]], 0))
        indices = array_ops.reshape(indices, size)
    return IndexedSlices(grad, indices, dense_shape)


@register_gradient("SelectV2")
def _select_v2_grad(op, grad):
    cond, x, y = op.inputs
    zero = core_ops.constant(np.zeros([], grad.dtype))
    dx = core_ops.apply_op("SelectV2", [cond, grad, zero]).outputs[0]
    dy = core_ops.apply_op("SelectV2", [cond, zero, grad]).outputs[0]
    # x and y were broadcast against the output, whose shape dx and dy have
    dx = sum_to_inputs(dx, None, x, dx)[0]
    dy = sum_to_inputs(dy, None, y, dy)[0]
    return [None, dx, dy]
