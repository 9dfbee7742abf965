"""Keras 3's F-scores: per class, the weighted harmonic mean of precision and recall,

    f_beta = (1 + beta**2) precision recall / (beta**2 precision + recall)

from counts accumulated over every sample seen (`FBetaScore`, and `F1Score` for beta = 1).
Predictions count as positive above `threshold`, or, without one, where they are their row's
maximum (and not 0).

>>> m = sl.metrics.F1Score(threshold=0.5)
>>> m.update_state(np.array([[1, 1, 1], [1, 0, 0], [1, 1, 0]], np.int32),
...                np.array([[0.2, 0.6, 0.7], [0.2, 0.6, 0.6], [0.6, 0.8, 0.0]], np.float32))
>>> print(np.round(m.result(), 6))   # Keras 3's example
[0.5      0.8      0.666667]
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import config
from sluice._keras.metrics.metric import Metric
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops, unary_ops

_AVERAGES = (None, "micro", "macro", "weighted")


@export("metrics.FBetaScore")
class FBetaScore(Metric):
    """The F-beta score of 2-D (batch, classes) inputs.

    Args:
      average: None (one score per class, the default), "micro" (from the counts of all
        classes together), "macro" (the mean of the class scores) or "weighted" (their mean
        weighted by each class's number of true instances).
      beta: the weight of recall (a float > 0; 1.0 by default).
      threshold: predictions above it are positive (a float in (0, 1]); None: each row's
        largest.
      name, dtype: as every metric.

    Raises:
      ValueError: a bad argument, or inputs that are not 2-D with a known last axis.
    """

    def __init__(
        self,
        average: str | None = None,
        beta: float = 1.0,
        threshold: float | None = None,
        name: str = "fbeta_score",
        dtype: Any = None,
    ):
        super().__init__(name=name, dtype=dtype)
        if average not in _AVERAGES:
            raise ValueError(
                "Invalid `average` argument value. Expected one of: {None, 'micro', 'macro', "
                f"'weighted'}}. Received: average={average}"
            )
        if not isinstance(beta, float) or beta <= 0.0:
            raise ValueError(
                f"Invalid `beta` argument value. It should be a Python float > 0. Received: "
                f"beta={beta!r}"
            )
        if threshold is not None and (
            not isinstance(threshold, float) or not 0.0 < threshold <= 1.0
        ):
            raise ValueError(
                "Invalid `threshold` argument value. It should be a Python float with "
                f"0 < threshold <= 1. Received: threshold={threshold!r}"
            )
        self.average = average
        self.beta = beta
        self.threshold = threshold
        self.axis = None if average == "micro" else 0
        self._classes: int | None = None

    def build_state(self) -> None:
        if self._classes is None:
            raise ValueError(f"{self.name!r} has no state before its first update_state.")
        shape = () if self.average == "micro" else (self._classes,)
        for name in (
            "true_positives",
            "false_positives",
            "false_negatives",
            "intermediate_weights",
        ):
            setattr(self, name, self.add_variable(name=name, shape=shape))

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_true = fill_ops.cast(core_ops.convert_to_tensor(y_true), self.dtype)
        y_pred = fill_ops.cast(core_ops.convert_to_tensor(y_pred), self.dtype)
        if y_pred.shape.rank != 2 or y_true.shape.rank != 2 or y_pred.shape[-1] is None:
            raise ValueError(
                "FBetaScore expects 2D inputs with shape (batch_size, output_dim), with "
                "output_dim fully defined (not None). Received input shapes: "
                f"y_pred.shape={y_pred.shape} and y_true.shape={y_true.shape}."
            )
        self._classes = self._classes or y_pred.shape[-1]
        self._ensure_state([y_pred])
        if self.threshold is None:
            top = reduction_ops.reduce_max(y_pred, axis=-1, keepdims=True)
            predicted = math_ops.logical_and(
                math_ops.greater_equal(y_pred, top), math_ops.greater(unary_ops.abs(y_pred), 1e-9)
            )
        else:
            predicted = math_ops.greater(y_pred, self.threshold)
        y_pred = fill_ops.cast(predicted, self.dtype)
        weight = None
        if sample_weight is not None:
            weight = fill_ops.cast(core_ops.convert_to_tensor(sample_weight), self.dtype)
            while weight.shape.rank < 2:
                weight = array_ops.expand_dims(weight, -1)

        def weighted_sum(values: Any) -> Any:
            if weight is not None:
                values = values * weight
            return reduction_ops.reduce_sum(values, axis=self.axis)

        return core_ops.group(
            self.true_positives.assign_add(weighted_sum(y_pred * y_true), read_value=False),
            self.false_positives.assign_add(
                weighted_sum(y_pred * (1.0 - y_true)), read_value=False
            ),
            self.false_negatives.assign_add(
                weighted_sum((1.0 - y_pred) * y_true), read_value=False
            ),
            self.intermediate_weights.assign_add(weighted_sum(y_true), read_value=False),
        )

    def result(self) -> Any:
        eps = config.epsilon()
        tp, fp, fn = (
            v.value() for v in (self.true_positives, self.false_positives, self.false_negatives)
        )
        precision = tp / (tp + fp + eps)
        recall = tp / (tp + fn + eps)
        b2 = self.beta**2
        score = precision * recall / (b2 * precision + recall + eps) * (1.0 + b2)
        if self.average == "weighted":
            w = self.intermediate_weights.value()
            return reduction_ops.reduce_sum(score * (w / (reduction_ops.reduce_sum(w) + eps)))
        if self.average is not None:
            return reduction_ops.reduce_mean(score)
        return score

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "average": self.average,
            "beta": self.beta,
            "threshold": self.threshold,
        }


@export("metrics.F1Score")
class F1Score(FBetaScore):
    """The F1 score, 2 precision recall / (precision + recall) (see `FBetaScore`)."""

    def __init__(
        self,
        average: str | None = None,
        threshold: float | None = None,
        name: str = "f1_score",
        dtype: Any = None,
    ):
        super().__init__(average=average, beta=1.0, threshold=threshold, name=name, dtype=dtype)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["beta"]
        return config
