"""`to_categorical` and `normalize` (`sl.utils`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras import config
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops, unary_ops
from sluice.framework.variables import Variable


@export("utils.to_categorical")
def to_categorical(x: Any, num_classes: int | None = None) -> np.ndarray:
    """One-hot float32 rows for integer class ids: shape x.shape + (num_classes,) (a trailing
    axis of 1 in `x` is dropped first, as Keras does)."""
    x = np.asarray(x, dtype="int64")
    if x.ndim > 1 and x.shape[-1] == 1:
        x = x.reshape(x.shape[:-1])
    if num_classes is None:
        num_classes = int(x.max()) + 1 if x.size else 0
    out = np.zeros(x.shape + (num_classes,), dtype="float32")
    np.put_along_axis(out, x[..., None], 1.0, axis=-1)
    return out


@export("utils.normalize")
def normalize(x: Any, axis: int | None = -1, order: int = 2) -> Any:
    """`x` divided by its `order`-norm along `axis`, as Keras's `keras.utils.normalize`.

    A NumPy array gives a NumPy array, and a zero norm divides by 1. A symbolic tensor gives
    graph ops computing `x / max(norm, epsilon())` (Keras's `ops.normalize`; `order` an int >=
    1), as do other array-likes, computed at once.

    >>> sl.utils.normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
    array([[0.6, 0.8],
           [0. , 0. ]])
    """
    if isinstance(x, np.ndarray):
        norm = np.atleast_1d(np.linalg.norm(x, order, axis))
        norm[norm == 0] = 1
        return x / np.expand_dims(norm, -1 if axis is None else axis)
    if not isinstance(order, int) or isinstance(order, bool) or order < 1:
        raise ValueError(f"normalize: `order` must be an int >= 1, got {order!r}.")
    if isinstance(x, (Tensor, Variable)):
        return _normalize_graph(x, axis, order)
    x = np.asarray(x, dtype=np.result_type(np.asarray(x).dtype, np.float32))
    x = x[None] if x.ndim == 0 else x
    norm = np.sum(np.abs(x) ** order, axis=axis, keepdims=True) ** (1.0 / order)
    return x / np.maximum(norm, config.epsilon())


def _normalize_graph(x: Any, axis: int | None, order: int) -> Tensor:
    """Keras's `ops.normalize` as graph ops (order 2: x * rsqrt(max(sum(x^2), eps^2)))."""
    epsilon = config.epsilon()
    x = core_ops.convert_to_tensor(x)
    if not dtypes.is_floating(x.dtype):
        x = fill_ops.cast(x, config.floatx())
    if x.shape.rank == 0:
        x = array_ops.expand_dims(x, 0)
    if order == 2:
        total = reduction_ops.reduce_sum(unary_ops.square(x), axis=axis, keepdims=True)
        return math_ops.multiply(
            x, unary_ops.rsqrt(math_ops.maximum(total, _like(x, epsilon * epsilon)))
        )
    powers = math_ops.pow(unary_ops.abs(x), _like(x, float(order)))
    norm = math_ops.pow(
        reduction_ops.reduce_sum(powers, axis=axis, keepdims=True), _like(x, 1.0 / order)
    )
    return math_ops.divide(x, math_ops.maximum(norm, _like(x, epsilon)))


def _like(x: Tensor, value: float) -> Tensor:
    return core_ops.constant(value, dtype=x.dtype)
