"""The functions of `sl.nn` (TF1's `tf.nn`) that compose ops: `xw_plus_b`, `embedding_lookup`.
The ops themselves live in sluice/framework/ops; both declare their `sl.nn` paths."""

from typing import Any

import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import Check, register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops, join_ops
from sluice.framework.ops.composite import clip_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, matmul_ops
from sluice.framework.ops.math.indexed_slices import IndexedSlices
from sluice.framework.ops.nn.nn_ops import bias_add
from sluice.framework.partitioned_variables import PartitionedVariable


@export("nn.xw_plus_b")
def xw_plus_b(x: Any, weights: Any, biases: Any, name: str | None = None) -> Tensor:
    """`matmul(x, weights) + biases` (TF1 `tf.nn.xw_plus_b`).

    Args:
      x: a [batch, in] matrix.
      weights: an [in, out] matrix.
      biases: an [out] vector.
      name: the name of the result.

    >>> y = xw_plus_b(sl.ones([2, 3]), sl.ones([3, 4]), sl.constant([0.0, 1.0, 2.0, 3.0]))
    >>> sl.Session().run(y)[0].tolist()
    [3.0, 4.0, 5.0, 6.0]
    """
    x, weights, biases = (core_ops.convert_to_tensor(t) for t in (x, weights, biases))
    for what, t, rank in (("x", x, 2), ("weights", weights, 2), ("biases", biases, 1)):
        if t.shape.rank not in (None, rank):
            raise ValueError(f"xw_plus_b: {what} must have rank {rank}, got shape {t.shape}.")
    return bias_add(matmul_ops.matmul(x, weights), biases, name=name or "xw_plus_b")


# -- embedding_lookup over partitions -------------------------------------------------------------
# PartitionedGather(ids, params_0, ..., params_{n-1}; strategy) -> (rows, owner, local_ids): for
# flat ids, the rows looked up in the partition that holds each id (TF1's partition_strategy
# rules), the partition of each id and its row there. One op of static shapes, so the compiled
# engine keeps it in its jit program; TF1 builds dynamic_partition + gathers +
# dynamic_stitch, whose shapes depend on the ids.


def _owners(ids: Any, sizes: list[int], strategy: str, xp: Any) -> tuple[Any, Any]:
    """(partition of each id, its row in that partition) by TF1's rules: "mod" puts id i in
    partition i % n at row i // n; "div" gives partition p a contiguous range of ids, the first
    `total % n` partitions one id more than the rest."""
    n = len(sizes)
    if strategy == "mod":
        return ids % n, ids // n
    total = sum(sizes)
    per, extras = total // n, total % n
    owner = xp.maximum(ids // (per + 1), (ids - extras) // per)
    local = xp.where(owner < extras, ids % (per + 1), (ids - extras) % per)
    return owner, local


def _partitioned_gather_infer(op) -> list:
    ids, *params = op.inputs
    if ids.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"embedding_lookup: ids must be int32 or int64, got {ids.dtype.name}.")
    if {p.dtype for p in params} != {params[0].dtype}:
        raise TypeError(
            "embedding_lookup: the partitions of params must have one dtype, got "
            f"{[p.dtype.name for p in params]}."
        )
    element = TensorShape(None)
    for p in params:
        if p.shape.rank == 0:
            raise ValueError(f"embedding_lookup: a partition of params is a scalar ({p.name}).")
        tail = TensorShape(None) if p.shape.rank is None else TensorShape(p.shape.dims[1:])
        if not element.is_compatible_with(tail):
            raise ValueError(
                "embedding_lookup: the partitions of params must agree on every dimension but "
                f"the first, got shapes {[str(q.shape) for q in params]}."
            )
        element = element.merge_with(tail)
    n = ids.shape.dims[0] if ids.shape.rank == 1 else None
    rows = TensorShape([n]).concatenate(element)
    flat = TensorShape([n])
    return [(params[0].dtype, rows), (dtypes.int32, flat), (ids.dtype, flat)]


def _partitioned_gather_kernel(ids, *params, strategy, **_):
    owner, local = _owners(ids, [p.shape[0] for p in params], strategy, jnp)
    out = jnp.zeros((ids.shape[0],) + params[0].shape[1:], params[0].dtype)
    for p, table in enumerate(params):
        mine = owner == p
        rows = jnp.take(table, jnp.where(mine, local, 0), axis=0, mode="clip")
        out = jnp.where(jnp.reshape(mine, mine.shape + (1,) * (out.ndim - 1)), rows, out)
    return out, owner.astype(jnp.int32), local


def _ids_out_of_range(ids, *params, strategy, **_):
    """(some id is outside the table or its partition, the first such id): checked before the
    kernel runs, in both engines (`registry.Check`), as TF1's gather refuses them."""
    if ids.shape[0] == 0:
        return jnp.asarray(False), jnp.asarray(0, jnp.int64)
    ids = jnp.asarray(ids)  # constant ids are a NumPy array: not indexable by a traced index
    sizes = [p.shape[0] for p in params]
    owner, local = _owners(ids, sizes, strategy, jnp)
    held = jnp.asarray(sizes)[jnp.clip(owner, 0, len(sizes) - 1)]
    bad = (ids < 0) | (ids >= sum(sizes)) | (local < 0) | (local >= held)
    first = jnp.argmax(bad)
    return jnp.any(bad), ids[first].astype(jnp.int64)


def _ids_message(op, detail: int) -> str:
    sizes = [p.shape.dims[0] if p.shape.rank else None for p in op.inputs[1:]]
    return (
        f"embedding_lookup: ids contain {detail}, which is not in [0, total rows) or not held "
        f"by its partition (partition sizes {sizes}, partition_strategy "
        f"{op.get_attr('strategy')!r})."
    )


register_op(
    "PartitionedGather",
    infer=_partitioned_gather_infer,
    kernel=_partitioned_gather_kernel,
    check=Check(_ids_out_of_range, _ids_message),
)


@register_gradient("PartitionedGather")
def _partitioned_gather_grad(op, grad, unused_owner_grad, unused_local_grad):
    """Per partition an IndexedSlices: the output gradient's rows of the ids it holds. The
    rows of ids held elsewhere are zeros at index -1, which densifying (a segment sum) and the
    optimizers' sparse updates drop, so no other row of the partition is touched."""
    ids, *params = op.inputs
    if grad is None:
        return [None] * len(op.inputs)
    _, owner, local = op.outputs
    grads = [None]
    for p, table in enumerate(params):
        mine = math_ops.equal(owner, p)
        values = gather_ops.where(mine, grad, fill_ops.zeros_like(grad))
        elsewhere = fill_ops.fill(fill_ops.shape(local), core_ops.constant(-1, dtype=local.dtype))
        indices = gather_ops.where(mine, local, elsewhere)
        dense_shape = fill_ops.shape(table, out_type=local.dtype)
        grads.append(IndexedSlices(values, indices, dense_shape))
    return grads


def _lookup_partitions(params: list[Any], ids: Tensor, strategy: str) -> Tensor:
    flat = array_ops.reshape(ids, [-1])
    rows = core_ops.apply_op(
        "PartitionedGather", [flat] + params, {"strategy": strategy}, "embedding_lookup"
    ).outputs[0]
    element = rows.shape.dims[1:] if rows.shape.rank is not None else None
    if element is not None and None not in element:
        tail = core_ops.constant(np.asarray(element, np.int32))
    else:
        tail = fill_ops.shape(params[0])[1:]
    full = join_ops.concat([fill_ops.shape(ids), tail], 0)
    out = array_ops.reshape(rows, full)
    if element is not None and ids.shape.rank is not None:
        out.set_shape(ids.shape.concatenate(TensorShape(element)))
    return out


@export("nn.embedding_lookup")
def embedding_lookup(
    params: Any,
    ids: Any,
    partition_strategy: str = "mod",
    name: str | None = None,
    validate_indices: bool = True,
    max_norm: Any = None,
) -> Tensor:
    """The rows of `params` at `ids` (TF1 `tf.nn.embedding_lookup`).

    `params` is one [vocab, ...] table, or a list of partitions of one (or a
    `PartitionedVariable`) that together hold `vocab` rows. Which partition holds id `i`:

        "mod": partition i % n, at row i // n
        "div": partition p holds a contiguous range of ids; with total rows T, the first
               T % n partitions hold T // n + 1 ids and the others T // n (the sizes
               `fixed_size_partitioner` gives)

    The gradient with respect to each partition is an `sl.IndexedSlices` (the rows looked up
    there), which GradientDescent, Momentum, Adagrad and RMSProp apply to those rows only, as
    TF1's. With several partitions each one's IndexedSlices has an entry per id looked up,
    with zeros at index -1 for the ids other partitions hold (TF1 keeps only its own ids, a
    number that depends on the values; sluice keeps shapes static for the compiled engine);
    densifying and the optimizers drop index -1.

    Args:
      params: a [vocab, ...] Tensor or Variable, a list of partitions (Tensors or Variables
        agreeing on all but the first dimension), or a PartitionedVariable.
      ids: an int32 or int64 Tensor of any shape; the result has shape
        `ids.shape + params.shape[1:]`.
      partition_strategy: "mod" or "div" (see above); irrelevant for one table.
      name: the name of the result.
      validate_indices: accepted for TF1 compatibility. Out-of-range ids raise
        InvalidArgumentError when the lookup runs; for one table, as `gather` does (the
        interpreted engine raises, the compiled one gives zeros); over partitions, in both.
      max_norm: if given, each looked-up row whose L2 norm (over `params.shape[1:]`) exceeds it
        is scaled down to that norm, as TF1 clips them.

    Raises:
      ValueError: no params, an unknown partition_strategy, partitions that disagree on their
        trailing dimensions, or `max_norm` with `ids` or `params` of unknown rank.

    >>> table = sl.constant([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
    >>> sl.Session().run(embedding_lookup(table, [[2, 0]])).tolist()
    [[[2.0, 2.0], [0.0, 0.0]]]
    >>> parts = [sl.constant([[0.0], [2.0]]), sl.constant([[1.0]])]  # "mod": ids 0, 2 | 1
    >>> sl.Session().run(embedding_lookup(parts, [2, 1, 0])).tolist()
    [[2.0], [1.0], [0.0]]
    """
    del validate_indices
    if isinstance(params, PartitionedVariable):
        params = list(params)
    if not isinstance(params, (list, tuple)):
        params = [params]
    if not params:
        raise ValueError("embedding_lookup: need at least one param (partition).")
    if partition_strategy not in ("mod", "div"):
        raise ValueError(
            f"embedding_lookup: partition_strategy must be 'mod' or 'div', got "
            f"{partition_strategy!r}."
        )
    ids = core_ops.convert_to_tensor(ids)
    if len(params) == 1:
        rows = gather_ops.gather(params[0], ids, name=None if max_norm is not None else name)
    else:
        params = [core_ops.convert_to_tensor(p) for p in params]
        rows = _lookup_partitions(params, ids, partition_strategy)
    if max_norm is None:
        if len(params) == 1:
            return rows
        return core_ops.identity(rows, name=name or "embedding_lookup")
    if ids.shape.rank is None or rows.shape.rank is None:
        raise ValueError(
            f"embedding_lookup: max_norm needs ids and params of known rank, got "
            f"ids of shape {ids.shape} and rows of shape {rows.shape}."
        )
    return clip_ops.clip_by_norm(
        rows,
        max_norm,
        axes=list(range(ids.shape.rank, rows.shape.rank)),
        name=name or "embedding_lookup",
    )
