"""Elementwise maximum and minimum of two sparse tensors: SparseSparseMaximum and
SparseSparseMinimum (TF1 `tf.sparse_maximum`, `tf.sparse_minimum`).

The result holds the union of both operands' indices, in row-major order; an index that only
one operand holds is compared with 0, as TF1's kernel does. How many entries that gives depends
on the indices, so the ops run on host values, as SparseAdd (always interpreted; compiled from
constants). TF1 registers no gradient for them: they are not differentiable.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import name_scope
from sluice.framework.ir.registry import not_differentiable
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import host_value, register_array_op
from sluice.framework.ops.sparse.sparse_tensor import SparseTensor, convert_to_sparse
from sluice.framework.ops.sparse.sparse_util import (
    distinct_rows,
    require_same_dtype,
    require_sparse_parts,
)


def _min_or_max_infer(op) -> list:
    a_ind, a_val, a_shape, b_ind, b_val, b_shape = op.inputs
    what = op.type
    ra = require_sparse_parts(f"{what} a", a_ind, a_val, a_shape)
    rb = require_sparse_parts(f"{what} b", b_ind, b_val, b_shape)
    require_same_dtype(what, a_val, b_val)
    if not (dtypes.is_integer(a_val.dtype) or dtypes.is_floating(a_val.dtype)):
        raise TypeError(f"{what}: the values must be real numbers, got {a_val.dtype.name}")
    rank = ra if ra == rb else None  # ranks that differ fail when run, as TF1
    return [(dtypes.int64, TensorShape([None, rank])), (a_val.dtype, TensorShape([None]))]


def _min_or_max(what: str, pick):
    def kernel(a_ind, a_val, a_shape, b_ind, b_val, b_shape):
        a_ind = host_value(a_ind, f"{what}'s a_indices").astype(np.int64)
        b_ind = host_value(b_ind, f"{what}'s b_indices").astype(np.int64)
        a_val, b_val = host_value(a_val, f"{what}'s a"), host_value(b_val, f"{what}'s b")
        a_shape = host_value(a_shape, f"{what}'s a_shape").reshape(-1)
        b_shape = host_value(b_shape, f"{what}'s b_shape").reshape(-1)
        if a_shape.size != b_shape.size or a_ind.shape[1] != b_ind.shape[1]:
            raise ValueError(
                f"{what}: Operands do not have the same ranks; got shapes {a_shape.tolist()} "
                f"and {b_shape.tolist()}"
            )
        if (a_shape != b_shape).any():
            raise ValueError(
                f"{what}: Operands' shapes do not match: got {a_shape.tolist()} and "
                f"{b_shape.tolist()}"
            )
        rows, (ia, ib) = distinct_rows(a_ind, b_ind)
        zero = np.zeros((), a_val.dtype)
        a_dense = np.full(rows.shape[0], zero, a_val.dtype)
        b_dense = np.full(rows.shape[0], zero, a_val.dtype)
        a_dense[ia] = a_val
        b_dense[ib] = b_val
        return rows.astype(np.int64), pick(a_dense, b_dense).astype(a_val.dtype)

    return kernel


for _name, _pick in (("SparseSparseMaximum", np.maximum), ("SparseSparseMinimum", np.minimum)):
    register_array_op(_name, infer=_min_or_max_infer, kernel=_min_or_max(_name, _pick), jit=False)
    not_differentiable(_name)  # TF1 registers no gradient


def _apply(op_type: str, sp_a: Any, sp_b: Any, name: str | None) -> SparseTensor:
    what = "sparse_maximum" if op_type == "SparseSparseMaximum" else "sparse_minimum"
    a = convert_to_sparse(sp_a, f"{what}: sp_a")
    b = convert_to_sparse(sp_b, f"{what}: sp_b")
    with name_scope(name, op_type, [a.indices, a.values, b.indices, b.values]) as scope:
        op = core_ops.apply_op(
            op_type,
            [a.indices, a.values, a.dense_shape, b.indices, b.values, b.dense_shape],
            name=scope.rstrip("/") or None,
        )
    result = SparseTensor(op.outputs[0], op.outputs[1], a.dense_shape)
    result.set_shape(a.shape)
    return result


@export("sparse_maximum", "sparse.maximum")
def sparse_maximum(sp_a: Any, sp_b: Any, name: str | None = None) -> SparseTensor:
    """The elementwise maximum of two sparse tensors of one shape (TF1 `tf.sparse_maximum`):
    entries at the union of their indices, in row-major order, a missing entry counting as 0.

    Raises:
      TypeError: an operand is not a SparseTensor, or their values' dtypes differ.
      InvalidArgumentError: when run, the ranks or the shapes differ.

    >>> a = sl.SparseTensor([[0], [1]], [-1.0, 2.0], [3])
    >>> b = sl.SparseTensor([[1], [2]], [3.0, -4.0], [3])
    >>> v = sl.Session().run(sl.sparse_maximum(a, b))
    >>> v.indices.tolist(), v.values.tolist()
    ([[0], [1], [2]], [0.0, 3.0, 0.0])
    """
    return _apply("SparseSparseMaximum", sp_a, sp_b, name)


@export("sparse_minimum", "sparse.minimum")
def sparse_minimum(sp_a: Any, sp_b: Any, name: str | None = None) -> SparseTensor:
    """The elementwise minimum of two sparse tensors of one shape (TF1 `tf.sparse_minimum`):
    entries at the union of their indices, in row-major order, a missing entry counting as 0.

    Raises:
      TypeError: an operand is not a SparseTensor, or their values' dtypes differ.
      InvalidArgumentError: when run, the ranks or the shapes differ.

    >>> a = sl.SparseTensor([[0], [1]], [-1.0, 2.0], [3])
    >>> b = sl.SparseTensor([[1], [2]], [3.0, -4.0], [3])
    >>> v = sl.Session().run(sl.sparse_minimum(a, b))
    >>> v.indices.tolist(), v.values.tolist()
    ([[0], [1], [2]], [-1.0, 2.0, -4.0])
    """
    return _apply("SparseSparseMinimum", sp_a, sp_b, name)
