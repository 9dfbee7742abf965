"""`keras.ops` normalizations and comparisons of signals (Keras's `ops/nn.py`):
`batch_normalization`, `layer_normalization`, `rms_normalization`, `normalize`, `psnr`, as
Keras computes them (half precision in float32, the result in the input's dtype); graph code
that `eager.keras_op` also runs at once on values.

>>> sl.ops.layer_normalization(np.arange(5, dtype=np.float32)).numpy().round(4)
array([-1.4142, -0.7071,  0.    ,  0.7071,  1.4142], dtype=float32)
>>> sl.ops.normalize(np.array([[3.0, 4.0]]))
Array([[0.6, 0.8]])
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from sluice._keras import config
from sluice._keras.ops.arrays import norm
from sluice._keras.ops.eager import axes_of, floating, keras_op, known_rank, tensor
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.math import math_ops, reduction_ops, unary_ops


def _compute(x: Any) -> tuple[Any, Any]:
    """(x in at least float32, x's own float dtype)."""
    x = floating(x)
    wide = dtypes.as_dtype(jnp.promote_types(x.dtype, np.float32))
    return (x if x.dtype == wide else fill_ops.cast(x, wide)), x.dtype


def _back(y: Any, dtype: Any) -> Any:
    return y if y.dtype == dtype else fill_ops.cast(y, dtype)


def _c(x: Any, value: float) -> Any:
    return tensor(value, x.dtype)


@keras_op("batch_normalization", "nn.batch_normalization")
def batch_normalization(
    x: Any,
    mean: Any,
    variance: Any,
    axis: int,
    offset: Any = None,
    scale: Any = None,
    epsilon: float = 1e-3,
) -> Any:
    """(x - mean) / sqrt(variance + epsilon) * scale + offset, with the vectors mean,
    variance, offset and scale along `axis` of x."""
    x = floating(x)
    rank = known_rank(x, "batch_normalization")
    shape = [1] * rank
    shape[axis % rank] = -1

    def along(v: Any) -> Any:
        return array_ops.reshape(tensor(v, x.dtype), shape)

    inverse = unary_ops.rsqrt(along(variance) + _c(x, epsilon))
    if scale is not None:
        inverse = inverse * along(scale)
    shift = -along(mean) * inverse
    if offset is not None:
        shift = shift + along(offset)
    return x * inverse + shift


@keras_op("layer_normalization", "nn.layer_normalization")
def layer_normalization(
    x: Any, gamma: Any = None, beta: Any = None, axis: Any = -1, epsilon: float | None = None
) -> Any:
    """x standardised over `axis` (its mean 0, variance 1, epsilon added to the variance),
    then scaled by `gamma` and shifted by `beta` (shaped like those axes)."""
    x, dtype = _compute(x)
    epsilon = config.epsilon() if epsilon is None else epsilon
    rank = known_rank(x, "layer_normalization")
    axes = sorted(axes_of(axis, rank))
    shape = [1] * rank
    for a in axes:
        shape[a] = x.shape[a] if x.shape[a] is not None else -1

    def along(v: Any) -> Any:
        v = tensor(v, x.dtype)
        return v if axes == [rank - 1] else array_ops.reshape(v, shape)

    mean = reduction_ops.reduce_mean(x, axis=axes, keepdims=True)
    variance = reduction_ops.reduce_mean(unary_ops.square(x - mean), axis=axes, keepdims=True)
    inverse = unary_ops.rsqrt(variance + _c(x, epsilon))
    if gamma is not None:
        inverse = inverse * along(gamma)
    shift = -mean * inverse
    if beta is not None:
        shift = shift + along(beta)
    return _back(x * inverse + shift, dtype)


@keras_op("rms_normalization", "nn.rms_normalization")
def rms_normalization(
    x: Any, scale: Any = None, axis: Any = -1, epsilon: float | None = None
) -> Any:
    """x / sqrt(mean(x^2 over `axis`) + epsilon), times `scale` (Zhang & Sennrich 2019)."""
    x, dtype = _compute(x)
    epsilon = config.epsilon() if epsilon is None else epsilon
    if x.shape.rank == 0:
        x = array_ops.expand_dims(x, 0)
    axes = axes_of(axis, known_rank(x, "rms_normalization"))
    squares = reduction_ops.reduce_mean(unary_ops.square(x), axis=axes, keepdims=True)
    y = x * unary_ops.rsqrt(squares + _c(x, epsilon))
    if scale is not None:
        y = y * tensor(scale, x.dtype)
    return _back(y, dtype)


@keras_op("normalize", "nn.normalize")
def normalize(x: Any, axis: int = -1, order: int = 2, epsilon: float | None = None) -> Any:
    """x / max(norm(x, order, axis), epsilon) (order 2: x * rsqrt(max(sum(x^2), epsilon^2)),
    which keeps a finite gradient at 0).

    Raises:
      ValueError: an order that is not an int >= 1.
    """
    if not isinstance(order, int) or order < 1:
        raise ValueError(f"normalize: order must be an int >= 1, got {order!r}.")
    x = floating(x)
    epsilon = config.epsilon() if epsilon is None else epsilon
    if x.shape.rank == 0:
        x = array_ops.expand_dims(x, 0)
    if order == 2:
        total = reduction_ops.reduce_sum(unary_ops.square(x), axis=axis, keepdims=True)
        return x * unary_ops.rsqrt(math_ops.maximum(total, _c(x, epsilon * epsilon)))
    size = norm(x, ord=order, axis=axis, keepdims=True)
    return x / math_ops.maximum(size, _c(x, epsilon))


@keras_op("psnr", "nn.psnr")
def psnr(x1: Any, x2: Any, max_val: Any) -> Any:
    """The peak signal-to-noise ratio 20 log10(max_val) - 10 log10(mean((x1 - x2)^2)).

    Raises:
      ValueError: x1 and x2 of different shapes.
    """
    x1, x2 = floating(x1), floating(x2)
    if x1.shape.as_list() != x2.shape.as_list() if x1.shape.rank is not None else False:
        raise ValueError(f"psnr: x1 {x1.shape} and x2 {x2.shape} must have the same shape.")
    x1 = fill_ops.cast(x1, x2.dtype) if x1.dtype != x2.dtype else x1
    mse = reduction_ops.reduce_mean(unary_ops.square(x1 - x2))
    ln10 = _c(x2, np.log(10.0))
    peak = unary_ops.log(tensor(max_val, x2.dtype)) / ln10
    return _c(x2, 20.0) * peak - _c(x2, 10.0) * unary_ops.log(mse) / ln10
