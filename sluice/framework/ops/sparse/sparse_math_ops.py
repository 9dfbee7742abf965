"""Sparse arithmetic: SparseAdd (and its gradient op), SparseTensorDenseAdd, SparseReduceSum,
SparseReduceSumSparse, SparseTensorDenseMatMul, SparseSoftmax (TF1 `tf.sparse_add`,
`tf.sparse_reduce_sum`, `tf.sparse_tensor_dense_matmul`, `tf.sparse_softmax`).

SparseTensorDenseAdd and SparseSoftmax keep the number of entries and are jitted. SparseReduceSum
and SparseTensorDenseMatMul give a dense result sized by the dense shape, which they read as a
host input (compiled when it is a constant, else the step runs interpreted). SparseAdd of two
sparse tensors and SparseReduceSumSparse give as many entries as the data say: they run on host
values, as `unique`. Gradients are TF1's (`sparse_grad.py`), with respect to the values and the
dense operands.
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
from sluice.framework.ops.array import array_ops, gather_ops, scatter_nd_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import host_ints, host_value, register_array_op
from sluice.framework.ops.core.shape_rules import constant_value, partial_shape_value
from sluice.framework.ops.math import math_ops, reduction_ops
from sluice.framework.ops.sparse.sparse_tensor import SparseTensor, convert_to_sparse, is_sparse
from sluice.framework.ops.sparse.sparse_util import require_sparse_parts, row_groups


def _same_dtype(what: str, a: Tensor, b: Tensor) -> None:
    if a.dtype != b.dtype:
        raise TypeError(
            f"{what}: the values are {a.dtype.name} and {b.dtype.name}; they must agree"
        )


# -- SparseAdd: sparse + sparse ------------------------------------------------------------------
def _add_infer(op) -> list:
    a_ind, a_val, a_shape, b_ind, b_val, b_shape, thresh = op.inputs
    ra = require_sparse_parts("SparseAdd a", a_ind, a_val, a_shape)
    rb = require_sparse_parts("SparseAdd b", b_ind, b_val, b_shape)
    if None not in (ra, rb) and ra != rb:
        raise ValueError(f"Operands do not have the same ranks; got ranks {ra} and {rb}")
    _same_dtype("SparseAdd", a_val, b_val)
    if thresh.shape.rank not in (None, 0):
        raise ValueError(f"thresh must be a scalar, got shape {thresh.shape}")
    rank = ra if ra is not None else rb
    return [
        (dtypes.int64, TensorShape([None, rank])),
        (a_val.dtype, TensorShape([None])),
        (dtypes.int64, TensorShape([rank])),
    ]


def _rows_ids(*blocks: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """The distinct rows of the stacked index blocks, in row-major order, and each block's rows'
    positions among them."""
    stacked = np.concatenate(blocks, axis=0)
    if stacked.shape[0] == 0:
        return stacked, [np.zeros(0, np.int64) for _ in blocks]
    unique, inverse = np.unique(stacked, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    bounds = np.cumsum([0] + [b.shape[0] for b in blocks])
    return unique, [inverse[s:e] for s, e in zip(bounds[:-1], bounds[1:])]


def _add_kernel(a_ind, a_val, a_shape, b_ind, b_val, b_shape, thresh):
    a_ind = host_value(a_ind, "SparseAdd's a_indices").astype(np.int64)
    b_ind = host_value(b_ind, "SparseAdd's b_indices").astype(np.int64)
    a_val, b_val = host_value(a_val, "SparseAdd's a"), host_value(b_val, "SparseAdd's b")
    a_shape, b_shape = host_value(a_shape, "a_shape"), host_value(b_shape, "b_shape")
    if a_shape.shape != b_shape.shape or (a_shape != b_shape).any():
        raise ValueError(
            f"Operands' shapes do not match: got {a_shape.tolist()} and {b_shape.tolist()}"
        )
    rows, (ia, ib) = _rows_ids(a_ind, b_ind)
    sums = np.zeros(rows.shape[0], a_val.dtype)
    np.add.at(sums, ia, a_val)
    np.add.at(sums, ib, b_val)
    # As TF's merge: only an index that both operands hold is dropped below the threshold.
    in_both = np.zeros(rows.shape[0], bool)
    in_both[np.intersect1d(ia, ib)] = True
    keep = ~in_both | (np.abs(sums) >= np.asarray(thresh))
    return rows[keep], sums[keep], a_shape.astype(np.int64)


register_array_op("SparseAdd", infer=_add_infer, kernel=_add_kernel, jit=False)


def _add_grad_infer(op) -> list:
    grad, a_ind, b_ind, _ = op.inputs
    return [
        (grad.dtype, TensorShape([a_ind.shape[0] if a_ind.shape.rank else None])),
        (grad.dtype, TensorShape([b_ind.shape[0] if b_ind.shape.rank else None])),
    ]


def _add_grad_kernel(grad, a_ind, b_ind, sum_ind):
    """The gradient of each operand's values: the sum's gradient where its index went, 0 where
    the threshold dropped it (TF's SparseAddGrad)."""
    grad = host_value(grad, "SparseAddGrad's backprop_val_grad")
    blocks = [
        host_value(x, "SparseAddGrad's indices").astype(np.int64) for x in (sum_ind, a_ind, b_ind)
    ]
    rows, (isum, ia, ib) = _rows_ids(*blocks)
    where = np.full(rows.shape[0], -1)
    where[isum] = np.arange(isum.size)
    out = []
    for ids in (ia, ib):
        at = where[ids]
        out.append(
            np.where(at >= 0, grad[np.maximum(at, 0)] if grad.size else 0, 0).astype(grad.dtype)
        )
    return tuple(out)


register_array_op("SparseAddGrad", infer=_add_grad_infer, kernel=_add_grad_kernel, jit=False)
not_differentiable("SparseAddGrad")


@register_gradient("SparseAdd")
def _add_grad(op, _grad_indices, grad_values, _grad_shape):
    a_ind, b_ind, sum_ind = op.inputs[0], op.inputs[3], op.outputs[0]
    a_grad, b_grad = core_ops.apply_op(
        "SparseAddGrad", [grad_values, a_ind, b_ind, sum_ind]
    ).outputs
    return [None, a_grad, None, None, b_grad, None, None]


# -- SparseTensorDenseAdd: sparse + dense --------------------------------------------------------
def _dense_add_infer(op) -> list:
    ind, val, shape, b = op.inputs
    rank = require_sparse_parts("SparseTensorDenseAdd", ind, val, shape)
    _same_dtype("SparseTensorDenseAdd", val, b)
    if None not in (rank, b.shape.rank) and rank != b.shape.rank:
        raise ValueError(f"the sparse operand has rank {rank}, the dense one shape {b.shape}")
    static = partial_shape_value(shape)
    if not b.shape.is_compatible_with(static):
        raise ValueError(f"the sparse operand's shape {static} is not the dense one's {b.shape}")
    return [(b.dtype, b.shape.merge_with(static))]


def _dense_add_kernel(ind, val, shape, b):
    return jnp.asarray(b).at[tuple(jnp.asarray(ind).T)].add(val, mode="drop")


register_op("SparseTensorDenseAdd", infer=_dense_add_infer, kernel=_dense_add_kernel)


@register_gradient("SparseTensorDenseAdd")
def _dense_add_grad(op, grad):
    return [None, scatter_nd_ops.gather_nd(grad, op.inputs[0]), None, grad]


@export("sparse_add", "sparse.add")
def sparse_add(a: Any, b: Any, thresh: Any = 0, threshold: Any = None) -> Any:
    """`a + b` where one or both are sparse (TF1 `tf.sparse_add`).

    Two SparseTensors give a SparseTensor in row-major order (their indices should be in that
    order, as TF1 asks); an index both hold is dropped when the sum's magnitude is below
    `thresh`. A SparseTensor and a dense Tensor give a dense Tensor.

    Raises:
      TypeError: neither is sparse.

    >>> a = sl.SparseTensor([[0, 0], [1, 1]], [1.0, 2.0], [2, 2])
    >>> b = sl.SparseTensor([[1, 1]], [-1.9], [2, 2])
    >>> v = sl.Session().run(sl.sparse_add(a, b, thresh=0.5))
    >>> v.indices.tolist(), v.values.tolist()
    ([[0, 0]], [1.0])
    """
    if threshold is not None:
        thresh = threshold
    sparse_a, sparse_b = is_sparse(a), is_sparse(b)
    if not (sparse_a or sparse_b):
        raise TypeError("At least one input should be SparseTensor; do you mean to use tf.add()?")
    if sparse_a and sparse_b:
        a, b = convert_to_sparse(a, "sparse_add: a"), convert_to_sparse(b, "sparse_add: b")
        ranks = {a.shape.rank, b.shape.rank} - {None}
        if len(ranks) > 1:
            raise ValueError(
                "sparse_add: Operands do not have the same ranks; got shapes: "
                f"{a.shape} and {b.shape}."
            )
        if not a.shape.is_compatible_with(b.shape):
            raise ValueError(f"sparse_add: Operands' shapes do not match: {a.shape} and {b.shape}.")
        thresh = core_ops.convert_to_tensor(thresh, dtype=_real(a.dtype), name="threshold")
        op = core_ops.apply_op(
            "SparseAdd",
            [a.indices, a.values, a.dense_shape, b.indices, b.values, b.dense_shape, thresh],
            name="SparseAdd",
        )
        result = SparseTensor(*op.outputs)
        result.set_shape(a.shape.merge_with(b.shape))
        return result
    sp, dense = (a, b) if sparse_a else (b, a)
    sp = convert_to_sparse(sp, "sparse_add")
    dense = core_ops.convert_to_tensor(dense, dtype=sp.dtype, name="b")
    return core_ops.apply_op(
        "SparseTensorDenseAdd", [sp.indices, sp.values, sp.dense_shape, dense]
    ).outputs[0]


def _real(dtype: Any) -> Any:
    return np.real(np.zeros((), dtype)).dtype


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
        _rows_ids(index[:, cols])
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
    _same_dtype("SparseTensorDenseMatMul", val, b)
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


# -- SparseSoftmax -------------------------------------------------------------------------------
def _softmax_infer(op) -> list:
    ind, val, shape = op.inputs
    rank = require_sparse_parts("SparseSoftmax", ind, val, shape)
    if rank is not None and rank < 2:
        raise ValueError(f"Input should have rank >= 2, but received shape: {ind.shape}")
    if not dtypes.is_floating(val.dtype):
        raise TypeError(f"SparseSoftmax: values must be floating, got {val.dtype.name}")
    return [(val.dtype, val.shape)]


def _softmax_kernel(ind, val, shape):
    ind, val = jnp.asarray(ind), jnp.asarray(val)
    n = val.shape[0]
    groups = row_groups(ind)
    top = jax.ops.segment_max(val, groups, num_segments=n)
    e = jnp.exp(val - top[groups])
    return e / jax.ops.segment_sum(e, groups, num_segments=n)[groups]


register_op("SparseSoftmax", infer=_softmax_infer, kernel=_softmax_kernel)


def _softmax_grad_kernel(ind, out, grad):
    groups = row_groups(jnp.asarray(ind))
    n = out.shape[0]
    dot = jax.ops.segment_sum(out * grad, groups, num_segments=n)
    return (grad - dot[groups]) * out


register_op(
    "SparseSoftmaxGrad",
    infer=lambda op: [(op.inputs[1].dtype, op.inputs[1].shape)],
    kernel=_softmax_grad_kernel,
)
not_differentiable("SparseSoftmaxGrad")


@register_gradient("SparseSoftmax")
def _softmax_grad(op, grad):
    values_grad = core_ops.apply_op(
        "SparseSoftmaxGrad", [op.inputs[0], op.outputs[0], grad]
    ).outputs[0]
    return [None, values_grad, None]


@export("sparse_softmax", "sparse.softmax")
def sparse_softmax(sp_input: Any, name: str | None = None) -> SparseTensor:
    """Softmax over the last dimension of `sp_input`, over the entries it stores only (the
    missing ones are not zeros, they are left out) (TF1 `tf.sparse_softmax`).

    Raises:
      ValueError: `sp_input` has rank < 2. TypeError: its values are not floating point.

    >>> st = sl.SparseTensor([[0, 0], [0, 2], [1, 1]], [1.0, 1.0, 5.0], [2, 3])
    >>> sl.Session().run(sl.sparse_softmax(st)).values.tolist()
    [0.5, 0.5, 1.0]
    """
    sp = convert_to_sparse(sp_input, "sparse_softmax: sp_input")
    out = core_ops.apply_op(
        "SparseSoftmax", [sp.indices, sp.values, sp.dense_shape], name=name or "SparseSoftmax"
    ).outputs[0]
    result = SparseTensor(sp.indices, out, sp.dense_shape)
    result.set_shape(sp.shape)
    return result
