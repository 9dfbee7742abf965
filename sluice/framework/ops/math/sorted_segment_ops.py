"""Reductions over sorted segments: SegmentSum, SegmentMean, SegmentMax, SegmentMin, SegmentProd
(`segment_sum`, ...). `segment_ids` is a vector, one id per row of `data`, sorted ascending; the
output has `segment_ids[-1] + 1` rows, and a segment without rows gets 0 (1 for the product).

The number of rows depends on the ids' values, so the kernels read them as host values: the
compiled engine runs these ops when the ids are constants, the interpreted engine always.
Gradients are TF1's (`math_grad.py`).

>>> sl.Session().run(sl.segment_sum([1.0, 2.0, 3.0, 4.0], [0, 0, 2, 2])).tolist()
[3.0, 0.0, 7.0]
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import register_gradient
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import fill_ops, gather_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import INDEX_DTYPES, host_value, register_array_op
from sluice.framework.ops.core.math_rules import is_numeric, is_real
from sluice.framework.ops.core.shape_rules import constant_value, require_dtype, require_rank
from sluice.framework.ops.math import math_ops
from sluice.framework.ops.math.segment_ops import segment_min_or_max_grad, segment_prod_grad


def _segment_infer(what: str, predicate):
    def infer(op) -> list:
        data, ids = op.inputs
        require_dtype(data, what, predicate)
        if ids.dtype not in INDEX_DTYPES:
            raise TypeError(f"segment_ids must be int32 or int64, got {ids.dtype.name}")
        require_rank(ids, 1, "segment_ids")
        if data.shape.rank == 0:
            raise ValueError("data must have rank >= 1, got a scalar")
        if data.shape.rank is None:
            return [(data.dtype, TensorShape(None))]
        if not TensorShape(data.shape.dims[:1]).is_compatible_with(ids.shape):
            raise ValueError(
                f"segment_ids (shape {ids.shape}) must have one id per row of "
                f"data (shape {data.shape})"
            )
        values = constant_value(ids)
        rows = None
        if values is not None:
            _check_sorted(values, op.type)
            rows = int(values[-1]) + 1 if values.size else 0
        return [(data.dtype, TensorShape([rows] + list(data.shape.dims[1:])))]

    return infer


def _check_sorted(ids: np.ndarray, op_type: str) -> None:
    if ids.size and ids.min() < 0:
        raise ValueError(f"{op_type}: segment_ids must be non-negative, got {ids.min()}")
    if ids.size > 1 and (np.diff(ids) < 0).any():
        raise ValueError(
            f"{op_type}: segment_ids must be sorted in increasing order, got {ids.tolist()}"
        )


def _segment_kernel(op_type: str, reduce, empty_value):
    """A kernel: `reduce(data, ids, num_segments)` from jax.ops, with segments that got no row set
    to `empty_value` (jax's max of nothing is -inf, TF's sorted SegmentMax gives 0)."""

    def kernel(data, ids, **_):
        concrete = host_value(ids, f"{op_type}'s segment_ids")
        _check_sorted(concrete, op_type)
        n = int(concrete[-1]) + 1 if concrete.size else 0
        out = reduce(data, ids, num_segments=n, indices_are_sorted=True)
        if empty_value is None:
            return out
        counts = jax.ops.segment_sum(jnp.ones_like(ids), ids, num_segments=n)
        empty = (counts == 0).reshape((n,) + (1,) * (data.ndim - 1))
        return jnp.where(empty, jnp.asarray(empty_value, data.dtype), out)

    return kernel


def _mean(data, ids, num_segments, indices_are_sorted):
    total = jax.ops.segment_sum(data, ids, num_segments, indices_are_sorted=indices_are_sorted)
    counts = jax.ops.segment_sum(jnp.ones_like(ids), ids, num_segments)
    counts = jnp.maximum(counts, 1).reshape((num_segments,) + (1,) * (data.ndim - 1))
    return total / counts.astype(data.dtype)


_numeric = _segment_infer("numeric", is_numeric)
_real = _segment_infer("real numeric", is_real)
for _op_type, _infer, _reduce, _empty in (
    ("SegmentSum", _numeric, jax.ops.segment_sum, None),
    ("SegmentMean", _numeric, _mean, None),
    ("SegmentMax", _real, jax.ops.segment_max, 0),
    ("SegmentMin", _real, jax.ops.segment_min, 0),
    ("SegmentProd", _numeric, jax.ops.segment_prod, None),  # an empty product is 1 already
):
    register_array_op(
        _op_type, infer=_infer, kernel=_segment_kernel(_op_type, _reduce, _empty), host_inputs=(1,)
    )


def _sum_by(op):
    return lambda values: segment_sum(values, op.inputs[1])


@register_gradient("SegmentSum")
def _segment_sum_grad(op, grad):
    return [gather_ops.gather(grad, op.inputs[1]), None]


@register_gradient("SegmentMean")
def _segment_mean_grad(op, grad):  # each row gets its segment's gradient over the segment size
    data, ids = op.inputs
    sizes = _sum_by(op)(fill_ops.ones_like(data))
    return [gather_ops.gather(math_ops.divide(grad, sizes), ids), None]


@register_gradient("SegmentMax")
def _segment_max_grad(op, grad):
    return [segment_min_or_max_grad(op, grad, _sum_by(op)), None]


@register_gradient("SegmentMin")
def _segment_min_grad(op, grad):
    return [segment_min_or_max_grad(op, grad, _sum_by(op)), None]


@register_gradient("SegmentProd")
def _segment_prod_grad(op, grad):
    def sums(values):  # the unsorted form, so that the row count matches the output's
        rows = fill_ops.shape(op.outputs[0])[0]
        return core_ops.apply_op("UnsortedSegmentSum", [values, op.inputs[1], rows]).outputs[0]

    return [segment_prod_grad(op, grad, sums, lambda v: segment_prod(v, op.inputs[1])), None]


def _segment(op_type: str, data: Any, segment_ids: Any, name: str | None) -> Tensor:
    data = core_ops.convert_to_tensor(data)
    ids = core_ops.convert_to_tensor(segment_ids)
    return core_ops.apply_op(op_type, [data, ids], name=name).outputs[0]


@export("segment_sum", "math.segment_sum")
def segment_sum(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """`output[i] = sum of data[j] over the j with segment_ids[j] == i` (TF1 `tf.segment_sum`).

    Args:
      data: a numeric tensor of rank >= 1.
      segment_ids: an int32/int64 vector, one id per row of data, sorted ascending, >= 0.
      name: the op's name.

    Returns:
      A tensor of shape `[segment_ids[-1] + 1] + data.shape[1:]`.

    Raises:
      ValueError: ids not sorted or negative (constant ids: when the graph is built; otherwise
        InvalidArgumentError when run), or not one per row.
    """
    return _segment("SegmentSum", data, segment_ids, name)


@export("segment_mean", "math.segment_mean")
def segment_mean(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """The mean of each sorted segment's rows (0 for an empty segment); see `segment_sum`."""
    return _segment("SegmentMean", data, segment_ids, name)


@export("segment_max", "math.segment_max")
def segment_max(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """The largest row of each sorted segment (0 for an empty segment); see `segment_sum`."""
    return _segment("SegmentMax", data, segment_ids, name)


@export("segment_min", "math.segment_min")
def segment_min(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """The smallest row of each sorted segment (0 for an empty segment); see `segment_sum`."""
    return _segment("SegmentMin", data, segment_ids, name)


@export("segment_prod", "math.segment_prod")
def segment_prod(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """The product of each sorted segment's rows (1 for an empty segment); see `segment_sum`."""
    return _segment("SegmentProd", data, segment_ids, name)
