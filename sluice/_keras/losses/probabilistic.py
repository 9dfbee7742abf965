"""Keras 3's probabilistic losses: cross-entropies (binary, categorical, sparse, focal),
Kullback-Leibler divergence and Poisson; each a function giving one loss per sample and the `Loss`
class wrapping it.

Probabilities are clipped to [eps, 1 - eps] before the log, as in Keras (`sl.config.epsilon()`,
1e-7 unless set, read when the loss graph is built); categorical probabilities are first divided
by their sum over `axis`. With `from_logits=True` the log-probabilities come from log_sigmoid or
log_softmax instead, which never overflow.

Sparse categorical cross-entropy takes class ids shaped like y_pred without its class axis (one-hot
targets are refused at graph construction, with a hint); it is computed by the TF1 op
SparseSoftmaxCrossEntropyWithLogits, so an id outside [0, classes) fails the run with
`InvalidArgumentError` (as TF's kernel), and `check_sparse_labels` catches it on the host first.

>>> loss = sl.losses.CategoricalCrossentropy()([[0, 1, 0], [0, 0, 1]],
...                                            [[0.05, 0.95, 0], [0.1, 0.8, 0.1]])
>>> round(float(sl.Session().run(loss)), 3)   # Keras 3's documented example
1.177
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras import config
from sluice._keras.layers.tracking import set_mask
from sluice._keras.losses.loss import LossFunctionWrapper, constant_like, float_prediction
from sluice.framework.ir import dtypes, errors
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops, special_math_ops, unary_ops
from sluice.framework.ops.nn import loss_ops, nn_ops

_REDUCTION = "sum_over_batch_size"


def clip_probabilities(x: Any) -> Any:
    """`x` clipped to [eps, 1 - eps] (probabilities before a log; `sl.config.epsilon()` when the
    graph is built)."""
    epsilon = config.epsilon()
    at_least = math_ops.maximum(x, constant_like(x, epsilon))
    return math_ops.minimum(at_least, constant_like(x, 1.0 - epsilon))


def _targets(y_true: Any, y_pred: Any) -> tuple:
    """(y_true cast to y_pred's dtype, y_pred) as Tensors, without changing their ranks (integer
    predictions cast to floatx)."""
    y_pred = float_prediction(y_pred)
    return fill_ops.cast(core_ops.convert_to_tensor(y_true), y_pred.dtype), y_pred


def _check_axis(axis: Any, what: str) -> None:
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise ValueError(f"{what}: `axis` must be of type `int`. Received: axis={axis!r}")


def _class_count(y_pred: Any, axis: int, what: str) -> Any:
    """The number of classes on `axis` of y_pred, warning as Keras 3 does when it is 1."""
    rank = y_pred.shape.rank
    if rank is not None and y_pred.shape[axis % rank] == 1:
        warnings.warn(
            f"In loss {what}, expected y_pred.shape to be (batch_size, num_classes) with "
            f"num_classes > 1. Received: y_pred.shape={y_pred.shape}. Consider using "
            "'binary_crossentropy' if you only have 2 classes.",
            SyntaxWarning,
            stacklevel=3,
        )
    return fill_ops.cast(fill_ops.shape(y_pred)[axis], y_pred.dtype)


# -- binary ---------------------------------------------------------------------------------------
def elementwise_binary_crossentropy(y_true: Any, y_pred: Any, from_logits: bool) -> Any:
    """-(y log p + (1 - y) log(1 - p)), p clipped, or from logits via log_sigmoid."""
    if from_logits:
        return -(
            y_true * special_math_ops.log_sigmoid(y_pred)
            + (1.0 - y_true) * special_math_ops.log_sigmoid(-y_pred)
        )
    p = clip_probabilities(y_pred)
    return -(y_true * unary_ops.log(p) + (1.0 - y_true) * unary_ops.log(1.0 - p))


def _smooth_binary(y_true: Any, label_smoothing: float) -> Any:
    if not label_smoothing:
        return y_true
    return y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing


@export("losses.binary_crossentropy", "metrics.binary_crossentropy")
def binary_crossentropy(
    y_true: Any,
    y_pred: Any,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
) -> Any:
    """mean over `axis` of -(y log p + (1 - y) log(1 - p)); p = sigmoid(y_pred) with logits, and
    y squeezed towards 0.5 by `label_smoothing` (y (1 - s) + s / 2).

    >>> loss = sl.losses.binary_crossentropy([[0, 1], [0, 0]], [[0.6, 0.4], [0.4, 0.6]])
    >>> np.round(sl.Session().run(loss), 3)   # Keras 3's example
    array([0.916, 0.714], dtype=float32)
    """
    y_true, y_pred = _targets(y_true, y_pred)
    y_true = _smooth_binary(y_true, label_smoothing)
    values = elementwise_binary_crossentropy(y_true, y_pred, from_logits)
    return reduction_ops.reduce_mean(values, axis=axis)


@export("losses.binary_focal_crossentropy", "metrics.binary_focal_crossentropy")
def binary_focal_crossentropy(
    y_true: Any,
    y_pred: Any,
    apply_class_balancing: bool = False,
    alpha: float = 0.25,
    gamma: float = 2.0,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
) -> Any:
    """mean over `axis` of (1 - p_t) ** gamma * binary cross-entropy, with p_t = y p + (1 - y)
    (1 - p) (Lin et al., 2018); weighted alpha for class 1 and 1 - alpha for class 0 when
    `apply_class_balancing`.

    >>> loss = sl.losses.binary_focal_crossentropy(
    ...     [[0, 1], [0, 0]], [[0.6, 0.4], [0.4, 0.6]], gamma=2.0)
    >>> np.round(sl.Session().run(loss), 3)   # Keras 3's example
    array([0.33 , 0.206], dtype=float32)
    """
    y_true, y_pred = _targets(y_true, y_pred)
    y_true = _smooth_binary(y_true, label_smoothing)
    if from_logits:
        y_pred = unary_ops.sigmoid(y_pred)
    bce = elementwise_binary_crossentropy(y_true, y_pred, from_logits=False)
    p_t = y_true * y_pred + (1.0 - y_true) * (1.0 - y_pred)
    focal = math_ops.pow(1.0 - p_t, constant_like(p_t, gamma)) * bce
    if apply_class_balancing:
        focal = (y_true * alpha + (1.0 - y_true) * (1.0 - alpha)) * focal
    return reduction_ops.reduce_mean(focal, axis=axis)


# -- categorical --------------------------------------------------------------------------------
def log_probabilities(y_pred: Any, from_logits: bool, axis: int) -> Any:
    """log_softmax(y_pred) with logits, else the log of y_pred divided by its sum over `axis`,
    clipped."""
    if from_logits:
        return nn_ops.log_softmax(y_pred, axis=axis)
    p = y_pred / reduction_ops.reduce_sum(y_pred, axis=axis, keepdims=True)
    return unary_ops.log(clip_probabilities(p))


def _smooth_categorical(y_true: Any, y_pred: Any, label_smoothing: float, axis: int, what: str):
    classes = _class_count(y_pred, axis, what)
    if not label_smoothing:
        return y_true
    return y_true * (1.0 - label_smoothing) + label_smoothing / classes


@export("losses.categorical_crossentropy", "metrics.categorical_crossentropy")
def categorical_crossentropy(
    y_true: Any,
    y_pred: Any,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
) -> Any:
    """-sum(y_true * log p, axis) for one-hot (or soft) targets; with `label_smoothing` s the
    targets become y (1 - s) + s / classes, the classes counted on y_pred's `axis`.

    >>> loss = sl.losses.categorical_crossentropy([[0, 1, 0], [0, 0, 1]],
    ...                                           [[0.05, 0.95, 0], [0.1, 0.8, 0.1]])
    >>> np.round(sl.Session().run(loss), 4)   # Keras 3's example
    array([0.0513, 2.3026], dtype=float32)
    """
    _check_axis(axis, "categorical_crossentropy")
    y_true, y_pred = _targets(y_true, y_pred)
    y_true = _smooth_categorical(y_true, y_pred, label_smoothing, axis, "categorical_crossentropy")
    return -reduction_ops.reduce_sum(y_true * log_probabilities(y_pred, from_logits, axis), axis)


@export("losses.categorical_focal_crossentropy", "metrics.categorical_focal_crossentropy")
def categorical_focal_crossentropy(
    y_true: Any,
    y_pred: Any,
    alpha: float = 0.25,
    gamma: float = 2.0,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
) -> Any:
    """sum over `axis` of alpha (1 - p) ** gamma * (-y_true log p), p the probabilities (softmax
    of logits) divided by their sum and clipped; `alpha` a number or one per class.

    >>> loss = sl.losses.categorical_focal_crossentropy([[0, 1, 0], [0, 0, 1]],
    ...                                                 [[0.05, 0.9, 0.05], [0.1, 0.85, 0.05]])
    >>> np.allclose(sl.Session().run(loss), [2.63401289e-04, 6.75912094e-01])   # Keras 3's
    True
    """
    _check_axis(axis, "categorical_focal_crossentropy")
    y_true, y_pred = _targets(y_true, y_pred)
    y_true = _smooth_categorical(
        y_true, y_pred, label_smoothing, axis, "categorical_focal_crossentropy"
    )
    if from_logits:
        y_pred = nn_ops.softmax(y_pred, axis=axis)
    p = clip_probabilities(y_pred / reduction_ops.reduce_sum(y_pred, axis=axis, keepdims=True))
    weight = math_ops.pow(1.0 - p, constant_like(p, gamma)) * core_ops.convert_to_tensor(
        alpha, dtype=p.dtype
    )
    return reduction_ops.reduce_sum(weight * (-y_true * unary_ops.log(p)), axis=axis)


# -- sparse categorical -------------------------------------------------------------------------
@export("losses.sparse_categorical_crossentropy", "metrics.sparse_categorical_crossentropy")
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
    logits = y_pred if from_logits else log_probabilities(y_pred, False, axis)
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


# -- divergences --------------------------------------------------------------------------------
@export(
    "losses.kl_divergence",
    "metrics.kl_divergence",
    "losses.kld",
    "losses.KLD",
    "losses.kullback_leibler_divergence",
    "metrics.kld",
    "metrics.KLD",
    "metrics.kullback_leibler_divergence",
)
def kl_divergence(y_true: Any, y_pred: Any) -> Any:
    """sum(y_true * log(y_true / y_pred), axis=-1), both clipped to [eps, 1].

    >>> loss = sl.losses.kl_divergence([[0.0, 1.0], [0.0, 0.0]], [[0.6, 0.4], [0.4, 0.6]])
    >>> np.round(sl.Session().run(loss), 4)   # log(1 / 0.4), then about 0
    array([ 0.9163, -0.    ], dtype=float32)
    """
    y_true, y_pred = _targets(y_true, y_pred)
    one = constant_like(y_pred, 1.0)
    eps = constant_like(y_pred, config.epsilon())
    y_true = math_ops.minimum(math_ops.maximum(y_true, eps), one)
    y_pred = math_ops.minimum(math_ops.maximum(y_pred, eps), one)
    return reduction_ops.reduce_sum(y_true * unary_ops.log(y_true / y_pred), axis=-1)


@export("losses.poisson", "metrics.poisson")
def poisson(y_true: Any, y_pred: Any) -> Any:
    """mean(y_pred - y_true * log(y_pred + eps), axis=-1).

    >>> loss = sl.losses.poisson([[0.0, 1.0], [0.0, 0.0]], [[1.0, 1.0], [0.0, 0.0]])
    >>> np.round(sl.Session().run(loss), 4)
    array([1., 0.], dtype=float32)
    """
    y_true, y_pred = _targets(y_true, y_pred)
    eps = constant_like(y_pred, config.epsilon())
    return reduction_ops.reduce_mean(y_pred - y_true * unary_ops.log(y_pred + eps), axis=-1)


@export("losses.categorical_generalized_cross_entropy")
def categorical_generalized_cross_entropy(y_true: Any, y_pred: Any, q: float) -> Any:
    """(1 - p ** q) / q, p the predicted probability of the class id y_true (Zhang and Sabuncu,
    2018): near cross-entropy as q goes to 0, near mean absolute error as q goes to 1.

    >>> loss = sl.losses.categorical_generalized_cross_entropy([1], [[0.75, 0.25]], q=0.5)
    >>> sl.Session().run(loss)   # (1 - 0.5) / 0.5
    array([1.], dtype=float32)
    """
    y_pred = core_ops.convert_to_tensor(y_pred)
    classes = y_pred.shape[-1]
    ids = fill_ops.cast(
        sparse_ids(y_true, y_pred, "categorical_generalized_cross_entropy"), dtypes.int32
    )
    one_hot = fill_ops.one_hot(ids, classes, dtype=y_pred.dtype)
    p = reduction_ops.reduce_sum(y_pred * one_hot, axis=-1)
    return (1.0 - math_ops.pow(p, constant_like(p, q))) / q


# -- the Loss classes -----------------------------------------------------------------------------
class _Crossentropy(LossFunctionWrapper):
    """The classes of `binary_crossentropy` and `categorical_crossentropy` (Keras 3's arguments;
    the default name is the function's)."""

    _function: Callable

    def __init__(
        self,
        from_logits: bool = False,
        label_smoothing: float = 0.0,
        axis: int = -1,
        reduction: str = _REDUCTION,
        name: str | None = None,
        dtype: Any = None,
    ):
        super().__init__(
            self._function, reduction=reduction, name=name, dtype=dtype,
            from_logits=from_logits, label_smoothing=label_smoothing, axis=axis,
        )  # fmt: skip


@export("losses.BinaryCrossentropy")
class BinaryCrossentropy(_Crossentropy):
    """Binary cross-entropy for 0/1 targets and one probability (or logit) per target; see
    `binary_crossentropy`.

    >>> bce = sl.losses.BinaryCrossentropy(from_logits=True)
    >>> loss = bce([[0, 1], [0, 0]], [[-18.6, 0.51], [2.94, -12.8]], sample_weight=[0.8, 0.2])
    >>> round(float(sl.Session().run(loss)), 4)   # Keras 3's example (its docstring: 0.243)
    0.2436
    """

    _function = staticmethod(binary_crossentropy)


@export("losses.BinaryFocalCrossentropy")
class BinaryFocalCrossentropy(LossFunctionWrapper):
    """Binary cross-entropy scaled down for easy examples; see `binary_focal_crossentropy`.

    >>> loss = sl.losses.BinaryFocalCrossentropy(gamma=2, from_logits=True)
    >>> round(float(sl.Session().run(loss([0, 1, 0, 0], [-18.6, 0.51, 2.94, -12.8]))), 3)
    0.691
    """

    def __init__(
        self,
        apply_class_balancing: bool = False,
        alpha: float = 0.25,
        gamma: float = 2.0,
        from_logits: bool = False,
        label_smoothing: float = 0.0,
        axis: int = -1,
        reduction: str = _REDUCTION,
        name: str = "binary_focal_crossentropy",
        dtype: Any = None,
    ):
        super().__init__(
            binary_focal_crossentropy, reduction=reduction, name=name, dtype=dtype,
            apply_class_balancing=apply_class_balancing, alpha=alpha, gamma=gamma,
            from_logits=from_logits, label_smoothing=label_smoothing, axis=axis,
        )  # fmt: skip


@export("losses.CategoricalCrossentropy")
class CategoricalCrossentropy(_Crossentropy):
    """Cross-entropy for one-hot (or soft) targets; see `categorical_crossentropy`."""

    _function = staticmethod(categorical_crossentropy)


@export("losses.CategoricalFocalCrossentropy")
class CategoricalFocalCrossentropy(LossFunctionWrapper):
    """Categorical cross-entropy scaled down for easy examples; see
    `categorical_focal_crossentropy`.

    >>> cfce = sl.losses.CategoricalFocalCrossentropy()
    >>> loss = cfce([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], [[0.05, 0.95, 0], [0.1, 0.8, 0.1]])
    >>> round(float(sl.Session().run(loss)), 5)   # Keras 3's example: 0.23315276
    0.23315
    """

    def __init__(
        self,
        alpha: Any = 0.25,
        gamma: float = 2.0,
        from_logits: bool = False,
        label_smoothing: float = 0.0,
        axis: int = -1,
        reduction: str = _REDUCTION,
        name: str = "categorical_focal_crossentropy",
        dtype: Any = None,
    ):
        super().__init__(
            categorical_focal_crossentropy, reduction=reduction, name=name, dtype=dtype,
            alpha=alpha, gamma=gamma, from_logits=from_logits, label_smoothing=label_smoothing,
            axis=axis,
        )  # fmt: skip


@export("losses.SparseCategoricalCrossentropy")
class SparseCategoricalCrossentropy(LossFunctionWrapper):
    """Cross-entropy for integer class ids; see `sparse_categorical_crossentropy`.

    >>> scce = sl.losses.SparseCategoricalCrossentropy()
    >>> loss = scce([1, 2], [[0.05, 0.95, 0], [0.1, 0.8, 0.1]], sample_weight=[0.3, 0.7])
    >>> round(float(sl.Session().run(loss)), 3)   # Keras 3's example
    0.814
    """

    def __init__(
        self,
        from_logits: bool = False,
        ignore_class: int | None = None,
        reduction: str = _REDUCTION,
        axis: int = -1,
        name: str = "sparse_categorical_crossentropy",
        dtype: Any = None,
    ):
        super().__init__(
            sparse_categorical_crossentropy, reduction=reduction, name=name, dtype=dtype,
            from_logits=from_logits, ignore_class=ignore_class, axis=axis,
        )  # fmt: skip


@export("losses.KLDivergence")
class KLDivergence(LossFunctionWrapper):
    """Kullback-Leibler divergence of y_pred from y_true; see `kl_divergence`."""

    def __init__(self, reduction: str = _REDUCTION, name: str = "kl_divergence", dtype: Any = None):
        super().__init__(kl_divergence, reduction=reduction, name=name, dtype=dtype)


@export("losses.Poisson")
class Poisson(LossFunctionWrapper):
    """The Poisson negative log-likelihood up to a constant; see `poisson`."""

    def __init__(self, reduction: str = _REDUCTION, name: str = "poisson", dtype: Any = None):
        super().__init__(poisson, reduction=reduction, name=name, dtype=dtype)


@export("losses.CategoricalGeneralizedCrossEntropy")
class CategoricalGeneralizedCrossEntropy(LossFunctionWrapper):
    """Generalized cross-entropy, robust to noisy labels; see
    `categorical_generalized_cross_entropy`.

    Raises:
      ValueError: when q is not in (0, 1).
    """

    def __init__(
        self,
        q: float = 0.5,
        reduction: str = _REDUCTION,
        name: str = "categorical_generalized_cross_entropy",
        dtype: Any = None,
    ):
        if not 0 < q < 1:
            raise ValueError(f"CategoricalGeneralizedCrossEntropy: q must be in (0, 1), got {q}.")
        super().__init__(
            categorical_generalized_cross_entropy, reduction=reduction, name=name, dtype=dtype, q=q
        )
