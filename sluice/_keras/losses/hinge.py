"""Keras 3's hinge losses, for classifiers scoring -1/1 targets (0/1 targets are mapped to -1/1
first, when every target is 0 or 1): each a function giving one loss per sample and the `Loss`
class wrapping it.

    hinge (Hinge)                          mean(max(1 - y_true * y_pred, 0), axis=-1)
    squared_hinge (SquaredHinge)           mean(max(1 - y_true * y_pred, 0) ** 2, axis=-1)
    categorical_hinge (CategoricalHinge)   max(neg - pos + 1, 0) over the last axis, with
                                           pos = sum(y_true * y_pred),
                                           neg = max((1 - y_true) * y_pred)

>>> loss = sl.losses.Hinge()([[0, 1], [0, 0]], [[0.6, 0.4], [0.4, 0.6]])
>>> round(float(sl.Session().run(loss)), 4)   # Keras 3's example (as a metric): 1.3
1.3
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.losses.loss import LossFunctionWrapper, prepare_targets
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.math import math_ops, reduction_ops, unary_ops

_REDUCTION = "sum_over_batch_size"


def binary_labels_to_hinge(y_true: Any) -> Any:
    """2 y - 1 when every target is 0 or 1 (decided when the graph runs), else y unchanged."""
    is_binary = reduction_ops.reduce_all(
        math_ops.logical_or(math_ops.equal(y_true, 0.0), math_ops.equal(y_true, 1.0))
    )
    return y_true + fill_ops.cast(is_binary, y_true.dtype) * (y_true - 1.0)


def _margins(y_true: Any, y_pred: Any) -> Any:
    y_true, y_pred = prepare_targets(y_true, y_pred)
    return math_ops.maximum(1.0 - binary_labels_to_hinge(y_true) * y_pred, 0.0)


@export("losses.hinge", "metrics.hinge")
def hinge(y_true: Any, y_pred: Any) -> Any:
    """mean(max(1 - y_true * y_pred, 0), axis=-1), 0/1 targets mapped to -1/1.

    >>> np.round(sl.Session().run(sl.losses.hinge([[1.0, -1.0]], [[0.4, 0.2]])), 4)
    array([0.9], dtype=float32)
    """
    return reduction_ops.reduce_mean(_margins(y_true, y_pred), axis=-1)


@export("losses.squared_hinge", "metrics.squared_hinge")
def squared_hinge(y_true: Any, y_pred: Any) -> Any:
    """mean(max(1 - y_true * y_pred, 0) ** 2, axis=-1), 0/1 targets mapped to -1/1."""
    return reduction_ops.reduce_mean(unary_ops.square(_margins(y_true, y_pred)), axis=-1)


@export("losses.categorical_hinge", "metrics.categorical_hinge")
def categorical_hinge(y_true: Any, y_pred: Any) -> Any:
    """max(neg - pos + 1, 0) with pos = sum(y_true * y_pred) and neg = max((1 - y_true) * y_pred),
    over the last axis (one-hot targets).

    >>> loss = sl.losses.categorical_hinge([[0.0, 1.0]], [[0.6, 0.4]])
    >>> np.round(sl.Session().run(loss), 4)   # 0.6 - 0.4 + 1
    array([1.2], dtype=float32)
    """
    y_true, y_pred = prepare_targets(y_true, y_pred)
    pos = reduction_ops.reduce_sum(y_true * y_pred, axis=-1)
    neg = reduction_ops.reduce_max((1.0 - y_true) * y_pred, axis=-1)
    return math_ops.maximum(neg - pos + 1.0, 0.0)


@export("losses.Hinge")
class Hinge(LossFunctionWrapper):
    """The hinge loss; see `hinge`."""

    def __init__(self, reduction: str = _REDUCTION, name: str = "hinge", dtype: Any = None):
        super().__init__(hinge, reduction=reduction, name=name, dtype=dtype)


@export("losses.SquaredHinge")
class SquaredHinge(LossFunctionWrapper):
    """The squared hinge loss; see `squared_hinge`."""

    def __init__(self, reduction: str = _REDUCTION, name: str = "squared_hinge", dtype: Any = None):
        super().__init__(squared_hinge, reduction=reduction, name=name, dtype=dtype)


@export("losses.CategoricalHinge")
class CategoricalHinge(LossFunctionWrapper):
    """The categorical hinge loss; see `categorical_hinge`."""

    def __init__(
        self, reduction: str = _REDUCTION, name: str = "categorical_hinge", dtype: Any = None
    ):
        super().__init__(categorical_hinge, reduction=reduction, name=name, dtype=dtype)
