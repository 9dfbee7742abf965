"""Clipping, composed of other ops as TF1's `clip_ops.py` composes it: `clip_by_value` (Minimum
then Maximum), `clip_by_norm` and `clip_by_average_norm` (a rescale by an L2 norm). Their
gradients are those of the ops they are built from. (`clip_by_global_norm`, which clips a list of
tensors together, lives with the optimizer utilities.)

>>> sl.Session().run(sl.clip_by_value([-2.0, 0.5, 3.0], -1.0, 1.0)).tolist()
[-1.0, 0.5, 1.0]
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import fill_ops, gather_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops, unary_ops
from sluice.framework.ops.math.indexed_slices import IndexedSlices


def _values_of(t: Any) -> Tensor:
    return core_ops.convert_to_tensor(t.values if isinstance(t, IndexedSlices) else t)


def _like(t: Any, clipped: Tensor) -> Any:
    """`clipped` as an IndexedSlices when `t` was one (its values were clipped), as TF1."""
    if isinstance(t, IndexedSlices):
        return IndexedSlices(clipped, t.indices, t.dense_shape)
    return clipped


def _require_same_shape(what: str, values: Tensor, clipped: Tensor) -> None:
    """TF1 refuses a clip bound that would broadcast `t` to a larger shape."""
    if not values.shape.is_compatible_with(clipped.shape):
        raise ValueError(
            f"{what}: the clip bounds must not change the shape of t: t has shape "
            f"{values.shape}, the clipped result {clipped.shape}"
        )


@export("clip_by_value")
def clip_by_value(t: Any, clip_value_min: Any, clip_value_max: Any, name: str | None = None) -> Any:
    """`t` with values below `clip_value_min` set to it and above `clip_value_max` set to it
    (TF1 `tf.clip_by_value`): `maximum(minimum(t, clip_value_max), clip_value_min)`.

    Args:
      t: a real Tensor or IndexedSlices (its values are clipped).
      clip_value_min, clip_value_max: scalars or tensors that broadcast to `t`'s shape.
      name: the name scope of the ops.

    Returns:
      A Tensor (or IndexedSlices) of `t`'s shape and dtype. Where t equals a bound, the
      gradient goes to t (ties go to the first operand of Minimum and Maximum).

    Raises:
      ValueError: a bound would broadcast `t` to a larger shape.
      TypeError: the bounds' dtype differs from `t`'s.
    """
    with graph_lib.name_scope(name, "clip_by_value", [t]):
        values = _values_of(t)
        t_min = math_ops.minimum(values, clip_value_max)
        _require_same_shape("clip_by_value", values, t_min)
        t_max = math_ops.maximum(t_min, clip_value_min)
        _require_same_shape("clip_by_value", values, t_max)
    return _like(t, t_max)


def _l2_norm(values: Tensor, axes: Any) -> Tensor:
    """sqrt(sum(t * t, axes)) with keepdims, computed so that an all-zero t gives a zero norm
    and a finite gradient (TF1 takes the root of 1 where the sum is 0)."""
    l2sum = reduction_ops.reduce_sum(values * values, axes, keepdims=True)
    positive = l2sum > 0
    safe = gather_ops.where_v2(positive, l2sum, fill_ops.ones_like(l2sum))
    return gather_ops.where_v2(positive, unary_ops.sqrt(safe), l2sum)


@export("clip_by_norm")
def clip_by_norm(t: Any, clip_norm: Any, axes: Any = None, name: str | None = None) -> Any:
    """`t * clip_norm / max(l2norm(t), clip_norm)` (TF1 `tf.clip_by_norm`): `t` unchanged when
    its L2 norm (over `axes`, or all of it) is at most `clip_norm`, else scaled down to it.

    Args:
      t: a floating Tensor or IndexedSlices.
      clip_norm: a positive scalar (or a tensor that broadcasts against the kept norm).
      axes: the axes the norm is taken over (None: all).
      name: the name scope of the ops.

    Raises:
      ValueError: `clip_norm` would broadcast `t` to a larger shape.

    >>> sl.Session().run(sl.clip_by_norm([3.0, 4.0], 1.0)).tolist()
    [0.6000000238418579, 0.800000011920929]
    """
    with graph_lib.name_scope(name, "clip_by_norm", [t]):
        values = _values_of(t)
        l2norm = _l2_norm(values, axes)
        clip_norm = core_ops.convert_to_tensor(clip_norm, dtype=values.dtype)
        scaled = values * clip_norm
        _require_same_shape("clip_by_norm", values, scaled)
        clipped = core_ops.identity(scaled / math_ops.maximum(l2norm, clip_norm))
    return _like(t, clipped)


@export("clip_by_average_norm")
def clip_by_average_norm(t: Any, clip_norm: Any, name: str | None = None) -> Any:
    """`t * clip_norm / max(l2norm(t) / size(t), clip_norm)` (TF1 `tf.clip_by_average_norm`):
    `t` scaled so that its L2 norm divided by its number of elements is at most `clip_norm`.

    Args:
      t: a floating Tensor or IndexedSlices.
      clip_norm: a positive scalar.
      name: the name scope of the ops.
    """
    with graph_lib.name_scope(name, "clip_by_average_norm", [t]):
        values = _values_of(t)
        clip_norm = core_ops.convert_to_tensor(clip_norm, dtype=values.dtype)
        n = fill_ops.cast(fill_ops.size(values), values.dtype)
        # rsqrt of the whole sum, as TF1 (an all-zero t gives inf, then min(inf, 1/c) = 1/c)
        inverse_norm = unary_ops.rsqrt(reduction_ops.reduce_sum(values * values))
        scale = math_ops.minimum(inverse_norm * n, unary_ops.reciprocal(clip_norm))
        clipped = core_ops.identity(values * clip_norm * scale)
    return _like(t, clipped)
