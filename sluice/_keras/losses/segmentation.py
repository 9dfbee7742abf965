"""Keras 3's overlap losses for segmentation masks, Dice and Tversky: 1 minus an overlap ratio
summed over `axis` (None: every axis, one loss for the whole batch).

    dice    = 1 - 2 sum(y_true y_pred) / (sum(y_true) + sum(y_pred) + eps)
    tversky = 1 - tp / (tp + alpha fp + beta fn + eps),
              tp = sum(y_true y_pred), fp = sum((1 - y_true) y_pred), fn = sum(y_true (1 - y_pred))

Tversky with alpha = beta = 0.5 is Dice.

>>> y_true = [[[[1.0], [1.0]], [[0.0], [0.0]]], [[[1.0], [1.0]], [[0.0], [0.0]]]]
>>> y_pred = [[[[0.0], [1.0]], [[0.0], [1.0]]], [[[0.4], [0.0]], [[0.0], [0.9]]]]
>>> loss = sl.losses.Dice(axis=(1, 2, 3), reduction=None)(y_true, y_pred)
>>> np.round(sl.Session().run(loss), 6)   # Keras 3's example
array([0.5     , 0.757576], dtype=float32)
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import config
from sluice._keras.losses.loss import LossFunctionWrapper, float_prediction
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import reduction_ops

_REDUCTION = "sum_over_batch_size"


def _axis(axis: Any) -> Any:
    return list(axis) if isinstance(axis, tuple) else axis


def _targets(y_true: Any, y_pred: Any) -> tuple:
    y_pred = float_prediction(y_pred)
    return fill_ops.cast(core_ops.convert_to_tensor(y_true), y_pred.dtype), y_pred


@export("losses.dice")
def dice(y_true: Any, y_pred: Any, axis: Any = None) -> Any:
    """1 - 2 sum(y_true y_pred) / (sum(y_true) + sum(y_pred) + eps), the sums over `axis`.

    >>> loss = sl.losses.dice([[1.0, 1.0, 0.0]], [[1.0, 0.0, 0.0]])
    >>> round(float(sl.Session().run(loss)), 4)   # 1 - 2 / 3
    0.3333
    """
    y_true, y_pred = _targets(y_true, y_pred)
    axis = _axis(axis)
    intersection = reduction_ops.reduce_sum(y_true * y_pred, axis=axis)
    total = (
        reduction_ops.reduce_sum(y_true, axis=axis)
        + reduction_ops.reduce_sum(y_pred, axis=axis)
        + config.epsilon()
    )
    return 1.0 - 2.0 * intersection / total


@export("losses.tversky")
def tversky(y_true: Any, y_pred: Any, alpha: float = 0.5, beta: float = 0.5, axis: Any = None):
    """1 - tp / (tp + alpha fp + beta fn + eps), the counts summed over `axis`; alpha weighs false
    positives, beta false negatives (Salehi et al., 2017)."""
    y_true, y_pred = _targets(y_true, y_pred)
    axis = _axis(axis)
    tp = reduction_ops.reduce_sum(y_pred * y_true, axis=axis)
    fp = reduction_ops.reduce_sum((1.0 - y_true) * y_pred, axis=axis)
    fn = reduction_ops.reduce_sum(y_true * (1.0 - y_pred), axis=axis)
    return 1.0 - tp / (tp + fp * alpha + fn * beta + config.epsilon())


@export("losses.Dice")
class Dice(LossFunctionWrapper):
    """The Dice loss; see `dice`."""

    def __init__(
        self,
        reduction: str = _REDUCTION,
        name: str = "dice",
        axis: Any = None,
        dtype: Any = None,
    ):
        super().__init__(dice, reduction=reduction, name=name, dtype=dtype, axis=axis)
        self.axis = axis


@export("losses.Tversky")
class Tversky(LossFunctionWrapper):
    """The Tversky loss; see `tversky`."""

    def __init__(
        self,
        alpha: float = 0.5,
        beta: float = 0.5,
        reduction: str = _REDUCTION,
        name: str = "tversky",
        axis: Any = None,
        dtype: Any = None,
    ):
        super().__init__(
            tversky, reduction=reduction, name=name, dtype=dtype, alpha=alpha, beta=beta, axis=axis
        )
        self.alpha = alpha
        self.beta = beta
        self.axis = axis
