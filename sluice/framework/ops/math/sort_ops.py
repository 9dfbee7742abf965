"""Ranking: TopKV2 (`top_k`: the k largest entries of each row and their int32 indices),
InTopKV2 (`in_top_k`), and `sort` / `argsort`, composed from TopKV2 and transposes as TF1 does
(an ascending sort takes the top of the negated values).

TopKV2's gradient sends each output gradient back to the entry it was taken from (TF1 scatters
it with ScatterNd, as here); `sort`'s gradient follows from it.

>>> values, indices = sl.nn.top_k([1.0, 3.0, 2.0], k=2)
>>> [v.tolist() for v in sl.Session().run([values, indices])]
[[3.0, 2.0], [1, 2]]
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp
from jax import lax

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable, register_gradient
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops, fill_ops, join_ops
from sluice.framework.ops.array.scatter_nd_ops import scatter_nd
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import (
    INDEX_DTYPES,
    host_ints,
    register_array_op,
    scalar_int_value,
)
from sluice.framework.ops.core.math_rules import is_real
from sluice.framework.ops.core.shape_rules import require_dtype, require_rank
from sluice.framework.ops.math import reduction_ops


class TopKOutput(NamedTuple):
    values: Tensor
    indices: Tensor


# -- TopKV2 ---------------------------------------------------------------------------------------
def _top_k_infer(op) -> list:
    x, k_tensor = op.inputs
    require_dtype(x, "real numeric", is_real)
    if k_tensor.dtype != dtypes.int32:
        raise TypeError(f"k must be an int32 scalar, got {k_tensor.dtype.name}")
    require_rank(k_tensor, 0, "k")
    if x.shape.rank == 0:
        raise ValueError("top_k needs an input of rank >= 1, got a scalar")
    k = scalar_int_value(k_tensor)
    if k is not None and k < 0:
        raise ValueError(f"k must be non-negative, got {k}")
    if x.shape.rank is None:
        return [(x.dtype, TensorShape(None)), (dtypes.int32, TensorShape(None))]
    n = x.shape.dims[-1]
    if k is not None and n is not None and n < k:
        raise ValueError(f"input must have at least k = {k} columns, got shape {x.shape}")
    shape = TensorShape(list(x.shape.dims[:-1]) + [k])
    return [(x.dtype, shape), (dtypes.int32, shape)]


def _top_k_kernel(x, k, **_):
    (k,) = host_ints(k, "TopKV2's k")
    if x.shape[-1] < k:
        raise ValueError(f"TopKV2: input must have at least k = {k} columns, got {x.shape}")
    values, indices = lax.top_k(x, k)  # ties: the lower index first, as TF's
    return values, indices.astype(jnp.int32)


register_array_op("TopKV2", infer=_top_k_infer, kernel=_top_k_kernel, host_inputs=(1,))


@register_gradient("TopKV2")
def _top_k_grad(op, grad, _):
    """Each value's gradient goes back to the entry it came from: the rows are flattened, each
    row's indices offset by its start, and the gradients scattered into zeros."""
    x, indices = op.inputs[0], op.outputs[1]
    in_shape = fill_ops.shape(x)
    n = in_shape[-1]
    k = fill_ops.shape(indices)[-1]
    rows = array_ops.reshape(indices, join_ops.stack([-1, k]))
    offsets = fill_ops.range(0, fill_ops.shape(rows)[0] * n, n)
    flat = array_ops.reshape(rows + array_ops.expand_dims(offsets, -1), [-1])
    total = array_ops.reshape(reduction_ops.reduce_prod(in_shape), [1])
    dense = scatter_nd(array_ops.expand_dims(flat, -1), array_ops.reshape(grad, [-1]), total)
    return [array_ops.reshape(dense, in_shape), None]


@export("math.top_k", "nn.top_k")
def top_k(input: Any, k: Any = 1, sorted: bool = True, name: str | None = None) -> TopKOutput:
    """The `k` largest entries of each row (the last dimension) of `input`, largest first, and
    their int32 indices (TF1 `tf.nn.top_k`); among equal values the lower index comes first.

    Args:
      input: a real tensor of rank >= 1 whose last dimension is at least `k`.
      k: a scalar int32 (a Python int or a tensor).
      sorted: kept for TF1's signature: the values are always sorted.
      name: the op's name.

    Returns:
      A namedtuple `(values, indices)`, each of shape `input.shape[:-1] + [k]`.

    Raises:
      ValueError: `k` is negative or larger than the last dimension.
    """
    del sorted  # sorted output satisfies either setting
    x = core_ops.convert_to_tensor(input)
    k = (
        core_ops.convert_to_tensor(k, dtype=dtypes.int32)
        if isinstance(k, Tensor)
        else (core_ops.constant(int(k), dtype=dtypes.int32))
    )
    op = core_ops.apply_op("TopKV2", [x, k], name=name)
    return TopKOutput(*op.outputs)


# -- InTopKV2 -------------------------------------------------------------------------------------
def _in_top_k_infer(op) -> list:
    predictions, targets, k = op.inputs
    if predictions.dtype != dtypes.float32:
        raise TypeError(f"predictions must be float32, got {predictions.dtype.name}")
    if targets.dtype not in INDEX_DTYPES or k.dtype != targets.dtype:
        raise TypeError(
            f"targets and k must be int32 or int64 of one dtype, got "
            f"{targets.dtype.name} and {k.dtype.name}"
        )
    require_rank(predictions, 2, "predictions")
    require_rank(targets, 1, "targets")
    require_rank(k, 0, "k")
    batch = predictions.shape.dims[0] if predictions.shape.rank else None
    if not targets.shape.is_compatible_with(TensorShape([batch])):
        raise ValueError(
            f"targets must have one entry per row of predictions "
            f"({predictions.shape}), got shape {targets.shape}"
        )
    return [(dtypes.bool_, TensorShape([batch]).merge_with(targets.shape))]


def _in_top_k_kernel(predictions, targets, k, **_):
    classes = predictions.shape[1]
    valid = (targets >= 0) & (targets < classes)
    safe = jnp.where(valid, targets, 0)
    target_value = jnp.take_along_axis(predictions, safe[:, None].astype(jnp.int32), 1)
    larger = jnp.sum(predictions > target_value, axis=1)
    # a row with a NaN or Inf prediction cannot be ranked: false, as TF's kernel
    finite = jnp.all(jnp.isfinite(predictions), axis=1)
    return valid & finite & (larger < k)


register_array_op("InTopKV2", infer=_in_top_k_infer, kernel=_in_top_k_kernel)
not_differentiable("InTopKV2")


@export("math.in_top_k", "nn.in_top_k")
def in_top_k(predictions: Any, targets: Any, k: Any, name: str | None = None) -> Tensor:
    """Whether each row's `targets` entry is among its `k` largest `predictions` (TF1
    `tf.nn.in_top_k`): true when fewer than `k` predictions are strictly larger, so ties at the
    boundary all count as in the top k; false for an out-of-range target or a row with a NaN or
    Inf.

    Args:
      predictions: a float32 [batch, classes] tensor.
      targets: an int32 or int64 [batch] vector of class ids.
      k: a scalar of the targets' dtype.
      name: the op's name.

    Returns:
      A bool [batch] vector.
    """
    predictions = core_ops.convert_to_tensor(predictions)
    targets = core_ops.convert_to_tensor(targets)
    k = core_ops.convert_to_tensor(k, dtype=targets.dtype)
    return core_ops.apply_op("InTopKV2", [predictions, targets, k], name=name).outputs[0]


# -- sort, argsort --------------------------------------------------------------------------------
def _sort_along(values: Any, axis: Any, direction: str, what: str) -> tuple[Tensor, Tensor]:
    """(sorted values, int32 indices) along `axis`, by TopKV2 on the last axis."""
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(
            f"{what}: direction should be one of 'ASCENDING', 'DESCENDING', got {direction!r}"
        )
    x = core_ops.convert_to_tensor(values)
    if not isinstance(axis, int):
        raise ValueError(f"{what}: axis must be a constant scalar (a Python int), got {axis!r}")
    rank = x.shape.rank
    if rank is None:
        raise ValueError(f"{what}: the rank of values must be known")
    if not -rank <= axis < rank:
        raise ValueError(f"{what}: axis {axis} is out of range for values of rank {rank}")
    axis %= rank
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    moved = array_ops.transpose(x, perm) if axis != rank - 1 else x
    n = moved.shape.dims[-1]
    k = n if n is not None else fill_ops.shape(moved)[-1]
    if direction == "ASCENDING":
        top, indices = top_k(-moved, k)
        top = -top
    else:
        top, indices = top_k(moved, k)
    if axis != rank - 1:  # the swap is its own inverse
        top, indices = array_ops.transpose(top, perm), array_ops.transpose(indices, perm)
    return top, indices


@export("sort")
def sort(
    values: Any, axis: int = -1, direction: str = "ASCENDING", name: str | None = None
) -> Tensor:
    """`values` sorted along `axis` (TF `tf.sort`), ascending or descending.

    Raises:
      ValueError: an unknown direction, or an axis that is not a Python int in range.
    """
    with graph_lib.name_scope(name, "sort", [values]):
        return _sort_along(values, axis, direction, "sort")[0]


@export("argsort")
def argsort(
    values: Any,
    axis: int = -1,
    direction: str = "ASCENDING",
    stable: bool = False,
    name: str | None = None,
) -> Tensor:
    """The int32 indices that sort `values` along `axis` (TF `tf.argsort`); equal values keep
    their order (so `stable` holds either way)."""
    del stable
    with graph_lib.name_scope(name, "argsort", [values]):
        return _sort_along(values, axis, direction, "argsort")[1]
