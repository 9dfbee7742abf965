"""Keras 3 losses: functions giving one loss per sample (per step for sequences), the `Loss`
classes wrapping them (reduced as `loss` says), and `get` to find one by name.

Probabilities are clipped to [epsilon, 1 - epsilon] before the log, as in Keras
(`sl.config.epsilon()`, 1e-7 unless set, read when the loss graph is built).

Sparse categorical cross-entropy takes class ids shaped like y_pred without its class axis (one-hot
targets are refused at graph construction, with a hint); it is computed by the TF1 op
SparseSoftmaxCrossEntropyWithLogits, so an id outside [0, classes) fails the run with
`InvalidArgumentError` (as TF's kernel), and `check_sparse_labels` catches it on the host first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras import config
from sluice._keras.layers.tracking import set_mask
from sluice._keras.losses.loss import Loss, constant_like, prepare_targets
from sluice.framework.ir import dtypes, errors
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops, unary_ops
from sluice.framework.ops.nn import loss_ops, nn_ops


# -- per-sample loss functions --------------------------------------------------------------------
def mean_squared_error(y_true: Any, y_pred: Any) -> Any:
    """mean((y_true - y_pred) ** 2, axis=-1)."""
    y_true, y_pred = prepare_targets(y_true, y_pred)
    return reduction_ops.reduce_mean(math_ops.squared_difference(y_true, y_pred), axis=-1)


@export("losses.mean_absolute_error")
def mean_absolute_error(y_true: Any, y_pred: Any) -> Any:
    """mean(|y_true - y_pred|, axis=-1)."""
    y_true, y_pred = prepare_targets(y_true, y_pred)
    return reduction_ops.reduce_mean(unary_ops.abs(y_true - y_pred), axis=-1)


@export("losses.huber")
def huber(y_true: Any, y_pred: Any, delta: float = 1.0) -> Any:
    """mean(0.5 e**2 if |e| <= delta else delta (|e| - 0.5 delta), axis=-1), e = y_true - y_pred."""
    y_true, y_pred = prepare_targets(y_true, y_pred)
    error = unary_ops.abs(y_true - y_pred)
    d = constant_like(error, delta)
    quadratic = math_ops.minimum(error, d)
    linear = error - quadratic
    value = constant_like(error, 0.5) * unary_ops.square(quadratic) + d * linear
    return reduction_ops.reduce_mean(value, axis=-1)


def _clip(x: Any) -> Any:
    """`x` clipped to [epsilon, 1 - epsilon] (probabilities before a log; `sl.config.epsilon()`
    when the graph is built)."""
    epsilon = config.epsilon()
    at_least = math_ops.maximum(x, constant_like(x, epsilon))
    return math_ops.minimum(at_least, constant_like(x, 1.0 - epsilon))


@export("losses.binary_crossentropy")
def binary_crossentropy(
    y_true: Any,
    y_pred: Any,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
) -> Any:
    """mean over `axis` of -(y log p + (1 - y) log(1 - p)); p = sigmoid(y_pred) with logits."""
    y_true, y_pred = prepare_targets(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * constant_like(y_true, 1.0 - label_smoothing) + constant_like(
            y_true, 0.5 * label_smoothing
        )
    one = constant_like(y_pred, 1.0)
    if from_logits:
        values = loss_ops.sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    else:
        p = _clip(y_pred)
        values = -(y_true * unary_ops.log(p) + (one - y_true) * unary_ops.log(one - p))
    return reduction_ops.reduce_mean(values, axis=axis)


def _log_probabilities(y_pred: Any, from_logits: bool, axis: int) -> Any:
    if from_logits:
        return nn_ops.log_softmax(y_pred, axis=axis)
    p = y_pred / reduction_ops.reduce_sum(y_pred, axis=axis, keepdims=True)
    return unary_ops.log(_clip(p))


@export("losses.categorical_crossentropy")
def categorical_crossentropy(
    y_true: Any,
    y_pred: Any,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
) -> Any:
    """-sum(y_true * log softmax/probabilities, axis) for one-hot (or soft) targets."""
    y_pred = core_ops.convert_to_tensor(y_pred)
    y_true = fill_ops.cast(core_ops.convert_to_tensor(y_true), y_pred.dtype)
    if label_smoothing:  # as Keras 3: the classes counted on y_true's last axis, whatever `axis`
        classes = fill_ops.cast(fill_ops.shape(y_true)[-1], y_pred.dtype)
        y_true = (
            y_true * constant_like(y_true, 1.0 - label_smoothing)
            + constant_like(y_true, label_smoothing) / classes
        )
    return -reduction_ops.reduce_sum(
        y_true * _log_probabilities(y_pred, from_logits, axis), axis=axis
    )


@export("losses.sparse_categorical_crossentropy")
def sparse_categorical_crossentropy(
    y_true: Any,
    y_pred: Any,
    from_logits: bool = False,
    ignore_class: int | None = None,
    axis: int = -1,
) -> Any:
    """-log p[y_true] for integer class ids (shaped like y_pred without its class axis, or with a
    last axis of 1). Ids equal to `ignore_class` give a loss of 0 and are masked out; any other id
    outside [0, classes) fails the run with InvalidArgumentError (TF's sparse softmax kernel).
    The result carries a Keras mask of the kept ids, so a `Loss` with a mean reduction averages
    over them only.

    Raises:
      ValueError: when y_true does not have y_pred's rank minus one (e.g. one-hot targets).

    >>> loss = sparse_categorical_crossentropy([1, 0], [[0.1, 0.9], [0.8, 0.2]])
    >>> np.allclose(sl.Session().run(loss), [-np.log(0.9), -np.log(0.8)])
    True
    """
    y_pred = core_ops.convert_to_tensor(y_pred)
    y_true = sparse_ids(y_true, y_pred, "sparse_categorical_crossentropy")
    rank = y_pred.shape.rank
    classes = y_pred.shape[axis]
    if classes is None:
        raise ValueError(
            f"sparse_categorical_crossentropy: the class axis of {y_pred.shape} must be known."
        )
    ids = fill_ops.cast(y_true, dtypes.int32)
    if ignore_class is not None:  # ignored ids become class 0 for the op, then weigh 0
        keep = math_ops.not_equal(ids, core_ops.convert_to_tensor(ignore_class, dtype=dtypes.int32))
        ids = ids * fill_ops.cast(keep, dtypes.int32)
    logits = y_pred if from_logits else _log_probabilities(y_pred, False, axis)
    if axis % rank != rank - 1:  # the op takes classes on the last axis
        perm = [d for d in range(rank) if d != axis % rank] + [axis % rank]
        logits = array_ops.transpose(logits, perm)
    values = loss_ops.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=logits)
    if not from_logits:  # Keras takes -log p[y] of the clipped p; the op renormalises: undo it
        clipped_total = reduction_ops.reduce_sum(unary_ops.exp(logits), axis=-1)
        values = values - unary_ops.log(clipped_total)
    if ignore_class is not None:  # masked as in Keras: the mean reductions skip ignored ids
        values = values * fill_ops.cast(keep, values.dtype)
        set_mask(values, keep)
    return values


def sparse_ids(y_true: Any, y_pred: Any, what: str) -> Any:
    """`y_true` as class ids of rank y_pred's minus one (a last axis of 1 squeezed), or a
    ValueError saying why not (one-hot targets given to a sparse loss or metric)."""
    y_true = core_ops.convert_to_tensor(y_true)
    true_rank, pred_rank = y_true.shape.rank, y_pred.shape.rank
    if true_rank is None or pred_rank is None:
        return y_true
    if true_rank == pred_rank and y_true.shape[-1] == 1:
        return array_ops.squeeze(y_true, [-1])
    if true_rank != pred_rank - 1:
        hint = (
            " They look one-hot encoded: use categorical_crossentropy (and categorical "
            "accuracy) for one-hot targets, or give class ids."
            if true_rank == pred_rank
            else ""
        )
        raise ValueError(
            f"{what} expects integer class ids shaped like y_pred without its class axis: "
            f"y_pred has shape {y_pred.shape} (rank {pred_rank}), so y_true must have rank "
            f"{pred_rank - 1} (or a last axis of 1), but the labels have shape {y_true.shape} "
            f"(rank {true_rank}).{hint}"
        )
    return y_true


def check_sparse_labels(loss: Any, y_true: np.ndarray, classes: int | None) -> None:
    """What fit and evaluate check on the host for each batch before feeding it: when `loss` is a
    sparse categorical cross-entropy, every class id in `y_true` (but its `ignore_class`) lies in
    [0, classes). Cheap: a min and a max.

    Raises:
      InvalidArgumentError: "Received a label value of 7 which is outside the valid range of
        [0, 5).  Label values: 1 7 ..." (TF's message).
    """
    if classes is None or getattr(loss, "fn", None) is not sparse_categorical_crossentropy:
        return
    ids = np.asarray(y_true)
    if ids.size == 0 or ids.dtype.kind not in "biuf":
        return
    if ids.dtype.kind == "f":
        ids = ids.astype(np.int64)  # what the loss's cast does
    ignore_class = loss._fn_kwargs.get("ignore_class")
    if ids.min() >= 0 and ids.max() < classes:
        return
    bad = (ids < 0) | (ids >= classes)
    if ignore_class is not None:
        bad &= ids != ignore_class
    if not bad.any():
        return
    shown = " ".join(str(v) for v in ids.ravel()[:20]) + (" ..." if ids.size > 20 else "")
    raise errors.InvalidArgumentError(
        None,
        None,
        f"Received a label value of {ids.ravel()[np.argmax(bad.ravel())]} which is outside the "
        f"valid range of [0, {classes}).  Label values: {shown}",
    )


class LossFunctionWrapper(Loss):
    """A `Loss` calling `fn(y_true, y_pred, **kwargs)`."""

    def __init__(
        self,
        fn: Callable,
        reduction: str = "sum_over_batch_size",
        name: str | None = None,
        dtype: Any = None,
        **kwargs: Any,
    ):
        super().__init__(name=name or fn.__name__, reduction=reduction, dtype=dtype)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true: Any, y_pred: Any) -> Any:
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self) -> dict:
        return {**super().get_config(), **self._fn_kwargs}


@export("losses.MeanSquaredError")
class MeanSquaredError(LossFunctionWrapper):
    def __init__(
        self,
        reduction: str = "sum_over_batch_size",
        name: str = "mean_squared_error",
        dtype: Any = None,
    ):
        super().__init__(mean_squared_error, reduction=reduction, name=name, dtype=dtype)


@export("losses.MeanAbsoluteError")
class MeanAbsoluteError(LossFunctionWrapper):
    def __init__(
        self,
        reduction: str = "sum_over_batch_size",
        name: str = "mean_absolute_error",
        dtype: Any = None,
    ):
        super().__init__(mean_absolute_error, reduction=reduction, name=name, dtype=dtype)


@export("losses.Huber")
class Huber(LossFunctionWrapper):
    def __init__(
        self,
        delta: float = 1.0,
        reduction: str = "sum_over_batch_size",
        name: str = "huber_loss",
        dtype: Any = None,
    ):
        super().__init__(huber, reduction=reduction, name=name, dtype=dtype, delta=delta)


@export("losses.BinaryCrossentropy")
class BinaryCrossentropy(LossFunctionWrapper):
    def __init__(
        self,
        from_logits: bool = False,
        label_smoothing: float = 0.0,
        axis: int = -1,
        reduction: str = "sum_over_batch_size",
        name: str = "binary_crossentropy",
        dtype: Any = None,
    ):
        super().__init__(
            binary_crossentropy, reduction=reduction, name=name, dtype=dtype,
            from_logits=from_logits, label_smoothing=label_smoothing, axis=axis,
        )  # fmt: skip
        self.from_logits = from_logits


@export("losses.CategoricalCrossentropy")
class CategoricalCrossentropy(LossFunctionWrapper):
    def __init__(
        self,
        from_logits: bool = False,
        label_smoothing: float = 0.0,
        axis: int = -1,
        reduction: str = "sum_over_batch_size",
        name: str = "categorical_crossentropy",
        dtype: Any = None,
    ):
        super().__init__(
            categorical_crossentropy, reduction=reduction, name=name, dtype=dtype,
            from_logits=from_logits, label_smoothing=label_smoothing, axis=axis,
        )  # fmt: skip
        self.from_logits = from_logits


@export("losses.SparseCategoricalCrossentropy")
class SparseCategoricalCrossentropy(LossFunctionWrapper):
    def __init__(
        self,
        from_logits: bool = False,
        ignore_class: int | None = None,
        reduction: str = "sum_over_batch_size",
        name: str = "sparse_categorical_crossentropy",
        dtype: Any = None,
    ):
        super().__init__(
            sparse_categorical_crossentropy, reduction=reduction, name=name, dtype=dtype,
            from_logits=from_logits, ignore_class=ignore_class,
        )  # fmt: skip
        self.from_logits = from_logits


_CLASSES = {
    c.__name__: c
    for c in (
        MeanSquaredError, MeanAbsoluteError, Huber, BinaryCrossentropy, CategoricalCrossentropy,
        SparseCategoricalCrossentropy,
    )
}  # fmt: skip


_FUNCTIONS = {
    "mean_squared_error": mean_squared_error, "mse": mean_squared_error,
    "mean_absolute_error": mean_absolute_error, "mae": mean_absolute_error,
    "huber": huber, "binary_crossentropy": binary_crossentropy,
    "categorical_crossentropy": categorical_crossentropy,
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
}  # fmt: skip


@export("losses.get")
def get(identifier: Any) -> Any:
    """A loss from a name ("mse", "sparse_categorical_crossentropy", "MeanSquaredError"), a
    config dict, a Loss, or a function `(y_true, y_pred) -> per-sample losses`."""
    if identifier is None:
        return None
    if isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, str):
        if identifier in _CLASSES:
            return _CLASSES[identifier]()
        if identifier in _FUNCTIONS:
            return _FUNCTIONS[identifier]
        raise ValueError(
            f"Unknown loss {identifier!r}; known: {sorted(_FUNCTIONS) + sorted(_CLASSES)}."
        )
    if isinstance(identifier, dict) and identifier.get("class_name") in _CLASSES:
        return _CLASSES[identifier["class_name"]].from_config(identifier.get("config", {}))
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret loss identifier: {identifier!r}.")


def as_loss(identifier: Any) -> Loss:
    """`get(identifier)` as a `Loss` object (functions are wrapped, keeping their name)."""
    loss = get(identifier)
    if loss is None or isinstance(loss, Loss):
        return loss
    name = identifier if isinstance(identifier, str) else getattr(loss, "__name__", "loss")
    return LossFunctionWrapper(loss, name=name)


@export("losses.serialize")
def serialize(loss: Any) -> Any:
    if isinstance(loss, Loss) and type(loss).__name__ in _CLASSES:
        return {"class_name": type(loss).__name__, "config": loss.get_config()}
    return getattr(loss, "__name__", loss)


@export("losses.deserialize")
def deserialize(config: Any) -> Any:
    return get(config)
