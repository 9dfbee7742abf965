"""UnsortedSegmentSum (`unsorted_segment_sum`): sums the slices of `data` that share a segment id;
UnsortedSegmentMax, UnsortedSegmentMin and UnsortedSegmentProd reduce them the same way (an empty
segment gets the dtype's lowest value, its highest value, or 1), and `unsorted_segment_mean`
divides the sum by the segment's size, as TF1 composes it. (The sorted `segment_*` ops live in
`sorted_segment_ops`.)

It is also how an `IndexedSlices` becomes a dense tensor (`indexed_slices.to_dense`), as in TF:
the slices are added into zeros at their indices, so repeated indices accumulate.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import register_gradient
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import (
    INDEX_DTYPES,
    as_int_tensor,
    host_ints,
    maybe_host_value,
    register_array_op,
    require_index_dtype,
    scalar_int_value,
)
from sluice.framework.ops.core.math_rules import is_real
from sluice.framework.ops.core.shape_rules import constant_value, require_rank
from sluice.framework.ops.math import math_ops


def _unsorted_segment_sum_infer(op) -> list:
    data, segment_ids, num_segments = op.inputs
    if segment_ids.dtype not in INDEX_DTYPES:
        raise TypeError(f"segment_ids must be int32 or int64, got {segment_ids.dtype.name}")
    if not (dtypes.is_differentiable(data.dtype) or dtypes.is_integer(data.dtype)):
        raise TypeError(f"data must be a numeric tensor, got {data.dtype.name}")
    require_index_dtype(num_segments, "num_segments")
    require_rank(num_segments, 0, "num_segments")
    n = scalar_int_value(num_segments)
    if n is not None and n < 0:
        raise ValueError(f"num_segments must be >= 0, got {n}")
    ids_rank, d = segment_ids.shape.rank, data.shape
    if ids_rank is None or d.rank is None:
        return [(data.dtype, TensorShape(None))]
    if not TensorShape(d.dims[:ids_rank]).is_compatible_with(segment_ids.shape):
        raise ValueError(
            f"the shape of segment_ids ({segment_ids.shape}) must be a prefix of the shape of "
            f"data ({d})"
        )
    ids = constant_value(segment_ids)
    if n is not None and ids is not None and ids.size and ids.max() >= n:
        raise ValueError(f"segment_ids contain {ids.max()}, which is not < num_segments ({n})")
    return [(data.dtype, TensorShape([n] + list(d.dims[ids_rank:])))]


def _unsorted_segment_sum_kernel(data, segment_ids, num_segments, **_):
    (n,) = host_ints(num_segments, "UnsortedSegmentSum's num_segments")
    concrete = maybe_host_value(segment_ids)
    if concrete is not None and concrete.size and concrete.max() >= n:
        raise ValueError(
            f"UnsortedSegmentSum: segment_ids contain {concrete.max()}, which is not in [0, {n})"
        )
    tail = data.shape[segment_ids.ndim :]
    # negative ids are dropped (as TF); so is a traced id past the end (TF's GPU behaviour)
    ids = jnp.where(segment_ids < 0, n, segment_ids).reshape(-1)
    slices = jnp.reshape(data, (-1,) + tuple(tail))
    return jnp.zeros((n,) + tuple(tail), data.dtype).at[ids].add(slices, mode="drop")


register_array_op(
    "UnsortedSegmentSum",
    infer=_unsorted_segment_sum_infer,
    kernel=_unsorted_segment_sum_kernel,
    host_inputs=(2,),
)


@register_gradient("UnsortedSegmentSum")
def _unsorted_segment_sum_grad(op, grad):
    """Each slice of data gets its segment's gradient; slices with a negative id get zeros."""
    data, ids, _ = op.inputs
    if ids.shape.rank is None or data.shape.rank is None:
        raise ValueError(
            f"The gradient of UnsortedSegmentSum {op.name!r} needs the ranks of data "
            f"({data.shape}) and segment_ids ({ids.shape}) to be known."
        )
    zero = core_ops.constant(np.zeros([], ids.dtype))
    gathered = gather_ops.gather(grad, math_ops.maximum(ids, zero))
    kept = math_ops.greater_equal(ids, zero)
    extra = data.shape.rank - ids.shape.rank
    if extra:
        ones = core_ops.constant(np.ones([extra], np.int32))
        kept = array_ops.reshape(kept, join_ops.concat([fill_ops.shape(kept), ones], 0))
    zeros = fill_ops.zeros_like(gathered)
    return [gather_ops.where_v2(kept, gathered, zeros), None, None]


@export("unsorted_segment_sum", "math.unsorted_segment_sum")
def unsorted_segment_sum(
    data: Any, segment_ids: Any, num_segments: Any, name: str | None = None
) -> Tensor:
    """`output[j, ...] = sum of data[i..., ...] over the i where segment_ids[i...] == j` (TF1
    `tf.math.unsorted_segment_sum`); segments without data are zero, negative ids are dropped.

    Args:
      data: a numeric tensor whose shape starts with the shape of `segment_ids`.
      segment_ids: an int32 or int64 tensor; ids must be < num_segments.
      num_segments: a scalar int: the size of the output's first dimension.
      name: the name of the op.

    Returns:
      A tensor of shape `[num_segments] + data.shape[rank(segment_ids):]`.

    >>> s = unsorted_segment_sum([1.0, 2.0, 3.0, 4.0], [0, 2, 0, -1], 3)
    >>> sl.Session().run(s).tolist()
    [4.0, 0.0, 2.0]
    """
    data = core_ops.convert_to_tensor(data)
    ids = core_ops.convert_to_tensor(segment_ids)
    n = as_int_tensor(num_segments, "num_segments")
    return core_ops.apply_op("UnsortedSegmentSum", [data, ids, n], name=name).outputs[0]


# -- UnsortedSegmentMax, UnsortedSegmentMin, UnsortedSegmentProd ----------------------------------
def _lowest(dtype) -> Any:  # TF's numeric_limits<T>::lowest(): finite for floats
    return np.iinfo(dtype).min if dtype.kind in "iu" else np.finfo(dtype).min


def _highest(dtype) -> Any:
    return np.iinfo(dtype).max if dtype.kind in "iu" else np.finfo(dtype).max


def _segment_reduce_kernel(op_type: str, initial, combine: str):
    """A kernel that reduces the slices of data into `initial`-filled segments with `.at[]`'s
    `combine` ("max", "min", "multiply"); negative ids are dropped, as in UnsortedSegmentSum."""

    def kernel(data, segment_ids, num_segments, **_):
        (n,) = host_ints(num_segments, f"{op_type}'s num_segments")
        concrete = maybe_host_value(segment_ids)
        if concrete is not None and concrete.size and concrete.max() >= n:
            raise ValueError(
                f"{op_type}: segment_ids contain {concrete.max()}, which is not in [0, {n})"
            )
        tail = data.shape[segment_ids.ndim :]
        ids = jnp.where(segment_ids < 0, n, segment_ids).reshape(-1)
        slices = jnp.reshape(data, (-1,) + tuple(tail))
        start = jnp.full((n,) + tuple(tail), initial(np.dtype(data.dtype)), data.dtype)
        return getattr(start.at[ids], combine)(slices, mode="drop")

    return kernel


def _require_real(op) -> list:
    if not is_real(op.inputs[0].dtype):
        raise TypeError(f"data must be a real numeric tensor, got {op.inputs[0].dtype.name}")
    return _unsorted_segment_sum_infer(op)


for _op_type, _initial, _combine, _infer in (
    ("UnsortedSegmentMax", _lowest, "max", _require_real),
    ("UnsortedSegmentMin", _highest, "min", _require_real),
    ("UnsortedSegmentProd", lambda dtype: 1, "multiply", _unsorted_segment_sum_infer),
):
    register_array_op(
        _op_type,
        infer=_infer,
        host_inputs=(2,),
        kernel=_segment_reduce_kernel(_op_type, _initial, _combine),
    )


def _gather_drop_negatives(params: Tensor, ids: Tensor, data: Tensor) -> tuple[Tensor, Tensor]:
    """(params gathered at max(ids, 0), zeroed where ids < 0 and broadcast to data's rank; the
    clipped ids): how each slice of data reads its segment's value (TF1 `_GatherDropNegatives`)."""
    zero = core_ops.constant(np.zeros([], ids.dtype))
    clipped = math_ops.maximum(ids, zero)
    gathered = gather_ops.gather(params, clipped)
    kept = math_ops.greater_equal(ids, zero)
    extra = data.shape.rank - ids.shape.rank
    if extra:
        ones = core_ops.constant(np.ones([extra], np.int32))
        kept = array_ops.reshape(kept, join_ops.concat([fill_ops.shape(kept), ones], 0))
    return gather_ops.where_v2(kept, gathered, fill_ops.zeros_like(gathered)), clipped


def _require_ranks(op) -> None:
    data, ids = op.inputs[0], op.inputs[1]
    if ids.shape.rank is None or data.shape.rank is None:
        raise ValueError(
            f"The gradient of {op.type} {op.name!r} needs the ranks of data "
            f"({data.shape}) and segment_ids ({ids.shape}) to be known."
        )


def segment_min_or_max_grad(op, grad, segment_sum) -> Tensor:
    """TF1's rule: the gradient is shared equally by the entries that attain the extremum."""
    _require_ranks(op)
    data, ids = op.inputs[0], op.inputs[1]
    chosen_value, _ = _gather_drop_negatives(op.outputs[0], ids, data)
    chosen = math_ops.equal(data, chosen_value)
    ties = segment_sum(fill_ops.cast(chosen, grad.dtype))
    shared, _ = _gather_drop_negatives(math_ops.divide(grad, ties), ids, data)
    return gather_ops.where_v2(chosen, shared, fill_ops.zeros_like(shared))


def segment_prod_grad(op, grad, segment_sum, segment_prod) -> Tensor:
    """TF1's rule, which handles zeros: the product of the other entries of the segment, 0 when
    the segment has two zeros or more."""
    _require_ranks(op)
    data, ids = op.inputs[0], op.inputs[1]
    is_zero = math_ops.equal(data, np.zeros([], data.dtype))
    zeros = segment_sum(fill_ops.cast(is_zero, dtypes.int32))
    grad = gather_ops.where_v2(math_ops.greater(zeros, 1), fill_ops.zeros_like(grad), grad)
    nonzero_data = gather_ops.where_v2(is_zero, fill_ops.ones_like(data), data)
    nonzero_prod = segment_prod(nonzero_data)
    prod, _ = _gather_drop_negatives(op.outputs[0], ids, data)
    others, _ = _gather_drop_negatives(nonzero_prod, ids, data)
    partial = gather_ops.where_v2(is_zero, others, math_ops.divide(prod, nonzero_data))
    gathered, _ = _gather_drop_negatives(grad, ids, data)
    return gathered * partial


def _unsorted(op_type: str, op):
    ids, n = op.inputs[1], op.inputs[2]
    return lambda values: core_ops.apply_op(op_type, [values, ids, n]).outputs[0]


@register_gradient("UnsortedSegmentMax")
def _unsorted_segment_max_grad(op, grad):
    return [segment_min_or_max_grad(op, grad, _unsorted("UnsortedSegmentSum", op)), None, None]


@register_gradient("UnsortedSegmentMin")
def _unsorted_segment_min_grad(op, grad):
    return [segment_min_or_max_grad(op, grad, _unsorted("UnsortedSegmentSum", op)), None, None]


@register_gradient("UnsortedSegmentProd")
def _unsorted_segment_prod_grad(op, grad):
    sums, prods = _unsorted("UnsortedSegmentSum", op), _unsorted("UnsortedSegmentProd", op)
    return [segment_prod_grad(op, grad, sums, prods), None, None]


def _unsorted_segment(op_type: str, data, segment_ids, num_segments, name) -> Tensor:
    data = core_ops.convert_to_tensor(data)
    ids = core_ops.convert_to_tensor(segment_ids)
    n = as_int_tensor(num_segments, "num_segments")
    return core_ops.apply_op(op_type, [data, ids, n], name=name).outputs[0]


@export("unsorted_segment_max", "math.unsorted_segment_max")
def unsorted_segment_max(
    data: Any, segment_ids: Any, num_segments: Any, name: str | None = None
) -> Tensor:
    """The largest slice of `data` per segment, like `unsorted_segment_sum`; an empty segment
    gets the dtype's lowest value (TF1 `tf.math.unsorted_segment_max`)."""
    return _unsorted_segment("UnsortedSegmentMax", data, segment_ids, num_segments, name)


@export("unsorted_segment_min", "math.unsorted_segment_min")
def unsorted_segment_min(
    data: Any, segment_ids: Any, num_segments: Any, name: str | None = None
) -> Tensor:
    """The smallest slice of `data` per segment; an empty segment gets the dtype's highest
    value."""
    return _unsorted_segment("UnsortedSegmentMin", data, segment_ids, num_segments, name)


@export("unsorted_segment_prod", "math.unsorted_segment_prod")
def unsorted_segment_prod(
    data: Any, segment_ids: Any, num_segments: Any, name: str | None = None
) -> Tensor:
    """The product of the slices of `data` per segment; an empty segment gets 1."""
    return _unsorted_segment("UnsortedSegmentProd", data, segment_ids, num_segments, name)


@export("unsorted_segment_mean", "math.unsorted_segment_mean")
def unsorted_segment_mean(
    data: Any, segment_ids: Any, num_segments: Any, name: str | None = None
) -> Tensor:
    """The mean of the slices of `data` per segment (0 for an empty segment), composed as TF1:
    `unsorted_segment_sum(data) / max(segment size, 1)`."""
    data = core_ops.convert_to_tensor(data)
    ids = core_ops.convert_to_tensor(segment_ids)
    if data.shape.rank is None or ids.shape.rank is None:
        raise ValueError("unsorted_segment_mean needs the ranks of data and segment_ids")
    n = as_int_tensor(num_segments, "num_segments")
    counts = unsorted_segment_sum(fill_ops.ones_like(ids, dtype=data.dtype), ids, n)
    shape = [-1] + [1] * (data.shape.rank - ids.shape.rank)
    counts = math_ops.maximum(array_ops.reshape(counts, shape), np.ones([], data.dtype))
    return math_ops.divide(unsorted_segment_sum(data, ids, n), counts, name=name)
