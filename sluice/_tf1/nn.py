"""The functions of `sl.nn` (TF1's `tf.nn`) that compose ops: `xw_plus_b`, `embedding_lookup`.
The ops themselves live in sluice/framework/ops; both declare their `sl.nn` paths."""

from typing import Any

from sluice._export import export
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import gather_ops
from sluice.framework.ops.composite import clip_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import matmul_ops
from sluice.framework.ops.nn.nn_ops import bias_add


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


@export("nn.embedding_lookup")
def embedding_lookup(
    params: Any,
    ids: Any,
    partition_strategy: str = "mod",
    name: str | None = None,
    validate_indices: bool = True,
    max_norm: Any = None,
) -> Tensor:
    """The rows of `params` at `ids` (TF1 `tf.nn.embedding_lookup`): `gather(params, ids)`.

    Its gradient with respect to `params` is an `sl.IndexedSlices` (the rows looked up), which
    GradientDescent, Momentum, Adagrad and RMSProp apply to those rows only, as TF1's.

    Args:
      params: a [vocab, ...] Tensor or Variable, or a list holding exactly one.
      ids: an int Tensor of any shape; the result has shape `ids.shape + params.shape[1:]`.
      partition_strategy, validate_indices: accepted for TF1 compatibility (one partition
        only, so the strategy does not matter; out-of-range ids raise as in `gather`).
      name: the name of the result.
      max_norm: if given, each looked-up row whose L2 norm (over `params.shape[1:]`) exceeds it
        is scaled down to that norm, as TF1 clips them.

    Raises:
      NotImplementedError: `params` is a list of several partitions.
      ValueError: `max_norm` with `ids` or `params` of unknown rank.

    >>> table = sl.constant([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
    >>> sl.Session().run(embedding_lookup(table, [[2, 0]])).tolist()
    [[[2.0, 2.0], [0.0, 0.0]]]
    """
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise NotImplementedError(
                f"embedding_lookup: params split into {len(params)} partitions is not supported; "
                "pass one [vocab, dim] Tensor or Variable."
            )
        params = params[0]
    if partition_strategy not in ("mod", "div"):
        raise ValueError(
            f"embedding_lookup: partition_strategy must be 'mod' or 'div', got "
            f"{partition_strategy!r}."
        )
    if max_norm is None:
        return gather_ops.gather(params, ids, name=name or "embedding_lookup")
    rows = gather_ops.gather(params, ids)
    ids_rank = core_ops.convert_to_tensor(ids).shape.rank
    if ids_rank is None or rows.shape.rank is None:
        raise ValueError(
            f"embedding_lookup: max_norm needs ids and params of known rank, got "
            f"ids of shape {core_ops.convert_to_tensor(ids).shape} and rows of "
            f"shape {rows.shape}."
        )
    return clip_ops.clip_by_norm(
        rows, max_norm, axes=list(range(ids_rank, rows.shape.rank)), name=name or "embedding_lookup"
    )
