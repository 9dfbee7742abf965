"""Depthwise convolution: DepthwiseConv2dNative and its two backprops (TF1
`tf.nn.depthwise_conv2d`, `tf.nn.separable_conv2d`).

The filter is `[height, width, in_channels, channel_multiplier]`; input channel `c` is convolved
with its own `multiplier` filters, giving output channels `c * multiplier + m`. The kernel is
`lax.conv_general_dilated` with `feature_group_count = in_channels` and the filter reshaped to
`[height, width, 1, in_channels * multiplier]`. As for Conv2D (`conv_ops`), the gradient is two
ops of their own whose kernels are the forward kernel's transposes; all three are bilinear.
"""

from __future__ import annotations

from typing import Any

from jax import lax

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array.fill_ops import shape
from sluice.framework.ops.core.array_util import as_int_tensor
from sluice.framework.ops.core.core_ops import apply_op, convert_n
from sluice.framework.ops.core.shape_rules import require_dtype, require_rank, require_same_dtype
from sluice.framework.ops.nn.conv_ops import (
    backprop_filter_kernel,
    backprop_input_kernel,
    conv2d,
)
from sluice.framework.ops.nn.window_util import (
    channel_axis,
    check_format,
    check_window_attr,
    four_list,
    lax_padding,
    merge_dim,
    padding_arg,
    sizes_shape,
    spatial_axes,
    window_output_shape,
)


def _depthwise_shapes(op, x: TensorShape, f: TensorShape, y: TensorShape) -> list[TensorShape]:
    """The shapes of input, filter and output, each completed with what the others say."""
    data_format = op.get_attr("data_format")
    check_format(data_format)
    check_window_attr(op.get_attr("strides"), data_format, "strides")
    check_window_attr(op.get_attr("dilations"), data_format, "dilations")
    c = channel_axis(data_format)
    x, f, y = (s.with_rank(4).as_list() for s in (x, f, y))
    if None not in (x[c], f[2]) and x[c] != f[2]:
        raise ValueError(
            f"{op.type}: input has {x[c]} channels but the filter of shape {TensorShape(f)} "
            f"expects {f[2]} (dimension 2 of [height, width, in_channels, channel_multiplier])"
        )
    x[c] = f[2] = merge_dim(x[c], f[2], "input channels")
    out_channels = None if None in (f[2], f[3]) else f[2] * f[3]
    x[0] = y[0] = merge_dim(x[0], y[0], "batch sizes of input and out_backprop")
    expected = window_output_shape(op, TensorShape(x), f[:2], out_channels)
    if not expected.is_compatible_with(TensorShape(y)):
        raise ValueError(
            f"{op.type}: out_backprop of shape {TensorShape(y)} does not match the output shape "
            f"{expected} for an input of shape {TensorShape(x)} and a filter of shape "
            f"{TensorShape(f)}"
        )
    return [TensorShape(x), TensorShape(f), expected.merge_with(TensorShape(y))]


def _require_floats(*tensors: Tensor) -> None:
    require_dtype(tensors[0], "floating", dtypes.is_floating)
    require_same_dtype(*tensors)


def _depthwise_infer(op) -> list:
    x, w = op.inputs
    _require_floats(x, w)
    require_rank(x, 4, "input")
    require_rank(w, 4, "filter ([height, width, in_channels, channel_multiplier])")
    _, _, y = _depthwise_shapes(op, x.shape, w.shape, TensorShape(None))
    return [(x.dtype, y)]


def _depthwise_kernel(
    input, filter, *, strides, padding, explicit_paddings, dilations, data_format, **_
):
    axes = spatial_axes(data_format)
    height, width, channels, multiplier = filter.shape
    return lax.conv_general_dilated(
        input,
        filter.reshape(height, width, 1, channels * multiplier),
        window_strides=[strides[d] for d in axes],
        padding=lax_padding(padding, explicit_paddings, axes),
        rhs_dilation=[dilations[d] for d in axes],
        dimension_numbers=(data_format, "HWIO", data_format),
        feature_group_count=channels,
    )


register_op("DepthwiseConv2dNative", infer=_depthwise_infer, kernel=_depthwise_kernel)


@register_gradient("DepthwiseConv2dNative")
def _depthwise_grad(op, grad):
    x, w = op.inputs
    return [
        apply_op("DepthwiseConv2dNativeBackpropInput", [shape(x), w, grad], op.attrs).outputs[0],
        apply_op("DepthwiseConv2dNativeBackpropFilter", [x, shape(w), grad], op.attrs).outputs[0],
    ]


def _backprop_input_infer(op) -> list:
    sizes, w, dy = op.inputs
    _require_floats(w, dy)
    require_rank(w, 4, "filter")
    require_rank(dy, 4, "out_backprop")
    x, _, _ = _depthwise_shapes(op, sizes_shape(sizes, "input_sizes"), w.shape, dy.shape)
    return [(dy.dtype, x)]


register_op(
    "DepthwiseConv2dNativeBackpropInput",
    infer=_backprop_input_infer,
    kernel=backprop_input_kernel(_depthwise_kernel),
    host_inputs=(0,),
)


@register_gradient("DepthwiseConv2dNativeBackpropInput")
def _backprop_input_grad(op, grad):
    _, w, dy = op.inputs
    return [
        None,
        apply_op("DepthwiseConv2dNativeBackpropFilter", [grad, shape(w), dy], op.attrs).outputs[0],
        apply_op("DepthwiseConv2dNative", [grad, w], op.attrs).outputs[0],
    ]


def _backprop_filter_infer(op) -> list:
    x, sizes, dy = op.inputs
    _require_floats(x, dy)
    require_rank(x, 4, "input")
    require_rank(dy, 4, "out_backprop")
    _, f, _ = _depthwise_shapes(op, x.shape, sizes_shape(sizes, "filter_sizes"), dy.shape)
    return [(x.dtype, f)]


register_op(
    "DepthwiseConv2dNativeBackpropFilter",
    infer=_backprop_filter_infer,
    kernel=backprop_filter_kernel(_depthwise_kernel),
    host_inputs=(1,),
)


@register_gradient("DepthwiseConv2dNativeBackpropFilter")
def _backprop_filter_grad(op, grad):
    x, _, dy = op.inputs
    return [
        apply_op("DepthwiseConv2dNativeBackpropInput", [shape(x), grad, dy], op.attrs).outputs[0],
        None,
        apply_op("DepthwiseConv2dNative", [x, grad], op.attrs).outputs[0],
    ]


def _depthwise_attrs(strides, padding, data_format, dilations) -> dict:
    data_format = data_format or "NHWC"
    check_format(data_format)
    padding, explicit = padding_arg(padding)
    return {
        "strides": four_list(strides, data_format, "strides"),
        "padding": padding,
        "explicit_paddings": explicit,
        "dilations": four_list(dilations, data_format, "dilations"),
        "data_format": data_format,
    }


def _rate_as_dilations(rate: Any, dilations: Any, strides: list[int], what: str) -> Any:
    """TF1's `rate` (the atrous rate, [rate_height, rate_width]) as the op's dilations."""
    if rate is None:
        return dilations
    if dilations is not None:
        raise ValueError(f"{what}: give at most one of rate and dilations")
    rate = [int(rate)] * 2 if isinstance(rate, int) else [int(r) for r in rate]
    if len(rate) != 2:
        raise ValueError(f"{what}: rate must be an int or 2 ints, got {rate}")
    if max(rate) > 1 and max(strides) > 1:
        raise ValueError(
            f"{what}: strides > 1 are not supported with rate > 1 (got strides "
            f"{strides}, rate {rate})"
        )
    return rate


@export("nn.depthwise_conv2d_native")
def depthwise_conv2d_native(
    input: Any,
    filter: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    dilations: Any = (1, 1, 1, 1),
    name: str | None = None,
) -> Tensor:
    """The DepthwiseConv2dNative op (TF1 `tf.nn.depthwise_conv2d_native`); see
    `depthwise_conv2d`."""
    attrs = _depthwise_attrs(strides, padding, data_format, dilations)
    x, w = convert_n([input, filter])
    return apply_op("DepthwiseConv2dNative", [x, w], attrs, name).outputs[0]


@export("nn.depthwise_conv2d")
def depthwise_conv2d(
    input: Any,
    filter: Any,
    strides: Any,
    padding: Any,
    rate: Any = None,
    name: str | None = None,
    data_format: str | None = None,
    dilations: Any = None,
) -> Tensor:
    """Convolves each input channel with its own `channel_multiplier` filters (TF1
    `tf.nn.depthwise_conv2d`): output channel `c * multiplier + m` is input channel `c`
    convolved with `filter[:, :, c, m]`.

    Args:
      input: a 4-D floating Tensor.
      filter: `[height, width, in_channels, channel_multiplier]`.
      strides: 4 ints (or 1 or 2), the window step.
      padding: "SAME", "VALID" or explicit pairs.
      rate: the atrous rate, an int or [rate_height, rate_width] (strides must then be 1).
      name: a name for the operation.
      data_format: "NHWC" (default) or "NCHW".
      dilations: the spatial dilation (an alias of rate).

    Returns:
      A 4-D Tensor with `in_channels * channel_multiplier` channels.

    >>> x = sl.ones([1, 4, 4, 2])
    >>> depthwise_conv2d(x, sl.ones([3, 3, 2, 3]), [1, 1, 1, 1], "VALID").shape
    TensorShape([1, 2, 2, 6])
    """
    fmt = data_format or "NHWC"
    dilations = _rate_as_dilations(
        rate, dilations, four_list(strides, fmt, "strides"), "depthwise_conv2d"
    )
    with graph_lib.name_scope(name, "depthwise", [input, filter]) as scope:
        return depthwise_conv2d_native(input, filter, strides, padding, fmt, dilations, name=scope)


@export("nn.separable_conv2d")
def separable_conv2d(
    input: Any,
    depthwise_filter: Any,
    pointwise_filter: Any,
    strides: Any,
    padding: Any,
    rate: Any = None,
    name: str | None = None,
    data_format: str | None = None,
    dilations: Any = None,
) -> Tensor:
    """A depthwise convolution followed by a 1x1 convolution mixing the channels (TF1
    `tf.nn.separable_conv2d`).

    Args:
      input: a 4-D floating Tensor.
      depthwise_filter: `[height, width, in_channels, channel_multiplier]`.
      pointwise_filter: `[1, 1, in_channels * channel_multiplier, out_channels]`.
      strides, padding, rate, data_format, dilations: of the depthwise step, as
        `depthwise_conv2d`.
      name: the name scope.

    Returns:
      A 4-D Tensor with `out_channels` channels.

    Raises:
      ValueError: the pointwise filter is not 1x1, or its input channels do not match.
    """
    fmt = data_format or "NHWC"
    with graph_lib.name_scope(
        name, "separable_conv2d", [input, depthwise_filter, pointwise_filter]
    ) as scope:
        x, dw, pw = convert_n([input, depthwise_filter, pointwise_filter])
        require_rank(dw, 4, "depthwise_filter")
        require_rank(pw, 4, "pointwise_filter")
        if pw.shape.rank == 4 and (pw.shape[0] not in (None, 1) or pw.shape[1] not in (None, 1)):
            raise ValueError(
                f"separable_conv2d: pointwise_filter must be [1, 1, in, out], got {pw.shape}"
            )
        channels = (
            None
            if dw.shape.rank is None or None in dw.shape.as_list()[2:]
            else (dw.shape[2] * dw.shape[3])
        )
        if pw.shape.rank == 4 and None not in (channels, pw.shape[2]) and channels != pw.shape[2]:
            raise ValueError(
                f"separable_conv2d: pointwise_filter of shape {pw.shape} must take "
                f"in_channels * channel_multiplier = {channels} channels (depthwise_filter of "
                f"shape {dw.shape})"
            )
        depthwise = depthwise_conv2d(
            x,
            dw,
            strides,
            padding,
            rate=rate,
            name="depthwise",
            data_format=fmt,
            dilations=dilations,
        )
        return conv2d(depthwise, pw, [1, 1, 1, 1], "VALID", data_format=fmt, name=scope)


@export("nn.depthwise_conv2d_native_backprop_input")
def depthwise_conv2d_native_backprop_input(
    input_sizes: Any,
    filter: Any,
    out_backprop: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    dilations: Any = (1, 1, 1, 1),
    name: str | None = None,
) -> Tensor:
    """The gradient of `depthwise_conv2d_native` with respect to its input."""
    attrs = _depthwise_attrs(strides, padding, data_format, dilations)
    sizes = as_int_tensor(input_sizes, "input_sizes")
    w, dy = convert_n([filter, out_backprop])
    return apply_op("DepthwiseConv2dNativeBackpropInput", [sizes, w, dy], attrs, name).outputs[0]


@export("nn.depthwise_conv2d_native_backprop_filter")
def depthwise_conv2d_native_backprop_filter(
    input: Any,
    filter_sizes: Any,
    out_backprop: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    dilations: Any = (1, 1, 1, 1),
    name: str | None = None,
) -> Tensor:
    """The gradient of `depthwise_conv2d_native` with respect to its filter."""
    attrs = _depthwise_attrs(strides, padding, data_format, dilations)
    sizes = as_int_tensor(filter_sizes, "filter_sizes")
    x, dy = convert_n([input, out_backprop])
    return apply_op("DepthwiseConv2dNativeBackpropFilter", [x, sizes, dy], attrs, name).outputs[0]
