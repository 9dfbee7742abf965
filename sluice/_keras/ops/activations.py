"""`keras.ops` activation functions beyond those of `nn` (Keras's `ops/nn.py`, as `jax.nn`
defines them), composed of graph ops (so their gradients are the composition's), which
`eager.keras_op` also runs at once on values.

>>> sl.ops.hard_tanh(np.array([-2.0, 0.5, 3.0]))
Array([-1. ,  0.5,  1. ])
>>> sl.ops.glu(np.array([[1.0, 0.0]]))
Array([[0.5]])
>>> sl.ops.sparsemax(np.array([0.0, 1.0, 3.0]))
Array([0., 0., 1.])
"""

from __future__ import annotations

from typing import Any

from sluice._keras.ops.eager import floating, keras_op, known_rank, tensor
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops, join_ops
from sluice.framework.ops.math import math_ops, reduction_ops, sort_ops, unary_ops
from sluice.framework.ops.nn import nn_ops


def _c(x: Any, value: float) -> Any:
    return tensor(value, x.dtype)


def _where(condition: Any, a: Any, b: Any) -> Any:
    return gather_ops.where_v2(condition, a, b + fill_ops.zeros_like(a))


def _activation(compute: Any, path: str, doc: str, *aliases: str) -> Any:
    def fn(x: Any) -> Any:
        return compute(floating(x))

    fn.__name__, fn.__doc__ = path, doc
    return keras_op(path, f"nn.{path}", *aliases)(fn)


def _hard_silu(x: Any) -> Any:
    return x * nn_ops.relu6(x + _c(x, 3.0)) / _c(x, 6.0)


def _clip(x: Any, low: float, high: float) -> Any:
    return math_ops.minimum(math_ops.maximum(x, _c(x, low)), _c(x, high))


def _sparse_plus(x: Any) -> Any:
    middle = unary_ops.square(x + _c(x, 1.0)) / _c(x, 4.0)
    return _where(
        math_ops.less_equal(x, _c(x, -1.0)),
        fill_ops.zeros_like(x),
        _where(math_ops.greater_equal(x, _c(x, 1.0)), x, middle),
    )


hard_silu = _activation(
    _hard_silu, "hard_silu", "x * relu6(x + 3) / 6.", "hard_swish", "nn.hard_swish"
)
hard_tanh = _activation(lambda x: _clip(x, -1.0, 1.0), "hard_tanh", "x clipped to [-1, 1].")
tanh_shrink = _activation(lambda x: x - unary_ops.tanh(x), "tanh_shrink", "x - tanh(x).")
sparse_plus = _activation(
    _sparse_plus, "sparse_plus", "0 for x <= -1, (x + 1)^2 / 4 on (-1, 1), x for x >= 1."
)
sparse_sigmoid = _activation(
    lambda x: _clip(x + _c(x, 1.0), 0.0, 2.0) * _c(x, 0.5),
    "sparse_sigmoid",
    "(x + 1) / 2 clipped to [0, 1].",
)


@keras_op("celu", "nn.celu")
def celu(x: Any, alpha: float = 1.0) -> Any:
    """x where positive, else alpha * (exp(x / alpha) - 1)."""
    x = floating(x)
    negative = _c(x, alpha) * unary_ops.expm1(math_ops.minimum(x, _c(x, 0.0)) / _c(x, alpha))
    return _where(math_ops.greater(x, _c(x, 0.0)), x, negative)


@keras_op("glu", "nn.glu")
def glu(x: Any, axis: int = -1) -> Any:
    """a * sigmoid(b), with a and b the two halves of x along `axis`.

    Raises:
      ValueError: an odd length along `axis`.
    """
    x = floating(x)
    length = x.shape[axis] if x.shape.rank is not None else None
    if length is not None and length % 2:
        raise ValueError(f"glu: the length of axis {axis} of {x.shape} must be even.")
    a, b = join_ops.split(x, 2, axis=axis)
    return a * unary_ops.sigmoid(b)


@keras_op("hard_shrink", "nn.hard_shrink")
def hard_shrink(x: Any, threshold: float = 0.5) -> Any:
    """x where |x| > threshold, else 0."""
    x = floating(x)
    return _where(math_ops.greater(unary_ops.abs(x), _c(x, threshold)), x, _c(x, 0.0))


@keras_op("soft_shrink", "nn.soft_shrink")
def soft_shrink(x: Any, threshold: float = 0.5) -> Any:
    """x - threshold above threshold, x + threshold below -threshold, else 0."""
    x = floating(x)
    t = _c(x, threshold)
    inner = _where(math_ops.less(x, -t), x + t, _c(x, 0.0))
    return _where(math_ops.greater(x, t), x - t, inner)


@keras_op("squareplus", "nn.squareplus")
def squareplus(x: Any, b: float = 4) -> Any:
    """(x + sqrt(x^2 + b)) / 2, a smooth relu."""
    x = floating(x)
    return (x + unary_ops.sqrt(unary_ops.square(x) + _c(x, b))) / _c(x, 2.0)


@keras_op("threshold", "nn.threshold")
def threshold(x: Any, threshold: float, default_value: float) -> Any:  # noqa: A002
    """x where x > threshold, else default_value."""
    x = floating(x)
    return _where(math_ops.greater(x, _c(x, threshold)), x, _c(x, default_value))


@keras_op("sparsemax", "nn.sparsemax")
def sparsemax(x: Any, axis: int = -1) -> Any:
    """The Euclidean projection of x onto the probability simplex along `axis` (Martins &
    Astudillo 2016): max(x - tau, 0), with tau chosen so the entries sum to 1.

    Keras 3's backends compute tau from the sum of the running sums over the support, which
    equals this only when one entry is kept (their tests' case); this is the projection their
    docstring describes."""
    x = floating(x)
    rank = known_rank(x, "sparsemax")
    axis %= rank
    descending = -sort_ops.sort(-x, axis=axis)
    running = reduction_ops.cumsum(descending, axis=axis)
    ks = fill_ops.cast(fill_ops.range(1, fill_ops.shape(x)[axis] + 1), x.dtype)
    ks = _along(ks, axis, rank)
    support = math_ops.greater(descending - (running - _c(x, 1.0)) / ks, _c(x, 0.0))
    count = reduction_ops.reduce_sum(fill_ops.cast(support, x.dtype), axis=axis, keepdims=True)
    kept = _where(support, descending, _c(x, 0.0))  # the sum of the k largest
    tau = (reduction_ops.reduce_sum(kept, axis=axis, keepdims=True) - _c(x, 1.0)) / count
    return math_ops.maximum(x - tau, _c(x, 0.0))


def _along(v: Any, axis: int, rank: int) -> Any:
    """A vector shaped to broadcast along `axis` of a rank-`rank` tensor."""
    shape = [1] * rank
    shape[axis] = -1
    return array_ops.reshape(v, shape)
