"""Convolution ops: Conv2D and its two backprops (TF1 `tf.nn.conv2d`, `conv2d_transpose`, ...).

Attrs, padding and output sizes follow TensorFlow (see `window_util`). As in TF, the gradient of
Conv2D is two ops of their own, Conv2DBackpropInput (`input_sizes`, `filter`, `out_backprop`) and
Conv2DBackpropFilter (`input`, `filter_sizes`, `out_backprop`), which carry Conv2D's attrs and
read the shape they produce from a host input. Their kernels are the transposes of Conv2D's
(`jax.vjp`); all three ops are bilinear, so each one's gradient is built from the other two.

Pooling lives in `pool_ops`; its wrappers are re-exported here for older imports.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array.fill_ops import shape
from sluice.framework.ops.core.array_util import as_int_tensor, host_ints
from sluice.framework.ops.core.core_ops import apply_op, convert_n
from sluice.framework.ops.core.shape_rules import require_dtype, require_rank, require_same_dtype
from sluice.framework.ops.nn.window_util import (
    channel_axis,
    check_format,
    check_window_attr,
    four_list,
    lax_padding,
    merge_dim,
    padding_arg,
    run_jitted,
    sizes_shape,
    spatial_axes,
    window_output_shape,
)


# -- shared shape rule --------------------------------------------------------------------------
def _conv_shapes(op, x: TensorShape, f: TensorShape, y: TensorShape) -> list[TensorShape]:
    """The shapes of a convolution's input `x`, filter `f` and output `y`, each completed with
    what the others say; raises where they disagree."""
    data_format = op.get_attr("data_format")
    check_format(data_format)
    check_window_attr(op.get_attr("strides"), data_format, "strides")
    check_window_attr(op.get_attr("dilations"), data_format, "dilations")
    c = channel_axis(data_format)
    x, f, y = (s.with_rank(4).as_list() for s in (x, f, y))
    if None not in (x[c], f[2]) and x[c] != f[2]:
        raise ValueError(
            f"input has {x[c]} channels but the filter of shape {TensorShape(f)} expects {f[2]} "
            "(its dimension 2 must equal the input's channel count)"
        )
    x[c] = f[2] = merge_dim(x[c], f[2], "input channels")
    if None not in (y[c], f[3]) and y[c] != f[3]:
        raise ValueError(
            f"out_backprop has {y[c]} channels but the filter of shape {TensorShape(f)} has "
            f"{f[3]} output channels (its dimension 3)"
        )
    y[c] = f[3] = merge_dim(y[c], f[3], "output channels")
    x[0] = y[0] = merge_dim(x[0], y[0], "batch sizes of input and out_backprop")
    expected = window_output_shape(op, TensorShape(x), f[:2], f[3])
    if not expected.is_compatible_with(TensorShape(y)):
        raise ValueError(
            f"out_backprop of shape {TensorShape(y)} does not match the convolution's output "
            f"shape {expected} for an input of shape {TensorShape(x)} and a filter of shape "
            f"{TensorShape(f)}"
        )
    return [TensorShape(x), TensorShape(f), expected.merge_with(TensorShape(y))]


def _require_floats(*tensors: Tensor) -> None:
    require_dtype(tensors[0], "floating", dtypes.is_floating)
    require_same_dtype(*tensors)


# -- Conv2D -------------------------------------------------------------------------------------
def _conv2d_infer(op) -> list:
    x, filters = op.inputs
    _require_floats(x, filters)
    require_rank(x, 4, "input")
    require_rank(filters, 4, "filter ([height, width, in_channels, out_channels])")
    _, _, y = _conv_shapes(op, x.shape, filters.shape, TensorShape(None))
    return [(x.dtype, y)]


def _conv2d_kernel(
    input, filter, *, strides, padding, explicit_paddings, dilations, data_format, **_
):
    axes = spatial_axes(data_format)
    return lax.conv_general_dilated(
        input,
        filter,
        window_strides=[strides[d] for d in axes],
        padding=lax_padding(padding, explicit_paddings, axes),
        rhs_dilation=[dilations[d] for d in axes],
        dimension_numbers=(data_format, "HWIO", data_format),
    )


register_op("Conv2D", infer=_conv2d_infer, kernel=_conv2d_kernel)


@register_gradient("Conv2D")
def _conv2d_grad(op, grad):
    x, w = op.inputs
    return [
        apply_op("Conv2DBackpropInput", [shape(x), w, grad], op.attrs).outputs[0],
        apply_op("Conv2DBackpropFilter", [x, shape(w), grad], op.attrs).outputs[0],
    ]


def _conv_attrs(strides, padding, use_cudnn_on_gpu, data_format, dilations) -> dict:
    if strides is None or padding is None:
        raise ValueError("a convolution needs strides and padding")
    check_format(data_format)
    padding, explicit = padding_arg(padding)
    return {
        "strides": four_list(strides, data_format, "strides"),
        "padding": padding,
        "explicit_paddings": explicit,
        "dilations": four_list(dilations, data_format, "dilations"),
        "data_format": data_format,
        "use_cudnn_on_gpu": bool(use_cudnn_on_gpu),
    }


def _one_of(a: Any, b: Any, what: str) -> Any:
    if (a is None) == (b is None):
        raise ValueError(f"give exactly one of {what}")
    return a if a is not None else b


@export("nn.conv2d")
def conv2d(
    input: Any,
    filter: Any = None,
    strides: Any = None,
    padding: Any = None,
    use_cudnn_on_gpu: bool = True,
    data_format: str = "NHWC",
    dilations: Any = (1, 1, 1, 1),
    name: str | None = None,
    filters: Any = None,
) -> Tensor:
    """2-D convolution (cross-correlation, as in TF) of `input` with `filter`.

    Args:
      input: a 4-D floating Tensor, `[batch, height, width, channels]` for "NHWC".
      filter: `[filter_height, filter_width, in_channels, out_channels]` (`filters` is an alias).
      strides: an int or a list of 1, 2 or 4 ints, the window step per dimension.
      padding: "SAME", "VALID", or 4 [before, after] pairs in `data_format` order.
      use_cudnn_on_gpu: ignored (kept for TF1 signatures).
      data_format: "NHWC" or "NCHW".
      dilations: an int or a list of 1, 2 or 4 ints, the filter's dilation per dimension.
      name: a name for the operation.

    Returns:
      A 4-D Tensor in `data_format` with `out_channels` channels.

    >>> images = sl.placeholder(sl.float32, [8, 28, 28, 3])  # [n, h, w, c]
    >>> kernel = sl.ones([5, 5, 3, 16])                       # [height, width, c, k]
    >>> conv2d(images, kernel, strides=1, padding="SAME").shape  # [n, h, w, k]
    TensorShape([8, 28, 28, 16])
    """
    w = _one_of(filter, filters, "filter and filters (conv2d)")
    attrs = _conv_attrs(strides, padding, use_cudnn_on_gpu, data_format, dilations)
    x, w = convert_n([input, w])
    return apply_op("Conv2D", [x, w], attrs, name).outputs[0]


# -- Conv2DBackpropInput ------------------------------------------------------------------------
def _backprop_input_infer(op) -> list:
    input_sizes, filters, out_backprop = op.inputs
    _require_floats(filters, out_backprop)
    require_rank(filters, 4, "filter")
    require_rank(out_backprop, 4, "out_backprop")
    x_shape = sizes_shape(input_sizes, "input_sizes")
    x, _, _ = _conv_shapes(op, x_shape, filters.shape, out_backprop.shape)
    return [(out_backprop.dtype, x)]


def _input_transpose(conv, input_shape, filter, out_backprop, **attrs):
    x = jnp.zeros(input_shape, out_backprop.dtype)
    _, vjp = jax.vjp(lambda x: conv(x, filter, **attrs), x)
    return vjp(out_backprop)[0]


def backprop_input_kernel(conv):
    """Conv2DBackpropInput's kernel as the transpose of the forward kernel `conv`."""

    def kernel(input_sizes, filter, out_backprop, **attrs):
        input_shape = host_ints(input_sizes, "input_sizes")
        return run_jitted(_input_transpose, (conv, input_shape), filter, out_backprop, **attrs)

    return kernel


_backprop_input_kernel = backprop_input_kernel(_conv2d_kernel)


register_op(
    "Conv2DBackpropInput",
    infer=_backprop_input_infer,
    kernel=_backprop_input_kernel,
    host_inputs=(0,),
)


@register_gradient("Conv2DBackpropInput")
def _backprop_input_grad(op, grad):
    _, w, dy = op.inputs
    return [
        None,
        apply_op("Conv2DBackpropFilter", [grad, shape(w), dy], op.attrs).outputs[0],
        apply_op("Conv2D", [grad, w], op.attrs).outputs[0],
    ]


@export("nn.conv2d_backprop_input")
def conv2d_backprop_input(
    input_sizes: Any,
    filter: Any = None,
    out_backprop: Any = None,
    strides: Any = None,
    padding: Any = None,
    use_cudnn_on_gpu: bool = True,
    data_format: str = "NHWC",
    dilations: Any = (1, 1, 1, 1),
    name: str | None = None,
    filters: Any = None,
) -> Tensor:
    """The gradient of `conv2d` with respect to its input.

    Args:
      input_sizes: the input's shape, 4 ints (a list or an int32 Tensor).
      filter: the convolution's filter (`filters` is an alias).
      out_backprop: the gradient with respect to the convolution's output.
      strides, padding, use_cudnn_on_gpu, data_format, dilations: as in `conv2d`.
      name: a name for the operation.

    Returns:
      A Tensor of shape `input_sizes`, of `out_backprop`'s dtype.
    """
    w = _one_of(filter, filters, "filter and filters (conv2d_backprop_input)")
    attrs = _conv_attrs(strides, padding, use_cudnn_on_gpu, data_format, dilations)
    sizes = as_int_tensor(input_sizes, "input_sizes")
    w, dy = convert_n([w, out_backprop])
    return apply_op("Conv2DBackpropInput", [sizes, w, dy], attrs, name).outputs[0]


@export("nn.conv2d_transpose")
def conv2d_transpose(
    value: Any = None,
    filter: Any = None,
    output_shape: Any = None,
    strides: Any = None,
    padding: Any = "SAME",
    data_format: str = "NHWC",
    name: str | None = None,
    input: Any = None,
    filters: Any = None,
    dilations: Any = None,
) -> Tensor:
    """The transpose of `conv2d` (a "deconvolution"): `conv2d_backprop_input` of `value`.

    Args:
      value: a 4-D Tensor of `out_channels` channels (`input` is an alias).
      filter: `[height, width, output_channels, in_channels]` (`filters` is an alias).
      output_shape: the result's shape, 4 ints (a list or an int32 Tensor).
      strides, padding, data_format, dilations: as in `conv2d`.
      name: a name for the operation.

    Returns:
      A Tensor of shape `output_shape`.
    """
    return conv2d_backprop_input(
        output_shape,
        _one_of(filter, filters, "filter and filters (conv2d_transpose)"),
        _one_of(value, input, "value and input (conv2d_transpose)"),
        strides,
        padding,
        data_format=data_format,
        dilations=dilations,
        name=name,
    )


# -- Conv2DBackpropFilter -----------------------------------------------------------------------
def _backprop_filter_infer(op) -> list:
    x, filter_sizes, out_backprop = op.inputs
    _require_floats(x, out_backprop)
    require_rank(x, 4, "input")
    require_rank(out_backprop, 4, "out_backprop")
    f_shape = sizes_shape(filter_sizes, "filter_sizes")
    _, f, _ = _conv_shapes(op, x.shape, f_shape, out_backprop.shape)
    return [(x.dtype, f)]


def _filter_transpose(conv, filter_shape, input, out_backprop, **attrs):
    w = jnp.zeros(filter_shape, out_backprop.dtype)
    _, vjp = jax.vjp(lambda w: conv(input, w, **attrs), w)
    return vjp(out_backprop)[0]


def backprop_filter_kernel(conv):
    """Conv2DBackpropFilter's kernel as the transpose of the forward kernel `conv`."""

    def kernel(input, filter_sizes, out_backprop, **attrs):
        filter_shape = host_ints(filter_sizes, "filter_sizes")
        return run_jitted(_filter_transpose, (conv, filter_shape), input, out_backprop, **attrs)

    return kernel


_backprop_filter_kernel = backprop_filter_kernel(_conv2d_kernel)


register_op(
    "Conv2DBackpropFilter",
    infer=_backprop_filter_infer,
    kernel=_backprop_filter_kernel,
    host_inputs=(1,),
)


@register_gradient("Conv2DBackpropFilter")
def _backprop_filter_grad(op, grad):
    x, _, dy = op.inputs
    return [
        apply_op("Conv2DBackpropInput", [shape(x), grad, dy], op.attrs).outputs[0],
        None,
        apply_op("Conv2D", [x, grad], op.attrs).outputs[0],
    ]


@export("nn.conv2d_backprop_filter")
def conv2d_backprop_filter(
    input: Any,
    filter_sizes: Any,
    out_backprop: Any,
    strides: Any,
    padding: Any,
    use_cudnn_on_gpu: bool = True,
    data_format: str = "NHWC",
    dilations: Any = (1, 1, 1, 1),
    name: str | None = None,
) -> Tensor:
    """The gradient of `conv2d` with respect to its filter.

    Args:
      input: the convolution's input.
      filter_sizes: the filter's shape, 4 ints (a list or an int32 Tensor).
      out_backprop: the gradient with respect to the convolution's output.
      strides, padding, use_cudnn_on_gpu, data_format, dilations: as in `conv2d`.
      name: a name for the operation.

    Returns:
      A Tensor of shape `filter_sizes`, of `input`'s dtype.
    """
    attrs = _conv_attrs(strides, padding, use_cudnn_on_gpu, data_format, dilations)
    sizes = as_int_tensor(filter_sizes, "filter_sizes")
    x, dy = convert_n([input, out_backprop])
    return apply_op("Conv2DBackpropFilter", [x, sizes, dy], attrs, name).outputs[0]
