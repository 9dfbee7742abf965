"""Keras 3's regression losses: each a function giving one loss per sample (the mean over the last
axis, but cosine similarity's sum over `axis`) and the `Loss` class wrapping it.

    function (class)                         per element, e = y_pred - y_true
    mean_squared_error (MeanSquaredError)    e ** 2
    mean_absolute_error (MeanAbsoluteError)  abs(e)
    mean_absolute_percentage_error (MeanAbsolutePercentageError)
                                             100 abs(e) / max(abs(y_true), eps)
    mean_squared_logarithmic_error (MeanSquaredLogarithmicError)
                                             (log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1))
                                             ** 2
    huber (Huber, delta)                     e**2 / 2 if abs(e) <= delta,
                                             else delta (abs(e) - delta / 2)
    log_cosh (LogCosh)                       log(cosh(e)), as e + softplus(-2e) - log(2)
    cosine_similarity (CosineSimilarity, axis)
                                             -l2_normalize(y_true) * l2_normalize(y_pred), summed

eps is `sl.config.epsilon()` (1e-7) when the graph is built. `sl.losses.mean_squared_error` is
both Keras's function and TF1's `tf.losses.mean_squared_error` (see
sluice/_tf1/metrics/keras_or_tf1.py); the Keras function is also `sl.losses.mse` and
`get("mse")`.

>>> loss = sl.losses.MeanAbsoluteError()([1.0, 0.3, 1.0], [1.9, 0.3, 1.8])
>>> round(float(sl.Session().run(loss)), 6)   # Keras 3's documented example
0.566667
"""

from __future__ import annotations

import math
from typing import Any

from sluice._export import export
from sluice._keras import config
from sluice._keras.losses.loss import LossFunctionWrapper, constant_like, prepare_targets
from sluice.framework.ops.math import math_ops, reduction_ops, unary_ops
from sluice.framework.ops.nn import nn_ops

_REDUCTION = "sum_over_batch_size"


def mean_squared_error(y_true: Any, y_pred: Any) -> Any:
    """mean((y_true - y_pred) ** 2, axis=-1) (Keras's `keras.losses.mean_squared_error`)."""
    y_true, y_pred = prepare_targets(y_true, y_pred)
    return reduction_ops.reduce_mean(math_ops.squared_difference(y_true, y_pred), axis=-1)


export("losses.mse", "losses.MSE", "metrics.mse", "metrics.MSE")(mean_squared_error)


@export(
    "losses.mean_absolute_error",
    "losses.mae",
    "losses.MAE",
    "metrics.mae",
    "metrics.MAE",
)
def mean_absolute_error(y_true: Any, y_pred: Any) -> Any:
    """mean(abs(y_true - y_pred), axis=-1)."""
    y_true, y_pred = prepare_targets(y_true, y_pred)
    return reduction_ops.reduce_mean(unary_ops.abs(y_true - y_pred), axis=-1)


@export(
    "losses.mean_absolute_percentage_error",
    "metrics.mean_absolute_percentage_error",
    "losses.mape",
    "losses.MAPE",
    "metrics.mape",
    "metrics.MAPE",
)
def mean_absolute_percentage_error(y_true: Any, y_pred: Any) -> Any:
    """100 * mean(abs((y_true - y_pred) / max(abs(y_true), eps)), axis=-1).

    >>> loss = sl.losses.mean_absolute_percentage_error([[100.0, 200.0]], [[90.0, 210.0]])
    >>> np.round(sl.Session().run(loss), 4)   # (10% + 5%) / 2
    array([7.5], dtype=float32)
    """
    y_true, y_pred = prepare_targets(y_true, y_pred)
    scale = math_ops.maximum(unary_ops.abs(y_true), constant_like(y_true, config.epsilon()))
    diff = unary_ops.abs((y_true - y_pred) / scale)
    return 100.0 * reduction_ops.reduce_mean(diff, axis=-1)


@export(
    "losses.mean_squared_logarithmic_error",
    "metrics.mean_squared_logarithmic_error",
    "losses.msle",
    "losses.MSLE",
    "metrics.msle",
    "metrics.MSLE",
)
def mean_squared_logarithmic_error(y_true: Any, y_pred: Any) -> Any:
    """mean((log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1)) ** 2, axis=-1)."""
    y_true, y_pred = prepare_targets(y_true, y_pred)
    eps = constant_like(y_pred, config.epsilon())
    first = unary_ops.log(math_ops.maximum(y_pred, eps) + 1.0)
    second = unary_ops.log(math_ops.maximum(y_true, eps) + 1.0)
    return reduction_ops.reduce_mean(unary_ops.square(first - second), axis=-1)


def l2_normalize(x: Any, axis: Any) -> Any:
    """x / max(norm(x, axis), eps), computed as Keras 3's `ops.normalize`: x * rsqrt(max(sum(x**2),
    eps**2)), so a zero vector stays zero with a finite gradient."""
    square_sum = reduction_ops.reduce_sum(unary_ops.square(x), axis=axis, keepdims=True)
    floor = constant_like(square_sum, config.epsilon() ** 2)
    return x * unary_ops.rsqrt(math_ops.maximum(square_sum, floor))


@export("losses.cosine_similarity")
def cosine_similarity(y_true: Any, y_pred: Any, axis: int = -1) -> Any:
    """-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis): -1 for vectors pointing the same
    way, 0 for orthogonal ones (or a zero vector), 1 for opposite ones.

    >>> loss = sl.losses.cosine_similarity([[0.0, 1.0], [1.0, 1.0]], [[1.0, 0.0], [-1.0, -1.0]])
    >>> np.round(sl.Session().run(loss), 6)
    array([-0.,  1.], dtype=float32)
    """
    y_true, y_pred = prepare_targets(y_true, y_pred)
    return -reduction_ops.reduce_sum(
        l2_normalize(y_true, axis) * l2_normalize(y_pred, axis), axis=axis
    )


@export("losses.huber", "metrics.huber")
def huber(y_true: Any, y_pred: Any, delta: float = 1.0) -> Any:
    """mean(0.5 e**2 if |e| <= delta else delta (|e| - 0.5 delta), axis=-1), e = y_pred - y_true.

    >>> loss = sl.losses.huber([[0.0, 1.0], [0.0, 0.0]], [[0.6, 0.4], [0.4, 0.6]])
    >>> np.round(sl.Session().run(loss), 3)   # Keras 3's example: 0.155 on average
    array([0.18, 0.13], dtype=float32)
    """
    y_true, y_pred = prepare_targets(y_true, y_pred)
    error = unary_ops.abs(y_pred - y_true)
    d = constant_like(error, delta)
    quadratic = math_ops.minimum(error, d)  # |e| up to delta, then delta
    linear = error - quadratic
    value = 0.5 * unary_ops.square(quadratic) + d * linear
    return reduction_ops.reduce_mean(value, axis=-1)


@export("losses.log_cosh", "metrics.log_cosh", "losses.logcosh", "metrics.logcosh")
def log_cosh(y_true: Any, y_pred: Any) -> Any:
    """mean(log(cosh(y_pred - y_true)), axis=-1), computed as x + softplus(-2x) - log(2) so that
    it never overflows; about x**2 / 2 for small errors and |x| - log(2) for large ones.

    >>> loss = sl.losses.log_cosh([[0.0, 1.0], [0.0, 0.0]], [[1.0, 1.0], [0.0, 0.0]])
    >>> np.round(sl.Session().run(loss), 4)   # log(cosh(1)) / 2, then 0
    array([0.2169, 0.    ], dtype=float32)
    """
    y_true, y_pred = prepare_targets(y_true, y_pred)
    x = y_pred - y_true
    value = x + nn_ops.softplus(-2.0 * x) - constant_like(x, math.log(2.0))
    return reduction_ops.reduce_mean(value, axis=-1)


# -- the Loss classes -----------------------------------------------------------------------------
@export("losses.MeanSquaredError")
class MeanSquaredError(LossFunctionWrapper):
    """The mean of (y_true - y_pred) ** 2 (Keras 3's example: 0.02 for [1, 0, 1] and
    [0.9, 0.1, 0.8])."""

    def __init__(
        self, reduction: str = _REDUCTION, name: str = "mean_squared_error", dtype: Any = None
    ):
        super().__init__(mean_squared_error, reduction=reduction, name=name, dtype=dtype)


@export("losses.MeanAbsoluteError")
class MeanAbsoluteError(LossFunctionWrapper):
    """The mean of abs(y_true - y_pred)."""

    def __init__(
        self, reduction: str = _REDUCTION, name: str = "mean_absolute_error", dtype: Any = None
    ):
        super().__init__(mean_absolute_error, reduction=reduction, name=name, dtype=dtype)


@export("losses.MeanAbsolutePercentageError")
class MeanAbsolutePercentageError(LossFunctionWrapper):
    """100 * the mean of abs((y_true - y_pred) / y_true) (Keras 3's example: 6.111111 for
    [100, 200, 300] and [90, 210, 310])."""

    def __init__(
        self,
        reduction: str = _REDUCTION,
        name: str = "mean_absolute_percentage_error",
        dtype: Any = None,
    ):
        super().__init__(
            mean_absolute_percentage_error, reduction=reduction, name=name, dtype=dtype
        )


@export("losses.MeanSquaredLogarithmicError")
class MeanSquaredLogarithmicError(LossFunctionWrapper):
    """The mean of (log(y_true + 1) - log(y_pred + 1)) ** 2."""

    def __init__(
        self,
        reduction: str = _REDUCTION,
        name: str = "mean_squared_logarithmic_error",
        dtype: Any = None,
    ):
        super().__init__(
            mean_squared_logarithmic_error, reduction=reduction, name=name, dtype=dtype
        )


@export("losses.CosineSimilarity")
class CosineSimilarity(LossFunctionWrapper):
    """-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis), reduced."""

    def __init__(
        self,
        axis: int = -1,
        reduction: str = _REDUCTION,
        name: str = "cosine_similarity",
        dtype: Any = None,
    ):
        super().__init__(cosine_similarity, reduction=reduction, name=name, dtype=dtype, axis=axis)


@export("losses.Huber")
class Huber(LossFunctionWrapper):
    """Quadratic for errors up to `delta`, linear beyond (see `huber`)."""

    def __init__(
        self,
        delta: float = 1.0,
        reduction: str = _REDUCTION,
        name: str = "huber_loss",
        dtype: Any = None,
    ):
        super().__init__(huber, reduction=reduction, name=name, dtype=dtype, delta=delta)


@export("losses.LogCosh")
class LogCosh(LossFunctionWrapper):
    """The mean of log(cosh(y_pred - y_true))."""

    def __init__(self, reduction: str = _REDUCTION, name: str = "log_cosh", dtype: Any = None):
        super().__init__(log_cosh, reduction=reduction, name=name, dtype=dtype)
