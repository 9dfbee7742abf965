"""Keras 3's losses by name: `get`, `serialize`, `deserialize`, and `as_loss` (what `compile`
uses). The losses themselves are in this package's modules by family: `regression`,
`probabilistic`, `hinge`, `segmentation`, `ctc`, `metric_learning`;
sluice/_tf1/metrics/keras_or_tf1.py serves the names Keras and TF1 share.

| identifier given to `get`                   | gives                                          |
| ------------------------------------------- | ---------------------------------------------- |
| None                                        | None                                           |
| a function name or alias ("mse", "kld")     | the per-sample function                        |
| a class name ("MeanSquaredError")           | a new instance of the class                    |
| a `Loss` class                              | a new instance of it                           |
| a config dict ({"class_name", "config"})    | the object it describes                        |
| a `Loss` or any other callable              | itself (Keras's function for a name TF1 shares) |

>>> sl.losses.get("kld") is sl.losses.kl_divergence
True
>>> sl.losses.get({"class_name": "Huber", "config": {"delta": 2.0}}).get_config()["delta"]
2.0
"""

from __future__ import annotations

import inspect
from typing import Any

from sluice._export import export
from sluice._keras.losses import (
    ctc,
    hinge,
    metric_learning,
    probabilistic,
    regression,
    segmentation,
)
from sluice._keras.losses.loss import Loss, LossFunctionWrapper, keras_function
from sluice._keras.losses.probabilistic import check_sparse_labels, sparse_ids
from sluice._keras.saving import serialization

# the Keras functions by their names, for the callers that used them from here
mean_squared_error = regression.mean_squared_error
mean_absolute_error = regression.mean_absolute_error
binary_crossentropy = probabilistic.binary_crossentropy
categorical_crossentropy = probabilistic.categorical_crossentropy
sparse_categorical_crossentropy = probabilistic.sparse_categorical_crossentropy

_FAMILIES = (regression, probabilistic, hinge, segmentation, ctc, metric_learning)

_CLASSES: dict[str, type] = {
    name: obj
    for family in _FAMILIES
    for name, obj in vars(family).items()
    if inspect.isclass(obj) and issubclass(obj, Loss) and obj.__module__ == family.__name__
}
_FUNCTIONS: dict[str, Any] = {
    fn.__name__: fn
    for fn in (
        regression.mean_squared_error, regression.mean_absolute_error,
        regression.mean_absolute_percentage_error, regression.mean_squared_logarithmic_error,
        regression.cosine_similarity, regression.huber, regression.log_cosh,
        probabilistic.binary_crossentropy, probabilistic.binary_focal_crossentropy,
        probabilistic.categorical_crossentropy, probabilistic.categorical_focal_crossentropy,
        probabilistic.sparse_categorical_crossentropy, probabilistic.kl_divergence,
        probabilistic.poisson, probabilistic.categorical_generalized_cross_entropy,
        hinge.hinge, hinge.squared_hinge, hinge.categorical_hinge,
        segmentation.dice, segmentation.tversky, ctc.ctc, metric_learning.circle,
    )
}  # fmt: skip
_FUNCTIONS.update(
    {
        "bce": binary_crossentropy, "BCE": binary_crossentropy,
        "kld": probabilistic.kl_divergence, "KLD": probabilistic.kl_divergence,
        "kullback_leibler_divergence": probabilistic.kl_divergence,
        "mae": mean_absolute_error, "MAE": mean_absolute_error,
        "mse": mean_squared_error, "MSE": mean_squared_error,
        "mape": regression.mean_absolute_percentage_error,
        "MAPE": regression.mean_absolute_percentage_error,
        "msle": regression.mean_squared_logarithmic_error,
        "MSLE": regression.mean_squared_logarithmic_error,
        "logcosh": regression.log_cosh,
    }
)  # fmt: skip


def loss_function(name: str) -> Any:
    """The per-sample loss function of a name or alias ("log_cosh", "mse"), else None."""
    return _FUNCTIONS.get(name)


@export("losses.get")
def get(identifier: Any) -> Any:
    """A loss from an identifier (see the module's table).

    Raises:
      ValueError: an unknown name, or something that is no loss, with the names known.
    """
    if identifier is None:
        return None
    if isinstance(identifier, str):
        if identifier in _CLASSES:
            return _CLASSES[identifier]()
        if identifier in _FUNCTIONS:
            return _FUNCTIONS[identifier]
        raise ValueError(
            f"Unknown loss {identifier!r}: could not interpret loss identifier. Known names: "
            f"{sorted(_FUNCTIONS)} and the classes {sorted(_CLASSES)}."
        )
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if inspect.isclass(identifier) and issubclass(identifier, Loss):
        return identifier()
    if callable(identifier):
        return keras_function(identifier)
    raise ValueError(f"Could not interpret loss identifier: {identifier!r}.")


def as_loss(identifier: Any) -> Loss:
    """`get(identifier)` as a `Loss` object (functions are wrapped, keeping their name)."""
    loss = get(identifier)
    if loss is None or isinstance(loss, Loss):
        return loss
    name = identifier if isinstance(identifier, str) else getattr(loss, "__name__", "loss")
    return LossFunctionWrapper(loss, name=name)


@export("losses.serialize")
def serialize(loss: Any) -> Any:
    """The Keras 3 config of a `Loss` or loss function (`sl.saving.serialize_keras_object`).

    >>> sl.losses.serialize(sl.losses.Huber(delta=2.0))["config"]
    {'name': 'huber_loss', 'reduction': 'sum_over_batch_size', 'delta': 2.0}
    """
    return serialization.serialize_keras_object(keras_function(loss))


@export("losses.deserialize")
def deserialize(config: Any, custom_objects: dict | None = None) -> Any:
    """The loss a config of `serialize` describes (a name: as `get`). A class name is looked up
    among the losses first (`CategoricalCrossentropy` is also a metric's name).

    Raises:
      ValueError: an unknown loss.
    """
    if isinstance(config, str):
        return get(config)
    if isinstance(config, dict) and config.get("class_name") in _CLASSES and not custom_objects:
        return _CLASSES[config["class_name"]].from_config(dict(config.get("config") or {}))
    return keras_function(serialization.deserialize_keras_object(config, custom_objects))


__all__ = ["as_loss", "check_sparse_labels", "deserialize", "get", "serialize", "sparse_ids"]
