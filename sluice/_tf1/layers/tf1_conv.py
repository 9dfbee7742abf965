"""TF1's functional convolution layers: `sl.layers.conv1d`, `conv2d`, `conv2d_transpose`,
`separable_conv2d` (TF 1.15's `tf.layers.*`; the pooling ones are in `tf1_pooling`). Scopes,
weight names and defaults: see `tf1_base`.

Padding is 'valid' or 'same' in any case ('causal' too for `conv1d`); `data_format` is
'channels_last' (default) or 'channels_first'. Kernels are `kernel_size + (in, filters)` as in
TF1 (`kernel_size + (filters, in)` for the transpose). `conv1d` and `conv2d` run the convolution
and bias of Keras's Conv1D/Conv2D (`convolve`, `add_bias` in sluice/_keras/layers/convolutional/
base_conv.py); the variables are TF1's, made in the layer's variable scope.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sluice._export import export
from sluice._keras.layers.convolutional.base_conv import add_bias, convolve
from sluice._tf1.cells.initializers import zeros_initializer
from sluice._tf1.layers import tf1_base
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import fill_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.nn import conv_ops, depthwise_conv_ops

_ZEROS = zeros_initializer()


def _bias_and_activation(
    outputs: Tensor,
    filters: int,
    dtype: Any,
    channels_first: bool,
    use_bias: bool,
    bias_initializer: Any,
    bias_regularizer: Any,
    bias_constraint: Any,
    trainable: bool,
    activation: Any,
    activity_regularizer: Any,
) -> Tensor:
    if use_bias:
        bias = tf1_base.add_weight(
            "bias", [filters], dtype, bias_initializer, bias_regularizer, bias_constraint,
            trainable,
        )  # fmt: skip
        outputs = add_bias(outputs, bias, channels_first)
    return tf1_base.finish(outputs, activation, activity_regularizer)


def _channels(inputs: Tensor, channels_first: bool, layer: str) -> int:
    c = inputs.shape[1 if channels_first else -1]
    if c is None:
        raise ValueError(
            f"The channel dimension of the inputs to {layer} should be defined. Found `None` "
            f"(input shape {inputs.shape})."
        )
    return int(c)


def _conv(
    rank: int,
    inputs: Any,
    filters: int,
    kernel_size: Any,
    strides: Any,
    padding: str,
    data_format: str,
    dilation_rate: Any,
    activation: Any,
    use_bias: bool,
    kernel_initializer: Any,
    bias_initializer: Any,
    kernel_regularizer: Any,
    bias_regularizer: Any,
    activity_regularizer: Any,
    kernel_constraint: Any,
    bias_constraint: Any,
    trainable: bool,
    name: str | None,
    reuse: Any,
) -> Tensor:
    layer = f"conv{rank}d"
    kernel_size = tf1_base.int_tuple(kernel_size, rank, "kernel_size", layer)
    strides = tf1_base.int_tuple(strides, rank, "strides", layer)
    dilation_rate = tf1_base.int_tuple(dilation_rate, rank, "dilation_rate", layer)
    allowed = ("valid", "same", "causal") if rank == 1 else ("valid", "same")
    padding = tf1_base.padding_arg(padding, layer, allowed)
    first = tf1_base.channels_first(data_format, layer)
    if max(strides) > 1 and max(dilation_rate) > 1:
        raise ValueError(
            f"{layer}: strides {strides} > 1 are not supported in conjunction with "
            f"dilation_rate {dilation_rate} > 1"
        )
    with tf1_base.layer_scope(name, layer, reuse):
        inputs = core_ops.convert_to_tensor(inputs, name="inputs")
        dtype = tf1_base.float_dtype(inputs, f"Conv{rank}D")
        layout = ("NCW" if first else "NWC") if rank == 1 else ("NCHW" if first else "NHWC")
        tf1_base.require_rank(inputs, rank + 2, layer, layout)
        in_channels = _channels(inputs, first, layer)
        kernel = tf1_base.add_weight(
            "kernel", [*kernel_size, in_channels, int(filters)], dtype, kernel_initializer,
            kernel_regularizer, kernel_constraint, trainable,
        )  # fmt: skip
        outputs = convolve(inputs, kernel, strides, padding, dilation_rate, first)
        return _bias_and_activation(
            outputs, int(filters), dtype, first, use_bias, bias_initializer, bias_regularizer,
            bias_constraint, trainable, activation, activity_regularizer,
        )  # fmt: skip


@export("layers.conv1d")
def conv1d(
    inputs: Any,
    filters: int,
    kernel_size: Any,
    strides: Any = 1,
    padding: str = "valid",
    data_format: str = "channels_last",
    dilation_rate: Any = 1,
    activation: Callable | str | None = None,
    use_bias: bool = True,
    kernel_initializer: Any = None,
    bias_initializer: Any = _ZEROS,
    kernel_regularizer: Callable | None = None,
    bias_regularizer: Callable | None = None,
    activity_regularizer: Callable | None = None,
    kernel_constraint: Callable | None = None,
    bias_constraint: Callable | None = None,
    trainable: bool = True,
    name: str | None = None,
    reuse: Any = None,
) -> Tensor:
    """1-D convolution of `[batch, width, channels]` inputs (TF1 `tf.layers.conv1d`); variables
    `<scope>/kernel` `[kernel_size, in, filters]` and `<scope>/bias`. 'causal' padding pads
    the start of the sequence only, so no output sees a later input.

    Arguments as in `conv2d`, with one int (or a 1-tuple) per window size.

    >>> sl.layers.conv1d(sl.zeros([2, 10, 3]), 4, 3).shape
    TensorShape([2, 8, 4])
    """
    return _conv(
        1,
        inputs,
        filters,
        kernel_size,
        strides,
        padding,
        data_format,
        dilation_rate,
        activation,
        use_bias,
        kernel_initializer,
        bias_initializer,
        kernel_regularizer,
        bias_regularizer,
        activity_regularizer,
        kernel_constraint,
        bias_constraint,
        trainable,
        name,
        reuse,
    )


@export("layers.conv2d")
def conv2d(
    inputs: Any,
    filters: int,
    kernel_size: Any,
    strides: Any = (1, 1),
    padding: str = "valid",
    data_format: str = "channels_last",
    dilation_rate: Any = (1, 1),
    activation: Callable | str | None = None,
    use_bias: bool = True,
    kernel_initializer: Any = None,
    bias_initializer: Any = _ZEROS,
    kernel_regularizer: Callable | None = None,
    bias_regularizer: Callable | None = None,
    activity_regularizer: Callable | None = None,
    kernel_constraint: Callable | None = None,
    bias_constraint: Callable | None = None,
    trainable: bool = True,
    name: str | None = None,
    reuse: Any = None,
) -> Tensor:
    """2-D convolution (TF1 `tf.layers.conv2d`); variables `<scope>/kernel`
    `[kh, kw, in, filters]` and `<scope>/bias`.

    Args:
      inputs: a 4-D floating Tensor, `[batch, h, w, channels]` (or channels first).
      filters: the number of output channels.
      kernel_size, strides, dilation_rate: an int or 2 ints; strides and dilation_rate may not
        both exceed 1.
      padding: 'valid' or 'same' (any case).
      data_format: 'channels_last' or 'channels_first'.
      activation, use_bias, initializers, regularizers, constraints, trainable, name, reuse:
        as in `dense`.

    Returns:
      A 4-D Tensor with `filters` channels.

    Raises:
      ValueError: inputs not 4-D, an unknown channel count, bad padding or data_format.

    >>> sl.layers.conv2d(sl.zeros([2, 8, 8, 3]), 5, 3, padding="same").shape
    TensorShape([2, 8, 8, 5])
    """
    return _conv(
        2,
        inputs,
        filters,
        kernel_size,
        strides,
        padding,
        data_format,
        dilation_rate,
        activation,
        use_bias,
        kernel_initializer,
        bias_initializer,
        kernel_regularizer,
        bias_regularizer,
        activity_regularizer,
        kernel_constraint,
        bias_constraint,
        trainable,
        name,
        reuse,
    )


def _deconv_length(size: int | None, kernel: int, padding: str, stride: int) -> int | None:
    """The transposed convolution's output length (Keras' `deconv_output_length`)."""
    if size is None:
        return None
    if padding == "valid":
        return size * stride + max(kernel - stride, 0)
    return size * stride


@export("layers.conv2d_transpose")
def conv2d_transpose(
    inputs: Any,
    filters: int,
    kernel_size: Any,
    strides: Any = (1, 1),
    padding: str = "valid",
    data_format: str = "channels_last",
    activation: Callable | str | None = None,
    use_bias: bool = True,
    kernel_initializer: Any = None,
    bias_initializer: Any = _ZEROS,
    kernel_regularizer: Callable | None = None,
    bias_regularizer: Callable | None = None,
    activity_regularizer: Callable | None = None,
    kernel_constraint: Callable | None = None,
    bias_constraint: Callable | None = None,
    trainable: bool = True,
    name: str | None = None,
    reuse: Any = None,
) -> Tensor:
    """The transpose of `conv2d` ("deconvolution", TF1 `tf.layers.conv2d_transpose`); variables
    `<scope>/kernel` `[kh, kw, filters, in]` and `<scope>/bias`. Output size per spatial
    dimension: `size * stride` ('same') or `size * stride + max(kernel - stride, 0)` ('valid').

    >>> sl.layers.conv2d_transpose(sl.zeros([2, 4, 4, 3]), 5, 3, strides=2).shape
    TensorShape([2, 9, 9, 5])
    """
    layer = "conv2d_transpose"
    kernel_size = tf1_base.int_tuple(kernel_size, 2, "kernel_size", layer)
    strides = tf1_base.int_tuple(strides, 2, "strides", layer)
    padding = tf1_base.padding_arg(padding, layer)
    first = tf1_base.channels_first(data_format, layer)
    filters = int(filters)
    with tf1_base.layer_scope(name, layer, reuse):
        inputs = core_ops.convert_to_tensor(inputs, name="inputs")
        dtype = tf1_base.float_dtype(inputs, "Conv2DTranspose")
        layout = "NCHW" if first else "NHWC"
        tf1_base.require_rank(inputs, 4, layer, layout)
        in_channels = _channels(inputs, first, layer)
        kernel = tf1_base.add_weight(
            "kernel", [*kernel_size, filters, in_channels], dtype, kernel_initializer,
            kernel_regularizer, kernel_constraint, trainable,
        )  # fmt: skip
        dims = inputs.shape.as_list()
        h_axis, w_axis = (2, 3) if first else (1, 2)
        out_h = _deconv_length(dims[h_axis], kernel_size[0], padding, strides[0])
        out_w = _deconv_length(dims[w_axis], kernel_size[1], padding, strides[1])
        static = [dims[0], filters, out_h, out_w] if first else [dims[0], out_h, out_w, filters]
        if None not in static:
            output_shape: Any = static
        else:  # unknown sizes are computed from the input's shape when the graph runs
            runtime = fill_ops.shape(inputs)
            h = (
                out_h
                if out_h is not None
                else _deconv_length_tensor(runtime[h_axis], kernel_size[0], padding, strides[0])
            )
            w = (
                out_w
                if out_w is not None
                else _deconv_length_tensor(runtime[w_axis], kernel_size[1], padding, strides[1])
            )
            batch = runtime[0]
            output_shape = join_ops.stack(
                [batch, filters, h, w] if first else [batch, h, w, filters]
            )
        outputs = conv_ops.conv2d_transpose(
            inputs, kernel, output_shape, strides=list(strides), padding=padding.upper(),
            data_format=layout,
        )  # fmt: skip
        outputs.set_shape(static)
        return _bias_and_activation(
            outputs, filters, dtype, first, use_bias, bias_initializer, bias_regularizer,
            bias_constraint, trainable, activation, activity_regularizer,
        )  # fmt: skip


def _deconv_length_tensor(size: Tensor, kernel: int, padding: str, stride: int) -> Tensor:
    if padding == "valid":
        return size * stride + max(kernel - stride, 0)
    return size * stride


@export("layers.separable_conv2d")
def separable_conv2d(
    inputs: Any,
    filters: int,
    kernel_size: Any,
    strides: Any = (1, 1),
    padding: str = "valid",
    data_format: str = "channels_last",
    dilation_rate: Any = (1, 1),
    depth_multiplier: int = 1,
    activation: Callable | str | None = None,
    use_bias: bool = True,
    depthwise_initializer: Any = None,
    pointwise_initializer: Any = None,
    bias_initializer: Any = _ZEROS,
    depthwise_regularizer: Callable | None = None,
    pointwise_regularizer: Callable | None = None,
    bias_regularizer: Callable | None = None,
    activity_regularizer: Callable | None = None,
    depthwise_constraint: Callable | None = None,
    pointwise_constraint: Callable | None = None,
    bias_constraint: Callable | None = None,
    trainable: bool = True,
    name: str | None = None,
    reuse: Any = None,
) -> Tensor:
    """A depthwise convolution then a 1x1 convolution mixing channels (TF1
    `tf.layers.separable_conv2d`); variables `<scope>/depthwise_kernel`
    `[kh, kw, in, depth_multiplier]`, `<scope>/pointwise_kernel`
    `[1, 1, in * depth_multiplier, filters]` and `<scope>/bias`.

    >>> sl.layers.separable_conv2d(sl.zeros([2, 6, 6, 3]), 4, 3).shape
    TensorShape([2, 4, 4, 4])
    """
    layer = "separable_conv2d"
    kernel_size = tf1_base.int_tuple(kernel_size, 2, "kernel_size", layer)
    strides = tf1_base.int_tuple(strides, 2, "strides", layer)
    dilation_rate = tf1_base.int_tuple(dilation_rate, 2, "dilation_rate", layer)
    padding = tf1_base.padding_arg(padding, layer)
    first = tf1_base.channels_first(data_format, layer)
    filters, depth_multiplier = int(filters), int(depth_multiplier)
    with tf1_base.layer_scope(name, layer, reuse):
        inputs = core_ops.convert_to_tensor(inputs, name="inputs")
        dtype = tf1_base.float_dtype(inputs, "SeparableConv2D")
        layout = "NCHW" if first else "NHWC"
        tf1_base.require_rank(inputs, 4, layer, layout)
        in_channels = _channels(inputs, first, layer)
        depthwise = tf1_base.add_weight(
            "depthwise_kernel", [*kernel_size, in_channels, depth_multiplier], dtype,
            depthwise_initializer, depthwise_regularizer, depthwise_constraint, trainable,
        )  # fmt: skip
        pointwise = tf1_base.add_weight(
            "pointwise_kernel", [1, 1, in_channels * depth_multiplier, filters], dtype,
            pointwise_initializer, pointwise_regularizer, pointwise_constraint, trainable,
        )  # fmt: skip
        four = [1, 1, *strides] if first else [1, *strides, 1]
        outputs = depthwise_conv_ops.separable_conv2d(
            inputs, depthwise, pointwise, four, padding.upper(), rate=list(dilation_rate),
            data_format=layout,
        )  # fmt: skip
        return _bias_and_activation(
            outputs, filters, dtype, first, use_bias, bias_initializer, bias_regularizer,
            bias_constraint, trainable, activation, activity_regularizer,
        )  # fmt: skip
