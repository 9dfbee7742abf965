"""`sl.metrics`: Keras 3 metrics kept in graph Variables."""

from sluice.metrics.metric import Mean, MeanMetricWrapper, Metric, Sum
from sluice.metrics.metrics import (
    Accuracy,
    BinaryAccuracy,
    CategoricalAccuracy,
    MeanAbsoluteError,
    MeanSquaredError,
    RootMeanSquaredError,
    SparseCategoricalAccuracy,
    accuracy,
    binary_accuracy,
    categorical_accuracy,
    get,
    sparse_categorical_accuracy,
)

__all__ = [
    "Accuracy", "BinaryAccuracy", "CategoricalAccuracy", "Mean", "MeanAbsoluteError",
    "MeanMetricWrapper", "MeanSquaredError", "Metric", "RootMeanSquaredError",
    "SparseCategoricalAccuracy", "Sum", "accuracy", "binary_accuracy", "categorical_accuracy",
    "get", "sparse_categorical_accuracy",
]  # fmt: skip
