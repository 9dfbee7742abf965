"""TF1's `tensorflow.python.ops.gen_sparse_ops`: the raw sparse ops, on the three tensors of a
sparse operand instead of a SparseTensor, as TF1's own tests and some TF1 programs call them
(`from sluice.python.ops import gen_sparse_ops` once `tensorflow` is renamed; TF1's
`sparse_ops` module holds it as `sparse_ops.gen_sparse_ops`).

A reduction's `reduction_axes` must be known while the graph is built (sluice keeps the axes
as an attribute of the op; TF1 takes a tensor). The ops are those of `sl.sparse_*`: the same
shapes, dtypes and errors.

>>> from sluice.python.ops import gen_sparse_ops
>>> out = gen_sparse_ops.sparse_reduce_max([[0, 0], [1, 1]], [1.0, 3.0], [2, 2], [1])
>>> sl.Session().run(out).tolist()
[1.0, 3.0]
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.shape_rules import constant_value

_MODULE = "python.ops.gen_sparse_ops"

SparseReduceSparseOutput = collections.namedtuple(
    "SparseReduceSparseOutput", ["output_indices", "output_values", "output_shape"]
)


def _parts(indices: Any, values: Any, shape: Any) -> list[Tensor]:
    return [
        core_ops.convert_to_tensor(indices, dtype=dtypes.int64, name="indices"),
        core_ops.convert_to_tensor(values, name="values"),
        core_ops.convert_to_tensor(shape, dtype=dtypes.int64, name="shape"),
    ]


def _axes(reduction_axes: Any, op_type: str) -> tuple[int, ...]:
    value = (
        constant_value(reduction_axes)
        if isinstance(reduction_axes, Tensor)
        else np.asarray(reduction_axes)
    )
    if value is None:
        raise ValueError(
            f"{op_type}: reduction_axes must be known when the graph is built, got "
            f"{reduction_axes}."
        )
    return tuple(int(a) for a in np.reshape(value, [-1]))


def _reduce(op_type, indices, values, shape, reduction_axes, keep_dims, name) -> Any:
    attrs = {"axes": _axes(reduction_axes, op_type), "keep_dims": bool(keep_dims)}
    op = core_ops.apply_op(op_type, _parts(indices, values, shape), attrs, name=name or op_type)
    return op.outputs[0] if len(op.outputs) == 1 else SparseReduceSparseOutput(*op.outputs)


@export(f"{_MODULE}.sparse_reduce_sum")
def sparse_reduce_sum(
    input_indices: Any,
    input_values: Any,
    input_shape: Any,
    reduction_axes: Any,
    keep_dims: bool = False,
    name: str | None = None,
) -> Tensor:
    """TF1's raw SparseReduceSum: `sl.sparse_reduce_sum` on the three tensors."""
    return _reduce(
        "SparseReduceSum", input_indices, input_values, input_shape, reduction_axes, keep_dims,
        name,
    )  # fmt: skip


@export(f"{_MODULE}.sparse_reduce_sum_sparse")
def sparse_reduce_sum_sparse(
    input_indices: Any,
    input_values: Any,
    input_shape: Any,
    reduction_axes: Any,
    keep_dims: bool = False,
    name: str | None = None,
) -> SparseReduceSparseOutput:
    """TF1's raw SparseReduceSumSparse: (output_indices, output_values, output_shape)."""
    return _reduce(
        "SparseReduceSumSparse", input_indices, input_values, input_shape, reduction_axes,
        keep_dims, name,
    )  # fmt: skip


@export(f"{_MODULE}.sparse_reduce_max")
def sparse_reduce_max(
    input_indices: Any,
    input_values: Any,
    input_shape: Any,
    reduction_axes: Any,
    keep_dims: bool = False,
    name: str | None = None,
) -> Tensor:
    """TF1's raw SparseReduceMax: `sl.sparse_reduce_max` on the three tensors."""
    return _reduce(
        "SparseReduceMax", input_indices, input_values, input_shape, reduction_axes, keep_dims,
        name,
    )  # fmt: skip


@export(f"{_MODULE}.sparse_reduce_max_sparse")
def sparse_reduce_max_sparse(
    input_indices: Any,
    input_values: Any,
    input_shape: Any,
    reduction_axes: Any,
    keep_dims: bool = False,
    name: str | None = None,
) -> SparseReduceSparseOutput:
    """TF1's raw SparseReduceMaxSparse: (output_indices, output_values, output_shape)."""
    return _reduce(
        "SparseReduceMaxSparse", input_indices, input_values, input_shape, reduction_axes,
        keep_dims, name,
    )  # fmt: skip


@export(f"{_MODULE}.sparse_softmax")
def sparse_softmax(
    sp_indices: Any, sp_values: Any, sp_shape: Any, name: str | None = None
) -> Tensor:
    """TF1's raw SparseSoftmax: the softmax values, one per entry."""
    parts = _parts(sp_indices, sp_values, sp_shape)
    return core_ops.apply_op("SparseSoftmax", parts, name=name or "SparseSoftmax").outputs[0]


def _cwise(op_type: str, sp_indices, sp_values, sp_shape, dense, name) -> Tensor:
    parts = _parts(sp_indices, sp_values, sp_shape)
    dense = core_ops.convert_to_tensor(dense, dtype=parts[1].dtype, name="dense")
    return core_ops.apply_op(op_type, [*parts, dense], name=name or op_type).outputs[0]


@export(f"{_MODULE}.sparse_dense_cwise_mul")
def sparse_dense_cwise_mul(
    sp_indices: Any, sp_values: Any, sp_shape: Any, dense: Any, name: str | None = None
) -> Tensor:
    """TF1's raw SparseDenseCwiseMul: the values of `sp * dense`."""
    return _cwise("SparseDenseCwiseMul", sp_indices, sp_values, sp_shape, dense, name)


@export(f"{_MODULE}.sparse_dense_cwise_div")
def sparse_dense_cwise_div(
    sp_indices: Any, sp_values: Any, sp_shape: Any, dense: Any, name: str | None = None
) -> Tensor:
    """TF1's raw SparseDenseCwiseDiv: the values of `sp / dense` (no cast of integers)."""
    return _cwise("SparseDenseCwiseDiv", sp_indices, sp_values, sp_shape, dense, name)


@export(f"{_MODULE}.sparse_dense_cwise_add")
def sparse_dense_cwise_add(
    sp_indices: Any, sp_values: Any, sp_shape: Any, dense: Any, name: str | None = None
) -> Tensor:
    """TF1's raw SparseDenseCwiseAdd: the values of `sparse_dense_cwise_add(sp, dense)`."""
    return _cwise("SparseDenseCwiseAdd", sp_indices, sp_values, sp_shape, dense, name)
