"""`sl.metrics`: Keras 3 metrics kept in graph Variables (`metric`, `metrics`) and TF1's
streaming `tf.metrics` functions returning `(value, update_op)` (`tf1_metrics`).

Where the two share a name (`accuracy`), the TF1 function wins, as in TF 1.15 where
`tf.metrics` is TF1's and `tf.keras.metrics` is Keras's; Keras metrics keep their classes
(`Accuracy`, ...) and names (`metrics=["accuracy"]`, `get("accuracy")`).
"""

from sluice._keras.metrics.metric import Mean, MeanMetricWrapper, Metric, Sum
from sluice._keras.metrics.metrics import (
    Accuracy,
    BinaryAccuracy,
    CategoricalAccuracy,
    MeanAbsoluteError,
    MeanSquaredError,
    RootMeanSquaredError,
    SparseCategoricalAccuracy,
    binary_accuracy,
    categorical_accuracy,
    get,
    sparse_categorical_accuracy,
)
from sluice._tf1.metrics.tf1_auc import auc
from sluice._tf1.metrics.tf1_metrics import (
    accuracy,
    mean,
    mean_absolute_error,
    mean_squared_error,
    precision,
    recall,
    root_mean_squared_error,
)

__all__ = [
    "Accuracy", "BinaryAccuracy", "CategoricalAccuracy", "Mean", "MeanAbsoluteError",
    "MeanMetricWrapper", "MeanSquaredError", "Metric", "RootMeanSquaredError",
    "SparseCategoricalAccuracy", "Sum", "accuracy", "auc", "binary_accuracy",
    "categorical_accuracy", "get", "mean", "mean_absolute_error", "mean_squared_error",
    "precision", "recall", "root_mean_squared_error", "sparse_categorical_accuracy",
]  # fmt: skip
