"""Pooling ops: MaxPool, AvgPool and their gradient ops (TF1 `tf.nn.max_pool`, `avg_pool`).

Attrs (`ksize`, `strides`, `padding`, `data_format`) and output sizes follow TensorFlow (see
`window_util`). AvgPool divides each window's sum by the number of elements it covers inside the
input, so padded positions do not count (TF).

The gradient ops are TF's: MaxPoolGrad(orig_input, orig_output, grad) routes each window's
gradient to the window's maximum (the first one in row-major order on ties, as TF's CPU kernel
and XLA's select-and-scatter do); MaxPoolGradGrad is its transpose (it picks the gradient at each
window's maximum); AvgPoolGrad(orig_input_shape, grad) spreads each window's gradient evenly over
the input elements it covers. Their kernels are `jax.vjp`/`jax.jvp` of the forward kernels.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array.fill_ops import shape, zeros_like
from sluice.framework.ops.core.array_util import host_ints
from sluice.framework.ops.core.core_ops import apply_op, convert_to_tensor
from sluice.framework.ops.core.shape_rules import require_dtype, require_rank, require_same_dtype
from sluice.framework.ops.nn.window_util import (
    PADDINGS,
    channel_axis,
    check_format,
    check_window_attr,
    four_list,
    run_jitted,
    sizes_shape,
    spatial_axes,
    window_output_shape,
)


def _real(dtype) -> bool:
    return dtypes.is_floating(dtype) or dtypes.is_integer(dtype)


def _pool_output_shape(op, x_shape: TensorShape) -> TensorShape:
    """The output shape of pooling an input of `x_shape` with `op`'s attrs."""
    data_format = op.get_attr("data_format")
    check_format(data_format)
    ksize = op.get_attr("ksize")
    check_window_attr(ksize, data_format, "ksize")
    check_window_attr(op.get_attr("strides"), data_format, "strides")
    window = [ksize[d] for d in spatial_axes(data_format)]
    channels = x_shape.with_rank(4)[channel_axis(data_format)]
    return window_output_shape(op, x_shape, window, channels)


def _require_pooled(y: Tensor, what: str, expected: TensorShape) -> TensorShape:
    """Checks that `y` has the pooling output's shape `expected`; returns the merged shape."""
    if not expected.is_compatible_with(y.shape):
        raise ValueError(
            f"{what} has shape {y.shape}, but pooling the input gives shape {expected}"
        )
    return expected.merge_with(y.shape)


def _pool_infer(op, what: str, predicate) -> list:
    x = op.inputs[0]
    require_dtype(x, what, predicate)
    require_rank(x, 4, "input")
    return [(x.dtype, _pool_output_shape(op, x.shape))]


# -- MaxPool ------------------------------------------------------------------------------------
# The initial values are NumPy scalars, so that JAX sees a max (sum) of windows, which it can
# differentiate, rather than a general windowed reduction, which it cannot.
def _max_pool_kernel(value, *, ksize, strides, padding, **_):
    if jnp.issubdtype(value.dtype, jnp.floating):
        lowest = -np.inf
    else:
        lowest = np.iinfo(value.dtype).min
    init = np.array(lowest, value.dtype)
    return lax.reduce_window(value, init, lax.max, ksize, strides, padding)


register_op(
    "MaxPool", infer=lambda op: _pool_infer(op, "real-valued", _real), kernel=_max_pool_kernel
)


@register_gradient("MaxPool")
def _max_pool_grad(op, grad):
    return [apply_op("MaxPoolGrad", [op.inputs[0], op.outputs[0], grad], op.attrs).outputs[0]]


def _max_pool_grad_infer(op, out_is_pooled: bool) -> list:
    """MaxPoolGrad and MaxPoolGradGrad: (orig_input, orig_output, grad). MaxPoolGrad takes a
    `grad` like orig_output and gives one like orig_input; MaxPoolGradGrad the other way round."""
    x, y, grad = op.inputs
    require_dtype(x, "floating", dtypes.is_floating)
    require_same_dtype(x, y, grad)
    require_rank(x, 4, "orig_input")
    pooled = _require_pooled(y, "orig_output", _pool_output_shape(op, x.shape))
    if not out_is_pooled:
        _require_pooled(grad, "grad", pooled)
        return [(x.dtype, x.shape)]
    if not x.shape.is_compatible_with(grad.shape):
        raise ValueError(f"grad has shape {grad.shape}, but orig_input has shape {x.shape}")
    return [(x.dtype, pooled)]


def _max_pool_grad_kernel(orig_input, orig_output, grad, **attrs):
    _, vjp = jax.vjp(lambda x: _max_pool_kernel(x, **attrs), orig_input)
    return vjp(grad)[0]


register_op(
    "MaxPoolGrad",
    infer=lambda op: _max_pool_grad_infer(op, out_is_pooled=False),
    kernel=_max_pool_grad_kernel,
)


def _through(transpose_type: str):
    """The gradient of MaxPoolGrad or MaxPoolGradGrad: each is linear in `grad`, with the other as
    its transpose, and piecewise constant in the pooled input and output (zero, as in TF)."""

    def gradient(op, grad):
        x, y, _ = op.inputs
        return [
            zeros_like(x),
            zeros_like(y),
            apply_op(transpose_type, [x, y, grad], op.attrs).outputs[0],
        ]

    return gradient


register_gradient("MaxPoolGrad")(_through("MaxPoolGradGrad"))


def _max_pool_grad_grad_kernel(orig_input, orig_output, grad, **attrs):
    return jax.jvp(lambda x: _max_pool_kernel(x, **attrs), (orig_input,), (grad,))[1]


register_op(
    "MaxPoolGradGrad",
    infer=lambda op: _max_pool_grad_infer(op, out_is_pooled=True),
    kernel=_max_pool_grad_grad_kernel,
)


register_gradient("MaxPoolGradGrad")(_through("MaxPoolGrad"))


# -- AvgPool ------------------------------------------------------------------------------------
def _avg_pool_kernel(value, *, ksize, strides, padding, data_format, **_):
    zero = np.array(0, value.dtype)
    sums = lax.reduce_window(value, zero, lax.add, ksize, strides, padding)
    axes = spatial_axes(data_format)
    ones = jnp.ones([value.shape[d] if d in axes else 1 for d in range(4)], value.dtype)
    window = [k if d in axes else 1 for d, k in enumerate(ksize)]
    step = [s if d in axes else 1 for d, s in enumerate(strides)]
    counts = lax.reduce_window(ones, zero, lax.add, window, step, padding)
    return sums / counts


register_op(
    "AvgPool",
    infer=lambda op: _pool_infer(op, "floating", dtypes.is_floating),
    kernel=_avg_pool_kernel,
)


@register_gradient("AvgPool")
def _avg_pool_grad(op, grad):
    x = op.inputs[0]
    return [apply_op("AvgPoolGrad", [shape(x), grad], op.attrs).outputs[0]]


def _avg_pool_grad_infer(op) -> list:
    sizes, grad = op.inputs
    require_dtype(grad, "floating", dtypes.is_floating)
    x_shape = sizes_shape(sizes, "orig_input_shape")
    _require_pooled(grad, "grad", _pool_output_shape(op, x_shape))
    return [(grad.dtype, x_shape)]


def _avg_pool_transpose(input_shape, grad, **attrs):
    x = jnp.zeros(input_shape, grad.dtype)
    _, vjp = jax.vjp(lambda x: _avg_pool_kernel(x, **attrs), x)
    return vjp(grad)[0]


def _avg_pool_grad_kernel(orig_input_shape, grad, **attrs):
    input_shape = host_ints(orig_input_shape, "orig_input_shape")
    return run_jitted(_avg_pool_transpose, (input_shape,), grad, **attrs)


register_op(
    "AvgPoolGrad", infer=_avg_pool_grad_infer, kernel=_avg_pool_grad_kernel, host_inputs=(0,)
)


@register_gradient("AvgPoolGrad")
def _avg_pool_grad_grad(op, grad):
    return [None, apply_op("AvgPool", [grad], op.attrs).outputs[0]]


# -- wrappers -----------------------------------------------------------------------------------
def _pool(op_type, value, ksize, strides, padding, data_format, name) -> Tensor:
    check_format(data_format)
    if isinstance(padding, (list, tuple)) or padding not in PADDINGS:
        raise ValueError(f"padding must be 'SAME' or 'VALID', got {padding!r}")
    attrs = {
        "ksize": four_list(ksize, data_format, "ksize"),
        "strides": four_list(strides, data_format, "strides"),
        "padding": padding,
        "data_format": data_format,
    }
    return apply_op(op_type, [convert_to_tensor(value, name="input")], attrs, name).outputs[0]


@export("nn.max_pool")
def max_pool(
    value: Any,
    ksize: Any,
    strides: Any,
    padding: str,
    data_format: str = "NHWC",
    name: str | None = None,
    input: Any = None,
) -> Tensor:
    """The maximum over each window of a 4-D `value` (TF1 `tf.nn.max_pool`).

    Args:
      value: a 4-D Tensor in `data_format` (`input` is an alias).
      ksize: the window size, an int or a list of 1, 2 or 4 ints.
      strides: the window step, an int or a list of 1, 2 or 4 ints.
      padding: "SAME" (padded positions never win) or "VALID".
      data_format: "NHWC" or "NCHW".
      name: a name for the operation.

    Returns:
      A 4-D Tensor of `value`'s dtype.
    """
    value = input if value is None else value
    return _pool("MaxPool", value, ksize, strides, padding, data_format, name)


@export("nn.max_pool2d")
def max_pool2d(
    input: Any,
    ksize: Any,
    strides: Any,
    padding: str,
    data_format: str = "NHWC",
    name: str | None = None,
) -> Tensor:
    """`max_pool` with TF2's argument names."""
    return _pool("MaxPool", input, ksize, strides, padding, data_format, name)


@export("nn.avg_pool")
def avg_pool(
    value: Any,
    ksize: Any,
    strides: Any,
    padding: str,
    data_format: str = "NHWC",
    name: str | None = None,
    input: Any = None,
) -> Tensor:
    """The mean over each window of a 4-D floating `value` (TF1 `tf.nn.avg_pool`); with "SAME"
    padding each window's mean is over its elements inside `value` only. Arguments as in
    `max_pool`."""
    value = input if value is None else value
    return _pool("AvgPool", value, ksize, strides, padding, data_format, name)


@export("nn.avg_pool2d")
def avg_pool2d(
    input: Any,
    ksize: Any,
    strides: Any,
    padding: str,
    data_format: str = "NHWC",
    name: str | None = None,
) -> Tensor:
    """`avg_pool` with TF2's argument names."""
    return _pool("AvgPool", input, ksize, strides, padding, data_format, name)
