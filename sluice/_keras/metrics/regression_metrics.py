"""Keras 3's regression metrics: the means of regression losses over every sample seen
(`MeanSquaredError`, `MeanAbsoluteError`, `MeanAbsolutePercentageError`,
`MeanSquaredLogarithmicError`, `CosineSimilarity`, `LogCoshError`), `RootMeanSquaredError` and
`R2Score`.

>>> m = sl.metrics.R2Score()
>>> m.update_state(np.array([[1], [4], [3]], np.float32), np.array([[2], [4], [4]], np.float32))
>>> print(np.round(m.result(), 6))   # Keras 3's example: 0.57142854
0.571429
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.losses import regression
from sluice._keras.losses.loss import squeeze_or_expand_to_same_rank
from sluice._keras.metrics.metric import Mean, MeanMetricWrapper, Metric
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import division_ops, float_ops, math_ops, reduction_ops, unary_ops


@export("metrics.MeanSquaredError")
class MeanSquaredError(MeanMetricWrapper):
    """The mean of (y_true - y_pred) ** 2.

    >>> m = sl.metrics.MeanSquaredError()
    >>> m.update_state([[0, 1], [0, 0]], [[1, 1], [0, 0]])
    >>> print(m.result())   # Keras 3's example
    0.25
    """

    def __init__(self, name: str = "mean_squared_error", dtype: Any = None):
        super().__init__(regression.mean_squared_error, name=name, dtype=dtype)


@export("metrics.MeanAbsoluteError")
class MeanAbsoluteError(MeanMetricWrapper):
    """The mean of abs(y_true - y_pred)."""

    def __init__(self, name: str = "mean_absolute_error", dtype: Any = None):
        super().__init__(regression.mean_absolute_error, name=name, dtype=dtype)


@export("metrics.MeanAbsolutePercentageError")
class MeanAbsolutePercentageError(MeanMetricWrapper):
    """100 * the mean of abs((y_true - y_pred) / max(abs(y_true), eps)).

    >>> m = sl.metrics.MeanAbsolutePercentageError()
    >>> m.update_state([[0, 1], [0, 0]], [[1, 1], [0, 0]])
    >>> float(m.result())   # Keras 3's example: a 0 target divides by eps
    250000000.0
    """

    def __init__(self, name: str = "mean_absolute_percentage_error", dtype: Any = None):
        super().__init__(regression.mean_absolute_percentage_error, name=name, dtype=dtype)


@export("metrics.MeanSquaredLogarithmicError")
class MeanSquaredLogarithmicError(MeanMetricWrapper):
    """The mean of (log(y_true + 1) - log(y_pred + 1)) ** 2."""

    def __init__(self, name: str = "mean_squared_logarithmic_error", dtype: Any = None):
        super().__init__(regression.mean_squared_logarithmic_error, name=name, dtype=dtype)


def cosine_similarity(y_true: Any, y_pred: Any, axis: int = -1) -> Any:
    """sum(l2_normalize(y_true) * l2_normalize(y_pred), axis): the metric's sign, 1 for vectors
    pointing the same way (the loss is its negative)."""
    return -regression.cosine_similarity(y_true, y_pred, axis=axis)


@export("metrics.CosineSimilarity")
class CosineSimilarity(MeanMetricWrapper):
    """The mean cosine similarity of y_true and y_pred along `axis`.

    >>> m = sl.metrics.CosineSimilarity(axis=1)
    >>> m.update_state([[0.0, 1.0], [1.0, 1.0]], [[1.0, 0.0], [1.0, 1.0]], sample_weight=[0.3, 0.7])
    >>> print(np.round(m.result(), 6))   # Keras 3's example
    0.7
    """

    def __init__(self, name: str = "cosine_similarity", dtype: Any = None, axis: int = -1):
        super().__init__(cosine_similarity, name=name, dtype=dtype, axis=axis)


@export("metrics.LogCoshError")
class LogCoshError(MeanMetricWrapper):
    """The mean of log(cosh(y_pred - y_true))."""

    def __init__(self, name: str = "logcosh", dtype: Any = None):
        super().__init__(regression.log_cosh, name=name, dtype=dtype)


@export("metrics.RootMeanSquaredError")
class RootMeanSquaredError(Mean):
    """sqrt of the mean squared error over every value seen.

    >>> m = sl.metrics.RootMeanSquaredError()
    >>> m.update_state([[0, 1], [0, 0]], [[1, 1], [0, 0]], sample_weight=[1, 0])
    >>> print(m.result())   # Keras 3's example
    0.70710677
    """

    def __init__(self, name: str = "root_mean_squared_error", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_true = fill_ops.cast(core_ops.convert_to_tensor(y_true), self.dtype)
        y_pred = fill_ops.cast(core_ops.convert_to_tensor(y_pred), self.dtype)
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        return super().update_state(math_ops.squared_difference(y_true, y_pred), sample_weight)

    def result(self) -> Any:
        return unary_ops.sqrt(super().result())

    def value(self) -> float:
        return float(np.sqrt(super().value()))


_AGGREGATIONS = (None, "uniform_average", "variance_weighted_average")


@export("metrics.R2Score")
class R2Score(Metric):
    """The coefficient of determination, 1 - sum((y_true - y_pred)**2) / sum((y_true -
    mean(y_true))**2), per output (the last axis of 2-D inputs), aggregated.

    Args:
      class_aggregation: None (one score per output), "uniform_average" (their mean, the
        default) or "variance_weighted_average" (weighted by each output's variance).
      num_regressors: p > 0 gives the adjusted score 1 - (1 - R2) (n - 1) / (n - p - 1), n the
        samples with a nonzero weight; the plain score while n - 1 <= p (Keras also warns then,
        which a graph cannot).
      name, dtype: as every metric.

    Raises:
      ValueError: a bad argument, or inputs that are not 2-D with a known last axis.
    """

    def __init__(
        self,
        class_aggregation: str | None = "uniform_average",
        num_regressors: int = 0,
        name: str = "r2_score",
        dtype: Any = None,
    ):
        super().__init__(name=name, dtype=dtype)
        if class_aggregation not in _AGGREGATIONS:
            raise ValueError(
                "Invalid value for argument `class_aggregation`. Expected one of "
                f"{_AGGREGATIONS}. Received: class_aggregation={class_aggregation}"
            )
        if num_regressors < 0:
            raise ValueError(
                "Invalid value for argument `num_regressors`. Expected a value >= 0. "
                f"Received: num_regressors={num_regressors}"
            )
        self.class_aggregation = class_aggregation
        self.num_regressors = num_regressors
        self._outputs: int | None = None

    def build_state(self) -> None:
        if self._outputs is None:
            raise ValueError(f"R2Score {self.name!r} has no state before its first update_state.")
        self.num_samples = self.add_variable(name="num_samples")
        shape = (self._outputs,)
        self.squared_sum = self.add_variable(name="squared_sum", shape=shape)
        self.sum = self.add_variable(name="sum", shape=shape)
        self.total_mse = self.add_variable(name="residual", shape=shape)
        self.count = self.add_variable(name="count", shape=shape)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_true = fill_ops.cast(core_ops.convert_to_tensor(y_true), self.dtype)
        y_pred = fill_ops.cast(core_ops.convert_to_tensor(y_pred), self.dtype)
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        if y_pred.shape.rank != 2 or y_true.shape.rank != 2 or y_pred.shape[-1] is None:
            raise ValueError(
                "R2Score expects 2D inputs with shape (batch_size, output_dim), with output_dim "
                f"fully defined (not None). Received input shapes: y_pred.shape={y_pred.shape} "
                f"and y_true.shape={y_true.shape}."
            )
        self._outputs = self._outputs or y_pred.shape[-1]
        self._ensure_state([y_pred])
        weight = fill_ops.ones_like(y_true)
        if sample_weight is not None:
            sw = fill_ops.cast(core_ops.convert_to_tensor(sample_weight), self.dtype)
            if sw.shape.rank == 1:
                sw = array_ops.expand_dims(sw, 1)
            weight = weight * sw
        weighted = y_true * weight
        counted = fill_ops.cast(
            reduction_ops.reduce_any(math_ops.not_equal(weight, 0.0), axis=-1), self.dtype
        )
        return core_ops.group(
            self.sum.assign_add(reduction_ops.reduce_sum(weighted, axis=0), read_value=False),
            self.squared_sum.assign_add(
                reduction_ops.reduce_sum(y_true * weighted, axis=0), read_value=False
            ),
            self.total_mse.assign_add(
                reduction_ops.reduce_sum(unary_ops.square(y_true - y_pred) * weight, axis=0),
                read_value=False,
            ),
            self.count.assign_add(reduction_ops.reduce_sum(weight, axis=0), read_value=False),
            self.num_samples.assign_add(reduction_ops.reduce_sum(counted), read_value=False),
        )

    def result(self) -> Any:
        total_sum, count = self.sum.value(), self.count.value()
        mean = total_sum / count
        total = self.squared_sum.value() - total_sum * mean
        raw = 1.0 - self.total_mse.value() / total
        raw = gather_ops.where_v2(float_ops.is_inf(raw), fill_ops.zeros_like(raw), raw)
        if self.class_aggregation == "uniform_average":
            score = reduction_ops.reduce_mean(raw)
        elif self.class_aggregation == "variance_weighted_average":
            score = reduction_ops.reduce_sum(total * raw) / reduction_ops.reduce_sum(total)
        else:
            score = raw
        if self.num_regressors:
            n = self.num_samples.value()
            p = core_ops.convert_to_tensor(float(self.num_regressors), dtype=n.dtype)
            adjusted = 1.0 - division_ops.div_no_nan((1.0 - score) * (n - 1.0), n - p - 1.0)
            score = gather_ops.where_v2(math_ops.greater(n - 1.0, p), adjusted, score)
        return score

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "class_aggregation": self.class_aggregation,
            "num_regressors": self.num_regressors,
        }
