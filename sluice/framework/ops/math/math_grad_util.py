"""Gradients of broadcasting ops: each input's gradient is the output gradient summed over the axes
along which that input was broadcast, then shaped like the input (`sum_to_inputs`).

The axes are computed in Python whenever the static shapes settle them; otherwise at run time by
the BroadcastGradientArgs op (TF's op of that name) and summed by DynamicSum, a Sum whose axes are
an input read at run time (sluice's Sum keeps its axes as a static attr):

    rx, ry = BroadcastGradientArgs(shape(x), shape(y))
    gx = Reshape(DynamicSum(grad, rx), shape(x))

>>> broadcast_axes((2, 1, 3), (4, 3))  # what BroadcastGradientArgs computes
([1], [0])
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable, register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops  # module references: no import cycle
from sluice.framework.ops.core.array_util import host_ints, require_index_dtype, require_vector
from sluice.framework.ops.core.core_ops import apply_op
from sluice.framework.ops.core.shape_rules import constant_value, require_same_dtype
from sluice.framework.ops.math import reduction_ops  # module references: no import cycle


# -- BroadcastGradientArgs ----------------------------------------------------------------------
def _broadcast_gradient_args_infer(op) -> list:
    s0, s1 = op.inputs
    for s, what in ((s0, "s0"), (s1, "s1")):
        require_index_dtype(s, what)
        require_vector(s, what)
    require_same_dtype(s0, s1)
    return [(s0.dtype, TensorShape([None])), (s0.dtype, TensorShape([None]))]


def broadcast_axes(s0: tuple, s1: tuple) -> tuple[list[int], list[int]]:
    """The axes of the broadcast shape along which shapes `s0` and `s1` are broadcast: those an
    input lacks (leading ones) and those where it has length 1 and the other input does not.

    Raises:
      ValueError: if the shapes do not broadcast.
    """
    rank = max(len(s0), len(s1))
    a = (1,) * (rank - len(s0)) + tuple(s0)
    b = (1,) * (rank - len(s1)) + tuple(s1)
    for i, (da, db) in enumerate(zip(a, b)):
        if da != db and 1 not in (da, db):
            raise ValueError(f"shapes {list(s0)} and {list(s1)} do not broadcast (axis {i})")
    r0 = [i for i in range(rank) if i < rank - len(s0) or a[i] == 1 and b[i] != 1]
    r1 = [i for i in range(rank) if i < rank - len(s1) or b[i] == 1 and a[i] != 1]
    return r0, r1


def _broadcast_gradient_args_kernel(s0, s1, **_):
    dtype = np.asarray(s0).dtype
    r0, r1 = broadcast_axes(host_ints(s0, "s0"), host_ints(s1, "s1"))
    return jnp.asarray(r0, dtype), jnp.asarray(r1, dtype)


register_op(
    "BroadcastGradientArgs",
    infer=_broadcast_gradient_args_infer,
    kernel=_broadcast_gradient_args_kernel,
    host_inputs=(0, 1),
)
not_differentiable("BroadcastGradientArgs")


def broadcast_gradient_args(s0: Tensor, s1: Tensor, name: str | None = None) -> tuple:
    """(r0, r1): the run-time `broadcast_axes` of two shape vectors, as int vectors."""
    op = apply_op("BroadcastGradientArgs", [s0, s1], name=name)
    return op.outputs[0], op.outputs[1]


# -- DynamicSum ---------------------------------------------------------------------------------
def _dynamic_sum_infer(op) -> list:
    x, axes = op.inputs
    require_index_dtype(axes, "axes")
    require_vector(axes, "axes")
    if x.shape.rank is None:
        return [(x.dtype, TensorShape(None))]
    value = constant_value(axes)
    reduced = set() if value is None else {int(a) % x.shape.rank for a in value}
    dims = [
        1 if i in reduced or d == 1 else None if value is None else d
        for i, d in enumerate(x.shape.dims)
    ]
    return [(x.dtype, TensorShape(dims))]


def _dynamic_sum_kernel(x, axes, **_):
    axes = host_ints(axes, "DynamicSum's axes")
    if not axes and isinstance(x, jax.Array):
        return x  # the usual case (no broadcast): x itself, so a loop saving both sees one value
    return jnp.sum(x, axes, dtype=x.dtype, keepdims=True)


register_op("DynamicSum", infer=_dynamic_sum_infer, kernel=_dynamic_sum_kernel, host_inputs=(1,))


@register_gradient("DynamicSum")
def _dynamic_sum_grad(op, grad):
    return [array_ops.broadcast_to(grad, array_ops.shape(op.inputs[0])), None]


def dynamic_sum(x: Tensor, axes: Tensor, name: str | None = None) -> Tensor:
    """The sum of `x` over `axes` (an int vector known at run time), keeping reduced axes."""
    return apply_op("DynamicSum", [x, axes], name=name).outputs[0]


# -- sum_to_inputs ------------------------------------------------------------------------------
def _static_axes(own: TensorShape, other: TensorShape) -> tuple[list, list] | None:
    """(leading, ones): the axes of the broadcast shape along which an input of shape `own` was
    broadcast against one of shape `other` - the leading axes it lacks, and its length-1 axes
    (summed keeping the axis) - or None when unknown dimensions leave them open."""
    if own.rank is None or other.rank is None:
        return None
    rank = max(own.rank, other.rank)
    lead = rank - own.rank
    padded_other = [1] * (rank - other.rank) + list(other.dims)
    ones = []
    for i, d in enumerate(own.dims, start=lead):
        o = padded_other[i]
        if o == 1 or d not in (1, None):  # not broadcast along axis i
            continue
        if d is None:  # length 1 or that of the result: only known at run time
            return None
        ones.append(i)  # summing over a length-1 axis is harmless if the result has length 1
    return list(range(lead)), ones


def _broadcast_axes_of(t: Tensor, other: Tensor, core_dims: int) -> tuple[list, list] | None:
    """`_static_axes` of `t` and `other` without their last `core_dims` axes."""
    own, others = t.shape, other.shape
    if core_dims and own.rank is not None and others.rank is not None:
        own, others = own[:-core_dims], others[:-core_dims]
    return _static_axes(own, others)


def _sum_to(grad: Tensor, t: Tensor, other: Tensor, core_dims: int, rt: Tensor | None) -> Tensor:
    """`grad` summed to the shape of `t`, broadcast against `other` in all but the last
    `core_dims` axes; `rt` holds the run-time axes when the static shapes do not settle them."""
    if rt is not None:
        return array_ops.reshape(dynamic_sum(grad, rt), array_ops.shape(t))
    leading, ones = _broadcast_axes_of(t, other, core_dims)
    if ones:
        grad = reduction_ops.reduce_sum(grad, ones, keepdims=True)
    if leading:
        grad = reduction_ops.reduce_sum(grad, leading)
    return grad


def sum_to_inputs(
    gx: Tensor | None, gy: Tensor | None, x: Tensor, y: Tensor, core_dims: int = 0
) -> list:
    """[gx, gy], gradients shaped like the broadcast of `x` and `y`, summed to their shapes.

    Args:
      gx, gy: gradients for `x` and `y` (or None), shaped like the op's output.
      x, y: the op's inputs.
      core_dims: trailing axes that take no part in broadcasting (2 for the matrices of a batch
        matmul, whose batch axes broadcast).

    Returns:
      [gradient for x or None, gradient for y or None].
    """
    x_at_run_time = gx is not None and _broadcast_axes_of(x, y, core_dims) is None
    y_at_run_time = gy is not None and _broadcast_axes_of(y, x, core_dims) is None
    rx = ry = None
    if x_at_run_time or y_at_run_time:
        sx, sy = array_ops.shape(x), array_ops.shape(y)
        if core_dims:
            sx, sy = sx[:-core_dims], sy[:-core_dims]
        rx, ry = broadcast_gradient_args(sx, sy)
        rx, ry = (rx if x_at_run_time else None), (ry if y_at_run_time else None)
    return [
        None if gx is None else _sum_to(gx, x, y, core_dims, rx),
        None if gy is None else _sum_to(gy, y, x, core_dims, ry),
    ]
