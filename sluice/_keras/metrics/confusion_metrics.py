"""Keras 3's confusion-matrix metrics: the counts (`TruePositives`, `FalsePositives`,
`TrueNegatives`, `FalseNegatives`), `Precision`, `Recall` and `AUC`, kept as weighted counts per
threshold in Variables of shape (thresholds,) (AUC with `multi_label=True`: (thresholds, labels)).

For every threshold t, a prediction p counts as positive when p > t and a target y as positive
when y != 0 (keras/src/metrics/metrics_utils.py, `update_confusion_matrix_variables`):

    tp[t] = sum(w * (y != 0) * (p > t))        fp[t] = sum(w * (y == 0) * (p > t))
    fn[t] = sum(w * (y != 0) * (p <= t))       tn[t] = sum(w * (y == 0) * (p <= t))

summed over every element (or per label for a multi-label AUC), w the sample weights broadcast to
y_pred. Evenly spaced thresholds (AUC's own; given ones such as [0, 0.5, 1]) are counted as Keras 3
counts them, by bucketing each prediction once (memory O(batch + thresholds)); predictions are then
clipped to [0, 1]. Others compare every prediction with every threshold. `top_k` keeps each row's k
largest predictions (the others count as negative); `class_id` keeps one column.

AUC's thresholds are num_thresholds evenly spaced points of [0, 1] with the ends moved to -eps
and 1 + eps; its area is a Riemann sum over them (ROC: recall against the false positive rate,
PR: precision against recall; "interpolation" for PR uses Davis & Goadrich's interpolation).

>>> m = sl.metrics.AUC(num_thresholds=3)
>>> m.update_state([0, 0, 1, 1], [0, 0.5, 0.3, 0.9])
>>> print(m.result())   # Keras 3's example
0.75
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras import config
from sluice._keras.losses.loss import squeeze_or_expand_to_same_rank
from sluice._keras.metrics.metric import Metric
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import (
    division_ops,
    math_ops,
    reduction_ops,
    segment_ops,
    sort_ops,
    unary_ops,
)

NEG_INF = -1e10  # Keras's threshold when only top_k decides


def parse_thresholds(thresholds: Any, default: float) -> list[float]:
    """The thresholds as a list (`default` when None); given ones must lie in [0, 1]."""
    if thresholds is None:
        return [default]
    listed = list(thresholds) if isinstance(thresholds, (list, tuple, np.ndarray)) else [thresholds]
    bad = [t for t in listed if t is None or not 0 <= t <= 1]
    if bad:
        raise ValueError(f"Threshold values must be in [0, 1]. Received: {bad}")
    return [float(t) for t in listed]


def filter_top_k(x: Any, k: int) -> Any:
    """`x` with all but each row's k largest values (last axis) set to -1e10 (Keras's
    `_filter_top_k`: among equal values the lower index is kept)."""
    _, indices = sort_ops.top_k(x, k)
    keep = reduction_ops.reduce_sum(fill_ops.one_hot(indices, x.shape[-1], dtype=x.dtype), axis=-2)
    return x * keep + NEG_INF * (1.0 - keep)


def confusion_counts(
    y_true: Any,
    y_pred: Any,
    thresholds: list[float],
    dtype: Any,
    sample_weight: Any = None,
    top_k: int | None = None,
    class_id: int | None = None,
    multi_label: bool = False,
    label_weights: Any = None,
    what: str = "confusion matrix",
) -> dict[str, Any]:
    """{"tp", "fp", "tn", "fn"}: the weighted counts per threshold (see the module docstring),
    each of shape (thresholds,), or (thresholds, labels) when `multi_label`.

    Raises:
      ValueError: `class_id` with a rank-1 y_pred, or y_true and y_pred of different shapes
        (`what` names the metric).
    """
    y_pred = fill_ops.cast(core_ops.convert_to_tensor(y_pred), dtype)
    y_true = fill_ops.cast(core_ops.convert_to_tensor(y_true), dtype)
    y_pred, y_true = squeeze_or_expand_to_same_rank(y_pred, y_true)
    if not y_pred.shape.is_compatible_with(y_true.shape):
        raise ValueError(
            f"{what}: y_true and y_pred must have the same shape (a target per prediction), got "
            f"y_true of shape {y_true.shape} and y_pred of shape {y_pred.shape}. For class ids "
            "against per-class scores, one-hot encode the targets or pass class_id=."
        )
    if sample_weight is not None:
        sample_weight = array_ops.expand_dims(
            fill_ops.cast(core_ops.convert_to_tensor(sample_weight), dtype), -1
        )
        _, sample_weight = squeeze_or_expand_to_same_rank(y_true, sample_weight, False)
    if top_k is not None:
        y_pred = filter_top_k(y_pred, top_k)
    if class_id is not None:
        if y_pred.shape.rank == 1:
            raise ValueError(
                "When class_id is provided, y_pred must be a 2D array with shape (num_samples, "
                f"num_classes), found shape: {y_pred.shape}"
            )
        y_true = y_true[..., class_id, None]
        y_pred = y_pred[..., class_id, None]
    weights = fill_ops.ones_like(y_pred)
    if sample_weight is not None:
        weights = weights * sample_weight
    if label_weights is not None and not multi_label:
        weights = weights * core_ops.convert_to_tensor(label_weights, dtype=dtype)
    if evenly_spaced(thresholds):
        return _bucketed_counts(y_true, y_pred, weights, thresholds, multi_label)
    t = core_ops.convert_to_tensor(np.asarray(thresholds), dtype=dtype)
    if multi_label:  # (thresholds, examples, labels), summed over the examples
        t = array_ops.reshape(t, [-1, 1, 1])
        shape = [1, -1, y_pred.shape[-1]]
    else:  # (thresholds, every element)
        t = array_ops.reshape(t, [-1, 1])
        shape = [1, -1]
    predicted = math_ops.greater(array_ops.reshape(y_pred, shape), t)
    positive = math_ops.not_equal(array_ops.reshape(y_true, shape), 0.0)
    weights = array_ops.reshape(weights, shape)

    def count(label: Any, prediction: Any) -> Any:
        both = fill_ops.cast(math_ops.logical_and(label, prediction), dtype)
        return reduction_ops.reduce_sum(both * weights, axis=1)

    negative, rejected = math_ops.logical_not(positive), math_ops.logical_not(predicted)
    return {
        "tp": count(positive, predicted),
        "fp": count(negative, predicted),
        "tn": count(negative, rejected),
        "fn": count(positive, rejected),
    }


def evenly_spaced(thresholds: list[float]) -> bool:
    """Whether the thresholds are i / (n - 1) for i < n, n >= 3, up to epsilon (AUC's ends, -eps
    and 1 + eps, included): Keras's `is_evenly_distributed_thresholds`, which picks the
    bucketing count."""
    n = len(thresholds)
    if n < 3:
        return False
    even = np.arange(n, dtype=np.float32) / (n - 1)
    return bool(np.allclose(thresholds, even, atol=config.epsilon()))


def _bucketed_counts(
    y_true: Any, y_pred: Any, weights: Any, thresholds: list[float], multi_label: bool
) -> dict[str, Any]:
    """The counts of `confusion_counts` for evenly spaced thresholds t_i = i / (n - 1), in
    O(elements + thresholds) memory (Keras's `_update_confusion_matrix_variables_optimized`):
    a prediction p in (t_i, t_i+1] lies above the thresholds t_0..t_i, so each element's weight
    goes to bucket i = ceil(p (n - 1)) - 1 (one segment sum), and the count above t_i is the sum
    of the buckets from i on (a reversed cumulative sum). Predictions are clipped to [0, 1]
    first; with AUC's ends (-eps, 1 + eps) a prediction of 0 lies above the first threshold.
    The counts at or below a threshold are the totals minus those above it."""
    n = len(thresholds)
    dtype = y_pred.dtype
    zero, one = (core_ops.convert_to_tensor(v, dtype=dtype) for v in (0.0, 1.0))
    p = math_ops.minimum(math_ops.maximum(y_pred, zero), one)
    bucket = unary_ops.ceil(p * float(n - 1)) - 1.0
    if thresholds[0] < 0.0 or thresholds[-1] > 1.0:
        bucket = math_ops.maximum(bucket, zero)
    bucket = fill_ops.cast(bucket, dtypes.int32)  # -1: above no threshold (dropped)
    positive = fill_ops.cast(math_ops.not_equal(y_true, 0.0), dtype)
    true_weight, false_weight = positive * weights, (1.0 - positive) * weights
    if multi_label:  # one segment per (bucket, label)
        labels = y_pred.shape[-1]
        bucket = bucket * labels + fill_ops.range(labels)
        segments, by_label, totals_axis = n * labels, [n, labels], 0
    else:
        segments, by_label, totals_axis = n, [n], None

    def above(weight: Any) -> Any:
        buckets = segment_ops.unsorted_segment_sum(
            array_ops.reshape(weight, [-1]), array_ops.reshape(bucket, [-1]), segments
        )
        return reduction_ops.cumsum(array_ops.reshape(buckets, by_label), axis=0, reverse=True)

    tp, fp = above(true_weight), above(false_weight)
    positives = reduction_ops.reduce_sum(true_weight, axis=totals_axis)
    negatives = reduction_ops.reduce_sum(false_weight, axis=totals_axis)
    return {"tp": tp, "fp": fp, "tn": negatives - fp, "fn": positives - tp}


def _one_or_all(values: Any, thresholds: list) -> Any:
    """The result for the one threshold, or the vector for several (Keras)."""
    return values[0] if len(thresholds) == 1 else values


# -- counts ---------------------------------------------------------------------------------------
class _ConfusionCount(Metric):
    """The weighted count of one cell of the confusion matrix, per threshold."""

    _cell = ""

    def __init__(self, thresholds: Any = None, name: str | None = None, dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.thresholds = parse_thresholds(thresholds, 0.5)

    def build_state(self) -> None:
        self.accumulator = self.add_variable(name="accumulator", shape=(len(self.thresholds),))

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_pred = core_ops.convert_to_tensor(y_pred)
        self._ensure_state([y_pred])
        counts = confusion_counts(
            y_true, y_pred, self.thresholds, self.dtype, sample_weight, what=f"{self.name!r}"
        )
        return self.accumulator.assign_add(counts[self._cell], read_value=False)

    def result(self) -> Any:
        return _one_or_all(self.accumulator.value(), self.thresholds)

    def get_config(self) -> dict:
        return {**super().get_config(), "thresholds": self.init_thresholds}


@export("metrics.TruePositives")
class TruePositives(_ConfusionCount):
    """The (weighted) number of true positives: y != 0 predicted above a threshold.

    >>> m = sl.metrics.TruePositives()
    >>> m.update_state([0, 1, 1, 1], [1, 0, 1, 1])
    >>> print(m.result())
    2.0
    """

    _cell = "tp"


@export("metrics.FalsePositives")
class FalsePositives(_ConfusionCount):
    """The (weighted) number of false positives: y == 0 predicted above a threshold.

    >>> m = sl.metrics.FalsePositives()
    >>> m.update_state([0, 1, 0, 0], [0, 0, 1, 1], sample_weight=[0, 0, 1, 0])
    >>> print(m.result())
    1.0
    """

    _cell = "fp"


@export("metrics.TrueNegatives")
class TrueNegatives(_ConfusionCount):
    """The (weighted) number of true negatives: y == 0 predicted at or below a threshold."""

    _cell = "tn"


@export("metrics.FalseNegatives")
class FalseNegatives(_ConfusionCount):
    """The (weighted) number of false negatives: y != 0 predicted at or below a threshold."""

    _cell = "fn"


# -- precision and recall -------------------------------------------------------------------------
class _PrecisionRecall(Metric):
    """tp and one other count per threshold; result tp / (tp + other), 0 where that is 0/0."""

    _other = ""

    def __init__(
        self,
        thresholds: Any = None,
        top_k: int | None = None,
        class_id: int | None = None,
        name: str | None = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.top_k = top_k
        self.class_id = class_id
        default = 0.5 if top_k is None else NEG_INF
        self.thresholds = parse_thresholds(thresholds, default)

    def build_state(self) -> None:
        shape = (len(self.thresholds),)
        self.true_positives = self.add_variable(name="true_positives", shape=shape)
        other = {"fp": "false_positives", "fn": "false_negatives"}[self._other]
        setattr(self, other, self.add_variable(name=other, shape=shape))
        self._other_variable = getattr(self, other)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_pred = core_ops.convert_to_tensor(y_pred)
        self._ensure_state([y_pred])
        counts = confusion_counts(
            y_true, y_pred, self.thresholds, self.dtype, sample_weight, self.top_k,
            self.class_id, what=f"{self.name!r}",
        )  # fmt: skip
        return core_ops.group(
            self.true_positives.assign_add(counts["tp"], read_value=False),
            self._other_variable.assign_add(counts[self._other], read_value=False),
        )

    def result(self) -> Any:
        tp = self.true_positives.value()
        value = division_ops.div_no_nan(tp, tp + self._other_variable.value())
        return _one_or_all(value, self.thresholds)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "thresholds": self.init_thresholds,
            "top_k": self.top_k,
            "class_id": self.class_id,
        }


@export("metrics.Precision")
class Precision(_PrecisionRecall):
    """tp / (tp + fp): how many of the predicted positives are positive.

    Args:
      thresholds: a float or list of floats in [0, 1] (default 0.5; with `top_k` and no
        thresholds, every kept prediction counts). One result per threshold.
      top_k: count only each row's k largest predictions as positive.
      class_id: the class (column) to measure, alone.
      name, dtype: as every metric.

    >>> m = sl.metrics.Precision()
    >>> m.update_state([0, 1, 1, 1], [1, 0, 1, 1])
    >>> print(m.result())   # Keras 3's example
    0.6666667
    >>> m = sl.metrics.Precision(top_k=2)
    >>> m.update_state([0, 0, 1, 1], [1, 1, 1, 1])
    >>> print(m.result())
    0.0
    """

    _other = "fp"


@export("metrics.Recall")
class Recall(_PrecisionRecall):
    """tp / (tp + fn): how many of the positives are predicted positive (arguments as
    `Precision`).

    >>> m = sl.metrics.Recall()
    >>> m.update_state([0, 1, 1, 1], [1, 0, 1, 1], sample_weight=[0, 0, 1, 0])
    >>> print(m.result())
    1.0
    """

    _other = "fn"


# -- AUC ----------------------------------------------------------------------------------------
_CURVES = {"roc": "ROC", "pr": "PR", "prgain": "PRGAIN"}
_SUMMATIONS = {"interpolation": "interpolation", "majoring": "majoring", "minoring": "minoring"}


@export("metrics.AUC")
class AUC(Metric):
    """The area under the ROC curve (default) or the precision-recall curve, by a Riemann sum over
    `num_thresholds` thresholds (see the module docstring).

    Args:
      num_thresholds: the number of thresholds (> 1), 200 by default.
      curve: "ROC", "PR" or "PRGAIN".
      summation_method: "interpolation" (default), "minoring" (a lower bound) or "majoring" (an
        upper bound).
      name, dtype: as every metric.
      thresholds: the thresholds in [0, 1] to use instead (the ends -eps and 1 + eps are added).
      multi_label: compute an AUC per label (the last axis) and average them, instead of treating
        every element as one prediction.
      num_labels: the number of labels of a multi-label AUC (else read from the first y_pred).
      label_weights: per-label weights: of the average when multi_label, else of the counts.
      from_logits: y_pred are logits (a sigmoid is applied first).

    Raises:
      ValueError: a bad curve, summation method, num_thresholds or num_labels.
    """

    def __init__(
        self,
        num_thresholds: int = 200,
        curve: str = "ROC",
        summation_method: str = "interpolation",
        name: str | None = None,
        dtype: Any = None,
        thresholds: Any = None,
        multi_label: bool = False,
        num_labels: int | None = None,
        label_weights: Any = None,
        from_logits: bool = False,
    ):
        curve_value = getattr(curve, "value", curve)
        method_value = getattr(summation_method, "value", summation_method)
        if str(curve_value).lower() not in _CURVES:
            raise ValueError(
                f'Invalid AUC curve value: "{curve}". Expected values are ["PR", "ROC", "PRGAIN"]'
            )
        if str(method_value).lower() not in _SUMMATIONS:
            raise ValueError(
                f'Invalid AUC summation method value: "{summation_method}". Expected values are '
                '["interpolation", "majoring", "minoring"]'
            )
        super().__init__(name=name, dtype=dtype)
        self._init_from_thresholds = thresholds is not None
        if thresholds is not None:
            inner = sorted(parse_thresholds(thresholds, 0.5))
            self.num_thresholds = len(inner) + 2
        else:
            if num_thresholds <= 1:
                raise ValueError(
                    "Argument `num_thresholds` must be an integer > 1. "
                    f"Received: num_thresholds={num_thresholds}"
                )
            self.num_thresholds = num_thresholds
            inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        epsilon = config.epsilon()
        self._thresholds = [0.0 - epsilon] + inner + [1.0 + epsilon]
        self.curve = _CURVES[str(curve_value).lower()]
        self.summation_method = _SUMMATIONS[str(method_value).lower()]
        self.multi_label = multi_label
        self.num_labels = num_labels
        if num_labels and not multi_label:
            raise ValueError("`num_labels` is needed only when `multi_label` is True.")
        self.label_weights = None if label_weights is None else list(np.ravel(label_weights))
        self._from_logits = from_logits
        self._num_labels = num_labels

    @property
    def thresholds(self) -> list[float]:
        """The thresholds, with the two ends."""
        return list(self._thresholds)

    def build_state(self) -> None:
        shape: tuple = (self.num_thresholds,)
        if self.multi_label:
            if self._num_labels is None:
                raise ValueError(
                    f"AUC {self.name!r} with multi_label=True and no num_labels has no state "
                    "before its first update_state (which reads the labels from y_pred)."
                )
            shape = (self.num_thresholds, self._num_labels)
        for cell in ("true_positives", "false_positives", "true_negatives", "false_negatives"):
            setattr(self, cell, self.add_variable(name=cell, shape=shape))

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_pred = core_ops.convert_to_tensor(y_pred)
        if self.multi_label:
            if y_pred.shape.rank != 2:
                raise ValueError(
                    "`y_pred` must have rank 2 when `multi_label=True`. Found rank "
                    f"{y_pred.shape.rank}. Full shape received for `y_pred`: {y_pred.shape}"
                )
            if self._num_labels is None:
                self._num_labels = y_pred.shape[1]
        self._ensure_state([y_pred])
        if self._from_logits:
            y_pred = unary_ops.sigmoid(fill_ops.cast(y_pred, self.dtype))
        counts = confusion_counts(
            y_true,
            y_pred,
            self._thresholds,
            self.dtype,
            sample_weight,
            multi_label=self.multi_label,
            label_weights=None if self.multi_label else self.label_weights,
            what=f"AUC {self.name!r}",
        )
        cells = {
            "tp": self.true_positives,
            "fp": self.false_positives,
            "tn": self.true_negatives,
            "fn": self.false_negatives,
        }
        return core_ops.group(
            *(v.assign_add(counts[k], read_value=False) for k, v in cells.items())
        )

    def _by_label(self, areas: Any) -> Any:
        """The AUC of the (per-label) areas: summed over thresholds, then averaged over labels
        (weighted by `label_weights`) for a multi-label AUC."""
        if not self.multi_label:
            return reduction_ops.reduce_sum(areas)
        by_label = reduction_ops.reduce_sum(areas, axis=0)
        if self.label_weights is None:
            return reduction_ops.reduce_mean(by_label)
        w = core_ops.convert_to_tensor(np.asarray(self.label_weights), dtype=self.dtype)
        return division_ops.div_no_nan(
            reduction_ops.reduce_sum(by_label * w), reduction_ops.reduce_sum(w)
        )

    def interpolate_pr_auc(self) -> Any:
        """The PR area with precision interpolated as Davis & Goadrich (2006): over each interval,
        tp and p = tp + fp vary linearly, so the area is slope * (dtp + intercept log(pA / pB)) /
        positives."""
        tp, fp, fn = (v.value() for v in (self.true_positives, self.false_positives,
                                          self.false_negatives))  # fmt: skip
        n = self.num_thresholds
        zero = fill_ops.zeros_like(tp[1:])
        dtp = tp[: n - 1] - tp[1:]
        p = tp + fp
        dp = p[: n - 1] - p[1:]
        slope = division_ops.div_no_nan(dtp, math_ops.maximum(dp, zero))
        intercept = tp[1:] - slope * p[1:]
        both_positive = math_ops.logical_and(
            math_ops.greater(p[: n - 1], zero), math_ops.greater(p[1:], zero)
        )
        ratio = gather_ops.where_v2(
            both_positive,
            division_ops.div_no_nan(p[: n - 1], math_ops.maximum(p[1:], zero)),
            fill_ops.ones_like(p[1:]),
        )
        increments = division_ops.div_no_nan(
            slope * (dtp + intercept * unary_ops.log(ratio)),
            math_ops.maximum(tp[1:] + fn[1:], zero),
        )
        return self._by_label(increments)

    def result(self) -> Any:
        if self.curve == "PR" and self.summation_method == "interpolation":
            return self.interpolate_pr_auc()
        tp, fp, tn, fn = (
            v.value()
            for v in (self.true_positives, self.false_positives, self.true_negatives,
                      self.false_negatives)
        )  # fmt: skip
        recall = division_ops.div_no_nan(tp, tp + fn)
        if self.curve == "ROC":
            x, y = division_ops.div_no_nan(fp, fp + tn), recall
        elif self.curve == "PR":
            x, y = recall, division_ops.div_no_nan(tp, tp + fp)
        else:  # PRGAIN, with Keras's fixes where the gains are undefined or negative
            scale = division_ops.div_no_nan(tp + fn, tn + fp)
            no_tp = math_ops.equal(tp, 0.0)
            recall_gain = 1.0 - scale * division_ops.div_no_nan(fn, tp)
            precision_gain = 1.0 - scale * division_ops.div_no_nan(fp, tp)
            recall_gain = gather_ops.where_v2(no_tp, fill_ops.zeros_like(tp), recall_gain)
            precision_gain = gather_ops.where_v2(no_tp, fill_ops.ones_like(tp), precision_gain)
            x, y = math_ops.maximum(recall_gain, fill_ops.zeros_like(tp)), precision_gain
        n = self.num_thresholds
        if self.summation_method == "interpolation":
            heights = (y[: n - 1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = math_ops.minimum(y[: n - 1], y[1:])
        else:
            heights = math_ops.maximum(y[: n - 1], y[1:])
        return self._by_label((x[: n - 1] - x[1:]) * heights)

    def get_config(self) -> dict:
        config = {
            **super().get_config(),
            "num_thresholds": self.num_thresholds,
            "curve": self.curve,
            "summation_method": self.summation_method,
            "multi_label": self.multi_label,
            "num_labels": self.num_labels,
            "label_weights": self.label_weights,
            "from_logits": self._from_logits,
        }
        if self._init_from_thresholds:
            config["thresholds"] = self.thresholds[1:-1]
        return config
