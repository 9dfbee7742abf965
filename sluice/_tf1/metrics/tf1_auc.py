"""TF1's streaming `tf.metrics.auc`: the area under the ROC or PR curve from confusion counts
kept at fixed thresholds.

Predictions in [0, 1] are compared with `num_thresholds` thresholds (-1e-7, 1/(n-1), ...,
(n-2)/(n-1), 1 + 1e-7, or the user's with the two ends added); four local variables
`auc/true_positives`, `false_negatives`, `true_negatives`, `false_positives` (one count per
threshold) accumulate the batches. The curve's points are

    recall = (tp + 1e-6) / (tp + fn + 1e-6)
    ROC: x = fp / (fp + tn + 1e-6), y = recall
    PR:  x = recall, y = (tp + 1e-6) / (tp + fp + 1e-6)

and the area is summed between consecutive thresholds: "trapezoidal" (mean height),
"minoring" (the lower), "majoring" (the higher). "careful_interpolation" is the trapezoid for
ROC; for PR it integrates the precision exactly with tp and p = tp + fp linear between two
thresholds (Davis & Goadrich 2006): slope * (dtp + intercept * log(p_a / p_b)) / (tp + fn).

>>> value, update = sl.metrics.auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
>>> with sl.Session() as sess:
...     sess.run(sl.local_variables_initializer())
...     print(round(float(sess.run(update)), 2))
0.75
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._tf1.metrics.tf1_metrics import (
    broadcast_weights,
    collect,
    metric_variable,
    remove_squeezable_dimensions,
)
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops
from sluice.framework.ops.control import assert_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import division_ops, math_ops, reduction_ops, unary_ops
from sluice.framework.variable_updates import assign_add

_EDGE = 1e-7  # the end thresholds sit just outside [0, 1]
_EPSILON = 1e-6  # keeps the rates defined where a count is zero
_SUMMATIONS = ("trapezoidal", "careful_interpolation", "minoring", "majoring")


def _thresholds(num_thresholds: int, thresholds: Any) -> np.ndarray:
    if thresholds is not None:
        inner = sorted(float(t) for t in thresholds)
    else:
        if num_thresholds < 2:
            raise ValueError(f"auc: num_thresholds must be > 1, got {num_thresholds}")
        inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return np.float32([0.0 - _EDGE, *inner, 1.0 + _EDGE])


def _confusion_at_thresholds(labels, predictions, thresholds: np.ndarray, weights) -> dict:
    """{name: (value, update)} of the four counts per threshold."""
    checks = [
        assert_ops.assert_greater_equal(predictions, 0.0, message="predictions must be in [0, 1]"),
        assert_ops.assert_less_equal(predictions, 1.0, message="predictions must be in [0, 1]"),
    ]
    with graph_lib.control_dependencies(checks):
        predictions = core_ops.identity(predictions)
    predictions, labels, weights = remove_squeezable_dimensions(predictions, labels, weights)
    # [N, T]: is each prediction above each threshold
    above = math_ops.greater(
        array_ops.reshape(predictions, [-1, 1]),
        core_ops.convert_to_tensor(thresholds, name="thresholds"),
    )
    positive = array_ops.reshape(fill_ops.cast(labels, dtypes.bool_), [-1, 1])
    if weights is not None:
        weights = broadcast_weights(weights, predictions, "auc")
        weights = array_ops.reshape(weights, [-1, 1])
    cases = {
        "true_positives": math_ops.logical_and(positive, above),
        "false_negatives": math_ops.logical_and(positive, math_ops.logical_not(above)),
        "true_negatives": math_ops.logical_and(
            math_ops.logical_not(positive), math_ops.logical_not(above)
        ),
        "false_positives": math_ops.logical_and(math_ops.logical_not(positive), above),
    }
    counts = {}
    for name, condition in cases.items():
        variable = metric_variable([len(thresholds)], dtypes.float32, name)
        hits = fill_ops.cast(condition, dtypes.float32)
        if weights is not None:
            hits = hits * weights
        counts[name] = (variable.value(), assign_add(variable, reduction_ops.reduce_sum(hits, 0)))
    return counts


def _interpolated_pr_area(tp, fn, fp, name: str) -> Tensor:
    """The PR area with the precision integrated exactly between thresholds a and b."""
    dtp = tp[:-1] - tp[1:]
    p = tp + fp
    slope = division_ops.div_no_nan(dtp, math_ops.maximum(p[:-1] - p[1:], 0.0))
    intercept = tp[1:] - slope * p[1:]
    both_present = math_ops.logical_and(p[:-1] > 0.0, p[1:] > 0.0)
    ratio = gather_ops.where(
        both_present,
        division_ops.div_no_nan(p[:-1], math_ops.maximum(p[1:], 0.0)),
        fill_ops.ones_like(p[1:]),
    )
    increments = division_ops.div_no_nan(
        slope * (dtp + intercept * unary_ops.log(ratio)), math_ops.maximum(tp[1:] + fn[1:], 0.0)
    )
    return reduction_ops.reduce_sum(increments, name=name)


def _area(tp, fn, tn, fp, curve: str, summation_method: str, name: str) -> Tensor:
    if curve == "PR" and summation_method == "careful_interpolation":
        return _interpolated_pr_area(tp, fn, fp, name)
    recall = math_ops.div(tp + _EPSILON, tp + fn + _EPSILON)
    if curve == "ROC":
        x, y = math_ops.div(fp, fp + tn + _EPSILON), recall
    else:
        x, y = recall, math_ops.div(tp + _EPSILON, tp + fp + _EPSILON)
    widths = x[:-1] - x[1:]
    if summation_method in ("trapezoidal", "careful_interpolation"):
        heights = (y[:-1] + y[1:]) / 2.0
    elif summation_method == "minoring":
        heights = math_ops.minimum(y[:-1], y[1:])
    else:
        heights = math_ops.maximum(y[:-1], y[1:])
    return reduction_ops.reduce_sum(widths * heights, name=name)


@export("metrics.auc")
def auc(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    num_thresholds: int = 200,
    metrics_collections: list | None = None,
    updates_collections: list | None = None,
    curve: str = "ROC",
    name: str | None = None,
    summation_method: str = "trapezoidal",
    thresholds: Any = None,
) -> tuple[Tensor, Tensor]:
    """The running area under the ROC (or PR) curve of probabilities `predictions` against
    boolean `labels`, as `(value, update_op)`.

    Raises:
      ValueError: for an unknown curve or summation method, or num_thresholds < 2.
      InvalidArgumentError: when run with a prediction outside [0, 1].
    """
    if curve not in ("ROC", "PR"):
        raise ValueError(f"auc: curve must be either ROC or PR, {curve} unknown")
    if summation_method not in _SUMMATIONS:
        raise ValueError(
            f"auc: invalid summation_method {summation_method!r}; expected one of {_SUMMATIONS}"
        )
    cuts = _thresholds(num_thresholds, thresholds)
    with graph_lib.name_scope(name, "auc", [labels, predictions, weights]):
        predictions = fill_ops.cast(core_ops.convert_to_tensor(predictions), dtypes.float32)
        labels = core_ops.convert_to_tensor(labels)
        counts = _confusion_at_thresholds(labels, predictions, cuts, weights)
        order = ("true_positives", "false_negatives", "true_negatives", "false_positives")
        value = _area(*(counts[k][0] for k in order), curve, summation_method, "value")
        update_op = _area(*(counts[k][1] for k in order), curve, summation_method, "update_op")
    collect(metrics_collections, value)
    collect(updates_collections, update_op)
    return value, update_op
