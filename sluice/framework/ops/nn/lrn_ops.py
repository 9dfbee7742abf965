"""Local response normalization: LRN and LRNGrad (TF1 `tf.nn.lrn`, `local_response_normalization`).

    sqr_sum[a, b, c, d] = sum(input[a, b, c, d - depth_radius : d + depth_radius + 1] ** 2)
    output = input / (bias + alpha * sqr_sum) ** beta

over the last (channel) axis of a 4-D input. As in TF1, the gradient is an op of its own,
LRNGrad(input_grads, input_image, output_image), whose kernel is the transpose of LRN's
(`jax.vjp`); TF1 registers no gradient for LRNGrad, nor does sluice.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable, register_gradient, register_op
from sluice.framework.ops.core.core_ops import apply_op, convert_to_tensor
from sluice.framework.ops.core.shape_rules import require_dtype, require_rank, require_same_dtype


def _lrn_infer(op) -> list:
    x = op.inputs[0]
    require_dtype(x, "floating (half, bfloat16 or float)", dtypes.is_floating)
    require_rank(x, 4, "input (LRN normalizes the last axis of a 4-D tensor)")
    return [(x.dtype, x.shape)]


def _lrn_kernel(input, *, depth_radius, bias, alpha, beta):
    channels = input.shape[-1]
    squares = jnp.pad(jnp.square(input), [(0, 0)] * 3 + [(depth_radius, depth_radius)])
    sqr_sum = sum(squares[..., k : k + channels] for k in range(2 * depth_radius + 1))
    return input / (bias + alpha * sqr_sum) ** beta


register_op("LRN", infer=_lrn_infer, kernel=_lrn_kernel)


@register_gradient("LRN")
def _lrn_grad(op, grad):
    x, y = op.inputs[0], op.outputs[0]
    return [apply_op("LRNGrad", [grad, x, y], op.attrs).outputs[0]]


def _lrn_grad_infer(op) -> list:
    grads, x, y = op.inputs
    require_same_dtype(grads, x, y)
    for what, t in (("input_grads", grads), ("input_image", x), ("output_image", y)):
        require_rank(t, 4, what)
    shape = grads.shape.merge_with(x.shape).merge_with(y.shape)
    return [(x.dtype, shape)]


def _lrn_grad_kernel(input_grads, input_image, output_image, **attrs):
    _, vjp = jax.vjp(lambda x: _lrn_kernel(x, **attrs), input_image)
    return vjp(input_grads)[0]


register_op("LRNGrad", infer=_lrn_grad_infer, kernel=_lrn_grad_kernel)
not_differentiable("LRNGrad")


@export("nn.local_response_normalization", "nn.lrn")
def local_response_normalization(
    input: Any,
    depth_radius: int = 5,
    bias: float = 1.0,
    alpha: float = 1.0,
    beta: float = 0.5,
    name: str | None = None,
) -> Tensor:
    """Local response normalization across channels (TF1 `tf.nn.lrn`), see the module text.

    Args:
      input: a 4-D floating Tensor, channels last.
      depth_radius: the half-width of the channel window.
      bias, alpha, beta: the offset, scale and exponent of the normalizer.
      name: a name for the operation.

    Returns:
      A Tensor like `input`.

    Raises:
      ValueError: `input` is not 4-D, or `depth_radius` is negative.
    """
    if int(depth_radius) < 0:
        raise ValueError(f"LRN: depth_radius must be non-negative, got {depth_radius}")
    x = convert_to_tensor(input, name="input")
    attrs = {
        "depth_radius": int(depth_radius),
        "bias": float(bias),
        "alpha": float(alpha),
        "beta": float(beta),
    }
    return apply_op("LRN", [x], attrs, name).outputs[0]


lrn = local_response_normalization
