"""DynamicStitch and ParallelDynamicStitch (`dynamic_stitch`, `parallel_dynamic_stitch`): the
slices of several tensors interleaved into one by index, TF1's inverse of `dynamic_partition`.

    merged[indices[m][i, ...], ...] = data[m][i, ...]      for every m and i

The output has `max(indices) + 1` rows, so it depends on the indices' values: they are read on
the host when the kernel runs, and the rows are then one gather of the concatenated data. As
for `unique`, the compiled engine runs it when the indices are constants; fed or computed
indices raise UnimplementedError there, and a session of the default engine runs such a step
interpreted (it says so once in the log). Where two slices name the same row, the later one (in
order of `m`, then `i`) is kept, as TF1's DynamicStitch does; ParallelDynamicStitch is the same
op here (TF1 leaves the order of duplicates undefined for it). Rows no index names are zero.
The gradient is TF1's: `gather(grad, indices[m])` for each `data[m]`, none for the indices.

>>> merged = sl.dynamic_stitch([[0, 2], [1, 3]], [[10.0, 30.0], [20.0, 40.0]])
>>> sl.Session().run(merged).tolist()
[10.0, 20.0, 30.0, 40.0]
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
from sluice.framework.ops.array import fill_ops, gather_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import INDEX_DTYPES, host_value, register_array_op
from sluice.framework.ops.core.shape_rules import constant_value
from sluice.framework.ops.math import segment_ops
from sluice.framework.ops.math.indexed_slices import IndexedSlices


def _stitch_infer(op) -> list:
    n = op.get_attr("N")
    indices, data = op.inputs[:n], op.inputs[n:]
    if n < 1 or len(data) != n:
        raise ValueError(f"needs as many data tensors as index tensors (N={n}, at least 1)")
    tail = None
    for m, (index, value) in enumerate(zip(indices, data)):
        if index.dtype != dtypes.int32:
            raise TypeError(f"indices[{m}] must be int32, got {index.dtype.name}")
        if value.dtype != data[0].dtype:
            raise TypeError(
                f"data[{m}] has dtype {value.dtype.name}, data[0] {data[0].dtype.name}: "
                "all data tensors must have one dtype"
            )
        if index.shape.rank is None or value.shape.rank is None:
            continue
        lead = TensorShape(value.shape.as_list()[: index.shape.rank])
        if value.shape.rank < index.shape.rank or not lead.is_compatible_with(index.shape):
            raise ValueError(
                f"data[{m}].shape {value.shape} must start with indices[{m}].shape {index.shape}"
            )
        here = TensorShape(value.shape.as_list()[index.shape.rank :])
        if tail is not None and not here.is_compatible_with(tail):
            raise ValueError(
                f"data[{m}] has slices of shape {here}, the earlier data {tail}: all slices "
                "must have one shape"
            )
        tail = here if tail is None else tail.merge_with(here)
    known = [
        np.zeros([0], np.int32) if index.shape.num_elements() == 0 else constant_value(index)
        for index in indices
    ]
    rows = None
    if all(k is not None for k in known):
        rows = max((int(np.max(k)) + 1 for k in known if k.size), default=0)
    dims = [rows] + (tail.as_list() if tail is not None else [])
    return [(data[0].dtype, TensorShape(dims) if tail is not None else TensorShape(None))]


def _stitch_kernel(*inputs: Any, N: int, **_: Any) -> Any:  # noqa: N803  (TF1's attr name)
    indices = [host_value(i, "the indices of DynamicStitch").reshape(-1) for i in inputs[:N]]
    data = inputs[N:]
    flat_index = np.concatenate(indices) if indices else np.zeros([0], np.int32)
    if flat_index.size and flat_index.min() < 0:
        raise ValueError(f"DynamicStitch: index {int(flat_index.min())} is negative")
    tail = tuple(data[0].shape[np.ndim(inputs[0]) :])
    rows = int(flat_index.max()) + 1 if flat_index.size else 0
    # the source row of each output row: the last (m, i) naming it; -1 where none does
    source = np.full([rows], -1, np.int64)
    source[flat_index] = np.arange(flat_index.size)  # later assignments win, as TF1
    values = jnp.concatenate(
        [jnp.reshape(d, (-1,) + tail) for d in data] + [jnp.zeros((1,) + tail, data[0].dtype)]
    )
    return values[np.where(source < 0, flat_index.size, source)]


for _name in ("DynamicStitch", "ParallelDynamicStitch"):
    register_array_op(_name, infer=_stitch_infer, kernel=_stitch_kernel, host_inputs=(), jit=False)


@register_gradient("DynamicStitch")
@register_gradient("ParallelDynamicStitch")
def _stitch_grad(op, grad):
    n = op.get_attr("N")
    if isinstance(grad, IndexedSlices):  # rows summed into the dense output's shape
        rows = fill_ops.shape(op.outputs[0])[0]
        grad = segment_ops.unsorted_segment_sum(grad.values, grad.indices, rows)
    return [None] * n + [gather_ops.gather(grad, index) for index in op.inputs[:n]]


def _stitch(op_type: str, indices: Any, data: Any, name: str | None) -> Tensor:
    if not isinstance(indices, (list, tuple)) or not isinstance(data, (list, tuple)):
        raise TypeError(f"{op_type}: indices and data are lists of tensors.")
    if len(indices) != len(data) or not indices:
        raise ValueError(
            f"{op_type}: {len(indices)} index tensors and {len(data)} data tensors; they must "
            "be as many, at least one."
        )
    index_tensors = [core_ops.convert_to_tensor(i, dtype=dtypes.int32) for i in indices]
    for m, index in enumerate(index_tensors):
        if index.dtype not in INDEX_DTYPES:
            raise TypeError(f"{op_type}: indices[{m}] must be int32, got {index.dtype.name}.")
    data_tensors = [core_ops.convert_to_tensor(d) for d in data]
    attrs = {"N": len(index_tensors)}
    return core_ops.apply_op(op_type, index_tensors + data_tensors, attrs, name).outputs[0]


@export("dynamic_stitch")
def dynamic_stitch(indices: list, data: list, name: str | None = None) -> Tensor:
    """Interleaves the slices of `data` by `indices` (TF1 `tf.dynamic_stitch`).

    Args:
      indices: int32 tensors; `indices[m]` gives the output row of each slice of `data[m]`.
      data: tensors of one dtype; `data[m].shape` starts with `indices[m].shape`, and the rest
        (the slice shape) is the same for all.
      name: the op's name.

    Returns:
      A tensor of `max(indices) + 1` rows of the slice shape; where two slices name a row the
      later one is kept.

    Raises:
      TypeError: indices not int32, or data of different dtypes.
      ValueError: lists of different lengths, or shapes that do not fit.
    """
    return _stitch("DynamicStitch", indices, data, name)


@export("parallel_dynamic_stitch")
def parallel_dynamic_stitch(indices: list, data: list, name: str | None = None) -> Tensor:
    """`dynamic_stitch` whose duplicates TF1 may resolve in any order (here, the later slice,
    as `dynamic_stitch`)."""
    return _stitch("ParallelDynamicStitch", indices, data, name)
