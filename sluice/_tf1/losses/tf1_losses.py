"""TF1's `tf.losses` (`tf.compat.v1.losses`): functions that weight, reduce and collect a loss.

Each loss computes per-element losses, then `compute_weighted_loss` multiplies them by `weights`
(a scalar, or a tensor of the losses' rank whose dims are 1 or equal) and reduces them as
`reduction` says; the result is added to the `GraphKeys.LOSSES` collection, where
`get_losses` and `get_total_loss` find it. The maths runs in float32 and the result is cast
back to the losses' dtype, as in TF1.

| Reduction                | result                                                      |
| ------------------------ | ----------------------------------------------------------- |
| NONE                     | the weighted losses, unreduced                              |
| SUM                      | sum(w * l)                                                  |
| MEAN                     | sum(w * l) / sum(w broadcast to l)                          |
| SUM_OVER_BATCH_SIZE      | sum(w * l) / size(l)                                        |
| SUM_BY_NONZERO_WEIGHTS   | sum(w * l) / count(w != 0, broadcast to l) (the default)    |

Every division is `div_no_nan`: a loss whose weights are all zero is 0, not NaN.

In sluice, `sl.losses.mean_squared_error(labels, predictions, ...)` is this module's TF1 function,
as `tf.losses` in TF 1.15; called with Keras's keywords (`y_true=`, `y_pred=`) it is Keras's
per-sample function, which is also `sl.losses.mse`, `sl.losses.get("mse")` and what
`model.compile(loss=sl.losses.mean_squared_error)` uses (sluice/_keras/losses/keras_or_tf1.py).

>>> loss = sl.losses.mean_squared_error([[1.0], [2.0]], [[1.5], [2.0]], weights=[[1.0], [0.0]])
>>> float(sl.Session().run(loss))   # (0.25 * 1 + 0 * 0) / one nonzero weight
0.25
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._tf1.cells.variable_store import get_regularization_losses
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import GraphKeys, Tensor
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import division_ops, math_ops, reduction_ops, unary_ops
from sluice.framework.ops.nn import loss_ops, nn_ops


@export("losses.Reduction")
class Reduction:
    """How `compute_weighted_loss` reduces the weighted losses (TF1's string keys)."""

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls) -> tuple:
        return (
            cls.NONE,
            cls.SUM,
            cls.MEAN,
            cls.SUM_OVER_BATCH_SIZE,
            cls.SUM_OVER_NONZERO_WEIGHTS,
            cls.SUM_BY_NONZERO_WEIGHTS,
        )

    @classmethod
    def validate(cls, key: str) -> None:
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key!r}; expected one of {cls.all()}.")


# -- collections ----------------------------------------------------------------------------------
@export("losses.add_loss")
def add_loss(loss: Tensor, loss_collection: str | None = GraphKeys.LOSSES) -> None:
    """Adds `loss` to `loss_collection` (nothing when it is None or empty)."""
    if loss_collection:
        graph_lib.add_to_collection(loss_collection, loss)


@export("losses.get_losses")
def get_losses(scope: str | None = None, loss_collection: str = GraphKeys.LOSSES) -> list:
    """The losses in `loss_collection`, those whose name starts with `scope` when given."""
    return graph_lib.get_collection(loss_collection, scope)


@export("losses.get_total_loss")
def get_total_loss(
    add_regularization_losses: bool = True, name: str = "total_loss", scope: str | None = None
) -> Tensor:
    """The sum of `get_losses(scope)` and, unless told otherwise, of the regularization losses.

    Raises:
      ValueError: when there is no loss at all.
    """
    losses = get_losses(scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope)
    if not losses:
        raise ValueError(
            "get_total_loss: no losses in the LOSSES or REGULARIZATION_LOSSES collections to sum."
        )
    return math_ops.add_n(losses, name=name)


# -- weighting and reduction ---------------------------------------------------------------------
def _check_broadcastable(weights: Tensor, losses: Tensor) -> None:
    """TF1's rule: weights are a scalar, or have the losses' rank with dims 1 or equal."""
    w, v = weights.shape, losses.shape
    if w.rank == 0 or w.rank is None or v.rank is None:
        return
    fits = w.rank == v.rank and all(
        a is None or b is None or a in (1, b) for a, b in zip(w.as_list(), v.as_list())
    )
    if not fits:
        raise ValueError(
            f"weights can not be broadcast to values: weights of shape {w} and losses of shape "
            f"{v}; weights must be a scalar or have the losses' rank with each dimension 1 or "
            "equal to the losses'."
        )


def _num_present(losses: Tensor, weights: Any, per_batch: bool = False) -> Tensor:
    """The number of losses whose broadcast weight is nonzero (all of them for a nonzero Python
    float weight), per batch row when `per_batch`."""
    if isinstance(weights, float) and weights != 0.0 and not per_batch:
        return _num_elements(losses)
    with graph_lib.name_scope(None, "num_present", [losses, weights]):
        weights = fill_ops.cast(weights, dtypes.float32)
        present = gather_ops.where(
            math_ops.equal(weights, 0.0), fill_ops.zeros_like(weights), fill_ops.ones_like(weights)
        )
        present = present * fill_ops.ones_like(losses, dtype=dtypes.float32)
        if per_batch:
            axes = list(range(1, losses.shape.rank))
            return reduction_ops.reduce_sum(present, axis=axes, keepdims=True)
        return reduction_ops.reduce_sum(present)


def _num_elements(losses: Tensor) -> Tensor:
    return fill_ops.cast(fill_ops.size(losses), losses.dtype)


@export("losses.compute_weighted_loss")
def compute_weighted_loss(
    losses: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """`losses * weights` reduced as `reduction` says (see the module's table), added to
    `loss_collection`.

    Args:
      losses: a float Tensor of any shape.
      weights: a scalar, or a Tensor of the losses' rank with each dimension 1 or equal.
      scope: the name scope of the ops.
      loss_collection: the collection the result is added to (None: none).
      reduction: one of `Reduction.all()`.

    Returns:
      A scalar of the losses' dtype, or the weighted losses for `Reduction.NONE`.

    Raises:
      ValueError: for an unknown reduction, or weights that do not broadcast to the losses.
    """
    Reduction.validate(reduction)
    with graph_lib.name_scope(scope, "weighted_loss", [losses, weights]):
        losses = core_ops.convert_to_tensor(losses)
        input_dtype = losses.dtype
        losses = fill_ops.cast(losses, dtypes.float32)
        weights_t = fill_ops.cast(core_ops.convert_to_tensor(weights), dtypes.float32)
        _check_broadcastable(weights_t, losses)
        weighted = math_ops.multiply(losses, weights_t)
        if reduction == Reduction.NONE:
            loss = weighted
        else:
            loss = reduction_ops.reduce_sum(weighted)
            if reduction == Reduction.MEAN:
                total = reduction_ops.reduce_sum(fill_ops.ones_like(losses) * weights_t)
                loss = division_ops.div_no_nan(loss, total, name="value")
            elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                present = _num_present(losses, weights)
                loss = division_ops.div_no_nan(loss, present, name="value")
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = division_ops.div_no_nan(loss, _num_elements(losses), name="value")
        loss = fill_ops.cast(loss, input_dtype)
        add_loss(loss, loss_collection)
        return loss


# -- the losses -----------------------------------------------------------------------------------
def _float_pair(labels: Any, predictions: Any, what: str) -> tuple[Tensor, Tensor]:
    """labels and predictions as float32 Tensors of compatible shapes."""
    if labels is None:
        raise ValueError(f"{what}: labels must not be None.")
    if predictions is None:
        raise ValueError(f"{what}: predictions must not be None.")
    predictions = fill_ops.cast(core_ops.convert_to_tensor(predictions), dtypes.float32)
    labels = fill_ops.cast(core_ops.convert_to_tensor(labels), dtypes.float32)
    if not predictions.shape.is_compatible_with(labels.shape):
        raise ValueError(
            f"{what}: predictions of shape {predictions.shape} and labels of shape "
            f"{labels.shape} are not compatible."
        )
    return labels, predictions


@export("losses.absolute_difference")
def absolute_difference(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """Weighted |predictions - labels|."""
    with graph_lib.name_scope(scope, "absolute_difference", [predictions, labels, weights]) as s:
        labels, predictions = _float_pair(labels, predictions, "absolute_difference")
        losses = unary_ops.abs(predictions - labels)
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def mean_squared_error(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """Weighted (predictions - labels) ** 2: TF1's `tf.losses.mean_squared_error`, which
    `sl.losses.mean_squared_error` calls unless given Keras's keywords y_true/y_pred
    (sluice/_keras/losses/keras_or_tf1.py)."""
    with graph_lib.name_scope(scope, "mean_squared_error", [predictions, labels, weights]) as s:
        labels, predictions = _float_pair(labels, predictions, "mean_squared_error")
        losses = math_ops.squared_difference(predictions, labels)
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


@export("losses.huber_loss")
def huber_loss(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    delta: float = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """Weighted 0.5 e**2 where |e| <= delta, delta (|e| - 0.5 delta) beyond, e = pred - label."""
    with graph_lib.name_scope(scope, "huber_loss", [predictions, labels, weights]) as s:
        labels, predictions = _float_pair(labels, predictions, "huber_loss")
        error = unary_ops.abs(predictions - labels)
        quadratic = math_ops.minimum(error, delta)
        linear = error - quadratic  # the part of |e| beyond delta
        losses = 0.5 * quadratic * quadratic + delta * linear
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


@export("losses.log_loss")
def log_loss(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    epsilon: float = 1e-7,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """Weighted -y log(p + eps) - (1 - y) log(1 - p + eps), for probabilities p."""
    with graph_lib.name_scope(scope, "log_loss", [predictions, labels, weights]) as s:
        labels, predictions = _float_pair(labels, predictions, "log_loss")
        losses = -labels * unary_ops.log(predictions + epsilon) - (1.0 - labels) * unary_ops.log(
            1.0 - predictions + epsilon
        )
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


@export("losses.hinge_loss")
def hinge_loss(
    labels: Any,
    logits: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """Weighted max(0, 1 - (2 y - 1) logits) for labels y in {0, 1}."""
    with graph_lib.name_scope(scope, "hinge_loss", [logits, labels, weights]) as s:
        labels, logits = _float_pair(labels, logits, "hinge_loss")
        signs = 2.0 * labels - 1.0
        losses = nn_ops.relu(1.0 - signs * logits)
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


@export("losses.cosine_distance")
def cosine_distance(
    labels: Any,
    predictions: Any,
    axis: int | None = None,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
    dim: int | None = None,
) -> Tensor:
    """Weighted 1 - sum(labels * predictions, axis) for unit-normalized inputs; the summed
    axis is kept (size 1), so weights have the inputs' rank.

    Raises:
      ValueError: without `axis` (or its old name `dim`), or with both.
    """
    if dim is not None:
        if axis is not None:
            raise ValueError("cosine_distance: give `axis` or its deprecated name `dim`, not both.")
        axis = dim
    if axis is None:
        raise ValueError("cosine_distance: you must specify 'axis'.")
    with graph_lib.name_scope(scope, "cosine_distance_loss", [predictions, labels, weights]) as s:
        labels, predictions = _float_pair(labels, predictions, "cosine_distance")
        products = reduction_ops.reduce_sum(predictions * labels, axis=[axis], keepdims=True)
        return compute_weighted_loss(1.0 - products, weights, s, loss_collection, reduction)


@export("losses.mean_pairwise_squared_error")
def mean_pairwise_squared_error(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
) -> Tensor:
    """Weighted mean over pairs (i, j) of each example of ((p_i - p_j) - (y_i - y_j)) ** 2,
    summed over the batch; `weights` is a scalar or one weight per example ([batch]).

    With d = p - y over the n present elements of a row: 2 sum(d**2) / (n - 1)
    - 2 (sum d)**2 / (n (n - 1)), which is the mean over ordered pairs i != j.
    """
    with graph_lib.name_scope(scope, "mean_pairwise_squared_error", [predictions, labels, weights]):
        labels, predictions = _float_pair(labels, predictions, "mean_pairwise_squared_error")
        weights = fill_ops.cast(core_ops.convert_to_tensor(weights), dtypes.float32)
        diffs = predictions - labels
        rank = diffs.shape.rank
        if rank is None or rank < 2:
            raise ValueError(
                f"mean_pairwise_squared_error: needs predictions of static rank >= 2 "
                f"([batch, d1, ...]), got shape {diffs.shape}"
            )
        axes = list(range(1, rank))
        if weights.shape.rank == 1:  # one weight per example
            weights = array_ops.reshape(weights, [-1] + [1] * (rank - 1))
        _check_broadcastable(weights, diffs)
        n = _num_present(diffs, weights, per_batch=True)
        sum_squares = reduction_ops.reduce_sum(unary_ops.square(diffs), axis=axes, keepdims=True)
        term1 = 2.0 * division_ops.div_no_nan(sum_squares, math_ops.maximum(n - 1.0, 0.0))
        sum_diff = reduction_ops.reduce_sum(diffs, axis=axes, keepdims=True)
        term2 = 2.0 * division_ops.div_no_nan(
            unary_ops.square(sum_diff), math_ops.maximum(n * (n - 1.0), 0.0)
        )
        loss = reduction_ops.reduce_sum((term1 - term2) * weights)
        loss = gather_ops.where(
            reduction_ops.reduce_sum(n) > 0.0, loss, fill_ops.zeros_like(loss), name="value"
        )
        add_loss(loss, loss_collection)
        return loss


@export("losses.sigmoid_cross_entropy")
def sigmoid_cross_entropy(
    multi_class_labels: Any,
    logits: Any,
    weights: Any = 1.0,
    label_smoothing: float = 0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """Weighted sigmoid cross-entropy of logits against labels in [0, 1]; with
    label_smoothing s, labels become y (1 - s) + s / 2."""
    if multi_class_labels is None or logits is None:
        raise ValueError("sigmoid_cross_entropy: multi_class_labels and logits must not be None.")
    with graph_lib.name_scope(
        scope, "sigmoid_cross_entropy_loss", [logits, multi_class_labels, weights]
    ) as s:
        logits = core_ops.convert_to_tensor(logits)
        labels = fill_ops.cast(multi_class_labels, logits.dtype)
        if not logits.shape.is_compatible_with(labels.shape):
            raise ValueError(
                f"sigmoid_cross_entropy: logits of shape {logits.shape} and labels "
                f"of shape {labels.shape} are not compatible."
            )
        if label_smoothing > 0:
            labels = labels * (1 - label_smoothing) + 0.5 * label_smoothing
        losses = loss_ops.sigmoid_cross_entropy_with_logits(
            labels=labels, logits=logits, name="xentropy"
        )
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


@export("losses.softmax_cross_entropy")
def softmax_cross_entropy(
    onehot_labels: Any,
    logits: Any,
    weights: Any = 1.0,
    label_smoothing: float = 0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """Weighted softmax cross-entropy of `[batch, classes]` logits against one-hot labels; with
    label_smoothing s over k classes, labels become y (1 - s) + s / k. No gradient flows into
    the labels. `weights` is a scalar or one weight per example."""
    if onehot_labels is None or logits is None:
        raise ValueError("softmax_cross_entropy: onehot_labels and logits must not be None.")
    with graph_lib.name_scope(
        scope, "softmax_cross_entropy_loss", [logits, onehot_labels, weights]
    ) as s:
        logits = core_ops.convert_to_tensor(logits)
        labels = fill_ops.cast(onehot_labels, logits.dtype)
        if not logits.shape.is_compatible_with(labels.shape):
            raise ValueError(
                f"softmax_cross_entropy: logits of shape {logits.shape} and "
                f"onehot_labels of shape {labels.shape} are not compatible."
            )
        if label_smoothing > 0:
            classes = fill_ops.cast(array_ops.shape(labels)[-1], logits.dtype)
            labels = labels * (1 - label_smoothing) + label_smoothing / classes
        losses = loss_ops.softmax_cross_entropy_with_logits_v2(
            labels=core_ops.stop_gradient(labels), logits=logits, name="xentropy"
        )
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def _squeeze_trailing_unit(t: Tensor) -> Tensor:
    return array_ops.squeeze(t, [-1])


@export("losses.sparse_softmax_cross_entropy")
def sparse_softmax_cross_entropy(
    labels: Any,
    logits: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """Weighted softmax cross-entropy of logits `[d0, ..., classes]` against class ids
    `[d0, ...]` (or `[d0, ..., 1]`, squeezed); weights of one more rank than the labels lose
    their last (unit) dimension, as in TF1."""
    if labels is None or logits is None:
        raise ValueError("sparse_softmax_cross_entropy: labels and logits must not be None.")
    with graph_lib.name_scope(
        scope, "sparse_softmax_cross_entropy_loss", [logits, labels, weights]
    ) as s:
        logits = core_ops.convert_to_tensor(logits)
        labels = core_ops.convert_to_tensor(labels)
        if (
            labels.shape.rank is not None
            and logits.shape.rank is not None
            and labels.shape.rank == logits.shape.rank
            and labels.shape[-1] in (1, None)
        ):
            labels = _squeeze_trailing_unit(labels)
        weights_t = core_ops.convert_to_tensor(weights)
        if (
            weights_t.shape.rank not in (None, 0)
            and labels.shape.rank is not None
            and weights_t.shape.rank - labels.shape.rank == 1
        ):
            weights = _squeeze_trailing_unit(weights_t)
        losses = loss_ops.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits, name="xentropy"
        )
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)
