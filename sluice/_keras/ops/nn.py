"""`keras.ops` neural-network functions (Keras's `ops/nn.py`): activations, softmax, one-hot,
the cross-entropies per sample, moments; graph code that `eager.keras_op` also runs at once.

>>> sl.ops.silu(np.array([0.0, 1.0]))
Array([0.        , 0.73105858])
>>> sl.ops.sparse_categorical_crossentropy(np.array([1]), np.array([[0.25, 0.75]]))
Array([0.28768207])
"""

from __future__ import annotations

import math
from typing import Any

from sluice._keras import config
from sluice._keras.ops.eager import (
    axes_of,
    floating,
    keras_op,
    known_rank,
    promoted,
    standard_dtype,
    tensor,
)
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.math import math_ops, reduction_ops, special_math_ops, unary_ops
from sluice.framework.ops.nn import loss_ops, nn_ops


def _activation(graph_fn: Any, path: str, doc: str, *aliases: str) -> Any:
    def fn(x: Any) -> Any:
        return graph_fn(floating(x))

    fn.__name__, fn.__doc__ = path, doc
    return keras_op(path, *aliases)(fn)


relu = _activation(nn_ops.relu, "relu", "max(x, 0).")
relu6 = _activation(nn_ops.relu6, "relu6", "min(max(x, 0), 6).")
sigmoid = _activation(unary_ops.sigmoid, "sigmoid", "1 / (1 + exp(-x)).")
softplus = _activation(nn_ops.softplus, "softplus", "log(1 + exp(x)), computed stably.")
softsign = _activation(nn_ops.softsign, "softsign", "x / (1 + |x|).")
selu = _activation(nn_ops.selu, "selu", "The scaled exponential linear unit.")
log_sigmoid = _activation(special_math_ops.log_sigmoid, "log_sigmoid", "log(sigmoid(x)).")
silu = _activation(lambda x: x * unary_ops.sigmoid(x), "silu", "x * sigmoid(x).", "swish")
hard_sigmoid = _activation(
    lambda x: nn_ops.relu6(x + _like(x, 3.0)) / _like(x, 6.0),
    "hard_sigmoid",
    "relu6(x + 3) / 6: a piecewise-linear sigmoid.",
)


def _like(x: Any, value: float) -> Any:
    return tensor(value, x.dtype)


@keras_op("elu")
def elu(x: Any, alpha: float = 1.0) -> Any:
    """x where positive, else alpha * (exp(x) - 1)."""
    x = floating(x)
    return nn_ops.elu(x) if alpha == 1.0 else _elu(x, alpha)


def _elu(x: Any, alpha: float) -> Any:
    negative = _like(x, alpha) * unary_ops.expm1(math_ops.minimum(x, _like(x, 0.0)))
    return math_ops.maximum(x, _like(x, 0.0)) + negative


@keras_op("leaky_relu")
def leaky_relu(x: Any, negative_slope: float = 0.2) -> Any:
    """x where positive, else negative_slope * x."""
    return nn_ops.leaky_relu(floating(x), alpha=negative_slope)


@keras_op("gelu")
def gelu(x: Any, approximate: bool = True) -> Any:
    """The Gaussian error linear unit x * P(X <= x), X ~ N(0, 1); with `approximate`, its tanh
    approximation 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))."""
    x = floating(x)
    half = _like(x, 0.5)
    if approximate:
        inner = _like(x, math.sqrt(2.0 / math.pi)) * (x + _like(x, 0.044715) * x * x * x)
        return half * x * (_like(x, 1.0) + unary_ops.tanh(inner))
    return half * x * (_like(x, 1.0) + unary_ops.erf(x / _like(x, math.sqrt(2.0))))


@keras_op("softmax")
def softmax(x: Any, axis: int = -1) -> Any:
    """exp(x) / sum(exp(x)) along `axis`."""
    return nn_ops.softmax(floating(x), axis=axis)


@keras_op("log_softmax")
def log_softmax(x: Any, axis: int = -1) -> Any:
    """log(softmax(x)) along `axis`, computed stably."""
    return nn_ops.log_softmax(floating(x), axis=axis)


@keras_op("one_hot")
def one_hot(
    x: Any, num_classes: int, axis: int = -1, dtype: Any = None, sparse: bool = False
) -> Any:
    """One-hot vectors of the integer ids x along a new `axis` (ids out of range: zeros)."""
    if sparse:
        raise NotImplementedError("sparse one-hot tensors are not supported.")
    ids = tensor(x)
    if ids.dtype.kind not in "iu":
        ids = fill_ops.cast(ids, dtypes.int32)
    return fill_ops.one_hot(ids, num_classes, axis=axis, dtype=standard_dtype(dtype))


@keras_op("moments")
def moments(x: Any, axes: Any, keepdims: bool = False, synchronized: bool = False) -> Any:
    """(mean, variance) of x over `axes`."""
    x = floating(x)
    axes = axes_of(axes, x.shape.rank)
    mean = reduction_ops.reduce_mean(x, axis=axes, keepdims=True)
    variance = reduction_ops.reduce_mean(unary_ops.square(x - mean), axis=axes, keepdims=keepdims)
    return (mean if keepdims else reduction_ops.reduce_mean(x, axis=axes)), variance


# -- cross-entropies, one value per sample (Keras's backend functions) ----------------------------
def _targets_and_outputs(target: Any, output: Any, what: str) -> tuple[Any, Any]:
    target, output = promoted(target, floating(output))
    if target.shape.rank != output.shape.rank or not target.shape.is_compatible_with(output.shape):
        raise ValueError(
            f"{what}: `target` and `output` must have the same shape; got target.shape="
            f"{target.shape}, output.shape={output.shape}."
        )
    return target, output


def _clipped(p: Any) -> Any:
    epsilon = config.epsilon()
    return math_ops.minimum(math_ops.maximum(p, _like(p, epsilon)), _like(p, 1.0 - epsilon))


@keras_op("binary_crossentropy")
def binary_crossentropy(target: Any, output: Any, from_logits: bool = False) -> Any:
    """-(t log p + (1 - t) log(1 - p)) per entry; p = sigmoid(output) with `from_logits`, else
    output clipped to [epsilon, 1 - epsilon]."""
    target, output = _targets_and_outputs(target, output, "binary_crossentropy")
    if from_logits:
        return loss_ops.sigmoid_cross_entropy_with_logits(labels=target, logits=output)
    p, one = _clipped(output), _like(output, 1.0)
    return -(target * unary_ops.log(p) + (one - target) * unary_ops.log(one - p))


@keras_op("categorical_crossentropy")
def categorical_crossentropy(
    target: Any, output: Any, from_logits: bool = False, axis: int = -1
) -> Any:
    """-sum(t log p) along `axis`; p = softmax(output) with `from_logits`, else output
    normalised to sum 1 and clipped to [epsilon, 1 - epsilon]."""
    target, output = _targets_and_outputs(target, output, "categorical_crossentropy")
    return -reduction_ops.reduce_sum(target * _log_probabilities(output, from_logits, axis), axis)


def _log_probabilities(output: Any, from_logits: bool, axis: int) -> Any:
    if from_logits:
        return nn_ops.log_softmax(output, axis=axis)
    total = reduction_ops.reduce_sum(output, axis=axis, keepdims=True)
    return unary_ops.log(_clipped(output / total))


@keras_op("sparse_categorical_crossentropy")
def sparse_categorical_crossentropy(
    target: Any, output: Any, from_logits: bool = False, axis: int = -1
) -> Any:
    """-log p[target] for integer class ids (shaped like output without `axis`, or with a last
    axis of 1); p as in `categorical_crossentropy`."""
    output = floating(output)
    rank = known_rank(output, "sparse_categorical_crossentropy")
    ids = tensor(target)
    if ids.shape.rank == rank and ids.shape[-1] == 1:
        ids = fill_ops.cast(ids, dtypes.int32)[..., 0]
    if ids.shape.rank != rank - 1:
        raise ValueError(
            "sparse_categorical_crossentropy: `target` must have the rank of `output` less "
            f"one (class ids); got target.shape={ids.shape}, output.shape={output.shape}."
        )
    classes = output.shape[axis]
    if classes is None:
        raise ValueError(
            f"sparse_categorical_crossentropy: the class axis of {output.shape} must be known."
        )
    targets = fill_ops.one_hot(
        fill_ops.cast(ids, dtypes.int32), classes, axis=axis, dtype=output.dtype
    )
    return -reduction_ops.reduce_sum(targets * _log_probabilities(output, from_logits, axis), axis)
