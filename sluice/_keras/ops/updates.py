"""`keras.ops` functions that write into arrays (Keras's `ops/core.py`): `scatter`,
`scatter_update`, `slice_update`, and `saturate_cast`; graph code that `eager.keras_op` also
runs at once on values. Index tuples are as in `tf.scatter_nd`: the last axis of `indices`
holds one index per leading axis of the target.

>>> sl.ops.scatter(np.array([[0], [2], [0]]), np.array([1.0, 2.0, 3.0]), (4,))
Array([4., 0., 2., 0.])
>>> sl.ops.slice_update(np.zeros((2, 3), np.int32), (1, 1), np.array([[5, 6]], np.int32))
Array([[0, 0, 0],
       [0, 5, 6]], dtype=int32)
>>> sl.ops.saturate_cast(np.array([-1.5, 300.0]), "uint8")
Array([  0, 255], dtype=uint8)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._keras.ops.eager import keras_op, known_rank, standard_dtype, tensor
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import (
    array_ops,
    fill_ops,
    gather_ops,
    grid_ops,
    join_ops,
    scatter_nd_ops,
)
from sluice.framework.ops.math import composite_reductions, math_ops, reduction_ops, segment_ops


def _indices(indices: Any) -> Any:
    ids = tensor(indices)
    return ids if ids.dtype in (dtypes.int32, dtypes.int64) else fill_ops.cast(ids, dtypes.int32)


@keras_op("scatter")
def scatter(indices: Any, values: Any, shape: Any) -> Any:
    """Zeros of `shape` with `values` added at the index tuples `indices` (repeated tuples add
    up): `zeros(shape).at[tuple(indices.T)].add(values)`."""
    ids = _indices(indices)
    shape = [int(d) for d in shape] if not hasattr(shape, "dtype") else shape
    return scatter_nd_ops.scatter_nd(ids, tensor(values), fill_ops.cast(tensor(shape), ids.dtype))


_REDUCTIONS = ("add", "max", "min", "mul")


@keras_op("scatter_update")
def scatter_update(inputs: Any, indices: Any, updates: Any, reduction: str | None = None) -> Any:
    """`inputs` with `updates` written at the index tuples `indices` (`inputs.at[tuple(
    indices.T)].set(updates)`), or combined with what is there by `reduction` ("add", "max",
    "min", "mul"; repeated tuples then combine too).

    Raises:
      ValueError: an unknown reduction.
    """
    x, ids = tensor(inputs), _indices(indices)
    updates = tensor(updates, x.dtype)
    if reduction is None:
        return scatter_nd_ops.tensor_scatter_nd_update(x, ids, updates)
    if reduction == "add":
        return scatter_nd_ops.tensor_scatter_nd_add(x, ids, updates)
    if reduction not in _REDUCTIONS:
        raise ValueError(
            f"scatter_update: reduction must be None or one of {_REDUCTIONS}, got {reduction!r}."
        )
    # max/min/mul: the updates reduced per target entry (a segment per flat index), then merged
    depth = ids.shape[-1]
    if depth is None:
        raise ValueError(f"scatter_update: the last axis of indices {ids.shape} must be known.")
    shape = fill_ops.shape(x, out_type=ids.dtype)
    lead = shape[:depth]
    strides = composite_reductions.cumprod(lead, axis=0, exclusive=True, reverse=True)
    flat_ids = reduction_ops.reduce_sum(ids * strides, axis=-1)
    count = reduction_ops.reduce_prod(lead)
    rest = shape[depth:]
    flat_x = array_ops.reshape(x, join_ops.concat([[-1], rest], 0))
    if reduction == "mul":
        found = segment_ops.unsorted_segment_prod(updates, flat_ids, count)
        return array_ops.reshape(flat_x * found, shape)
    combine = (
        segment_ops.unsorted_segment_max
        if reduction == "max"
        else (segment_ops.unsorted_segment_min)
    )
    found = combine(updates, flat_ids, count)
    touched = segment_ops.unsorted_segment_sum(fill_ops.ones_like(updates), flat_ids, count)
    pick = math_ops.maximum if reduction == "max" else math_ops.minimum
    merged = gather_ops.where_v2(
        math_ops.greater(touched, tensor(0, touched.dtype)), pick(flat_x, found), flat_x
    )
    return array_ops.reshape(merged, shape)


@keras_op("slice_update")
def slice_update(inputs: Any, start_indices: Any, updates: Any) -> Any:
    """`inputs` with the block `updates` written from `start_indices` on (one index per axis;
    clamped so the block fits, as `lax.dynamic_update_slice`)."""
    x = tensor(inputs)
    updates = tensor(updates, x.dtype)
    rank = known_rank(x, "slice_update")
    if updates.shape.rank != rank:
        raise ValueError(
            f"slice_update: updates {updates.shape} must have the rank of inputs {x.shape}."
        )
    starts = tensor(start_indices)
    starts = fill_ops.cast(starts, dtypes.int32) if starts.dtype != dtypes.int32 else starts
    size, block = fill_ops.shape(x), fill_ops.shape(updates)
    starts = math_ops.minimum(math_ops.maximum(starts, 0), size - block)
    # the index tuple of every entry of the block, shifted to the start
    grids = grid_ops.meshgrid(*[fill_ops.range(0, block[i]) for i in range(rank)], indexing="ij")
    ids = join_ops.stack(grids, axis=-1) + starts if rank else array_ops.reshape(starts, [0])
    flat_ids = array_ops.reshape(ids, [-1, rank])
    return scatter_nd_ops.tensor_scatter_nd_update(x, flat_ids, array_ops.reshape(updates, [-1]))


def _limits(dtype: np.dtype) -> Any:
    if dtype == np.bool_:
        return None
    return np.iinfo(dtype) if dtype.kind in "iu" else np.finfo(dtype)


@keras_op("saturate_cast")
def saturate_cast(x: Any, dtype: Any) -> Any:
    """x cast to `dtype`, values beyond its range clipped to its limits first (`uint8`: -1.5
    gives 0, 300 gives 255), as Keras's `saturate_cast`."""
    x, out = tensor(x), standard_dtype(dtype)
    into, onto = _limits(np.dtype(x.dtype)), _limits(np.dtype(out))
    if into is None or onto is None:
        return fill_ops.cast(x, out)
    # the limits as values of x's dtype that lie inside the output's range
    low = np.asarray(np.maximum(into.min, onto.min)).astype(x.dtype)
    if low < onto.min:
        low = np.nextafter(low, 0, dtype=x.dtype)
    high = np.asarray(np.minimum(into.max, onto.max)).astype(x.dtype)
    if high > onto.max:
        high = np.nextafter(high, 0, dtype=x.dtype)
    clipped = math_ops.minimum(math_ops.maximum(x, tensor(low, x.dtype)), tensor(high, x.dtype))
    return fill_ops.cast(clipped, out)
