"""Keras 3's accuracy metrics: functions giving 1.0 where a prediction is right (per element or per
sample) and the `MeanMetricWrapper` classes averaging them over every sample seen.

    function (class)                                       right when
    accuracy (Accuracy)                                    y_pred == y_true
    binary_accuracy (BinaryAccuracy)                       (y_pred > threshold) == y_true
    categorical_accuracy (CategoricalAccuracy)             argmax(y_pred) == argmax(y_true)
    sparse_categorical_accuracy (SparseCategorical...)     argmax(y_pred) == y_true (class ids)
    top_k_categorical_accuracy (TopKCategorical...)        argmax(y_true) among y_pred's k largest
    sparse_top_k_categorical_accuracy (SparseTopK...)      y_true among y_pred's k largest

The first two compare elementwise, the others per sample.

Ties at the k-th largest score count as in the top k (TF's and Keras's `in_top_k`).

>>> m = sl.metrics.TopKCategoricalAccuracy(k=1)
>>> m.update_state([[0, 0, 1], [0, 1, 0]], [[0.1, 0.9, 0.8], [0.05, 0.95, 0]])
>>> print(m.result())   # Keras 3's example
0.5
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.losses.loss import prepare_targets, squeeze_or_expand_to_same_rank
from sluice._keras.losses.probabilistic import sparse_ids
from sluice._keras.metrics.metric import MeanMetricWrapper
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops, sort_ops


def _float(x: Any) -> Any:
    return fill_ops.cast(x, dtypes.float32)


def accuracy(y_true: Any, y_pred: Any) -> Any:
    """1 where y_pred equals y_true exactly (elementwise, as floats)."""
    y_true, y_pred = prepare_targets(y_true, y_pred)
    return _float(math_ops.equal(y_true, y_pred))


@export("metrics.binary_accuracy")
def binary_accuracy(y_true: Any, y_pred: Any, threshold: float = 0.5) -> Any:
    """1 where (y_pred > threshold) matches y_true, elementwise (booleans taken as 0/1).

    >>> sl.Session().run(sl.metrics.binary_accuracy([[1, 1], [0, 0]], [[0.98, 0.3], [0.1, 0.6]]))
    array([[1., 0.],
           [1., 0.]], dtype=float32)
    """
    y_pred = fill_ops.cast(core_ops.convert_to_tensor(y_pred), dtypes.float32)
    y_true = fill_ops.cast(core_ops.convert_to_tensor(y_true), dtypes.float32)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    predicted = _float(math_ops.greater(y_pred, threshold))
    return _float(math_ops.equal(y_true, predicted))


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
    y_true = sparse_ids(y_true, y_pred, "sparse_categorical_accuracy")
    predicted = reduction_ops.argmax(y_pred, -1)
    return _float(math_ops.equal(fill_ops.cast(y_true, predicted.dtype), predicted))


def _in_top_k(ids: Any, y_pred: Any, k: int) -> Any:
    """Whether each id is among its row's k largest scores, for any rank: rows are the last axis
    of y_pred, flattened and reshaped back to the ids' shape."""
    ids = fill_ops.cast(ids, dtypes.int32)
    shape = fill_ops.shape(ids)
    rows = fill_ops.cast(array_ops.reshape(y_pred, [-1, y_pred.shape[-1]]), dtypes.float32)
    hits = sort_ops.in_top_k(rows, array_ops.reshape(ids, [-1]), k)
    return _float(array_ops.reshape(hits, shape))


@export("metrics.top_k_categorical_accuracy")
def top_k_categorical_accuracy(y_true: Any, y_pred: Any, k: int = 5) -> Any:
    """1 where argmax(y_true) (one-hot targets) is among y_pred's k largest scores.

    >>> hits = sl.metrics.top_k_categorical_accuracy([[0, 0, 1], [0, 1, 0]],
    ...                                              [[0.1, 0.9, 0.8], [0.05, 0.95, 0]], k=1)
    >>> sl.Session().run(hits)
    array([0., 1.], dtype=float32)
    """
    y_pred = core_ops.convert_to_tensor(y_pred)
    y_true = core_ops.convert_to_tensor(y_true)
    return _in_top_k(reduction_ops.argmax(y_true, -1), y_pred, k)


@export("metrics.sparse_top_k_categorical_accuracy")
def sparse_top_k_categorical_accuracy(
    y_true: Any, y_pred: Any, k: int = 5, from_sorted_ids: bool = False
) -> Any:
    """1 where the class id y_true is among y_pred's k largest scores; with `from_sorted_ids`,
    y_pred holds class ids sorted by score (best first), and the first k are looked at."""
    y_pred = core_ops.convert_to_tensor(y_pred)
    if from_sorted_ids:
        y_true = fill_ops.cast(core_ops.convert_to_tensor(y_true), y_pred.dtype)
        if y_true.shape.rank == y_pred.shape.rank and y_true.shape[-1] == 1:
            y_true = array_ops.squeeze(y_true, [-1])
        hits = math_ops.equal(array_ops.expand_dims(y_true, -1), y_pred[..., :k])
        return _float(reduction_ops.reduce_any(hits, axis=-1))
    return _in_top_k(sparse_ids(y_true, y_pred, "sparse_top_k_categorical_accuracy"), y_pred, k)


# -- the classes ----------------------------------------------------------------------------------
@export("metrics.Accuracy")
class Accuracy(MeanMetricWrapper):
    """How often y_pred equals y_true.

    >>> m = sl.metrics.Accuracy()
    >>> m.update_state([[1], [2], [3], [4]], [[0], [2], [3], [4]], sample_weight=[1, 1, 0, 0])
    >>> print(m.result())   # Keras 3's example
    0.5
    """

    def __init__(self, name: str = "accuracy", dtype: Any = None):
        super().__init__(accuracy, name=name, dtype=dtype)


@export("metrics.BinaryAccuracy")
class BinaryAccuracy(MeanMetricWrapper):
    """How often (y_pred > threshold) matches the 0/1 targets."""

    def __init__(self, name: str = "binary_accuracy", dtype: Any = None, threshold: float = 0.5):
        super().__init__(binary_accuracy, name=name, dtype=dtype, threshold=threshold)
        self.threshold = threshold


@export("metrics.CategoricalAccuracy")
class CategoricalAccuracy(MeanMetricWrapper):
    """How often argmax(y_pred) matches one-hot targets."""

    def __init__(self, name: str = "categorical_accuracy", dtype: Any = None):
        super().__init__(categorical_accuracy, name=name, dtype=dtype)


@export("metrics.SparseCategoricalAccuracy")
class SparseCategoricalAccuracy(MeanMetricWrapper):
    """How often argmax(y_pred) matches integer targets."""

    def __init__(self, name: str = "sparse_categorical_accuracy", dtype: Any = None):
        super().__init__(sparse_categorical_accuracy, name=name, dtype=dtype)


@export("metrics.TopKCategoricalAccuracy")
class TopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the one-hot target is among the k largest predictions."""

    def __init__(self, k: int = 5, name: str = "top_k_categorical_accuracy", dtype: Any = None):
        super().__init__(top_k_categorical_accuracy, name=name, dtype=dtype, k=k)
        self.k = k


@export("metrics.SparseTopKCategoricalAccuracy")
class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the integer target is among the k largest predictions (or, with
    `from_sorted_ids`, among the first k of y_pred's sorted class ids).

    >>> m = sl.metrics.SparseTopKCategoricalAccuracy(k=1, from_sorted_ids=True)
    >>> m.update_state([2, 1], [[1, 0, 3], [1, 2, 3]])
    >>> print(m.result())   # Keras 3's example
    0.5
    """

    def __init__(
        self,
        k: int = 5,
        name: str = "sparse_top_k_categorical_accuracy",
        dtype: Any = None,
        from_sorted_ids: bool = False,
    ):
        kwargs = {"from_sorted_ids": True} if from_sorted_ids else {}
        super().__init__(sparse_top_k_categorical_accuracy, name=name, dtype=dtype, k=k, **kwargs)
        self.k = k
        self.from_sorted_ids = from_sorted_ids
