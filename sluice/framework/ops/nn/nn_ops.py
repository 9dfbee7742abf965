"""Neural-network ops: activations, softmax, BiasAdd and dropout (TF1 `tf.nn`).

Sibling modules: `loss_ops` (cross-entropies, L2Loss), `conv_ops` (convolution, pooling),
`random_ops` (the draws behind `dropout`); Sigmoid and Tanh are math ops (`unary_ops`).

Softmax and LogSoftmax carry an `axis` attr instead of being transposed around, as TF does.
`DropoutApply` is sluice's own op (TF1 composes dropout from math ops): it is linear in `x`, so its
gradient is the same op applied to the incoming gradient. BiasAdd's gradient for the bias is TF's
BiasAddGrad op (the sum over every axis but the channel axis).

The activation gradients are built from math ops (TF has a ReluGrad, EluGrad, ... op per
activation), so they are differentiable again without further rules.
"""

from __future__ import annotations

import numbers
from typing import Any

import jax
import jax.numpy as jnp

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.array.gather_ops import where_v2
from sluice.framework.ops.core.core_ops import apply_op, convert_n, convert_to_tensor
from sluice.framework.ops.core.shape_rules import (
    broadcast_or_raise,
    constant_value,
    floating_unary,
    require_dtype,
    require_rank,
    require_same_dtype,
)
from sluice.framework.ops.math import math_ops, reduction_ops, unary_ops
from sluice.framework.ops.random import random_ops


def _real_unary(op) -> list:
    """One output like input 0, which must be a real number (integer or floating)."""
    x = op.inputs[0]
    require_dtype(x, "real-valued", lambda d: dtypes.is_floating(d) or dtypes.is_integer(d))
    return [(x.dtype, x.shape)]


def _unary(op_type: str, features: Any, name: str | None, attrs: dict | None = None) -> Tensor:
    x = convert_to_tensor(features, name="features")
    return apply_op(op_type, [x], attrs, name).outputs[0]


# -- activations --------------------------------------------------------------------------------
# Each gradient uses the op's output where that is enough (Relu, Elu, Selu), as TF does: inside a
# loop only the values a gradient reads are saved for the backward pass.
register_op(
    "Relu", infer=_real_unary, kernel=lambda features: jnp.maximum(features, 0), select_safe=True
)


@register_gradient("Relu")
def _relu_grad(op, grad):
    return [where_v2(math_ops.greater(op.outputs[0], 0), grad, 0)]


register_op(
    "Relu6", infer=_real_unary, kernel=lambda features: jnp.clip(features, 0, 6), select_safe=True
)


@register_gradient("Relu6")
def _relu6_grad(op, grad):
    x = op.inputs[0]
    inside = math_ops.logical_and(math_ops.greater(x, 0), math_ops.less(x, 6))
    return [where_v2(inside, grad, 0)]


register_op("Elu", infer=floating_unary, kernel=jax.nn.elu, select_safe=True)


@register_gradient("Elu")
def _elu_grad(op, grad):
    y = op.outputs[0]  # exp(x) - 1 where x <= 0, so its derivative is y + 1
    return [where_v2(math_ops.greater(y, 0), grad, grad * (y + 1))]


_SELU_ALPHA = 1.6732632423543772848170429916717  # jax.nn.selu's constants
_SELU_SCALE = 1.0507009873554804934193349852946
register_op("Selu", infer=floating_unary, kernel=jax.nn.selu, select_safe=True)


@register_gradient("Selu")
def _selu_grad(op, grad):
    y = op.outputs[0]  # scale * alpha * (exp(x) - 1) where x <= 0
    negative = grad * (y + _SELU_SCALE * _SELU_ALPHA)
    return [where_v2(math_ops.greater(y, 0), grad * _SELU_SCALE, negative)]


register_op("Softplus", infer=floating_unary, kernel=jax.nn.softplus)


@register_gradient("Softplus")
def _softplus_grad(op, grad):
    return [grad * unary_ops.sigmoid(op.inputs[0])]


register_op("Softsign", infer=floating_unary, kernel=jax.nn.soft_sign, select_safe=True)


@register_gradient("Softsign")
def _softsign_grad(op, grad):
    return [grad / unary_ops.square(1 + unary_ops.abs(op.inputs[0]))]


register_op(
    "LeakyRelu",
    infer=floating_unary,
    kernel=lambda features, *, alpha: jnp.where(features > 0, features, features * alpha),
    select_safe=True,
)


@register_gradient("LeakyRelu")
def _leaky_relu_grad(op, grad):
    x = op.inputs[0]
    return [where_v2(math_ops.greater(x, 0), grad, grad * op.get_attr("alpha"))]


@export("nn.relu")
def relu(features: Any, name: str | None = None) -> Tensor:
    """`max(features, 0)`."""
    return _unary("Relu", features, name)


@export("nn.relu6")
def relu6(features: Any, name: str | None = None) -> Tensor:
    """`min(max(features, 0), 6)`."""
    return _unary("Relu6", features, name)


@export("nn.elu")
def elu(features: Any, name: str | None = None) -> Tensor:
    """`features` where positive, else `exp(features) - 1`."""
    return _unary("Elu", features, name)


@export("nn.selu")
def selu(features: Any, name: str | None = None) -> Tensor:
    """`scale * elu(features)`, negative part times `alpha` (Klambauer et al. constants)."""
    return _unary("Selu", features, name)


@export("math.softplus", "nn.softplus")
def softplus(features: Any, name: str | None = None) -> Tensor:
    """`log(exp(features) + 1)`, computed without overflow."""
    return _unary("Softplus", features, name)


@export("math.softsign", "nn.softsign")
def softsign(features: Any, name: str | None = None) -> Tensor:
    """`features / (abs(features) + 1)`."""
    return _unary("Softsign", features, name)


@export("nn.leaky_relu")
def leaky_relu(features: Any, alpha: float = 0.2, name: str | None = None) -> Tensor:
    """`features` where positive, else `alpha * features`."""
    return _unary("LeakyRelu", features, name, {"alpha": float(alpha)})


# -- Softmax, LogSoftmax ------------------------------------------------------------------------
def check_axis(x: Tensor, axis: int) -> None:
    """Raises when `axis` is outside `[-rank, rank)` of `x` (when its rank is known)."""
    rank = x.shape.rank
    if rank is not None and not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for a tensor of rank {rank}")


def _softmax_infer(op) -> list:
    logits = op.inputs[0]
    require_dtype(logits, "floating", dtypes.is_floating)
    if logits.shape.rank == 0:
        raise ValueError("logits must have rank >= 1, got a scalar")
    check_axis(logits, op.get_attr("axis"))
    return [(logits.dtype, logits.shape)]


register_op(
    "Softmax", infer=_softmax_infer, kernel=lambda logits, *, axis: jax.nn.softmax(logits, axis)
)


@register_gradient("Softmax")
def _softmax_grad(op, grad):
    """`(grad - sum(grad * y)) * y` along the axis, from the output `y` alone."""
    y = op.outputs[0]
    inner = reduction_ops.reduce_sum(grad * y, op.get_attr("axis"), keepdims=True)
    return [(grad - inner) * y]


register_op(
    "LogSoftmax",
    infer=_softmax_infer,
    kernel=lambda logits, *, axis: jax.nn.log_softmax(logits, axis),
)


@register_gradient("LogSoftmax")
def _log_softmax_grad(op, grad):
    """`grad - sum(grad) * softmax`, with softmax = exp(y) of the output `y`."""
    total = reduction_ops.reduce_sum(grad, op.get_attr("axis"), keepdims=True)
    return [grad - total * unary_ops.exp(op.outputs[0])]


def axis_arg(axis: int | None, dim: int | None) -> int:
    """TF1's `axis` argument with its deprecated alias `dim`; the last axis by default."""
    if axis is not None and dim is not None:
        raise ValueError("give at most one of axis and dim (its deprecated name)")
    return -1 if axis is None and dim is None else int(axis if axis is not None else dim)


@export("softmax", "math.softmax", "nn.softmax")
def softmax(
    logits: Any, axis: int | None = None, name: str | None = None, dim: int | None = None
) -> Tensor:
    """`exp(logits) / sum(exp(logits), axis)`, computed stably.

    Args:
      logits: a floating Tensor of rank >= 1.
      axis: the class axis, the last by default (`dim` is its deprecated name).
      name: a name for the operation.

    Returns:
      A Tensor like `logits`.
    """
    logits = convert_to_tensor(logits, name="logits")
    return apply_op("Softmax", [logits], {"axis": axis_arg(axis, dim)}, name).outputs[0]


@export("math.log_softmax", "nn.log_softmax")
def log_softmax(
    logits: Any, axis: int | None = None, name: str | None = None, dim: int | None = None
) -> Tensor:
    """`logits - log(sum(exp(logits), axis))`, computed stably. Arguments as in `softmax`."""
    logits = convert_to_tensor(logits, name="logits")
    return apply_op("LogSoftmax", [logits], {"axis": axis_arg(axis, dim)}, name).outputs[0]


# -- BiasAdd ------------------------------------------------------------------------------------
def _channel_axis(rank: int, data_format: str) -> int:
    """BiasAdd's channel axis: 1 for "NCHW" (when rank > 2), else the last."""
    return 1 if data_format == "NCHW" and rank > 2 else rank - 1


def _bias_add_infer(op) -> list:
    value, bias = op.inputs
    require_same_dtype(value, bias)
    require_rank(bias, 1, "bias")
    rank = value.shape.rank
    if rank is not None and rank < 2:
        raise ValueError(f"value must have rank >= 2, got shape {value.shape}")
    if rank is None:
        return [(value.dtype, value.shape)]
    channel = _channel_axis(rank, op.get_attr("data_format"))
    dims = value.shape.as_list()
    if not TensorShape([dims[channel]]).is_compatible_with(bias.shape):
        raise ValueError(
            f"bias of shape {bias.shape} does not match dimension {channel} (size "
            f"{dims[channel]}) of value; the bias must be 1-D with one entry per channel"
        )
    dims[channel] = dims[channel] if dims[channel] is not None else bias.shape[0]
    return [(value.dtype, TensorShape(dims))]


def _bias_add_kernel(value, bias, *, data_format):
    if data_format == "NCHW" and value.ndim > 2:
        bias = jnp.reshape(bias, (-1,) + (1,) * (value.ndim - 2))
    return value + bias


register_op("BiasAdd", infer=_bias_add_infer, kernel=_bias_add_kernel)


@register_gradient("BiasAdd")
def _bias_add_grad(op, grad):
    attrs = {"data_format": op.get_attr("data_format")}
    return [grad, apply_op("BiasAddGrad", [grad], attrs).outputs[0]]


def _bias_add_grad_infer(op) -> list:
    """BiasAddGrad(out_backprop): the sum over every axis but the channel axis, shape [C]."""
    dy = op.inputs[0]
    rank = dy.shape.rank
    if rank is not None and rank < 2:
        raise ValueError(f"out_backprop must have rank >= 2, got shape {dy.shape}")
    channels = None if rank is None else dy.shape[_channel_axis(rank, op.get_attr("data_format"))]
    return [(dy.dtype, TensorShape([channels]))]


def _bias_add_grad_kernel(out_backprop, *, data_format):
    channel = _channel_axis(out_backprop.ndim, data_format)
    axes = tuple(d for d in range(out_backprop.ndim) if d != channel)
    return jnp.sum(out_backprop, axes, dtype=out_backprop.dtype)


register_op("BiasAddGrad", infer=_bias_add_grad_infer, kernel=_bias_add_grad_kernel)


@register_gradient("BiasAddGrad")
def _bias_add_grad_grad(op, grad):
    """`grad` broadcast along the channel axis: a BiasAdd onto zeros shaped like the input."""
    dy = op.inputs[0]
    zeros = fill_ops.zeros(fill_ops.shape(dy), dy.dtype)
    return [apply_op("BiasAdd", [zeros, grad], op.attrs).outputs[0]]


@export("nn.bias_add")
def bias_add(
    value: Any, bias: Any, data_format: str | None = None, name: str | None = None
) -> Tensor:
    """Adds a 1-D `bias` along the channel dimension of `value`.

    Args:
      value: a Tensor of rank >= 2.
      bias: a 1-D Tensor with one entry per channel, of `value`'s dtype.
      data_format: "NHWC" (channels last, the default) or "NCHW" (channels in dimension 1).
      name: a name for the operation.

    Returns:
      A Tensor like `value`.
    """
    data_format = data_format or "NHWC"
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    value, bias = convert_n([value, bias])
    return apply_op("BiasAdd", [value, bias], {"data_format": data_format}, name).outputs[0]


# -- dropout ------------------------------------------------------------------------------------
def _dropout_apply_infer(op) -> list:
    x, noise, keep_prob = op.inputs
    require_dtype(x, "floating", dtypes.is_floating)
    require_same_dtype(x, noise, keep_prob)
    require_rank(keep_prob, 0, "keep_prob")
    shape = broadcast_or_raise(x, noise)
    if not shape.is_compatible_with(x.shape):
        raise ValueError(f"noise of shape {noise.shape} does not broadcast to x's shape {x.shape}")
    return [(x.dtype, x.shape)]


def _dropout_apply_kernel(x, noise, keep_prob):
    """Keeps `x / keep_prob` where `noise` (uniform in [0, 1)) is below `keep_prob`."""
    return jnp.where(noise < keep_prob, x / keep_prob, jnp.zeros((), x.dtype))


register_op("DropoutApply", infer=_dropout_apply_infer, kernel=_dropout_apply_kernel)


@register_gradient("DropoutApply")
def _dropout_apply_grad(op, grad):
    """Linear in `x`: the gradient is dropped and scaled by the same mask. The kept values are
    `x / keep_prob`, so `keep_prob` gets `-sum(grad * y) / keep_prob` (as in TF1, whose dropout
    divides by it); the noise is a random draw and gets none."""
    _, noise, keep_prob = op.inputs
    dx = apply_op("DropoutApply", [grad, noise, keep_prob]).outputs[0]
    dkeep = -reduction_ops.reduce_sum(grad * op.outputs[0]) / keep_prob
    return [dx, None, dkeep]


def _noise_shape(x: Tensor, noise_shape: Any) -> Any:
    """The shape of the dropout noise: `noise_shape` with None dims taken from `x` (TF2), or the
    shape of `x`; dims not known statically are read from a Shape op."""
    if noise_shape is None:
        if x.shape.is_fully_defined():
            return x.shape.as_list()
        return array_ops.shape(x)
    if isinstance(noise_shape, (list, tuple)) and x.shape.rank == len(noise_shape):
        dims = [x.shape[i] if d is None else d for i, d in enumerate(noise_shape)]
        return [array_ops.shape(x)[i] if d is None else d for i, d in enumerate(dims)]
    return noise_shape


@export("nn.dropout")
def dropout(
    x: Any,
    keep_prob: Any = None,
    noise_shape: Any = None,
    seed: int | None = None,
    name: str | None = None,
    rate: Any = None,
) -> Tensor:
    """Keeps each element of `x` with probability `keep_prob`, scaled by `1 / keep_prob`, and sets
    the others to 0; new choices on every run.

    Args:
      x: a floating Tensor.
      keep_prob: the probability to keep an element, a scalar in (0, 1] (float or Tensor).
      noise_shape: the shape of the keep/drop choices, broadcast to `x`'s shape (e.g.
        `[batch, 1, 1, channels]` drops whole feature maps); None dims are taken from `x`.
      seed: the op seed of the random draw (see `random_ops.get_seed`).
      name: a name for the operation.
      rate: `1 - keep_prob`, the probability to drop; give exactly one of the two.

    Returns:
      A Tensor like `x`.
    """
    if (keep_prob is None) == (rate is None):
        raise ValueError("dropout needs exactly one of keep_prob and rate")
    with graph_lib.name_scope(name, "dropout", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        if rate is not None:
            if isinstance(rate, numbers.Real) and not 0 <= rate < 1:
                raise ValueError(f"rate must be a scalar tensor or a float in [0, 1), got {rate}")
            keep_prob = 1 - rate if isinstance(rate, numbers.Real) else math_ops.subtract(1.0, rate)
        if isinstance(keep_prob, numbers.Real):
            if not 0 < keep_prob <= 1:
                raise ValueError(
                    f"keep_prob must be a scalar tensor or a float in (0, 1], got {keep_prob}"
                )
            if keep_prob == 1:
                return x
        keep_prob = convert_to_tensor(keep_prob, dtype=x.dtype, name="keep_prob")
        if constant_value(keep_prob) == 1:
            return x
        noise = random_ops.random_uniform(_noise_shape(x, noise_shape), seed=seed, dtype=x.dtype)
        return apply_op("DropoutApply", [x, noise, keep_prob], name=scope).outputs[0]
