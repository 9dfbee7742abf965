"""Sparse ops that join or filter entries: SparseConcat, SparseFillEmptyRows and
`sparse_retain` (TF1 `tf.sparse_concat`, `tf.sparse_fill_empty_rows`, `tf.sparse_retain`).

SparseConcat keeps the total number of entries and is jitted (its output is put in row-major
order, as TF1's). SparseFillEmptyRows and `sparse_retain` give as many entries as the data say:
they run where their inputs are known (always interpreted; compiled from constants), as `where`.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import (
    Check,
    register_gradient,
    register_op,
    register_string_kernel,
)
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import host_value, register_array_op
from sluice.framework.ops.math import math_ops, reduction_ops
from sluice.framework.ops.sparse.sparse_tensor import SparseTensor, convert_to_sparse
from sluice.framework.ops.sparse.sparse_util import (
    first_dim,
    lexsort_rows,
    nnz_shape,
    require_sparse_parts,
)


# -- SparseConcat --------------------------------------------------------------------------------
def _concat_infer(op) -> list:
    n = op.get_attr("N")
    inds, vals, shapes = op.inputs[:n], op.inputs[n : 2 * n], op.inputs[2 * n :]
    ranks = {
        require_sparse_parts(f"SparseConcat input {i}", *p)
        for i, p in enumerate(zip(inds, vals, shapes))
    }
    ranks.discard(None)
    if len(ranks) > 1:
        raise ValueError(f"all inputs must have the same rank, got ranks {sorted(ranks)}")
    if len({v.dtype for v in vals}) > 1:
        raise TypeError(f"all values must have one dtype, got {[v.dtype.name for v in vals]}")
    rank = ranks.pop() if ranks else None
    counts = [nnz_shape(t)[0] for t in inds]
    total = None if None in counts else sum(counts)
    return [
        (dtypes.int64, TensorShape([total, rank])),
        (vals[0].dtype, TensorShape([total])),
        (dtypes.int64, TensorShape([rank])),
    ]


def _concat_parts(inputs, concat_dim, N, expand_nonconcat_dim):
    inds = [jnp.asarray(i, jnp.int64) for i in inputs[:N]]
    vals = [jnp.asarray(v) for v in inputs[N : 2 * N]]
    shapes = [jnp.asarray(s, jnp.int64) for s in inputs[2 * N :]]
    rank = shapes[0].shape[0]
    axis = concat_dim % rank
    if expand_nonconcat_dim:
        biggest = jnp.max(jnp.stack(shapes), axis=0)
        shapes = [biggest.at[axis].set(s[axis]) for s in shapes]
    sizes = jnp.stack([s[axis] for s in shapes])
    offsets = jnp.cumsum(sizes) - sizes
    return inds, vals, shapes, axis, offsets


def _concat_kernel(*inputs, concat_dim, N, expand_nonconcat_dim=False):
    inds, vals, shapes, axis, offsets = _concat_parts(inputs, concat_dim, N, expand_nonconcat_dim)
    moved = [ind.at[:, axis].add(off) for ind, off in zip(inds, offsets)]
    indices = jnp.concatenate(moved, axis=0)
    values = jnp.concatenate(vals, axis=0)
    order = lexsort_rows(indices)
    out_shape = shapes[0].at[axis].set(jnp.sum(jnp.stack([s[axis] for s in shapes])))
    return indices[order], values[order], out_shape


def _concat_fails(*inputs, concat_dim, N, expand_nonconcat_dim=False):
    _, _, shapes, axis, _ = _concat_parts(inputs, concat_dim, N, expand_nonconcat_dim)
    keep = jnp.arange(shapes[0].shape[0]) != axis
    bad = jnp.stack([jnp.any((s != shapes[0]) & keep) for s in shapes])
    return jnp.any(bad), jnp.argmax(bad).astype(jnp.int64)


def _concat_message(op, i: int) -> str:
    return (
        f"Input shapes must match: input {i}'s shape differs from input 0's in a dimension other "
        f"than the concat dimension {op.get_attr('concat_dim')}"
    )


register_op(
    "SparseConcat",
    infer=_concat_infer,
    kernel=_concat_kernel,
    check=Check(_concat_fails, _concat_message),
)


@register_gradient("SparseConcat")
def _concat_grad(op, _grad_indices, grad_values, _grad_shape):
    n = op.get_attr("N")
    inds, shapes = op.inputs[:n], op.inputs[2 * n :]
    counts = [first_dim(t) for t in inds]
    starts, entries = core_ops.constant(0, dtype=dtypes.int64), []
    for c in counts:
        entries.append(fill_ops.range(starts, math_ops.add(starts, c), dtype=dtypes.int64))
        starts = math_ops.add(starts, c)
    moved = core_ops.apply_op("SparseConcat", [*inds, *entries, *shapes], dict(op.attrs)).outputs[1]
    back = gather_ops.gather(grad_values, array_ops.invert_permutation(moved))
    parts = (
        join_ops.split(back, [fill_ops.cast(c, dtypes.int32) for c in counts]) if n > 1 else [back]
    )
    return [None] * n + list(parts) + [None] * n


@export("sparse_concat", "sparse.concat")
def sparse_concat(
    axis: int,
    sp_inputs: list,
    name: str | None = None,
    expand_nonconcat_dim: bool = False,
    concat_dim: int | None = None,
) -> SparseTensor:
    """The sparse tensors `sp_inputs` joined along `axis` (TF1 `tf.sparse_concat`); the result is
    in row-major order. Their other dimensions must agree, or, with `expand_nonconcat_dim`, each
    becomes the largest of the inputs'.

    Raises:
      ValueError: no inputs, different ranks, or other dimensions that differ (at construction
        when known, else InvalidArgumentError when run).
      TypeError: an input is not a SparseTensor.

    >>> a = sl.SparseTensor([[0, 0]], [1.0], [2, 2])
    >>> b = sl.SparseTensor([[1, 0]], [2.0], [2, 3])
    >>> sl.Session().run(sl.sparse_concat(1, [a, b])).indices.tolist()
    [[0, 0], [1, 2]]
    """
    if concat_dim is not None:
        axis = concat_dim
    if not isinstance(sp_inputs, (list, tuple)) or not sp_inputs:
        raise ValueError("sparse_concat: sp_inputs must be a non-empty list of SparseTensors.")
    sps = [convert_to_sparse(s, f"sparse_concat: sp_inputs[{i}]") for i, s in enumerate(sp_inputs)]
    axis = int(axis)
    rank = next((s.shape.rank for s in sps if s.shape.rank is not None), None)
    statics = [s.shape for s in sps]
    if rank is not None and not -rank <= axis < rank:
        raise ValueError(f"sparse_concat: axis {axis} is out of range for rank {rank}.")
    static_out = None
    if rank is not None and all(s.is_fully_defined() for s in statics):
        dims = [s.as_list() for s in statics]
        a = axis % rank
        if not expand_nonconcat_dim:
            for i, d in enumerate(dims):
                if [x for k, x in enumerate(d) if k != a] != [
                    x for k, x in enumerate(dims[0]) if k != a
                ]:
                    raise ValueError(
                        f"sparse_concat: input {i} has shape {d}, input 0 has {dims[0]}: they must "
                        f"agree but for dimension {a} (or pass expand_nonconcat_dim=True)."
                    )
        static_out = [max(d[k] for d in dims) for k in range(rank)]
        static_out[a] = sum(d[a] for d in dims)
    inputs = [s.indices for s in sps] + [s.values for s in sps] + [s.dense_shape for s in sps]
    op = core_ops.apply_op(
        "SparseConcat",
        inputs,
        {"concat_dim": axis, "N": len(sps), "expand_nonconcat_dim": bool(expand_nonconcat_dim)},
        name=name or "SparseConcat",
    )
    result = SparseTensor(op.outputs[0], op.outputs[1], op.outputs[2])
    if static_out is not None:
        result.set_shape(static_out)
    return result


# -- SparseFillEmptyRows -------------------------------------------------------------------------
def _fill_infer(op) -> list:
    indices, values, shape, default = op.inputs
    require_sparse_parts("SparseFillEmptyRows", indices, values, shape)
    if default.shape.rank not in (None, 0):
        raise ValueError(f"default_value must be a scalar, got shape {default.shape}")
    rank = indices.shape[1] if indices.shape.rank == 2 else None
    return [
        (dtypes.int64, TensorShape([None, rank])),
        (values.dtype, TensorShape([None])),
        (dtypes.bool_, TensorShape([None])),
        (dtypes.int64, nnz_shape(indices)),
    ]


def _fill_kernel(indices, values, dense_shape, default_value):
    indices = host_value(indices, "SparseFillEmptyRows's indices").astype(np.int64)
    values = host_value(values, "SparseFillEmptyRows's values")
    shape = host_value(dense_shape, "SparseFillEmptyRows's dense_shape").astype(np.int64)
    n_rows, rank = int(shape[0]), indices.shape[1]
    rows = indices[:, 0]
    counts = np.bincount(rows, minlength=n_rows)[:n_rows] if rows.size else np.zeros(n_rows, int)
    empty = counts == 0
    filled = np.maximum(counts, 1)
    starts = np.cumsum(filled) - filled
    order = np.argsort(rows, kind="stable")
    rank_in_row = np.arange(rows.size) - (np.cumsum(counts) - counts)[rows[order]]
    reverse = np.empty(rows.size, np.int64)
    reverse[order] = starts[rows[order]] + rank_in_row
    total = int(filled.sum())
    out_indices = np.zeros((total, rank), np.int64)
    out_values = np.full(total, np.asarray(default_value), dtype=values.dtype)
    out_indices[reverse] = indices
    out_values[reverse] = values
    out_indices[starts[empty], 0] = np.nonzero(empty)[0]
    return out_indices, out_values, empty, reverse


register_array_op(
    "SparseFillEmptyRows",
    infer=_fill_infer,
    kernel=_fill_kernel,
    jit=False,  # how many rows it fills depends on the data
)
register_string_kernel("SparseFillEmptyRows", _fill_kernel)  # NumPy: strings too


@register_gradient("SparseFillEmptyRows")
def _fill_grad(op, _grad_indices, grad_values, _grad_empty, _grad_reverse):
    reverse = op.outputs[3]
    values_grad = gather_ops.gather(grad_values, reverse)
    default_grad = math_ops.subtract(
        reduction_ops.reduce_sum(grad_values), reduction_ops.reduce_sum(values_grad)
    )
    return [None, values_grad, None, default_grad]


@export("sparse_fill_empty_rows", "sparse.fill_empty_rows")
def sparse_fill_empty_rows(
    sp_input: Any, default_value: Any, name: str | None = None
) -> tuple[SparseTensor, Tensor]:
    """`sp_input` with one entry `default_value` at `[row, 0, ..., 0]` in each row (first
    dimension) that stores nothing, and a bool vector saying which rows were empty (TF1
    `tf.sparse_fill_empty_rows`). The entries come out grouped by row.

    >>> st = sl.SparseTensor([[0, 1], [2, 0]], [1.0, 2.0], [3, 2])
    >>> filled, empty = sl.sparse_fill_empty_rows(st, -1.0)
    >>> v, e = sl.Session().run([filled, empty])
    >>> v.indices.tolist(), v.values.tolist(), e.tolist()
    ([[0, 1], [1, 0], [2, 0]], [1.0, -1.0, 2.0], [False, True, False])
    """
    sp = convert_to_sparse(sp_input, "sparse_fill_empty_rows: sp_input")
    default = core_ops.convert_to_tensor(default_value, dtype=sp.dtype, name="default_value")
    op = core_ops.apply_op(
        "SparseFillEmptyRows",
        [sp.indices, sp.values, sp.dense_shape, default],
        name=name or "SparseFillEmptyRows",
    )
    result = SparseTensor(op.outputs[0], op.outputs[1], sp.dense_shape)
    result.set_shape(sp.shape)
    return result, op.outputs[2]


# -- sparse_retain -------------------------------------------------------------------------------
@export("sparse_retain", "sparse.retain")
def sparse_retain(sp_input: Any, to_retain: Any) -> SparseTensor:
    """The entries of `sp_input` where the bool vector `to_retain` is true, in their order (TF1
    `tf.sparse_retain`). How many are kept depends on the values: as `boolean_mask`.

    Raises:
      ValueError: `to_retain` is not a vector, or its length is not the number of entries.

    >>> st = sl.SparseTensor([[0, 0], [0, 2], [1, 1]], [1.0, 2.0, 3.0], [2, 3])
    >>> sl.Session().run(sl.sparse_retain(st, [True, False, True])).values.tolist()
    [1.0, 3.0]
    """
    sp = convert_to_sparse(sp_input, "sparse_retain: sp_input")
    to_retain = core_ops.convert_to_tensor(to_retain, name="to_retain")
    if to_retain.shape.rank not in (None, 1):
        raise ValueError(f"sparse_retain: to_retain must be a vector, got shape {to_retain.shape}.")
    n, m = (
        sp.values.shape[0] if sp.values.shape.rank else None,
        to_retain.shape[0] if to_retain.shape.rank else None,
    )
    if None not in (n, m) and n != m:
        raise ValueError(f"sparse_retain: to_retain has {m} elements for {n} entries of sp_input.")
    keep = array_ops.reshape(gather_ops.where(to_retain), [-1])
    result = SparseTensor(
        gather_ops.gather(sp.indices, keep),
        gather_ops.gather(sp.values, keep),
        core_ops.identity(sp.dense_shape),
    )
    result.set_shape(sp.shape)
    return result
