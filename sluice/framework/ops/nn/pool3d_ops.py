"""3-D pooling ops: MaxPool3D, AvgPool3D and their gradient ops (TF1 `tf.nn.max_pool3d`,
`avg_pool3d`), over "NDHWC" or "NCDHW" volumes.

Attrs (`ksize`, `strides` as 5-lists in `data_format` order, `padding` "SAME" or "VALID") and
output sizes follow TensorFlow (`conv3d_ops`' window rules). AvgPool3D divides each window's
sum by the number of elements it covers inside the input, so padded positions do not count.

The gradient ops are TF's: MaxPool3DGrad(orig_input, orig_output, grad) routes each window's
gradient to the window's maximum (the first in row-major order on ties, as XLA's
select-and-scatter); MaxPool3DGradGrad is its transpose; AvgPool3DGrad(orig_input_shape, grad)
spreads each window's gradient evenly over the input elements it covers. The pooling kernels
are rank-generic (`pool_ops`' `lax.reduce_window` kernels); the gradient kernels are their
`jax.vjp`/`jax.jvp`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array.fill_ops import shape, zeros_like
from sluice.framework.ops.core.array_util import host_ints
from sluice.framework.ops.core.core_ops import apply_op, convert_to_tensor
from sluice.framework.ops.core.shape_rules import require_dtype, require_rank, require_same_dtype
from sluice.framework.ops.nn.conv3d_ops import (
    channel_axis,
    check_format,
    check_padding,
    check_window_attr,
    five_list,
    sizes_shape,
    spatial_axes,
    window_output_shape,
)
from sluice.framework.ops.nn.window_util import run_jitted


def _pool_output_shape(op, x_shape: TensorShape) -> TensorShape:
    data_format = op.get_attr("data_format")
    check_format(data_format)
    ksize = op.get_attr("ksize")
    check_window_attr(ksize, data_format, "ksize")
    check_window_attr(op.get_attr("strides"), data_format, "strides")
    window = [ksize[d] for d in spatial_axes(data_format)]
    channels = x_shape.with_rank(5)[channel_axis(data_format)]
    return window_output_shape(op, x_shape, window, channels)


def _require_pooled(y: Tensor, what: str, expected: TensorShape) -> TensorShape:
    if not expected.is_compatible_with(y.shape):
        raise ValueError(
            f"{what} has shape {y.shape}, but pooling the input gives shape {expected}"
        )
    return expected.merge_with(y.shape)


def _pool_infer(op) -> list:
    x = op.inputs[0]
    require_dtype(x, "floating", dtypes.is_floating)
    require_rank(x, 5, "input")
    return [(x.dtype, _pool_output_shape(op, x.shape))]


# -- MaxPool3D ----------------------------------------------------------------------------------
def _max_pool3d_kernel(value, *, ksize, strides, padding, **_):
    # NumPy initial values, so that JAX sees a max (sum) of windows, which it differentiates,
    # rather than a general windowed reduction, which it cannot
    init = np.array(-np.inf, value.dtype)
    return jax.lax.reduce_window(value, init, jax.lax.max, ksize, strides, padding)


register_op("MaxPool3D", infer=_pool_infer, kernel=_max_pool3d_kernel)


@register_gradient("MaxPool3D")
def _max_pool3d_grad(op, grad):
    return [apply_op("MaxPool3DGrad", [op.inputs[0], op.outputs[0], grad], op.attrs).outputs[0]]


def _max_pool3d_grad_infer(op, out_is_pooled: bool) -> list:
    """MaxPool3DGrad takes a `grad` like orig_output and gives one like orig_input;
    MaxPool3DGradGrad the other way round."""
    x, y, grad = op.inputs
    require_dtype(x, "floating", dtypes.is_floating)
    require_same_dtype(x, y, grad)
    require_rank(x, 5, "orig_input")
    pooled = _require_pooled(y, "orig_output", _pool_output_shape(op, x.shape))
    if not out_is_pooled:
        _require_pooled(grad, "grad", pooled)
        return [(x.dtype, x.shape)]
    if not x.shape.is_compatible_with(grad.shape):
        raise ValueError(f"grad has shape {grad.shape}, but orig_input has shape {x.shape}")
    return [(x.dtype, pooled)]


def _max_pool3d_grad_kernel(orig_input, orig_output, grad, **attrs):
    _, vjp = jax.vjp(lambda x: _max_pool3d_kernel(x, **attrs), orig_input)
    return vjp(grad)[0]


def _max_pool3d_grad_grad_kernel(orig_input, orig_output, grad, **attrs):
    return jax.jvp(lambda x: _max_pool3d_kernel(x, **attrs), (orig_input,), (grad,))[1]


def _through(transpose_type: str):
    """The gradient of MaxPool3DGrad or MaxPool3DGradGrad: each is linear in `grad`, with the
    other as its transpose, and piecewise constant in the pooled input and output (zero)."""

    def gradient(op, grad):
        x, y, _ = op.inputs
        return [
            zeros_like(x),
            zeros_like(y),
            apply_op(transpose_type, [x, y, grad], op.attrs).outputs[0],
        ]

    return gradient


register_op(
    "MaxPool3DGrad",
    infer=lambda op: _max_pool3d_grad_infer(op, out_is_pooled=False),
    kernel=_max_pool3d_grad_kernel,
)
register_gradient("MaxPool3DGrad")(_through("MaxPool3DGradGrad"))
register_op(
    "MaxPool3DGradGrad",
    infer=lambda op: _max_pool3d_grad_infer(op, out_is_pooled=True),
    kernel=_max_pool3d_grad_grad_kernel,
)
register_gradient("MaxPool3DGradGrad")(_through("MaxPool3DGrad"))


# -- AvgPool3D ----------------------------------------------------------------------------------
def _avg_pool3d_kernel(value, *, ksize, strides, padding, data_format, **_):
    zero = np.array(0, value.dtype)
    sums = jax.lax.reduce_window(value, zero, jax.lax.add, ksize, strides, padding)
    axes = spatial_axes(data_format)
    ones = jnp.ones([value.shape[d] if d in axes else 1 for d in range(5)], value.dtype)
    window = [k if d in axes else 1 for d, k in enumerate(ksize)]
    step = [s if d in axes else 1 for d, s in enumerate(strides)]
    counts = jax.lax.reduce_window(ones, zero, jax.lax.add, window, step, padding)
    return sums / counts


register_op("AvgPool3D", infer=_pool_infer, kernel=_avg_pool3d_kernel)


@register_gradient("AvgPool3D")
def _avg_pool3d_grad(op, grad):
    return [apply_op("AvgPool3DGrad", [shape(op.inputs[0]), grad], op.attrs).outputs[0]]


def _avg_pool3d_grad_infer(op) -> list:
    sizes, grad = op.inputs
    require_dtype(grad, "floating", dtypes.is_floating)
    x_shape = sizes_shape(sizes, "orig_input_shape")
    _require_pooled(grad, "grad", _pool_output_shape(op, x_shape))
    return [(grad.dtype, x_shape)]


def _avg_pool3d_transpose(input_shape, grad, **attrs):
    x = jnp.zeros(input_shape, grad.dtype)
    _, vjp = jax.vjp(lambda x: _avg_pool3d_kernel(x, **attrs), x)
    return vjp(grad)[0]


def _avg_pool3d_grad_kernel(orig_input_shape, grad, **attrs):
    input_shape = host_ints(orig_input_shape, "orig_input_shape")
    return run_jitted(_avg_pool3d_transpose, (input_shape,), grad, **attrs)


register_op(
    "AvgPool3DGrad", infer=_avg_pool3d_grad_infer, kernel=_avg_pool3d_grad_kernel,
    host_inputs=(0,),
)  # fmt: skip


@register_gradient("AvgPool3DGrad")
def _avg_pool3d_grad_grad(op, grad):
    return [None, apply_op("AvgPool3D", [grad], op.attrs).outputs[0]]


# -- wrappers -----------------------------------------------------------------------------------
def _pool3d(op_type, input, ksize, strides, padding, data_format, name) -> Tensor:
    check_format(data_format)
    attrs = {
        "ksize": five_list(ksize, data_format, "ksize"),
        "strides": five_list(strides, data_format, "strides"),
        "padding": check_padding(padding),
        "data_format": data_format,
    }
    return apply_op(op_type, [convert_to_tensor(input, name="input")], attrs, name).outputs[0]


@export("nn.max_pool3d")
def max_pool3d(
    input: Any,
    ksize: Any,
    strides: Any,
    padding: str,
    data_format: str = "NDHWC",
    name: str | None = None,
) -> Tensor:
    """The maximum of each [depth, height, width] window of a 5-D `input`.

    Args:
      input: a 5-D floating Tensor, [batch, depth, height, width, channels] for "NDHWC".
      ksize: the window: an int or a list of 1, 3 or 5 ints (1 at batch and channels).
      strides: the window's step, likewise.
      padding: "SAME" (output size ceil(in / stride)) or "VALID".
      data_format: "NDHWC" or "NCDHW".
      name: a name for the operation.

    >>> max_pool3d(sl.ones([1, 4, 4, 4, 2]), 2, 2, "VALID").shape
    TensorShape([1, 2, 2, 2, 2])
    """
    return _pool3d("MaxPool3D", input, ksize, strides, padding, data_format, name)


@export("nn.avg_pool3d")
def avg_pool3d(
    input: Any,
    ksize: Any,
    strides: Any,
    padding: str,
    data_format: str = "NDHWC",
    name: str | None = None,
) -> Tensor:
    """The mean of each [depth, height, width] window of a 5-D `input` (over the window's
    elements inside the input, for "SAME" padding). Arguments as in `max_pool3d`.

    >>> avg_pool3d(sl.ones([1, 3, 3, 3, 1]), 2, 2, "SAME").shape
    TensorShape([1, 2, 2, 2, 1])
    """
    return _pool3d("AvgPool3D", input, ksize, strides, padding, data_format, name)
