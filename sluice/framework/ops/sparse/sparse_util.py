"""Helpers of the sparse op modules: index orders, checks of the inputs' ranks and dtypes."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from sluice.framework.ir import dtypes, errors
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops


def lexsort_rows(indices: Any) -> Any:
    """The permutation that puts the rows of `indices` [N, rank] in row-major (lexicographic)
    order, stable: rows that are equal keep their order."""
    rank = indices.shape[1]
    if rank == 0 or indices.shape[0] == 0:
        return jnp.arange(indices.shape[0])
    return jnp.lexsort(tuple(indices[:, k] for k in reversed(range(rank))))


def row_groups(indices: Any) -> Any:
    """For each row of `indices` [N, rank], the id in [0, N) of its group: rows whose coordinates
    agree but for the last one (a "row" of the sparse tensor) share an id, in any order."""
    n = indices.shape[0]
    lead = indices[:, :-1]
    if n == 0:
        return jnp.zeros((0,), jnp.int32)
    order = lexsort_rows(lead)
    ordered = lead[order]
    starts = jnp.concatenate([jnp.ones((1,), bool), jnp.any(ordered[1:] != ordered[:-1], axis=1)])
    ids = jnp.cumsum(starts.astype(jnp.int32)) - 1
    return jnp.zeros((n,), jnp.int32).at[order].set(ids)


def strides(shape: Any) -> Any:
    """Row-major strides of a shape vector: strides[k] = prod(shape[k + 1:])."""
    tail = jnp.cumprod(shape[::-1])[::-1]
    return jnp.concatenate([tail[1:], jnp.ones((1,), shape.dtype)])


def require_sparse_parts(what: str, indices: Tensor, values: Tensor, shape: Tensor) -> int | None:
    """Checks one sparse operand's three tensors (as TF's shape functions); its rank if known.

    Raises:
      ValueError: `indices` is not a matrix, `values` or `shape` not a vector, or their sizes
        disagree.
      TypeError: `indices` or `shape` is not int64.
    """
    for part, t in (("indices", indices), ("shape", shape)):
        if t.dtype != dtypes.int64:
            raise TypeError(f"{what}: {part} must be int64, got {t.dtype.name} ({t.name}).")
    if indices.shape.rank not in (None, 2):
        raise ValueError(f"{what}: indices must be a matrix [N, rank], got shape {indices.shape}.")
    for part, t in (("values", values), ("shape", shape)):
        if t.shape.rank not in (None, 1):
            raise ValueError(f"{what}: {part} must be a vector, got shape {t.shape}.")
    n = indices.shape[0] if indices.shape.rank == 2 else None
    nv = values.shape[0] if values.shape.rank == 1 else None
    if None not in (n, nv) and n != nv:
        raise ValueError(
            f"{what}: {n} indices (shape {indices.shape}) for {nv} values (shape {values.shape})."
        )
    rank = indices.shape[1] if indices.shape.rank == 2 else None
    dims = shape.shape[0] if shape.shape.rank == 1 else None
    if None not in (rank, dims) and rank != dims:
        raise ValueError(
            f"{what}: indices hold {rank} coordinates (shape {indices.shape}) but the shape has "
            f"{dims} dimensions (shape {shape.shape})."
        )
    return rank if rank is not None else dims


def nnz_shape(indices: Tensor) -> TensorShape:
    """[N] for an [N, rank] indices tensor."""
    return TensorShape([indices.shape[0] if indices.shape.rank == 2 else None])


def require_same_dtype(what: str, a: Tensor, b: Tensor) -> None:
    if a.dtype != b.dtype:
        raise TypeError(
            f"{what}: the values are {a.dtype.name} and {b.dtype.name}; they must agree"
        )


def distinct_rows(*blocks: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """The distinct rows of the stacked index blocks, in row-major order, and each block's rows'
    positions among them."""
    stacked = np.concatenate(blocks, axis=0)
    if stacked.shape[0] == 0:
        return stacked, [np.zeros(0, np.int64) for _ in blocks]
    unique, inverse = np.unique(stacked, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    bounds = np.cumsum([0] + [b.shape[0] for b in blocks])
    return unique, [inverse[s:e] for s, e in zip(bounds[:-1], bounds[1:])]


def first_dim(t: Tensor) -> Tensor:
    """The first dimension of `t`, int64 (a constant when static)."""
    n = t.shape[0] if t.shape.rank else None
    if n is not None:
        return core_ops.constant(n, dtype=dtypes.int64)
    return fill_ops.shape(t, out_type=dtypes.int64)[0]


# -- dense shapes a kernel can hold ---------------------------------------------------------------
def bad_dense_shape(shape: Any) -> tuple[Any, Any]:
    """A `Check.fails` on a dense-shape vector: (failed, detail), detail 1 for a negative
    dimension, 2 for a number of elements that overflows int64 (TF1's kernels refuse both)."""
    shape = jnp.asarray(shape)
    negative = jnp.any(shape < 0)
    overflow = jnp.prod(jnp.abs(shape).astype(jnp.float64)) >= 2.0**63
    return negative | overflow, jnp.where(negative, 1, 2).astype(jnp.int64)


def bad_dense_shape_message(op: Any, detail: int) -> str:
    shape = op.inputs[2] if op is not None and len(op.inputs) > 2 else None
    where = f"{op.type} op '{op.name}': " if op is not None else ""
    what = f" ({shape.name})" if shape is not None else ""
    if detail == 1:
        return f"{where}the dense shape{what} has a negative dimension"
    return f"{where}the dense shape{what} has more elements than int64 can count"


def require_dense_shape(dims: tuple[int, ...], what: str) -> None:
    """InvalidArgumentError for a host dense shape `bad_dense_shape` refuses (a kernel that sizes
    its output by it raises this before it allocates)."""
    if any(d < 0 for d in dims):
        raise errors.InvalidArgumentError(
            None, None, f"{what}: the dense shape {list(dims)} has a negative dimension"
        )
    if float(np.prod([float(d) for d in dims])) >= 2.0**63:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"{what}: the dense shape {list(dims)} has more elements than int64 can count",
        )
