"""Sparse ops that change the dense shape or rebuild the last coordinate: `sparse_reset_shape`,
`sparse_merge`, `sparse_to_indicator` and `sparse_transpose` (TF1 `tf.sparse_reset_shape`,
`tf.sparse_merge`, `tf.sparse_to_indicator`, `tf.sparse_transpose`).

SparseResetShape (a new shape checked against the old one) and SparseBoundingShape (the tight
bounding box of the indices) keep the number of entries and are jitted in both engines. The
values pass through unchanged, so their gradient is the incoming one.
"""

from __future__ import annotations

import numbers
from typing import Any

import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor, name_scope
from sluice.framework.ir.registry import Check, not_differentiable, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.shape_rules import constant_value
from sluice.framework.ops.sparse.sparse_ops import sparse_reorder, sparse_tensor_to_dense
from sluice.framework.ops.sparse.sparse_tensor import SparseTensor, convert_to_sparse


# -- SparseBoundingShape: max index + 1 per dimension --------------------------------------------
def _bounding_infer(op) -> list:
    (indices,) = op.inputs
    if indices.shape.rank not in (None, 2):
        raise ValueError(f"indices must be a matrix [N, rank], got shape {indices.shape}")
    rank = indices.shape[1] if indices.shape.rank == 2 else None
    return [(dtypes.int64, TensorShape([rank]))]


def _bounding_kernel(indices):
    indices = jnp.asarray(indices, jnp.int64)
    return jnp.max(indices, axis=0, initial=-1) + 1  # no entries: all zeros, as TF1


register_op("SparseBoundingShape", infer=_bounding_infer, kernel=_bounding_kernel)
not_differentiable("SparseBoundingShape")


# -- SparseResetShape: a new shape, at least the old one -----------------------------------------
def _reset_infer(op) -> list:
    in_shape, new_shape = op.inputs
    for what, t in (("the input's shape", in_shape), ("new_shape", new_shape)):
        if t.shape.rank not in (None, 1):
            raise ValueError(f"{what} must be a vector, got shape {t.shape}")
    return [(dtypes.int64, new_shape.shape)]


def _reset_kernel(in_shape, new_shape):
    return jnp.asarray(new_shape, jnp.int64)


_RANKS_DIFFER = -1


def _reset_fails(in_shape, new_shape):
    in_shape, new_shape = jnp.asarray(in_shape), jnp.asarray(new_shape)
    if in_shape.shape != new_shape.shape:  # static in both engines
        return jnp.asarray(True), jnp.asarray(_RANKS_DIFFER, jnp.int64)
    smaller = new_shape < in_shape
    return jnp.any(smaller), jnp.argmax(smaller).astype(jnp.int64)


def _reset_message(op, detail: int) -> str:
    if detail == _RANKS_DIFFER:
        return (
            "sparse_reset_shape: new_shape's rank differs from sp_input's "
            "(x == y did not hold element-wise)"
        )
    return (
        f"sparse_reset_shape: new_shape[{detail}] is smaller than sp_input's dimension {detail}: "
        "new_shape must be >= the current shape (x <= y did not hold element-wise)"
    )


register_op(
    "SparseResetShape",
    infer=_reset_infer,
    kernel=_reset_kernel,
    check=Check(_reset_fails, _reset_message),
)
not_differentiable("SparseResetShape")


@export("sparse_reset_shape", "sparse.reset_shape")
def sparse_reset_shape(sp_input: Any, new_shape: Any = None) -> SparseTensor:
    """`sp_input` with dense shape `new_shape`, or, when None, the tight bounding box of its
    indices (max index + 1 per dimension, 0 where it has no entries) (TF1
    `tf.sparse_reset_shape`). Indices and values are unchanged.

    Raises:
      TypeError: `sp_input` is not a SparseTensor.
      ValueError: at construction, `new_shape` is not a vector, or, known then, has another rank
        than `sp_input` or a dimension smaller than its.
      InvalidArgumentError: when run, for the same when known only then.

    >>> st = sl.SparseTensor([[0, 1], [1, 2]], [1.0, 2.0], [4, 5])
    >>> sl.Session().run(sl.sparse_reset_shape(st)).dense_shape.tolist()
    [2, 3]
    """
    sp = convert_to_sparse(sp_input, "sparse_reset_shape: sp_input")
    with name_scope(None, "SparseResetShape", [sp.indices, sp.values, sp.dense_shape]) as scope:
        if new_shape is None:
            shape = core_ops.apply_op("SparseBoundingShape", [sp.indices], name=scope.rstrip("/"))
            result = SparseTensor(sp.indices, sp.values, shape.outputs[0])
            if sp.shape.rank is not None:
                result.set_shape([None] * sp.shape.rank)
            return result
        new = core_ops.convert_to_tensor(new_shape, name="new_shape")
        if not dtypes.is_integer(new.dtype):
            raise TypeError(
                f"sparse_reset_shape: new_shape must be int32 or int64, got {new.dtype.name}."
            )
        if new.shape.rank not in (None, 1):
            raise ValueError(
                f"sparse_reset_shape: new_shape must be a vector (rank 1), got shape {new.shape}."
            )
        new = fill_ops.cast(new, dtypes.int64)
        rank = sp.shape.rank
        n = new.shape[0] if new.shape.rank == 1 else None
        if None not in (rank, n) and rank != n:
            raise ValueError(
                f"sparse_reset_shape: new_shape has {n} dimensions but sp_input has rank {rank}: "
                f"Dimensions {n} and {rank} are not compatible."
            )
        static_new = constant_value(new)
        if static_new is not None and sp.shape.is_fully_defined():
            old = np.asarray(sp.shape.as_list(), np.int64)
            if np.any(np.asarray(static_new) < old):
                raise ValueError(
                    "sparse_reset_shape: Requested new_shape should have dimension sizes >= "
                    f"sp_input.shape. Found new_shape ({np.asarray(static_new).tolist()}), "
                    f"sp_input.shape ({old.tolist()})."
                )
            shape = core_ops.constant(np.asarray(static_new, np.int64), dtype=dtypes.int64)
        else:
            shape = core_ops.apply_op(
                "SparseResetShape", [sp.dense_shape, new], name=scope.rstrip("/")
            ).outputs[0]
    result = SparseTensor(sp.indices, sp.values, shape)
    if static_new is not None:
        result.set_shape([int(d) for d in np.reshape(static_new, [-1])])
    return result


# -- sparse_merge / sparse_to_indicator ----------------------------------------------------------
def _is_int_like(x: Any) -> bool:
    return isinstance(x, (Tensor, numbers.Integral)) and not isinstance(x, bool)


def _merge(
    sp_ids: Any, sp_values: Any, vocab_size: Any, already_sorted: bool, name: str | None = None
) -> SparseTensor:
    if isinstance(sp_ids, SparseTensor) or hasattr(sp_ids, "indices"):
        if not _is_int_like(vocab_size):
            raise TypeError(
                "sparse_merge: vocab_size has to be a Tensor or Python int. Found "
                f"{type(vocab_size).__name__}."
            )
        sp_ids, vocab_size = [sp_ids], [vocab_size]
    else:
        if not isinstance(sp_ids, (list, tuple)):
            raise TypeError(
                "sparse_merge: sp_ids has to be a SparseTensor or list thereof. Found "
                f"{type(sp_ids).__name__}."
            )
        if not isinstance(vocab_size, (list, tuple)):
            raise TypeError(
                "sparse_merge: vocab_size has to be a list of Tensors or Python ints. Found "
                f"{type(vocab_size).__name__}."
            )
        for dim in vocab_size:
            if not _is_int_like(dim):
                raise TypeError(
                    "sparse_merge: vocab_size has to be a list of Tensors or Python ints. Found "
                    f"{type(dim).__name__}."
                )
        if len(sp_ids) != len(vocab_size):
            raise ValueError(
                f"sparse_merge: sp_ids ({len(sp_ids)}) and vocab_size ({len(vocab_size)}) have "
                "to have equal lengths."
            )
    ids_parts = [convert_to_sparse(s, f"sparse_merge: sp_ids[{i}]") for i, s in enumerate(sp_ids)]
    sp_values = convert_to_sparse(sp_values, "sparse_merge: sp_values")
    with name_scope(name, "SparseMerge", [sp_values.indices, sp_values.values]):
        columns = []
        for i, part in enumerate(ids_parts):
            if not dtypes.is_integer(part.dtype):
                raise TypeError(
                    f"sparse_merge: sp_ids[{i}] must hold int32 or int64 ids, got "
                    f"{part.dtype.name}."
                )
            columns.append(array_ops.expand_dims(fill_ops.cast(part.values, dtypes.int64), 1))
        sizes = [
            array_ops.reshape(
                fill_ops.cast(core_ops.convert_to_tensor(v, name="vocab_size"), dtypes.int64), [1]
            )
            for v in vocab_size
        ]
        kept = sp_values.indices[:, :-1]
        indices = join_ops.concat([kept, *columns], 1)
        shape = join_ops.concat([sp_values.dense_shape[:-1], *sizes], 0)
        result = SparseTensor(indices, sp_values.values, shape)
        if not already_sorted:
            ordered = sparse_reorder(result)
            result = SparseTensor(ordered.indices, ordered.values, shape)
    if sp_values.shape.rank is not None:  # the vocabulary sizes known while building (as TF1)
        known = [constant_value(core_ops.convert_to_tensor(v)) for v in vocab_size]
        last = [None if k is None or np.ndim(k) else int(k) for k in known]
        result.set_shape(sp_values.shape[:-1].concatenate(last))
    return result


@export("sparse_transpose", "sparse.transpose")
def sparse_transpose(sp_input: Any, perm: Any = None, name: str | None = None) -> SparseTensor:
    """`sp_input` with its dimensions permuted by `perm` (reversed when None), entries in
    row-major order again (TF1 `tf.sparse_transpose`): entry `indices[k]` moves to
    `indices[k][perm]`, the dense shape becomes `dense_shape[perm]`.

    >>> st = sl.SparseTensor([[0, 2], [1, 0]], [1.0, 2.0], [2, 3])
    >>> out = sl.Session().run(sl.sparse_transpose(st))
    >>> out.indices.tolist(), out.values.tolist(), out.dense_shape.tolist()
    ([[0, 1], [2, 0]], [2.0, 1.0], [3, 2])
    """
    sp = convert_to_sparse(sp_input, "sparse_transpose: sp_input")
    with name_scope(name, "SparseTranspose", [sp.indices, sp.values, sp.dense_shape]):
        if perm is None:
            rank = sp.shape.rank
            if rank is not None:
                perm = np.arange(rank - 1, -1, -1, dtype=np.int32)
            else:
                rank = fill_ops.size(sp.dense_shape)
                perm = fill_ops.range(rank - 1, -1, -1)
        perm = core_ops.convert_to_tensor(perm, name="perm")
        moved = array_ops.transpose(gather_ops.gather(array_ops.transpose(sp.indices), perm))
        known = constant_value(perm)
        if known is not None and sp.shape.is_fully_defined():
            old = sp.shape.as_list()
            shape = core_ops.constant([old[int(p)] for p in known], dtype=dtypes.int64)
        else:
            shape = gather_ops.gather(sp.dense_shape, perm)
        return sparse_reorder(SparseTensor(moved, sp.values, shape))


@export("sparse_merge")
def sparse_merge(
    sp_ids: Any,
    sp_values: Any,
    vocab_size: Any,
    name: str | None = None,
    already_sorted: bool = False,
) -> SparseTensor:
    """The sparse tensor whose entry `sp_values.values[k]` sits at `sp_values.indices[k]` with
    the last coordinate replaced by `sp_ids.values[k]` (TF1 `tf.sparse_merge`, deprecated there
    but kept): `[batch, ..., id]` of dense shape `[..., vocab_size]`. With lists of `sp_ids` and
    `vocab_size`, the last coordinate becomes one coordinate per list element. The entries come
    out in row-major order unless `already_sorted`.

    Raises:
      TypeError: `vocab_size` not an int or Tensor (a list of them for a list of `sp_ids`),
        `sp_ids` not a SparseTensor or a list of them, or holding non-integer ids.
      ValueError: the lists have different lengths.

    >>> ids = sl.SparseTensor([[0, 0], [1, 0]], [2, 0], [2, 1])
    >>> vals = sl.SparseTensor([[0, 0], [1, 0]], [0.5, 1.5], [2, 1])
    >>> sl.Session().run(sl.sparse_merge(ids, vals, 3)).indices.tolist()
    [[0, 2], [1, 0]]
    """
    return _merge(sp_ids, sp_values, vocab_size, already_sorted, name)


@export("sparse_to_indicator", "sparse.to_indicator")
def sparse_to_indicator(sp_input: Any, vocab_size: Any, name: str | None = None) -> Tensor:
    """A dense bool tensor of `sp_input`'s shape with the last dimension `vocab_size`:
    `out[..., id]` is True where `sp_input` holds `id` in that row (TF1
    `tf.sparse_to_indicator`). Repeated ids are allowed.

    Raises:
      TypeError: `sp_input` is not a SparseTensor of int32 or int64 ids.

    >>> st = sl.SparseTensor([[0, 0], [0, 1], [1, 0]], [1, 3, 0], [2, 2])
    >>> sl.Session().run(sl.sparse_to_indicator(st, 4)).astype(int).tolist()
    [[0, 1, 0, 1], [1, 0, 0, 0]]
    """
    sp = convert_to_sparse(sp_input, "sparse_to_indicator: sp_input")
    if sp.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(
            f"sparse_to_indicator: sp_input must hold int32 or int64 ids, got {sp.dtype.name}."
        )
    with name_scope(name, "SparseToIndicator", [sp.indices, sp.values, sp.dense_shape]):
        n = fill_ops.shape(sp.indices, out_type=dtypes.int64)[:1]
        flags = SparseTensor(sp.indices, fill_ops.fill(n, True), sp.dense_shape)
        merged = _merge(sp, flags, vocab_size, already_sorted=False)
        dense = sparse_tensor_to_dense(merged, default_value=False, validate_indices=False)
    if sp.shape.rank is not None:
        last = vocab_size if isinstance(vocab_size, numbers.Integral) else None
        dense.set_shape([*sp.shape.as_list()[:-1], last])
    return dense
