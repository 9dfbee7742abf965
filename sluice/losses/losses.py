"""Keras 3 losses: functions giving one loss per sample (per step for sequences), and `Loss`
classes reducing them to a scalar with sample weights and masks.

    loss = SparseCategoricalCrossentropy(from_logits=True)
    value = loss(y_true, y_pred, sample_weight)     # a scalar Tensor

Reduction "sum_over_batch_size" (the default) is sum(losses * weights) / number of losses; a
Keras mask on `y_pred` (e.g. from Embedding(mask_zero=True) through return_sequences) weights
the masked steps 0 and the others total/valid, so the result is the mean over valid steps.
Probabilities are clipped to [1e-7, 1 - 1e-7] before the log, as in Keras.

Sparse categorical cross-entropy takes class ids shaped like y_pred without its class axis (one-hot
targets are refused at graph construction, with a hint); it is computed by the TF1 op
SparseSoftmaxCrossEntropyWithLogits, so an id outside [0, classes) fails the run with
`InvalidArgumentError` (as TF's kernel), and `check_sparse_labels` catches it on the host first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sluice.framework.ir import dtypes, errors
from sluice.framework.ops import (
    array_ops,
    core_ops,
    fill_ops,
    loss_ops,
    math_ops,
    nn_ops,
    reduction_ops,
    unary_ops,
)
from sluice.layers.tracking import get_mask

EPSILON = 1e-7

def _const(like: Any, value: float) -> Any:
    return core_ops.convert_to_tensor(value, dtype=like.dtype)


def squeeze_or_expand_to_same_rank(x1: Any, x2: Any, expand_rank_1: bool = True) -> tuple:
    """Keras's rule: when the ranks differ by one and the longer one ends in 1, squeeze it (or
    expand a rank-1 partner)."""
    r1, r2 = x1.shape.rank, x2.shape.rank
    if r1 is None or r2 is None or r1 == r2:
        return x1, x2
    if r1 == r2 + 1 and x1.shape[-1] == 1:
        if r2 == 1 and expand_rank_1:
            x2 = array_ops.expand_dims(x2, -1)
        else:
            x1 = array_ops.squeeze(x1, [-1])
    if r2 == r1 + 1 and x2.shape[-1] == 1:
        if r1 == 1 and expand_rank_1:
            x1 = array_ops.expand_dims(x1, -1)
        else:
            x2 = array_ops.squeeze(x2, [-1])
    return x1, x2


def _prepare(y_true: Any, y_pred: Any) -> tuple:
    y_pred = core_ops.convert_to_tensor(y_pred)
    y_true = fill_ops.cast(core_ops.convert_to_tensor(y_true), y_pred.dtype)
    return squeeze_or_expand_to_same_rank(y_true, y_pred)


# -- per-sample loss functions --------------------------------------------------------------------
def mean_squared_error(y_true: Any, y_pred: Any) -> Any:
    """mean((y_true - y_pred) ** 2, axis=-1)."""
    y_true, y_pred = _prepare(y_true, y_pred)
    return reduction_ops.reduce_mean(math_ops.squared_difference(y_true, y_pred), axis=-1)


def mean_absolute_error(y_true: Any, y_pred: Any) -> Any:
    """mean(|y_true - y_pred|, axis=-1)."""
    y_true, y_pred = _prepare(y_true, y_pred)
    return reduction_ops.reduce_mean(unary_ops.abs(y_true - y_pred), axis=-1)


def huber(y_true: Any, y_pred: Any, delta: float = 1.0) -> Any:
    """mean(0.5 e**2 if |e| <= delta else delta (|e| - 0.5 delta), axis=-1), e = y_true - y_pred."""
    y_true, y_pred = _prepare(y_true, y_pred)
    error = unary_ops.abs(y_true - y_pred)
    d = _const(error, delta)
    quadratic = math_ops.minimum(error, d)
    linear = error - quadratic
    value = _const(error, 0.5) * unary_ops.square(quadratic) + d * linear
    return reduction_ops.reduce_mean(value, axis=-1)


def _clip(x: Any) -> Any:
    return math_ops.minimum(math_ops.maximum(x, _const(x, EPSILON)), _const(x, 1.0 - EPSILON))


def binary_crossentropy(
    y_true: Any,
    y_pred: Any,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
) -> Any:
    """mean over `axis` of -(y log p + (1 - y) log(1 - p)); p = sigmoid(y_pred) with logits."""
    y_true, y_pred = _prepare(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * _const(y_true, 1.0 - label_smoothing) + _const(
            y_true, 0.5 * label_smoothing
        )
    one = _const(y_pred, 1.0)
    if from_logits:
        values = nn_ops.sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    else:
        p = _clip(y_pred)
        values = -(y_true * unary_ops.log(p) + (one - y_true) * unary_ops.log(one - p))
    return reduction_ops.reduce_mean(values, axis=axis)


def _log_probabilities(y_pred: Any, from_logits: bool, axis: int) -> Any:
    if from_logits:
        return nn_ops.log_softmax(y_pred, axis=axis)
    p = y_pred / reduction_ops.reduce_sum(y_pred, axis=axis, keepdims=True)
    return unary_ops.log(_clip(p))


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
    if label_smoothing:
        classes = _const(y_pred, float(y_pred.shape[axis]))
        y_true = (
            y_true * _const(y_true, 1.0 - label_smoothing)
            + _const(y_true, label_smoothing) / classes
        )
    return -reduction_ops.reduce_sum(
        y_true * _log_probabilities(y_pred, from_logits, axis), axis=axis
    )


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

    Raises:
      ValueError: when y_true does not have y_pred's rank minus one (e.g. one-hot targets).

    >>> sparse_categorical_crossentropy([1, 0], [[0.1, 0.9], [0.8, 0.2]])  # [-log 0.9, -log 0.8]
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
    if ignore_class is not None:
        values = values * fill_ops.cast(keep, values.dtype)
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
        hint = (" They look one-hot encoded: use categorical_crossentropy (and categorical "
                "accuracy) for one-hot targets, or give class ids." if true_rank == pred_rank
                else "")
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
        None, None,
        f"Received a label value of {ids.ravel()[np.argmax(bad.ravel())]} which is outside the "
        f"valid range of [0, {classes}).  Label values: {shown}",
    )


# -- reduction ------------------------------------------------------------------------------------
def _apply_mask(sample_weight: Any, mask: Any, dtype: Any, reduction: str) -> Any:
    if mask is None:
        return sample_weight
    mask = fill_ops.cast(mask, dtype)
    if reduction in ("mean", "sum_over_batch_size"):
        total = fill_ops.cast(fill_ops.size(mask), dtype)
        valid = reduction_ops.reduce_sum(mask)
        mask = mask * (total / (valid + _const(valid, EPSILON)))
    if sample_weight is None:
        return mask
    sample_weight = fill_ops.cast(sample_weight, dtype)
    mask, sample_weight = squeeze_or_expand_to_same_rank(mask, sample_weight)
    return _broadcast_weight(sample_weight, mask) * mask


def _broadcast_weight(weight: Any, values: Any) -> Any:
    """`weight` with trailing axes of size 1 added until it has the rank of `values`."""
    while (
        weight.shape.rank is not None
        and values.shape.rank is not None
        and weight.shape.rank < values.shape.rank
    ):
        weight = array_ops.expand_dims(weight, -1)
    return weight


def reduce_weighted_values(
    values: Any, sample_weight: Any = None, mask: Any = None, reduction: str = "sum_over_batch_size"
) -> Any:
    """The scalar loss: weights (and mask) applied, then "sum" or "sum_over_batch_size"."""
    sample_weight = _apply_mask(sample_weight, mask, values.dtype, reduction)
    if sample_weight is not None:
        sample_weight = fill_ops.cast(sample_weight, values.dtype)
        values, sample_weight = squeeze_or_expand_to_same_rank(values, sample_weight)
        values = values * _broadcast_weight(sample_weight, values)
    if reduction in (None, "none"):
        return values
    total = reduction_ops.reduce_sum(values)
    if reduction == "sum":
        return total
    size = fill_ops.cast(fill_ops.size(values), values.dtype)
    return total / math_ops.maximum(size, _const(size, 1.0))


class Loss:
    """A loss: `call(y_true, y_pred)` gives per-sample losses, `__call__` reduces them.

    Args:
      name: the loss's name.
      reduction: "sum_over_batch_size" (default), "sum", or "none".
      dtype: the dtype of the loss (default: that of y_pred).
    """

    def __init__(
        self, name: str | None = None, reduction: str = "sum_over_batch_size", dtype: Any = None
    ):
        if reduction not in ("sum_over_batch_size", "sum", "mean", "none", None):
            raise ValueError(
                f"Invalid reduction {reduction!r}; expected 'sum_over_batch_size', 'sum' or 'none'."
            )
        self.name = name
        self.reduction = reduction
        self.dtype = dtype

    def call(self, y_true: Any, y_pred: Any) -> Any:
        raise NotImplementedError

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_pred = core_ops.convert_to_tensor(y_pred)
        values = self.call(y_true, y_pred)
        if self.dtype is not None:
            values = fill_ops.cast(values, self.dtype)
        return reduce_weighted_values(values, sample_weight, get_mask(y_pred), self.reduction)

    def get_config(self) -> dict:
        return {"name": self.name, "reduction": self.reduction}

    @classmethod
    def from_config(cls, config: dict) -> Loss:
        return cls(**config)


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


class MeanSquaredError(LossFunctionWrapper):
    def __init__(
        self,
        reduction: str = "sum_over_batch_size",
        name: str = "mean_squared_error",
        dtype: Any = None,
    ):
        super().__init__(mean_squared_error, reduction=reduction, name=name, dtype=dtype)


class MeanAbsoluteError(LossFunctionWrapper):
    def __init__(
        self,
        reduction: str = "sum_over_batch_size",
        name: str = "mean_absolute_error",
        dtype: Any = None,
    ):
        super().__init__(mean_absolute_error, reduction=reduction, name=name, dtype=dtype)


class Huber(LossFunctionWrapper):
    def __init__(
        self,
        delta: float = 1.0,
        reduction: str = "sum_over_batch_size",
        name: str = "huber_loss",
        dtype: Any = None,
    ):
        super().__init__(huber, reduction=reduction, name=name, dtype=dtype, delta=delta)


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


def serialize(loss: Any) -> Any:
    if isinstance(loss, Loss) and type(loss).__name__ in _CLASSES:
        return {"class_name": type(loss).__name__, "config": loss.get_config()}
    return getattr(loss, "__name__", loss)


def deserialize(config: Any) -> Any:
    return get(config)
