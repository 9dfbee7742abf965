"""TF1's `tf.metrics` (`tf.compat.v1.metrics`): streaming metrics kept in local variables.

Each function returns `(value, update_op)`. Running `update_op` folds one batch into the
metric's variables and gives the metric so far; `value` reads it without updating. The
variables (`<name>/total`, `<name>/count`, ...) are local, not trainable, in the
`LOCAL_VARIABLES` and `METRIC_VARIABLES` collections: `sl.local_variables_initializer()` resets
them, and a Saver of the global variables leaves them out.

    value = total / count   (0 while count is 0)

In sluice, `sl.metrics.accuracy` is this module's TF1 function, as `tf.metrics` in TF 1.15; the
Keras metrics stay classes (`sl.metrics.Accuracy`, ...) and names (`metrics=["accuracy"]`).

>>> acc, update = sl.metrics.accuracy(labels=[1, 0, 1, 1], predictions=[1, 1, 1, 0])
>>> with sl.Session() as sess:
...     sess.run(sl.local_variables_initializer())
...     _ = sess.run(update)
...     print(float(sess.run(acc)))
0.5
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import GraphKeys, Tensor
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import division_ops, math_ops, reduction_ops, unary_ops
from sluice.framework.variable_updates import assign_add
from sluice.framework.variables import Variable


def metric_variable(shape: list, dtype: Any, name: str) -> Variable:
    """A zero-initialized local variable of a metric, in LOCAL_VARIABLES and METRIC_VARIABLES."""
    return Variable(
        lambda: fill_ops.zeros(shape, dtype), trainable=False, name=name,
        collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES],
    )  # fmt: skip


def collect(collections: list | None, value: Tensor) -> None:
    if collections:
        graph_lib.get_default_graph().add_to_collections(collections, value)


def _squeeze_last(t: Tensor) -> Tensor:
    return array_ops.squeeze(t, [-1])


def remove_squeezable_dimensions(predictions: Tensor, labels: Tensor | None, weights: Any) -> tuple:
    """TF1's rule: a trailing unit dimension is squeezed from the one of predictions and labels
    that has one more rank than the other, and from weights of one more rank than predictions;
    weights of one rank less than predictions (one per example of `[batch, d]` predictions) gain
    a trailing unit dimension, so they broadcast over the last axis."""
    if labels is not None:
        p, q = predictions.shape.rank, labels.shape.rank
        if p is not None and q is not None:
            if p - q == 1 and predictions.shape[-1] in (1, None):
                predictions = _squeeze_last(predictions)
            elif q - p == 1 and labels.shape[-1] in (1, None):
                labels = _squeeze_last(labels)
    if weights is not None:
        weights = core_ops.convert_to_tensor(weights)
        p, w = predictions.shape.rank, weights.shape.rank
        if p is not None and w not in (None, 0):
            if w - p == 1 and weights.shape[-1] in (1, None):
                weights = _squeeze_last(weights)
            elif p - w == 1:
                weights = array_ops.expand_dims(weights, -1)
    return predictions, labels, weights


def broadcast_weights(weights: Tensor, values: Tensor, what: str) -> Tensor:
    """`weights` (float) broadcast to `values`' shape: a scalar, or of values' rank with each
    dimension 1 or equal (TF1's `broadcast_weights`)."""
    weights = fill_ops.cast(weights, dtypes.float32)
    w, v = weights.shape, values.shape
    if w.rank not in (None, 0) and v.rank is not None:
        fits = w.rank == v.rank and all(
            a is None or b is None or a in (1, b) for a, b in zip(w.as_list(), v.as_list())
        )
        if not fits:
            raise ValueError(
                f"{what}: weights of shape {w} can not be broadcast to values of shape {v}."
            )
    return weights * fill_ops.ones_like(values, dtype=dtypes.float32)


def _ratio(numerator: Tensor, denominator: Tensor, name: str) -> Tensor:
    return division_ops.div_no_nan(numerator, math_ops.maximum(denominator, 0.0), name=name)


@export("metrics.mean")
def mean(
    values: Any,
    weights: Any = None,
    metrics_collections: list | None = None,
    updates_collections: list | None = None,
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """The running (weighted) mean of `values`.

    Args:
      values: a Tensor of any shape.
      weights: None, a scalar, or a Tensor broadcastable to `values` (same rank, dims 1 or
        equal); each value counts `weight` times.
      metrics_collections: collections the value tensor is added to.
      updates_collections: collections the update op is added to.
      name: the variable scope (default "mean").

    Returns:
      `(mean, update_op)`: the mean so far; the op that adds this batch and gives the new mean.
    """
    with graph_lib.name_scope(name, "mean", [values, weights]):
        values = fill_ops.cast(core_ops.convert_to_tensor(values), dtypes.float32)
        total = metric_variable([], dtypes.float32, "total")
        count = metric_variable([], dtypes.float32, "count")
        if weights is None:
            num_values = fill_ops.cast(fill_ops.size(values), dtypes.float32)
        else:
            values, _, weights = remove_squeezable_dimensions(values, None, weights)
            weights = broadcast_weights(weights, values, "mean")
            values = values * weights
            num_values = reduction_ops.reduce_sum(weights)
        update_total = assign_add(total, reduction_ops.reduce_sum(values))
        with graph_lib.control_dependencies([values]):
            update_count = assign_add(count, num_values)
        value = _ratio(total.value(), count.value(), "value")
        update_op = _ratio(update_total, update_count, "update_op")
    collect(metrics_collections, value)
    collect(updates_collections, update_op)
    return value, update_op


def _prepared(labels: Any, predictions: Any, weights: Any, what: str) -> tuple:
    predictions = core_ops.convert_to_tensor(predictions)
    labels = core_ops.convert_to_tensor(labels)
    predictions, labels, weights = remove_squeezable_dimensions(predictions, labels, weights)
    if not predictions.shape.is_compatible_with(labels.shape):
        raise ValueError(
            f"{what}: predictions of shape {predictions.shape} and labels of shape "
            f"{labels.shape} are not compatible."
        )
    return labels, predictions, weights


@export("metrics.accuracy")
def accuracy(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: list | None = None,
    updates_collections: list | None = None,
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """The running (weighted) fraction of `predictions` equal to `labels` (TF1
    `tf.metrics.accuracy`); variables `accuracy/total` and `accuracy/count`."""
    labels, predictions, weights = _prepared(labels, predictions, weights, "accuracy")
    if labels.dtype != predictions.dtype:
        predictions = fill_ops.cast(predictions, labels.dtype)
    is_correct = fill_ops.cast(math_ops.equal(predictions, labels), dtypes.float32)
    return mean(is_correct, weights, metrics_collections, updates_collections, name or "accuracy")


def mean_squared_error(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: list | None = None,
    updates_collections: list | None = None,
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """The running (weighted) mean of (labels - predictions) ** 2: TF1's
    `tf.metrics.mean_squared_error`, which `sl.metrics.mean_squared_error` calls unless given
    Keras's keywords y_true/y_pred (sluice/_keras/losses/keras_or_tf1.py)."""
    labels, predictions, weights = _prepared(labels, predictions, weights, "mean_squared_error")
    squared = math_ops.squared_difference(
        fill_ops.cast(labels, dtypes.float32), fill_ops.cast(predictions, dtypes.float32)
    )
    return mean(
        squared, weights, metrics_collections, updates_collections, name or "mean_squared_error"
    )


def mean_absolute_error(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: list | None = None,
    updates_collections: list | None = None,
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """The running (weighted) mean of |labels - predictions|: TF1's
    `tf.metrics.mean_absolute_error`, which `sl.metrics.mean_absolute_error` calls unless given
    Keras's keywords y_true/y_pred (sluice/_keras/losses/keras_or_tf1.py)."""
    labels, predictions, weights = _prepared(labels, predictions, weights, "mean_absolute_error")
    errors = unary_ops.abs(
        fill_ops.cast(labels, dtypes.float32) - fill_ops.cast(predictions, dtypes.float32)
    )
    return mean(
        errors, weights, metrics_collections, updates_collections, name or "mean_absolute_error"
    )


@export("metrics.root_mean_squared_error")
def root_mean_squared_error(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: list | None = None,
    updates_collections: list | None = None,
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """sqrt of the running `mean_squared_error` (variables `root_mean_squared_error/...`)."""
    mse, update_mse = mean_squared_error(
        labels, predictions, weights, None, None, name or "root_mean_squared_error"
    )
    value, update_op = unary_ops.sqrt(mse), unary_ops.sqrt(update_mse)
    collect(metrics_collections, value)
    collect(updates_collections, update_op)
    return value, update_op


# -- counts of a condition, precision, recall -----------------------------------------------------
def _count_condition(
    condition: Tensor, weights: Any, name: str, what: str
) -> tuple[Tensor, Tensor]:
    """A running (weighted) count of the True entries of `condition`, variable `<name>/count`."""
    with graph_lib.name_scope(None, name, [condition, weights]):
        count = metric_variable([], dtypes.float32, "count")
        values = fill_ops.cast(condition, dtypes.float32)
        if weights is not None:
            values = values * broadcast_weights(weights, values, what)
        update_op = assign_add(count, reduction_ops.reduce_sum(values))
        return count.value(), update_op


def _as_bool(t: Tensor) -> Tensor:
    return t if t.dtype == dtypes.bool_ else fill_ops.cast(t, dtypes.bool_)


def _confusion_counts(labels, predictions, weights, what: str, second: str) -> tuple:
    """(tp value, tp update, other value, other update): `second` is "false_positives" or
    "false_negatives"."""
    labels, predictions, weights = _prepared(labels, predictions, weights, what)
    labels, predictions = _as_bool(labels), _as_bool(predictions)
    tp = _count_condition(
        math_ops.logical_and(labels, predictions), weights, "true_positives", what
    )
    if second == "false_positives":
        other = math_ops.logical_and(math_ops.logical_not(labels), predictions)
    else:
        other = math_ops.logical_and(labels, math_ops.logical_not(predictions))
    return (*tp, *_count_condition(other, weights, second, what))


def _fraction_of(tp: Tensor, other: Tensor, name: str) -> Tensor:
    """tp / (tp + other), 0 where the sum is 0."""
    total = tp + other
    return gather_ops.where(
        total > 0.0, division_ops.div_no_nan(tp, total), fill_ops.zeros_like(tp), name=name
    )


def _precision_or_recall(
    labels, predictions, weights, metrics_collections, updates_collections, name, default, second
):
    with graph_lib.name_scope(name, default, [labels, predictions, weights]):
        tp, tp_update, other, other_update = _confusion_counts(
            labels, predictions, weights, default, second
        )
        value = _fraction_of(tp, other, "value")
        update_op = _fraction_of(tp_update, other_update, "update_op")
    collect(metrics_collections, value)
    collect(updates_collections, update_op)
    return value, update_op


@export("metrics.precision")
def precision(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: list | None = None,
    updates_collections: list | None = None,
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """The running precision tp / (tp + fp) of boolean (or 0/1) predictions; variables
    `precision/true_positives/count` and `precision/false_positives/count`."""
    return _precision_or_recall(
        labels,
        predictions,
        weights,
        metrics_collections,
        updates_collections,
        name,
        "precision",
        "false_positives",
    )


@export("metrics.recall")
def recall(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: list | None = None,
    updates_collections: list | None = None,
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """The running recall tp / (tp + fn) of boolean (or 0/1) predictions; variables
    `recall/true_positives/count` and `recall/false_negatives/count`."""
    return _precision_or_recall(
        labels,
        predictions,
        weights,
        metrics_collections,
        updates_collections,
        name,
        "recall",
        "false_negatives",
    )
