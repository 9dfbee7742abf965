"""Sparse ops with a dense result sized by the dense shape: SparseReduceSum (and its gradient
op), SparseReduceMax, SparseTensorDenseMatMul (TF1 `tf.sparse_reduce_sum`, `tf.sparse_reduce_max`,
`tf.sparse_tensor_dense_matmul`), and SparseReduceSumSparse, SparseReduceMaxSparse.

A max reduction takes the maximum of the stored values that fall in each output position (the
implicit zeros do not count) and gives 0 where none falls, as TF1's kernel.

They read the dense shape as a host input: the compiled engine runs them when it is a constant
(a `sparse_placeholder` with a fully known shape), else the step runs interpreted. The number of
entries is a fed shape like any other. SparseReduceSumSparse gives as many entries as the data
say and runs on host values, as `unique`. Gradients are TF1's (`sparse_grad.py`).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes, errors
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
    require_dense_shape,
    require_same_dtype,
    require_sparse_parts,
)


# -- SparseReduceSum -----------------------------------------------------------------------------
def _reduce_axes(axes: tuple | None, rank: int) -> tuple[int, ...]:
    if axes is None:
        return tuple(range(rank))
    for a in axes:
        if not -rank <= a < rank:  # TF1's kernel's error (sluice finds it while building)
            raise errors.InvalidArgumentError(
                None, None, f"Invalid reduction dimension {a}, for input with {rank} dimensions."
            )
    return tuple(sorted({a % rank for a in axes}))


def _reduce_infer(op) -> list:
    ind, val, shape = op.inputs
    rank = require_sparse_parts(op.type, ind, val, shape)
    static = partial_shape_value(shape)
    if rank is None:
        if op.type in _DENSE_REDUCTIONS:
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
    if op.type in _DENSE_REDUCTIONS:
        return [(val.dtype, TensorShape(out))]
    return [
        (dtypes.int64, TensorShape([None, len(out)])),
        (val.dtype, TensorShape([None])),
        (dtypes.int64, TensorShape([len(out)])),
    ]


_DENSE_REDUCTIONS = ("SparseReduceSum", "SparseReduceMax")


def _lowest(dtype: Any) -> Any:
    if jnp.issubdtype(dtype, jnp.floating):
        return -jnp.inf
    return jnp.iinfo(dtype).min


def _dense_reduction(op_type: str):
    def kernel(ind, val, shape, *, axes, keep_dims):
        dims = host_ints(shape, f"{op_type}'s input_shape")
        require_dense_shape(dims, op_type)
        rank = len(dims)
        axes = _reduce_axes(axes, rank)
        index = jnp.asarray(ind)
        val = jnp.asarray(val)
        mask = jnp.asarray([k in axes for k in range(rank)])
        at = tuple(jnp.where(mask, 0, index).T)
        full = [1 if k in axes else dims[k] for k in range(rank)]
        if op_type == "SparseReduceSum":
            out = jnp.zeros(full, val.dtype).at[at].add(val, mode="drop")
        else:
            top = jnp.full(full, _lowest(val.dtype), val.dtype).at[at].max(val, mode="drop")
            count = jnp.zeros(full, jnp.int32).at[at].add(1, mode="drop")
            out = jnp.where(count > 0, top, jnp.zeros((), val.dtype))
        if keep_dims:
            return out
        return out.reshape([d for k, d in enumerate(full) if k not in axes])

    return kernel


for _type in _DENSE_REDUCTIONS:
    register_array_op(_type, infer=_reduce_infer, kernel=_dense_reduction(_type), host_inputs=(2,))
not_differentiable("SparseReduceMax")  # as TF1's


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


def _sparse_reduction(op_type: str):
    def kernel(ind, val, shape, *, axes, keep_dims):
        return _reduce_sparse(op_type, ind, val, shape, axes, keep_dims)

    return kernel


def _reduce_sparse(op_type, ind, val, shape, axes, keep_dims):
    ind = host_value(ind, f"{op_type}'s indices").astype(np.int64)
    val = host_value(val, f"{op_type}'s values")
    dims = host_value(shape, f"{op_type}'s shape").astype(np.int64)
    require_dense_shape(tuple(int(d) for d in dims), op_type)
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
    if op_type == "SparseReduceSumSparse":
        out = np.zeros(rows.shape[0], val.dtype)
        np.add.at(out, ids, val)
    else:
        out = np.full(rows.shape[0], _lowest(val.dtype), val.dtype)
        np.maximum.at(out, ids, val)
    out_shape = np.array([1 if k in axes else dims[k] for k in cols], np.int64)
    return rows.astype(np.int64), out, out_shape


for _type in ("SparseReduceSumSparse", "SparseReduceMaxSparse"):
    register_array_op(_type, infer=_reduce_infer, kernel=_sparse_reduction(_type), jit=False)
    not_differentiable(_type)  # as TF1's


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
    what = _FUNCTION_OF[op_type]
    sp = convert_to_sparse(sp_input, f"{what}: sp_input")
    attrs = {"axes": _axes_attr(axis, what), "keep_dims": bool(keepdims)}
    return core_ops.apply_op(
        op_type, [sp.indices, sp.values, sp.dense_shape], attrs, name=name or op_type
    )


_FUNCTION_OF = {
    "SparseReduceSum": "sparse_reduce_sum",
    "SparseReduceSumSparse": "sparse_reduce_sum_sparse",
    "SparseReduceMax": "sparse_reduce_max",
    "SparseReduceMaxSparse": "sparse_reduce_max_sparse",
}


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
      InvalidArgumentError: an axis out of range (TF1's error, found while building).
      ValueError: an axis not known when the graph is built.

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


@export("sparse_reduce_max", "sparse.reduce_max")
def sparse_reduce_max(
    sp_input: Any,
    axis: Any = None,
    keepdims: bool | None = None,
    reduction_axes: Any = None,
    keep_dims: bool | None = None,
    name: str | None = None,
) -> Tensor:
    """The dense maximum of `sp_input` over `axis` (all axes if None) (TF1
    `tf.sparse_reduce_max`): of the stored values in each output position only (implicit zeros
    do not count), 0 where no stored value falls; `keepdims` keeps the reduced axes. No gradient
    (as TF1).

    Raises:
      InvalidArgumentError: an axis out of range (TF1's error, found while building).

    >>> st = sl.SparseTensor([[0, 0], [0, 2], [1, 1]], [-1.0, -2.0, 3.0], [2, 3])
    >>> sl.Session().run(sl.sparse_reduce_max(st, axis=1)).tolist()
    [-1.0, 3.0]
    """
    return _reduce(
        "SparseReduceMax", sp_input, axis, keepdims, reduction_axes, keep_dims, name
    ).outputs[0]


@export("sparse_reduce_max_sparse", "sparse.reduce_max_sparse")
def sparse_reduce_max_sparse(
    sp_input: Any,
    axis: Any = None,
    keepdims: bool | None = None,
    reduction_axes: Any = None,
    keep_dims: bool | None = None,
) -> SparseTensor:
    """`sparse_reduce_max` as a SparseTensor: one entry per output position that some entry of
    `sp_input` falls in (TF1 `tf.sparse_reduce_max_sparse`); its size depends on the data."""
    op = _reduce("SparseReduceMaxSparse", sp_input, axis, keepdims, reduction_axes, keep_dims, None)
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
            f"Dimensions must be equal, but are {inner_a} and {inner_b} for '{op.name}' (op: "
            f"'SparseTensorDenseMatMul'): A's inner dimension does not match B's. Did you "
            f"forget a transpose? Dimensions of A: {a_dims}, dimensions of B: {b_dims} "
            f"(adjoint_a={adj_a}, adjoint_b={adj_b})."
        )
    return [(b.dtype, TensorShape([rows, cols]))]


def _matmul_kernel(ind, val, shape, b, *, adjoint_a, adjoint_b):
    dims = host_ints(shape, "SparseTensorDenseMatMul's a_shape")
    out_rows = dims[1] if adjoint_a else dims[0]
    return _matmul_product(ind, val, b, out_rows=out_rows, adjoint_a=adjoint_a, adjoint_b=adjoint_b)


# One jitted function: inputs known while a step is traced (a SparseTensorValue's constants)
# would otherwise run op by op, each compiled for its shapes.
@functools.partial(jax.jit, static_argnames=("out_rows", "adjoint_a", "adjoint_b"))
def _matmul_product(ind, val, b, *, out_rows, adjoint_a, adjoint_b):
    rows, cols = ind[:, 0], ind[:, 1]
    if adjoint_a:
        rows, cols, val = cols, rows, jnp.conj(val)
    if adjoint_b:
        b = jnp.conj(b.T)
    out_dtype = b.dtype
    if jnp.dtype(out_dtype).itemsize < 4 and jnp.issubdtype(out_dtype, jnp.floating):
        val, b = val.astype(jnp.float32), b.astype(jnp.float32)  # half: sums in float32
    products = val[:, None] * b[cols]
    return jax.ops.segment_sum(products, rows, num_segments=out_rows).astype(out_dtype)


# The failing entry, as TF1's kernel reports it: which entry, whether its k (the column of A,
# B's row) or m (the output row) is out of bounds, and the index value, packed in one int64:
# value + _OFFSET in the low 31 bits (0 where it does not fit), then `which` (1 bit), then the
# entry. A mismatch of the inner dimensions is -1.
_OFFSET = 1 << 29


def _matmul_fails(ind, val, shape, b, *, adjoint_a, adjoint_b):
    return _matmul_failure(ind, shape, jnp.asarray(b).shape, adjoint_a, adjoint_b)


@functools.partial(jax.jit, static_argnums=(2, 3, 4))
def _matmul_failure(ind, shape, b_shape, adjoint_a, adjoint_b):
    ind = jnp.asarray(ind).astype(jnp.int64)
    dims = jnp.asarray(shape).astype(jnp.int64)
    inner_b = b_shape[1 if adjoint_b else 0]
    inner_a = dims[0] if adjoint_a else dims[1]
    mismatch = inner_a != inner_b
    if ind.shape[0] == 0:
        return mismatch, jnp.asarray(-1, jnp.int64)
    m_col, k_col = (1, 0) if adjoint_a else (0, 1)
    out_rows = dims[1] if adjoint_a else dims[0]
    k, m = ind[:, k_col], ind[:, m_col]
    bad_k = (k < 0) | (k >= inner_b)
    bad_m = (m < 0) | (m >= out_rows)
    bad = bad_k | bad_m
    entry = jnp.argmax(bad).astype(jnp.int64)
    which_m = ~bad_k[entry]
    value = jnp.where(which_m, m[entry], k[entry]) + _OFFSET
    value = jnp.where((value < 0) | (value >= 2 * _OFFSET), 0, value)
    detail = (entry << 32) | (which_m.astype(jnp.int64) << 31) | value
    return mismatch | jnp.any(bad), jnp.where(mismatch, -1, detail).astype(jnp.int64)


def _matmul_message(op, detail: int) -> str:
    if detail < 0:
        return "Cannot multiply A and B because inner dimension does not match"
    entry, which_m, value = detail >> 32, (detail >> 31) & 1, detail & ((1 << 31) - 1)
    adjoint_a, adjoint_b = op.get_attr("adjoint_a"), op.get_attr("adjoint_b")
    col = (1 if adjoint_a else 0) if which_m else (0 if adjoint_a else 1)
    if which_m:
        a_dims = partial_shape_value(op.inputs[2]).dims or [None, None]
        bound = a_dims[1 if adjoint_a else 0]
    else:
        b_dims = op.inputs[3].shape.dims or [None, None]
        bound = b_dims[1 if adjoint_b else 0]
    shown = "?" if value == 0 else str(value - _OFFSET)
    return (
        f"{'m' if which_m else 'k'} ({shown}) from index[{entry},{col}] out of bounds "
        f"(>={'its dimension' if bound is None else bound}): an index of the sparse matrix A "
        "lies outside its dense shape"
    )


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
