"""`sl.nn.embedding_lookup_sparse` and `sl.nn.safe_embedding_lookup_sparse` (TF1's): the rows of
an embedding table for the ids of a SparseTensor, combined per row of the ids ("sum", "mean",
"sqrtn"), optionally weighted by a second SparseTensor.

They compose `embedding_lookup` (so whatever params it takes, a list of partitions too, they
take), `unique` and sorted segment sums, as TF1 does, so the gradient with respect to the table
is `embedding_lookup`'s: an `IndexedSlices` of the rows looked up. The number of distinct ids and
of output rows depend on the ids' values: such a step runs where they are known (the interpreted
engine; the compiled one when the ids are constants), as `unique` and `segment_sum` do.
"""

from __future__ import annotations

import logging
from typing import Any

from sluice._export import export
from sluice._tf1 import nn as nn_lib
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor, name_scope
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops, join_ops, slicing_ops
from sluice.framework.ops.array.unique_ops import unique
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops, unary_ops
from sluice.framework.ops.math.sorted_segment_ops import segment_sum
from sluice.framework.ops.sparse import sparse_join_ops, sparse_ops
from sluice.framework.ops.sparse.sparse_tensor import SparseTensor
from sluice.framework.variables import Variable

_logger = logging.getLogger("sluice")
COMBINERS = ("mean", "sqrtn", "sum")


def _check_combiner(combiner: str | None, what: str) -> str:
    if combiner is None:
        _logger.warning(
            'sluice: %s: the default combiner is "mean"; pass combiner= to choose.', what
        )
        return "mean"
    if combiner not in COMBINERS:
        raise ValueError(f'combiner must be one of "mean", "sqrtn" or "sum", got {combiner!r}.')
    return combiner


@export("nn.embedding_lookup_sparse")
def embedding_lookup_sparse(
    params: Any,
    sp_ids: SparseTensor,
    sp_weights: SparseTensor | None,
    partition_strategy: str = "mod",
    name: str | None = None,
    combiner: str | None = None,
    max_norm: Any = None,
) -> Tensor:
    """Per row `i` of `sp_ids` ([batch, ...] ids), the combination of the embeddings of its ids
    (TF1 `tf.nn.embedding_lookup_sparse`):

        sum:   sum_j w_ij * params[id_ij]
        mean:  sum_j w_ij * params[id_ij] / sum_j w_ij
        sqrtn: sum_j w_ij * params[id_ij] / sqrt(sum_j w_ij ** 2)

    with all weights 1 when `sp_weights` is None. The result has `max(row) + 1` rows (rows after
    the last with ids are not there; rows in between are zeros, NaN for "mean"/"sqrtn" with
    weights, as TF1's). `sp_ids`' indices must be in row-major order.

    Args:
      params: the embedding table (a [vocab, ...] Tensor or Variable), or what
        `sl.nn.embedding_lookup` takes (with `partition_strategy`).
      sp_ids: an int SparseTensor of ids, [batch, ...]; its first index is the row.
      sp_weights: None, or a float SparseTensor with the same indices as `sp_ids`.
      partition_strategy, max_norm: as `sl.nn.embedding_lookup`.
      name: the name of the result.
      combiner: "sum", "mean" (the default, with a warning) or "sqrtn".

    Raises:
      TypeError: `sp_ids` or `sp_weights` is not a SparseTensor.
      ValueError: an unknown combiner.

    >>> table = sl.constant([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]])
    >>> ids = sl.SparseTensor([[0, 0], [0, 1], [1, 0]], sl.constant([0, 2, 1], sl.int64), [2, 2])
    >>> out = sl.nn.embedding_lookup_sparse(table, ids, None, combiner="sum")
    >>> sl.Session().run(out).tolist()
    [[3.0, 2.0], [0.0, 1.0]]
    """
    combiner = _check_combiner(combiner, "embedding_lookup_sparse")
    if not isinstance(sp_ids, SparseTensor):
        raise TypeError(f"sp_ids must be SparseTensor, got {type(sp_ids).__name__}.")
    ignore_weights = sp_weights is None
    if not ignore_weights and not isinstance(sp_weights, SparseTensor):
        raise TypeError(
            f"sp_weights must be either None or SparseTensor, got {type(sp_weights).__name__}."
        )
    with name_scope(name, "embedding_lookup_sparse", [sp_ids]) as scope:
        segment_ids = fill_ops.cast(sp_ids.indices[:, 0], dtypes.int32)
        ids, idx = unique(sp_ids.values)
        embeddings = nn_lib.embedding_lookup(
            params, ids, partition_strategy=partition_strategy, max_norm=max_norm
        )
        if embeddings.dtype in (dtypes.float16, dtypes.bfloat16):
            embeddings = fill_ops.cast(embeddings, dtypes.float32)
        embeddings = gather_ops.gather(embeddings, idx)
        out_name = scope.rstrip("/") or None
        if ignore_weights:
            weights = fill_ops.ones_like(segment_ids, dtype=embeddings.dtype)
        else:
            weights = sp_weights.values
            if weights.dtype != embeddings.dtype:
                weights = fill_ops.cast(weights, embeddings.dtype)
        weights = _broadcastable(weights, embeddings)
        if not ignore_weights:
            embeddings = math_ops.multiply(embeddings, weights)
        total = segment_sum(embeddings, segment_ids)
        if combiner == "sum":
            return core_ops.identity(total, name=out_name)
        scale = weights if combiner == "mean" else unary_ops.square(weights)
        weight_sum = segment_sum(scale, segment_ids)
        if ignore_weights:  # TF1's sparse_segment_mean/sqrt_n: an empty segment gives zeros
            weight_sum = math_ops.maximum(weight_sum, 1)
        if combiner == "sqrtn":
            weight_sum = unary_ops.sqrt(weight_sum)
        return math_ops.truediv(total, weight_sum, name=out_name)


def _broadcastable(weights: Tensor, embeddings: Tensor) -> Tensor:
    """`weights` [N] reshaped to [N, 1, ..., 1] to scale `embeddings` [N, ...]."""
    rank = embeddings.shape.rank
    if rank is None:
        ones = fill_ops.fill(
            array_ops.expand_dims(math_ops.subtract(fill_ops.rank(embeddings), 1), 0), 1
        )
        shape = join_ops.concat([fill_ops.shape(weights), ones], 0)
        return array_ops.reshape(weights, shape)
    return array_ops.reshape(weights, [-1] + [1] * (rank - 1))


def _check_tables_dtype(embedding_weights: Any, dtype: Any) -> None:
    """TF1 converts each table (shard) to the dtype of `sparse_weights`; a Tensor or Variable
    of another dtype cannot be, and is a ValueError there."""
    tables = (
        embedding_weights if isinstance(embedding_weights, (list, tuple)) else [embedding_weights]
    )
    for i, table in enumerate(tables):
        if isinstance(table, (Tensor, Variable)) and table.dtype.base_dtype != dtype:
            raise ValueError(
                f"safe_embedding_lookup_sparse: embedding_weights[{i}] ({table.name}) has dtype "
                f"{table.dtype.name}, but sparse_weights have dtype {dtypes.as_dtype(dtype).name}; "
                "they must be the same."
            )


@export("nn.safe_embedding_lookup_sparse")
def safe_embedding_lookup_sparse(
    embedding_weights: Any,
    sparse_ids: SparseTensor,
    sparse_weights: SparseTensor | None = None,
    combiner: str = "mean",
    default_id: int | None = None,
    name: str | None = None,
    partition_strategy: str = "div",
    max_norm: Any = None,
) -> Tensor:
    """`embedding_lookup_sparse` made safe (TF1 `tf.nn.safe_embedding_lookup_sparse`): ids < 0
    are dropped (and, unless `combiner` is "sum", entries of weight <= 0), a row without ids
    gets the embedding of `default_id`, or zeros when it is None, and `sparse_ids` of any rank
    [d0, ..., dn-1, k] gives a result [d0, ..., dn-1, dim]: every row is there.

    Raises:
      TypeError, ValueError: as `embedding_lookup_sparse`; ValueError for empty
        `embedding_weights`.

    >>> table = sl.constant([[1.0, 1.0], [2.0, 2.0]])
    >>> ids = sl.SparseTensor([[0, 0], [2, 0]], sl.constant([1, -1], sl.int64), [3, 1])
    >>> sl.Session().run(sl.nn.safe_embedding_lookup_sparse(table, ids)).tolist()
    [[2.0, 2.0], [0.0, 0.0], [0.0, 0.0]]
    """
    if embedding_weights is None:
        raise ValueError("Missing embedding_weights None.")
    if isinstance(embedding_weights, (list, tuple)) and not embedding_weights:
        raise ValueError("Missing embedding_weights [].")
    combiner = _check_combiner(combiner, "safe_embedding_lookup_sparse")
    if not isinstance(sparse_ids, SparseTensor):
        raise TypeError(f"sparse_ids must be SparseTensor, got {type(sparse_ids).__name__}.")
    if sparse_weights is not None:
        _check_tables_dtype(embedding_weights, sparse_weights.dtype)
    with name_scope(name, "embedding_lookup", [sparse_ids]) as scope:
        original_shape = sparse_ids.dense_shape
        static = sparse_ids.shape
        rank = static.rank
        if rank is None:
            rank_t = fill_ops.size(original_shape)
        else:
            rank_t = rank
        leading = slicing_ops.slice(original_shape, [0], [math_ops.subtract(rank_t, 1)])
        sparse_ids = sparse_ops.sparse_reshape(
            sparse_ids,
            join_ops.stack(
                [
                    reduction_ops.reduce_prod(leading),
                    gather_ops.gather(original_shape, math_ops.subtract(rank_t, 1)),
                ]
            ),
        )
        if sparse_weights is not None:
            sparse_weights = SparseTensor(
                sparse_ids.indices, sparse_weights.values, sparse_ids.dense_shape
            )
        # drop invalid ids, and for "mean"/"sqrtn" entries of weight <= 0
        valid = math_ops.greater_equal(sparse_ids.values, 0)
        if sparse_weights is not None:
            valid = math_ops.logical_and(
                valid, fill_ops.ones_like(sparse_weights.values, dtype=dtypes.bool_)
            )
        sparse_ids = sparse_join_ops.sparse_retain(sparse_ids, valid)
        if sparse_weights is not None:
            sparse_weights = sparse_join_ops.sparse_retain(sparse_weights, valid)
            if combiner != "sum":
                positive = math_ops.greater(sparse_weights.values, 0)
                sparse_ids = sparse_join_ops.sparse_retain(sparse_ids, positive)
                sparse_weights = sparse_join_ops.sparse_retain(sparse_weights, positive)
        sparse_ids, is_row_empty = sparse_join_ops.sparse_fill_empty_rows(
            sparse_ids, default_id or 0
        )
        if sparse_weights is not None:
            sparse_weights, _ = sparse_join_ops.sparse_fill_empty_rows(sparse_weights, 1.0)
        result = embedding_lookup_sparse(
            embedding_weights,
            sparse_ids,
            sparse_weights,
            combiner=combiner,
            partition_strategy=partition_strategy,
            max_norm=max_norm,
        )
        if default_id is None:
            empty = array_ops.reshape(is_row_empty, [-1] + [1] * ((result.shape.rank or 2) - 1))
            result = gather_ops.where_v2(empty, fill_ops.zeros_like(result), result)
        tail = slicing_ops.slice(fill_ops.shape(result), [1], [-1])
        final_shape = join_ops.concat([fill_ops.cast(leading, dtypes.int32), tail], 0)
        final = array_ops.reshape(result, final_shape, name=scope.rstrip("/") or None)
        if rank is not None and result.shape.rank is not None:
            final.set_shape(static.as_list()[:-1] + result.shape.as_list()[1:])
        return final


@export("python.ops.embedding_ops.safe_embedding_lookup_sparse_v2")
def safe_embedding_lookup_sparse_v2(
    embedding_weights: Any,
    sparse_ids: SparseTensor,
    sparse_weights: SparseTensor | None = None,
    combiner: str = "mean",
    default_id: int | None = None,
    max_norm: Any = None,
    name: str | None = None,
) -> Tensor:
    """TF 1.15's `embedding_ops.safe_embedding_lookup_sparse_v2` (TF2's
    `tf.nn.safe_embedding_lookup_sparse`): `safe_embedding_lookup_sparse` with the "div"
    partition strategy and `max_norm` before `name`."""
    return safe_embedding_lookup_sparse(
        embedding_weights,
        sparse_ids,
        sparse_weights=sparse_weights,
        combiner=combiner,
        default_id=default_id,
        name=name,
        partition_strategy="div",
        max_norm=max_norm,
    )
