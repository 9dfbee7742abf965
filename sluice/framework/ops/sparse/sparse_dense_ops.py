"""Sparse ops with a dense result sized by the dense shape: SparseReduceSum (and its gradient
op), SparseTensorDenseMatMul (TF1 `tf.sparse_reduce_sum`, `tf.sparse_tensor_dense_matmul`), and
SparseReduceSumSparse.

They read the dense shape as a host input: the compiled engine runs them when it is a constant
(a `sparse_placeholder` with a fully known shape), else the step runs interpreted. The number of
entries is a fed shape like any other. SparseReduceSumSparse gives as many entries as the data
say and runs on host values, as `unique`. Gradients are TF1's (`sparse_grad.py`).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import (
    Check,
    not_differentiable,
    register_gradient,
    register_op,
)
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops, gather_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import host_ints, host_value, register_array_op
from sluice.framework.ops.core.shape_rules import constant_value, partial_shape_value
from sluice.framework.ops.math import math_ops, reduction_ops
from sluice.framework.ops.sparse.sparse_tensor import SparseTensor, convert_to_sparse
from sluice.framework.ops.sparse.sparse_util import (
    distinct_rows,
    require_same_dtype,
    require_sparse_parts,
)


# -- SparseReduceSum -----------------------------------------------------------------------------
def _reduce_axes(axes: tuple | None, rank: int) -> tuple[int, ...]:
    if axes is None:
        return tuple(range(rank))
    for a in axes:
        if not -rank <= a < rank:
            raise ValueError(f"Invalid reduction dimension {a}, for input with {rank} dimensions.")
    return tuple(sorted({a % rank for a in axes}))


def _reduce_infer(op) -> list:
    ind, val, shape = op.inputs
    rank = require_sparse_parts(op.type, ind, val, shape)
    static = partial_shape_value(shape)
    if rank is None:
        if op.type == "SparseReduceSum":
            return [(val.dtype, TensorShape(None))]
        return [
            (dtypes.int64, TensorShape([None, None])),
            (val.dtype, TensorShape([None])),
            (dtypes.int64, TensorShape([None])),
        ]
    axes = _reduce_axes(op.get_attr("axes"), rank)
    keep = op.get_attr("keep_dims")
    dims = static.dims if static.dims is not None else [None] * rank
    out = [1 if k in axes else dims[k] for k in range(rank) if keep or k not in axes]
    out = [None if d is not None and d < 0 else d for d in out]
    if op.type == "SparseReduceSum":
        return [(val.dtype, TensorShape(out))]
    return [
        (dtypes.int64, TensorShape([None, len(out)])),
        (val.dtype, TensorShape([None])),
        (dtypes.int64, TensorShape([len(out)])),
    ]


def _reduce_kernel(ind, val, shape, *, axes, keep_dims):
    dims = host_ints(shape, "SparseReduceSum's input_shape")
    rank = len(dims)
    axes = _reduce_axes(axes, rank)
    index = jnp.asarray(ind)
    mask = jnp.asarray([k in axes for k in range(rank)])
    kept = jnp.where(mask, 0, index)
    full = [1 if k in axes else dims[k] for k in range(rank)]
    out = jnp.zeros(full, jnp.asarray(val).dtype).at[tuple(kept.T)].add(val, mode="drop")
    if keep_dims:
        return out
    return out.reshape([d for k, d in enumerate(full) if k not in axes])


register_array_op("SparseReduceSum", infer=_reduce_infer, kernel=_reduce_kernel, host_inputs=(2,))


def _reduce_grad_infer(op) -> list:
    ind, grad = op.inputs
    return [(grad.dtype, TensorShape([ind.shape[0] if ind.shape.rank else None]))]


def _reduce_grad_kernel(ind, grad, *, axes, keep_dims, rank):
    axes = _reduce_axes(axes, rank)
    grad = jnp.asarray(grad)
    if not keep_dims:
        grad = jnp.expand_dims(grad, axes) if axes else grad
    mask = jnp.asarray([k in axes for k in range(rank)])
    return grad[tuple(jnp.where(mask, 0, jnp.asarray(ind)).T)]


register_op("SparseReduceSumGrad", infer=_reduce_grad_infer, kernel=_reduce_grad_kernel)
not_differentiable("SparseReduceSumGrad")


@register_gradient("SparseReduceSum")
def _reduce_grad(op, grad):
    ind = op.inputs[0]
    rank = ind.shape[1] if ind.shape.rank == 2 else None
    if rank is None:
        raise ValueError(f"The gradient of {op.name} needs the rank of its input.")
    attrs = {"axes": op.get_attr("axes"), "keep_dims": op.get_attr("keep_dims"), "rank": rank}
    values_grad = core_ops.apply_op("SparseReduceSumGrad", [ind, grad], attrs).outputs[0]
    return [None, values_grad, None]


def _reduce_sparse_kernel(ind, val, shape, *, axes, keep_dims):
    ind = host_value(ind, "SparseReduceSumSparse's indices").astype(np.int64)
    val = host_value(val, "SparseReduceSumSparse's values")
    dims = host_value(shape, "SparseReduceSumSparse's shape").astype(np.int64)
    rank = dims.size
    axes = _reduce_axes(axes, rank)
    cols = [k for k in range(rank) if keep_dims or k not in axes]
    index = ind.copy()
    index[:, list(axes)] = 0
    rows, (ids,) = (
        distinct_rows(index[:, cols])
        if ind.shape[0]
        else (np.zeros((0, len(cols)), np.int64), [np.zeros(0, np.int64)])
    )
    sums = np.zeros(rows.shape[0], val.dtype)
    np.add.at(sums, ids, val)
    out_shape = np.array([1 if k in axes else dims[k] for k in cols], np.int64)
    return rows.astype(np.int64), sums, out_shape


register_array_op(
    "SparseReduceSumSparse", infer=_reduce_infer, kernel=_reduce_sparse_kernel, jit=False
)
not_differentiable("SparseReduceSumSparse")  # as TF1's


def _axes_attr(axis: Any, what: str) -> tuple | None:
    if axis is None:
        return None
    value = constant_value(axis) if isinstance(axis, Tensor) else np.asarray(axis)
    if value is None:
        raise ValueError(f"{what}: axis must be known when the graph is built, got {axis}.")
    return tuple(int(a) for a in np.reshape(value, [-1]))


def _reduce(op_type, sp_input, axis, keepdims, reduction_axes, keep_dims, name):
    if reduction_axes is not None:
        axis = reduction_axes
    if keep_dims is not None:
        keepdims = keep_dims
    what = "sparse_reduce_sum" if op_type == "SparseReduceSum" else "sparse_reduce_sum_sparse"
    sp = convert_to_sparse(sp_input, f"{what}: sp_input")
    attrs = {"axes": _axes_attr(axis, what), "keep_dims": bool(keepdims)}
    return core_ops.apply_op(
        op_type, [sp.indices, sp.values, sp.dense_shape], attrs, name=name or op_type
    )


@export("sparse_reduce_sum", "sparse.reduce_sum")
def sparse_reduce_sum(
    sp_input: Any,
    axis: Any = None,
    keepdims: bool | None = None,
    reduction_axes: Any = None,
    keep_dims: bool | None = None,
    name: str | None = None,
) -> Tensor:
    """The dense sum of `sp_input` over `axis` (all axes if None), as `reduce_sum` of its dense
    tensor (TF1 `tf.sparse_reduce_sum`); `keepdims` keeps the reduced axes with length 1.

    Raises:
      ValueError: an axis out of range, or one not known when the graph is built.

    >>> st = sl.SparseTensor([[0, 0], [0, 2], [1, 1]], [1.0, 2.0, 3.0], [2, 3])
    >>> sl.Session().run(sl.sparse_reduce_sum(st, axis=1)).tolist()
    [3.0, 3.0]
    """
    return _reduce(
        "SparseReduceSum", sp_input, axis, keepdims, reduction_axes, keep_dims, name
    ).outputs[0]


@export("sparse_reduce_sum_sparse", "sparse.reduce_sum_sparse")
def sparse_reduce_sum_sparse(
    sp_input: Any,
    axis: Any = None,
    keepdims: bool | None = None,
    reduction_axes: Any = None,
    keep_dims: bool | None = None,
) -> SparseTensor:
    """`sparse_reduce_sum` as a SparseTensor: one entry per reduced position that some entry
    of `sp_input` falls in (TF1 `tf.sparse_reduce_sum_sparse`); its size depends on the data.
    """
    op = _reduce("SparseReduceSumSparse", sp_input, axis, keepdims, reduction_axes, keep_dims, None)
    return SparseTensor(*op.outputs)


# -- SparseTensorDenseMatMul ---------------------------------------------------------------------
def _matmul_infer(op) -> list:
    ind, val, shape, b = op.inputs
    rank = require_sparse_parts("SparseTensorDenseMatMul", ind, val, shape)
    if rank not in (None, 2):
        raise ValueError(f"Tensor 'a' is not a matrix: its indices have shape {ind.shape}")
    if b.shape.rank not in (None, 2):
        raise ValueError(f"Tensor 'b' is not a matrix: shape {b.shape}")
    require_same_dtype("SparseTensorDenseMatMul", val, b)
    adj_a, adj_b = op.get_attr("adjoint_a"), op.get_attr("adjoint_b")
    a_dims = partial_shape_value(shape)
    a_dims = a_dims.dims if a_dims.dims is not None else [None, None]
    b_dims = b.shape.dims if b.shape.dims is not None else [None, None]
    rows, inner_a = (a_dims[1], a_dims[0]) if adj_a else (a_dims[0], a_dims[1])
    inner_b, cols = (b_dims[1], b_dims[0]) if adj_b else (b_dims[0], b_dims[1])
    if None not in (inner_a, inner_b) and inner_a != inner_b:
        raise ValueError(
            "Cannot multiply A and B because inner dimension does not match: "
            f"{inner_a} vs. {inner_b}. Did you forget a transpose? Dimensions of A: "
            f"{a_dims}, dimensions of B: {b_dims} (adjoint_a={adj_a}, adjoint_b={adj_b})."
        )
    return [(b.dtype, TensorShape([rows, cols]))]


def _matmul_kernel(ind, val, shape, b, *, adjoint_a, adjoint_b):
    dims = host_ints(shape, "SparseTensorDenseMatMul's a_shape")
    ind, val, b = jnp.asarray(ind), jnp.asarray(val), jnp.asarray(b)
    rows, cols = ind[:, 0], ind[:, 1]
    out_rows = dims[0]
    if adjoint_a:
        rows, cols, val, out_rows = cols, rows, jnp.conj(val), dims[1]
    if adjoint_b:
        b = jnp.conj(b.T)
    products = val[:, None] * b[cols]
    return jax.ops.segment_sum(products, rows, num_segments=out_rows)


def _matmul_fails(ind, val, shape, b, *, adjoint_a, adjoint_b):
    ind = jnp.asarray(ind)
    dims = jnp.asarray(shape).astype(jnp.int64)
    inner_b = jnp.asarray(b).shape[1 if adjoint_b else 0]
    inner_a = dims[0] if adjoint_a else dims[1]
    mismatch = inner_a != inner_b
    if ind.shape[0] == 0:
        return mismatch, jnp.asarray(-1, jnp.int64)
    bad = jnp.any((ind < 0) | (ind >= dims), axis=1)
    return mismatch | jnp.any(bad), jnp.where(mismatch, -1, jnp.argmax(bad)).astype(jnp.int64)


def _matmul_message(op, i: int) -> str:
    if i < 0:
        return "Cannot multiply A and B because inner dimension does not match"
    return f"index[{i}] of the sparse matrix A is out of bounds of its shape"


register_op(
    "SparseTensorDenseMatMul",
    infer=_matmul_infer,
    kernel=_matmul_kernel,
    host_inputs=(2,),
    check=Check(_matmul_fails, _matmul_message),
)


@register_gradient("SparseTensorDenseMatMul")
def _matmul_grad(op, grad):
    ind, val, shape, b = op.inputs
    adj_a, adj_b = op.get_attr("adjoint_a"), op.get_attr("adjoint_b")
    b_grad = core_ops.apply_op(
        "SparseTensorDenseMatMul",
        [ind, val, shape, grad],
        {"adjoint_a": not adj_a, "adjoint_b": False},
    ).outputs[0]
    if adj_b:
        b_grad = array_ops.transpose(b_grad, conjugate=True)
    rows, cols = ind[:, 0], ind[:, 1]
    parts_a = gather_ops.gather(grad, cols if adj_a else rows)
    parts_b = gather_ops.gather(array_ops.transpose(b) if adj_b else b, rows if adj_a else cols)
    values_grad = reduction_ops.reduce_sum(math_ops.multiply(parts_a, parts_b), axis=1)
    return [None, values_grad, None, b_grad]


@export("sparse_tensor_dense_matmul", "sparse.sparse_dense_matmul", "sparse.matmul")
def sparse_tensor_dense_matmul(
    sp_a: Any, b: Any, adjoint_a: bool = False, adjoint_b: bool = False, name: str | None = None
) -> Tensor:
    """The dense product of the sparse matrix `sp_a` and the dense matrix `b` (TF1
    `tf.sparse_tensor_dense_matmul`); `adjoint_a`/`adjoint_b` take the conjugate transposes.
    Repeated indices of `sp_a` add up. Differentiable in `sp_a.values` and `b`.

    Raises:
      ValueError: `sp_a` or `b` is not a matrix, or their inner dimensions differ (when known;
        else InvalidArgumentError when run, as for an index outside `sp_a`'s shape).
      TypeError: their dtypes differ.

    >>> sp = sl.SparseTensor([[0, 1], [1, 0]], [2.0, 3.0], [2, 2])
    >>> sl.Session().run(sl.sparse_tensor_dense_matmul(sp, [[1.0], [10.0]])).tolist()
    [[20.0], [3.0]]
    """
    sp = convert_to_sparse(sp_a, "sparse_tensor_dense_matmul: sp_a")
    b = core_ops.convert_to_tensor(b, dtype=sp.dtype, name="b")
    return core_ops.apply_op(
        "SparseTensorDenseMatMul",
        [sp.indices, sp.values, sp.dense_shape, b],
        {"adjoint_a": bool(adjoint_a), "adjoint_b": bool(adjoint_b)},
        name=name or "SparseTensorDenseMatMul",
    ).outputs[0]
