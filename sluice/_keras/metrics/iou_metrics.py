"""Keras 3's intersection-over-union metrics for segmentation: a (num_classes, num_classes)
confusion matrix of weighted counts (rows: true class, columns: predicted class) accumulated
over every element seen, and from it, per class c,

    iou[c] = cm[c, c] / (sum(cm[c, :]) + sum(cm[:, c]) - cm[c, c] + eps)

averaged over the target classes whose denominator is not 0 (`IoU`, `MeanIoU` over all,
`BinaryIoU` over thresholded scores, `OneHotIoU`/`OneHotMeanIoU` from one-hot targets). Ids
outside [0, num_classes) and `ignore_class` are left out.

>>> m = sl.metrics.MeanIoU(num_classes=2)
>>> m.update_state([0, 0, 1, 1], [0, 1, 0, 1], sample_weight=[0.3, 0.3, 0.3, 0.1])
>>> print(np.round(m.result(), 6))   # Keras 3's example: 0.23809525
0.238095
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import config
from sluice._keras.losses.loss import broadcast_weight
from sluice._keras.metrics.metric import Metric
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops, segment_ops


@export("metrics.IoU")
class IoU(Metric):
    """The mean IoU of the classes `target_class_ids` (see the module docstring).

    Args:
      num_classes: the number of classes.
      target_class_ids: the classes whose IoUs are averaged.
      name, dtype: as every metric.
      ignore_class: a class id left out (e.g. a "void" class).
      sparse_y_true, sparse_y_pred: False for one-hot targets or per-class scores, whose argmax
        over `axis` is taken.
      axis: the class axis of dense inputs.

    Raises:
      ValueError: a target class id outside [0, num_classes).

    >>> m = sl.metrics.IoU(num_classes=2, target_class_ids=[0])
    >>> m.update_state([0, 0, 1, 1], [0, 1, 0, 1])
    >>> print(np.round(m.result(), 6))   # Keras 3's example: 0.33333334
    0.333333
    """

    def __init__(
        self,
        num_classes: int,
        target_class_ids: Any,
        name: str | None = None,
        dtype: Any = None,
        ignore_class: int | None = None,
        sparse_y_true: bool = True,
        sparse_y_pred: bool = True,
        axis: int = -1,
    ):
        super().__init__(name=name, dtype=dtype)
        if max(target_class_ids) >= num_classes:
            raise ValueError(
                f"Target class id {max(target_class_ids)} is out of range, which is "
                f"[0, {num_classes})."
            )
        self.num_classes = num_classes
        self.target_class_ids = list(target_class_ids)
        self.ignore_class = ignore_class
        self.sparse_y_true = sparse_y_true
        self.sparse_y_pred = sparse_y_pred
        self.axis = axis

    def build_state(self) -> None:
        self.total_cm = self.add_variable(
            name="total_confusion_matrix", shape=(self.num_classes, self.num_classes)
        )

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_true, y_pred = core_ops.convert_to_tensor(y_true), core_ops.convert_to_tensor(y_pred)
        self._ensure_state([y_pred])
        if not self.sparse_y_true:
            y_true = reduction_ops.argmax(y_true, self.axis)
        if not self.sparse_y_pred:
            y_pred = reduction_ops.argmax(y_pred, self.axis)
        weight = fill_ops.ones_like(y_true, dtype=self.dtype)
        if sample_weight is not None:  # a weight per element, or per sample (trailing axes added)
            sw = fill_ops.cast(core_ops.convert_to_tensor(sample_weight), self.dtype)
            weight = weight * broadcast_weight(sw, weight)
        y_true = array_ops.reshape(fill_ops.cast(y_true, dtypes.int32), [-1])
        y_pred = array_ops.reshape(fill_ops.cast(y_pred, dtypes.int32), [-1])
        weight = array_ops.reshape(weight, [-1])
        n = self.num_classes
        valid = math_ops.logical_and(
            math_ops.logical_and(math_ops.greater_equal(y_true, 0), math_ops.less(y_true, n)),
            math_ops.logical_and(math_ops.greater_equal(y_pred, 0), math_ops.less(y_pred, n)),
        )
        if self.ignore_class is not None:
            valid = math_ops.logical_and(valid, math_ops.not_equal(y_true, self.ignore_class))
        zero = fill_ops.zeros_like(y_true)
        cell = gather_ops.where_v2(valid, y_true * n + y_pred, zero)
        weight = weight * fill_ops.cast(valid, self.dtype)
        counts = segment_ops.unsorted_segment_sum(weight, cell, n * n)
        return self.total_cm.assign_add(array_ops.reshape(counts, [n, n]), read_value=False)

    def result(self) -> Any:
        cm = self.total_cm.value()
        rows = reduction_ops.reduce_sum(cm, axis=0)
        columns = reduction_ops.reduce_sum(cm, axis=1)
        eye = fill_ops.one_hot(fill_ops.range(self.num_classes), self.num_classes, dtype=cm.dtype)
        diagonal = reduction_ops.reduce_sum(cm * eye, axis=1)
        denominator = rows + columns - diagonal
        ids = core_ops.convert_to_tensor(self.target_class_ids, dtype=dtypes.int32)
        tp = gather_ops.gather(diagonal, ids)
        denominator = gather_ops.gather(denominator, ids)
        present = math_ops.greater(denominator, 1e-9)
        iou = gather_ops.where_v2(
            present, tp / (denominator + config.epsilon()), fill_ops.zeros_like(tp)
        )
        count = reduction_ops.reduce_sum(fill_ops.cast(present, cm.dtype))
        return reduction_ops.reduce_sum(iou) / (count + config.epsilon())

    _config_omits: tuple[str, ...] = ()  # arguments a subclass fixes (Keras's configs)

    def get_config(self) -> dict:
        config = {
            **super().get_config(),
            "num_classes": self.num_classes,
            "target_class_ids": self.target_class_ids,
            "ignore_class": self.ignore_class,
            "sparse_y_true": self.sparse_y_true,
            "sparse_y_pred": self.sparse_y_pred,
            "axis": self.axis,
        }
        return {k: v for k, v in config.items() if k not in self._config_omits}


@export("metrics.BinaryIoU")
class BinaryIoU(IoU):
    """IoU of two classes from scores: class 1 where y_pred >= `threshold`, else 0.

    >>> m = sl.metrics.BinaryIoU(target_class_ids=[0, 1], threshold=0.3)
    >>> m.update_state([0, 1, 0, 1], [0.1, 0.2, 0.4, 0.7], sample_weight=[0.2, 0.3, 0.4, 0.1])
    >>> print(np.round(m.result(), 6))   # Keras 3's example: 0.17361112
    0.173611
    """

    def __init__(
        self,
        target_class_ids: Any = (0, 1),
        threshold: float = 0.5,
        name: str | None = None,
        dtype: Any = None,
    ):
        super().__init__(2, target_class_ids, name=name, dtype=dtype)
        self.threshold = threshold

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_pred = fill_ops.cast(core_ops.convert_to_tensor(y_pred), dtypes.float32)
        predicted = fill_ops.cast(math_ops.greater_equal(y_pred, self.threshold), dtypes.int32)
        return super().update_state(y_true, predicted, sample_weight)

    def get_config(self) -> dict:
        return {
            "target_class_ids": self.target_class_ids,
            "threshold": self.threshold,
            "name": self.name,
            "dtype": self.dtype.name,
        }


@export("metrics.MeanIoU")
class MeanIoU(IoU):
    """The mean IoU over all `num_classes` classes (the other arguments as `IoU`'s).

    >>> m = sl.metrics.MeanIoU(num_classes=2)
    >>> m.update_state([0, 0, 1, 1], [0, 1, 0, 1])
    >>> print(np.round(m.result(), 6))   # Keras 3's example: 0.33333334
    0.333333
    """

    _config_omits = ("target_class_ids",)

    def __init__(
        self, num_classes: int, name: str | None = None, dtype: Any = None, **options: Any
    ):
        super().__init__(num_classes, list(range(num_classes)), name, dtype, **options)


@export("metrics.OneHotIoU")
class OneHotIoU(IoU):
    """`IoU` for one-hot targets and per-class scores (their argmax over `axis`); its other
    arguments as `IoU`'s, but `sparse_y_true` (False) and `sparse_y_pred` (False by default)."""

    _config_omits = ("sparse_y_true",)

    def __init__(
        self,
        num_classes: int,
        target_class_ids: Any,
        name: str | None = None,
        dtype: Any = None,
        **options: Any,
    ):
        options.setdefault("sparse_y_pred", False)
        super().__init__(num_classes, target_class_ids, name, dtype, sparse_y_true=False, **options)


@export("metrics.OneHotMeanIoU")
class OneHotMeanIoU(MeanIoU):
    """`MeanIoU` for one-hot targets and per-class scores (arguments as `OneHotIoU`'s).

    >>> y_true = np.array([[0, 0, 1], [1, 0, 0], [0, 1, 0], [1, 0, 0]])
    >>> y_pred = np.array([[0.2, 0.3, 0.5], [0.1, 0.2, 0.7], [0.5, 0.3, 0.1], [0.1, 0.4, 0.5]])
    >>> m = sl.metrics.OneHotMeanIoU(num_classes=3)
    >>> m.update_state(y_true=y_true, y_pred=y_pred, sample_weight=[0.1, 0.2, 0.3, 0.4])
    >>> print(np.round(m.result(), 3))   # Keras 3's example
    0.048
    """

    _config_omits = ("target_class_ids", "sparse_y_true")

    def __init__(
        self, num_classes: int, name: str | None = None, dtype: Any = None, **options: Any
    ):
        options.setdefault("sparse_y_pred", False)
        super().__init__(num_classes, name, dtype, sparse_y_true=False, **options)
