"""`sl.losses`: the Keras 3 loss classes and functions (`losses`, reduced as `loss` says) and
TF1's `tf.losses` functions (`tf1_losses`: weighted, reduced, collected in `GraphKeys.LOSSES`).

Where the two share a name (`mean_squared_error`), the TF1 function wins, as in TF 1.15 where
`tf.losses` is TF1's and `tf.keras.losses` is Keras's; the Keras function keeps its names in
`get`/`deserialize` ("mean_squared_error", "mse"), so `model.compile(loss="mse")` and saved
models are unchanged.
"""

from sluice._keras.losses.loss import Loss
from sluice._keras.losses.losses import (
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
    serialize,
    sparse_categorical_crossentropy,
)
from sluice._tf1.cells.variable_store import get_regularization_loss, get_regularization_losses
from sluice._tf1.losses.tf1_losses import (
    Reduction,
    absolute_difference,
    add_loss,
    compute_weighted_loss,
    cosine_distance,
    get_losses,
    get_total_loss,
    hinge_loss,
    huber_loss,
    log_loss,
    mean_pairwise_squared_error,
    mean_squared_error,
    sigmoid_cross_entropy,
    softmax_cross_entropy,
    sparse_softmax_cross_entropy,
)

__all__ = [
    "BinaryCrossentropy", "CategoricalCrossentropy", "Huber", "Loss", "MeanAbsoluteError",
    "MeanSquaredError", "Reduction", "SparseCategoricalCrossentropy", "absolute_difference",
    "add_loss", "binary_crossentropy", "categorical_crossentropy", "compute_weighted_loss",
    "cosine_distance", "deserialize", "get", "get_losses", "get_regularization_loss",
    "get_regularization_losses", "get_total_loss", "hinge_loss", "huber", "huber_loss",
    "log_loss", "mean_absolute_error", "mean_pairwise_squared_error", "mean_squared_error",
    "serialize", "sigmoid_cross_entropy", "softmax_cross_entropy",
    "sparse_categorical_crossentropy", "sparse_softmax_cross_entropy",
]  # fmt: skip
