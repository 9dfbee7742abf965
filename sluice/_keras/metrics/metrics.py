"""Keras 3's metrics by name: `get` (what `compile(metrics=[...])` uses), `serialize` and
`deserialize`. The metrics are in this package's modules by family: `metric` (the base, `Mean`,
`Sum`, `MeanMetricWrapper`), `accuracy_metrics`, `regression_metrics`, `probabilistic_metrics`,
`confusion_metrics`, `correlation_metrics`, `sensitivity_metrics`, `iou_metrics`, `f_score_metrics`.

    identifier given to `get`                  gives
    "accuracy" or "acc"                        binary, sparse or categorical accuracy, picked
                                               from y_true's and y_pred's shapes
    a class name or its snake case ("AUC",     a new instance, named as given
      "auc", "top_k_categorical_accuracy")
    an alias ("mse", "mae", "mape", "msle",    the class it names, named as given
      "bce")
    a loss function's name ("log_cosh")        the mean of that function, named as given
    a `Metric` class, or a config dict         a new instance
    a `Metric`                                 itself
    a function                                 the mean of it (`MeanMetricWrapper`)

>>> model = sl.Sequential([sl.Input((2,)), sl.layers.Dense(1, activation="sigmoid")])
>>> model.compile("adam", "binary_crossentropy", metrics=["accuracy", "auc", sl.metrics.Recall()])
>>> sorted(model.evaluate(np.eye(2), np.array([0, 1]), verbose=0, return_dict=True))
['accuracy', 'auc', 'loss', 'recall']
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from sluice._export import export
from sluice._keras.losses import losses as losses_lib
from sluice._keras.losses.loss import keras_function
from sluice._keras.metrics import (
    accuracy_metrics,
    confusion_metrics,
    correlation_metrics,
    f_score_metrics,
    iou_metrics,
    probabilistic_metrics,
    regression_metrics,
    sensitivity_metrics,
)
from sluice._keras.metrics.accuracy_metrics import (
    accuracy,
    binary_accuracy,
    categorical_accuracy,
    sparse_categorical_accuracy,
)
from sluice._keras.metrics.metric import Mean, MeanMetricWrapper, Metric, Sum
from sluice._keras.saving import serialization
from sluice._tf1.cells.scopes import snake_case

_FAMILIES = (
    accuracy_metrics,
    confusion_metrics,
    correlation_metrics,
    f_score_metrics,
    iou_metrics,
    probabilistic_metrics,
    regression_metrics,
    sensitivity_metrics,
)
_CLASSES: dict[str, type] = {"Mean": Mean, "Sum": Sum, "MeanMetricWrapper": MeanMetricWrapper}
_CLASSES.update(
    {
        name: obj
        for family in _FAMILIES
        for name, obj in vars(family).items()
        if inspect.isclass(obj)
        and issubclass(obj, Metric)
        and obj.__module__ == family.__name__
        and not name.startswith("_")
    }
)
# Keras 3's ALL_OBJECTS_DICT: the class names, their snake case, and a few aliases
_BY_NAME: dict[str, type] = {**_CLASSES, **{snake_case(n): c for n, c in _CLASSES.items()}}
_BY_NAME.update(
    {
        "bce": probabilistic_metrics.BinaryCrossentropy,
        "BCE": probabilistic_metrics.BinaryCrossentropy,
        "mse": regression_metrics.MeanSquaredError,
        "MSE": regression_metrics.MeanSquaredError,
        "mae": regression_metrics.MeanAbsoluteError,
        "MAE": regression_metrics.MeanAbsoluteError,
        "mape": regression_metrics.MeanAbsolutePercentageError,
        "MAPE": regression_metrics.MeanAbsolutePercentageError,
        "msle": regression_metrics.MeanSquaredLogarithmicError,
        "MSLE": regression_metrics.MeanSquaredLogarithmicError,
    }
)


@export("metrics.get")
def get(identifier: Any, y_true: Any = None, y_pred: Any = None) -> Metric:
    """A Metric from an identifier (see the module's table); y_true and y_pred (tensors) pick
    the accuracy for "accuracy", as Keras 3's `compile_utils.get_metric`: binary when y_pred has
    one unit per sample, sparse categorical for class ids (targets of lower rank than y_pred, or
    a last axis of 1 against several units), categorical otherwise (so a multi-label sigmoid
    output with binary cross-entropy gets categorical accuracy, as in Keras 3).

    Raises:
      ValueError: an unknown name, or something that is no metric, with the names known.
    """
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str):
        if identifier in ("accuracy", "acc"):
            return _pick_accuracy(y_true, y_pred)(name=identifier)
        if identifier in _BY_NAME:  # made as Keras makes it (taking a default name), renamed
            metric = _BY_NAME[identifier]()
            metric.name = identifier
            return metric
        fn = losses_lib.loss_function(identifier)
        if fn is not None:
            return MeanMetricWrapper(fn, name=identifier)
        raise ValueError(
            f"Unknown metric {identifier!r}: could not interpret metric identifier. Known names: "
            f"'accuracy', {sorted(_BY_NAME)} and the loss functions' names."
        )
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if inspect.isclass(identifier) and issubclass(identifier, Metric):
        return identifier()
    if callable(identifier):
        fn = keras_function(identifier)
        return MeanMetricWrapper(fn, name=getattr(fn, "__name__", None))
    raise ValueError(f"Could not interpret metric identifier: {identifier!r}.")


def _pick_accuracy(y_true: Any, y_pred: Any) -> Callable:
    """Keras 3's `is_binary_or_sparse_categorical`, for shapes that may be unknown."""
    if y_true is None or y_pred is None or y_pred.shape.rank is None:
        return accuracy_metrics.CategoricalAccuracy
    units = y_pred.shape[-1]
    if units == 1:
        return accuracy_metrics.BinaryAccuracy
    true_rank = y_true.shape.rank
    if true_rank is not None and (
        true_rank < y_pred.shape.rank or (y_true.shape[-1] == 1 and units is not None)
    ):
        return accuracy_metrics.SparseCategoricalAccuracy
    return accuracy_metrics.CategoricalAccuracy


@export("metrics.serialize")
def serialize(metric: Any) -> Any:
    """The Keras 3 config of a `Metric` or metric function (`sl.saving.serialize_keras_object`).

    >>> sl.metrics.serialize(sl.metrics.AUC(curve="PR"))["config"]["curve"]
    'PR'
    """
    return serialization.serialize_keras_object(keras_function(metric))


@export("metrics.deserialize")
def deserialize(config: Any, custom_objects: dict | None = None) -> Any:
    """The metric a config of `serialize` describes (a name: as `get`). A class name is looked
    up among the metrics first (`CategoricalCrossentropy` is also a loss's name).

    Raises:
      ValueError: an unknown metric.
    """
    if isinstance(config, str):
        return get(config)
    if isinstance(config, dict) and config.get("class_name") in _CLASSES and not custom_objects:
        return _CLASSES[config["class_name"]].from_config(dict(config.get("config") or {}))
    return keras_function(serialization.deserialize_keras_object(config, custom_objects))


__all__ = [
    "accuracy",
    "binary_accuracy",
    "categorical_accuracy",
    "deserialize",
    "get",
    "serialize",
    "sparse_categorical_accuracy",
]
