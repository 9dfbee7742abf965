"""Keras 3 metrics by name: the metric functions (accuracies), the metrics that average them or
a loss (`Accuracy`, `MeanSquaredError`, ...), `RootMeanSquaredError`, and `get`.

>>> model = sl.Sequential([sl.Input((2,)), sl.layers.Dense(2, activation="softmax")])
>>> model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
>>> sorted(model.evaluate(np.eye(2), np.array([0, 1]), verbose=0, return_dict=True))
['accuracy', 'loss']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.losses import losses as losses_lib
from sluice._keras.losses.loss import prepare_targets
from sluice._keras.metrics.metric import Mean, MeanMetricWrapper, Metric, Sum
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops, unary_ops


@export("metrics.RootMeanSquaredError")
class RootMeanSquaredError(Mean):
    """sqrt of the mean squared error over every value seen."""

    def __init__(self, name: str = "root_mean_squared_error", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_true, y_pred = prepare_targets(y_true, y_pred)
        return super().update_state(math_ops.squared_difference(y_true, y_pred), sample_weight)

    def result(self) -> Any:
        return unary_ops.sqrt(super().result())

    def value(self) -> float:
        return float(np.sqrt(super().value()))


# -- metric functions -----------------------------------------------------------------------------
def _float(x: Any) -> Any:
    return fill_ops.cast(x, dtypes.float32)


def accuracy(y_true: Any, y_pred: Any) -> Any:
    """1 where y_pred equals y_true exactly (elementwise, as floats), mean over the last axis."""
    y_true, y_pred = prepare_targets(y_true, y_pred)
    return reduction_ops.reduce_mean(_float(math_ops.equal(y_true, y_pred)), axis=-1)


@export("metrics.binary_accuracy")
def binary_accuracy(y_true: Any, y_pred: Any, threshold: float = 0.5) -> Any:
    """1 where (y_pred > threshold) matches y_true, mean over the last axis."""
    y_true, y_pred = prepare_targets(y_true, y_pred)
    predicted = fill_ops.cast(
        math_ops.greater(y_pred, core_ops.convert_to_tensor(threshold, dtype=y_pred.dtype)),
        y_pred.dtype,
    )
    return reduction_ops.reduce_mean(_float(math_ops.equal(y_true, predicted)), axis=-1)


@export("metrics.categorical_accuracy")
def categorical_accuracy(y_true: Any, y_pred: Any) -> Any:
    """1 where argmax(y_pred) == argmax(y_true) (one-hot targets)."""
    y_pred = core_ops.convert_to_tensor(y_pred)
    y_true = core_ops.convert_to_tensor(y_true)
    return _float(
        math_ops.equal(reduction_ops.argmax(y_true, -1), reduction_ops.argmax(y_pred, -1))
    )


@export("metrics.sparse_categorical_accuracy")
def sparse_categorical_accuracy(y_true: Any, y_pred: Any) -> Any:
    """1 where argmax(y_pred) equals the integer class id y_true."""
    y_pred = core_ops.convert_to_tensor(y_pred)
    y_true = losses_lib.sparse_ids(y_true, y_pred, "sparse_categorical_accuracy")
    predicted = reduction_ops.argmax(y_pred, -1)
    return _float(math_ops.equal(fill_ops.cast(y_true, predicted.dtype), predicted))


def _wrapper_class(class_name: str, fn: Callable, default_name: str, **defaults: Any):
    def __init__(self, name: str = default_name, dtype: Any = None, **kwargs: Any):
        MeanMetricWrapper.__init__(self, fn, name=name, dtype=dtype, **{**defaults, **kwargs})

    cls = type(class_name, (MeanMetricWrapper,), {"__init__": __init__})
    cls.__doc__ = f"The mean of `{fn.__name__}` over the samples seen (named {default_name!r})."
    return cls


Accuracy = _wrapper_class("Accuracy", accuracy, "accuracy")
export("metrics.Accuracy")(Accuracy)


BinaryAccuracy = _wrapper_class("BinaryAccuracy", binary_accuracy, "binary_accuracy", threshold=0.5)
export("metrics.BinaryAccuracy")(BinaryAccuracy)


CategoricalAccuracy = _wrapper_class(
    "CategoricalAccuracy", categorical_accuracy, "categorical_accuracy"
)
export("metrics.CategoricalAccuracy")(CategoricalAccuracy)


SparseCategoricalAccuracy = _wrapper_class(
    "SparseCategoricalAccuracy", sparse_categorical_accuracy, "sparse_categorical_accuracy"
)
export("metrics.SparseCategoricalAccuracy")(SparseCategoricalAccuracy)


MeanSquaredError = _wrapper_class(
    "MeanSquaredError", losses_lib.mean_squared_error, "mean_squared_error"
)
export("metrics.MeanSquaredError")(MeanSquaredError)


MeanAbsoluteError = _wrapper_class(
    "MeanAbsoluteError", losses_lib.mean_absolute_error, "mean_absolute_error"
)
export("metrics.MeanAbsoluteError")(MeanAbsoluteError)


_CLASSES = {
    c.__name__: c
    for c in (
        Mean, Sum, Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy,
        MeanSquaredError, MeanAbsoluteError, RootMeanSquaredError,
    )
}  # fmt: skip


_FUNCTIONS = {
    "binary_accuracy": binary_accuracy, "categorical_accuracy": categorical_accuracy,
    "sparse_categorical_accuracy": sparse_categorical_accuracy,
    "mse": losses_lib.mean_squared_error, "mean_squared_error": losses_lib.mean_squared_error,
    "mae": losses_lib.mean_absolute_error, "mean_absolute_error": losses_lib.mean_absolute_error,
    "binary_crossentropy": losses_lib.binary_crossentropy,
    "categorical_crossentropy": losses_lib.categorical_crossentropy,
    "sparse_categorical_crossentropy": losses_lib.sparse_categorical_crossentropy,
}  # fmt: skip


@export("metrics.get")
def get(identifier: Any, y_true: Any = None, y_pred: Any = None) -> Metric:
    """A Metric from a name, a config dict, a Metric (as is) or a function.

    "accuracy" / "acc" pick the accuracy from the shapes of the targets and predictions alone,
    as Keras 3's `compile_utils.get_metric` does (the loss plays no part): binary when y_pred
    has one unit per sample, sparse categorical for class ids (targets of lower rank than
    y_pred, or a last axis of 1 against several units), categorical otherwise (so a multi-label
    sigmoid output with binary cross-entropy gets categorical accuracy, as in Keras 3).
    """
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str):
        if identifier in ("accuracy", "acc"):
            fn = _pick_accuracy(y_true, y_pred)
            return MeanMetricWrapper(fn, name=identifier)
        if identifier in _CLASSES:
            return _CLASSES[identifier]()
        if identifier in _FUNCTIONS:
            return MeanMetricWrapper(_FUNCTIONS[identifier], name=identifier)
        raise ValueError(
            f"Unknown metric {identifier!r};"
            f" known: {sorted(_FUNCTIONS) + sorted(_CLASSES) + ['accuracy']}."
        )
    if isinstance(identifier, dict) and identifier.get("class_name") in _CLASSES:
        return _CLASSES[identifier["class_name"]].from_config(identifier.get("config", {}))
    if callable(identifier):
        return MeanMetricWrapper(identifier, name=getattr(identifier, "__name__", None))
    raise ValueError(f"Could not interpret metric identifier: {identifier!r}.")


def _pick_accuracy(y_true: Any, y_pred: Any) -> Callable:
    """Keras 3's `is_binary_or_sparse_categorical`, for shapes that may be unknown."""
    if y_true is None or y_pred is None or y_pred.shape.rank is None:
        return categorical_accuracy
    units = y_pred.shape[-1]
    if units == 1:
        return binary_accuracy
    true_rank = y_true.shape.rank
    if true_rank is not None and (
        true_rank < y_pred.shape.rank or (y_true.shape[-1] == 1 and units is not None)
    ):
        return sparse_categorical_accuracy
    return categorical_accuracy
