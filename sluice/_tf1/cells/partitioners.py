"""TF1's partitioners: `partitioner(shape=TensorShape, dtype=DType) -> [parts per axis]`.

`get_variable(..., partitioner=p)` (or a `variable_scope(partitioner=p)`) calls `p` with the
full shape and dtype and splits the variable along the one axis given more than one part
(`sl.PartitionedVariable`). The three of TF1:

    fixed_size_partitioner(num_shards, axis)      min(num_shards, shape[axis]) parts
    variable_axis_size_partitioner(max_bytes, ...) parts of at most max_bytes (one row at least)
    min_max_variable_partitioner(max_parts, ...)   parts of at least min_slice_size bytes

>>> sl.fixed_size_partitioner(3)(shape=sl.TensorShape([10, 4]), dtype=sl.float32)
[3, 1]
>>> sl.min_max_variable_partitioner(8, min_slice_size=64)(sl.TensorShape([10, 4]), sl.float32)
[3, 1]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.tensor_shape import TensorShape, as_shape


def _element_size(dtype: Any, bytes_per_string_element: int) -> int:
    dtype = dtypes.as_dtype(dtype)
    if dtype.name in ("string", "object", "resource"):  # NumPy's object dtype: strings
        return bytes_per_string_element
    return dtype.itemsize


@export("fixed_size_partitioner", "nn.rnn_cell.fixed_size_partitioner")
def fixed_size_partitioner(num_shards: int, axis: int = 0) -> Callable:
    """A partitioner giving `num_shards` parts along `axis` (fewer when the axis is shorter;
    TF1 `tf.fixed_size_partitioner`).

    Args:
      num_shards: the number of parts.
      axis: the axis to split.

    Returns:
      `partitioner(shape, **unused) -> list`, for `get_variable` and `variable_scope`.
    """

    def partitioner(shape: Any, **unused: Any) -> list[int]:
        dims = as_shape(shape).as_list()
        partitions = [1] * len(dims)
        partitions[axis] = min(num_shards, dims[axis])
        return partitions

    return partitioner


@export("variable_axis_size_partitioner")
def variable_axis_size_partitioner(
    max_shard_bytes: int,
    axis: int = 0,
    bytes_per_string_element: int = 16,
    max_shards: int | None = None,
) -> Callable:
    """A partitioner keeping each part below `max_shard_bytes` by splitting `axis` (TF1
    `tf.variable_axis_size_partitioner`): as many rows per part as fit (one at least), at most
    `max_shards` parts.

    Args:
      max_shard_bytes: the most bytes a part should hold.
      axis: the axis to split.
      bytes_per_string_element: the size assumed for a string element.
      max_shards: the most parts (None: no limit); it wins over `max_shard_bytes`.

    Raises:
      ValueError: a byte count below 1 or max_shards below 1; the partitioner itself raises
        ValueError for a shape that is not a fully defined TensorShape or a dtype that is not
        a DType.
    """
    if max_shard_bytes < 1 or bytes_per_string_element < 1:
        raise ValueError("Both max_shard_bytes and bytes_per_string_element must be positive.")
    if max_shards and max_shards < 1:
        raise ValueError("max_shards must be positive.")

    def partitioner(shape: Any, dtype: Any) -> list[int]:
        if not isinstance(shape, TensorShape):
            raise ValueError(f"shape is not a TensorShape: {shape}")
        if not shape.is_fully_defined():
            raise ValueError(f"shape is not fully defined: {shape}")
        if not isinstance(dtype, (dtypes.DType, np.dtype)):
            raise ValueError(f"dtype is not a DType: {dtype}")
        dims = shape.as_list()
        bytes_per_row = (
            math.prod(dims) / dims[axis] * _element_size(dtype, bytes_per_string_element)
        )
        rows_per_shard = max(1, math.floor(max_shard_bytes / bytes_per_row))
        shards = int(math.ceil(dims[axis] / rows_per_shard))
        if max_shards:
            shards = min(max_shards, shards)
        partitions = [1] * len(dims)
        partitions[axis] = shards
        return partitions

    return partitioner


@export("min_max_variable_partitioner", "nn.rnn_cell.min_max_variable_partitioner")
def min_max_variable_partitioner(
    max_partitions: int = 1,
    axis: int = 0,
    min_slice_size: int = 256 << 10,
    bytes_per_string_element: int = 16,
) -> Callable:
    """A partitioner giving parts of at least `min_slice_size` bytes, at most `max_partitions`
    of them, along `axis` (TF1 `tf.min_max_variable_partitioner`): ceil(total bytes /
    min_slice_size) parts, capped by `max_partitions` and by the axis's length.

    Args:
      max_partitions: the most parts.
      axis: the axis to split.
      min_slice_size: the fewest bytes a part should hold.
      bytes_per_string_element: the size assumed for a string element.

    Returns:
      `partitioner(shape, dtype) -> list`; it raises ValueError when `axis` is not an axis of
      the shape.
    """

    def partitioner(shape: Any, dtype: Any) -> list[int]:
        dims = as_shape(shape).as_list()
        if axis >= len(dims):
            raise ValueError(
                f"Can not partition variable along axis {axis} when shape is only {shape}"
            )
        total = math.prod(dims) * _element_size(dtype, bytes_per_string_element)
        partitions = [1] * len(dims)
        wanted = int(math.ceil(total / min_slice_size))
        partitions[axis] = max(1, min(dims[axis], max_partitions, wanted))
        return partitions

    return partitioner


def call_partitioner(partitioner: Callable, shape: TensorShape, dtype: Any) -> list[int]:
    """`partitioner(shape=shape, dtype=dtype)`, checked as TF1 checks it.

    Raises:
      ValueError: the shape is not fully defined or is a scalar's; the partitioner returns no
        sequence, one of another length than the rank, a count below 1, or splits two axes.
    """
    if not shape.is_fully_defined():
        raise ValueError(
            f"Shape of a new partitioned variable must be fully defined, but instead was {shape}."
        )
    if shape.rank < 1:
        raise ValueError(f"A partitioned Variable must have rank at least 1, shape: {shape}")
    slicing = partitioner(shape=shape, dtype=dtypes.as_dtype(dtype))
    if not isinstance(slicing, Sequence) or isinstance(slicing, str):
        raise ValueError(f"Partitioner must return a sequence, but saw: {slicing}")
    slicing = list(slicing)
    if len(slicing) != shape.rank:
        raise ValueError(
            "Partitioner returned a partition list that does not match the Variable's rank: "
            f"{slicing} vs. {shape}"
        )
    if any(p < 1 for p in slicing):
        raise ValueError(f"Partitioner returned zero partitions for some axes: {slicing}")
    if sum(p > 1 for p in slicing) > 1:
        raise ValueError(
            f"Can only slice a variable along one dimension: shape: {shape}, partitioning: "
            f"{slicing}"
        )
    return [int(p) for p in slicing]
