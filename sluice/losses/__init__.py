"""`sl.losses`: Keras 3 losses (see `losses` for the functions and classes, `loss` for the
reduction)."""

from sluice.cells.variable_store import get_regularization_loss, get_regularization_losses
from sluice.losses.loss import Loss
from sluice.losses.losses import (
    BinaryCrossentropy,
    CategoricalCrossentropy,
    Huber,
    MeanAbsoluteError,
    MeanSquaredError,
    SparseCategoricalCrossentropy,
    binary_crossentropy,
    categorical_crossentropy,
    deserialize,
    get,
    huber,
    mean_absolute_error,
    mean_squared_error,
    serialize,
    sparse_categorical_crossentropy,
)

__all__ = [
    "BinaryCrossentropy", "CategoricalCrossentropy", "Huber", "Loss", "MeanAbsoluteError",
    "MeanSquaredError", "SparseCategoricalCrossentropy", "binary_crossentropy",
    "categorical_crossentropy", "deserialize", "get", "get_regularization_loss",
    "get_regularization_losses", "huber", "mean_absolute_error",
    "mean_squared_error", "serialize", "sparse_categorical_crossentropy",
]  # fmt: skip
