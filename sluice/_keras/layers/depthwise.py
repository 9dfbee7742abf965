"""DepthwiseConv2D and SeparableConv2D (Keras 3 arguments, "channels_last" only): Conv2D run on
a block-diagonal kernel (see `_depthwise_conv2d`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.layers import activations, initializers, regularizers
from sluice._keras.layers.base import Layer
from sluice._keras.layers.convolution import (
    _channels_last,
    _check_dilation,
    _conv_length,
    _padding,
    _tuple,
)
from sluice._keras.layers.core import _check_no_constraint
from sluice.framework.ops.array import array_ops
from sluice.framework.ops.nn import conv_ops, nn_ops


def _depthwise_conv2d(x: Any, kernel: Any, strides, padding: str, dilations) -> Any:
    """The depthwise convolution of `x` [batch, h, w, c] with `kernel` [kh, kw, c, m]: output
    channel c * m + j is input channel c convolved with kernel[:, :, c, j] (TF's order).

    It runs Conv2D on the block-diagonal kernel [kh, kw, c, c * m] whose column c * m + j is
    kernel[:, :, c, j] on row c and zeros elsewhere: exact, but c times the work of a grouped
    convolution (there is no grouped convolution op yet)."""
    kh, kw, c, m = kernel.shape.as_list()
    eye = np.eye(c, dtype=kernel.dtype)[:, :, None]  # [c (in), c, 1]
    blocks = array_ops.expand_dims(kernel, 2) * eye  # [kh, kw, c (in), c, m]
    return conv_ops.conv2d(
        x,
        array_ops.reshape(blocks, [kh, kw, c, c * m]),
        strides=list(strides),
        padding=padding.upper(),
        dilations=list(dilations),
    )


class _DepthwiseBase(Layer):
    """The depthwise step shared by DepthwiseConv2D and SeparableConv2D."""

    def __init__(
        self,
        kernel_size: Any,
        strides: Any = (1, 1),
        padding: str = "valid",
        depth_multiplier: int = 1,
        data_format: str | None = None,
        dilation_rate: Any = (1, 1),
        activation: Any = None,
        use_bias: bool = True,
        depthwise_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        depthwise_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        depthwise_constraint: Any = None,
        bias_constraint: Any = None,
        **kwargs: Any,
    ):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        cls = type(self).__name__
        _check_no_constraint(
            depthwise_constraint=depthwise_constraint, bias_constraint=bias_constraint
        )
        if int(depth_multiplier) <= 0:
            raise ValueError(f"{cls}: depth_multiplier must be positive, got {depth_multiplier}.")
        self.kernel_size = _tuple(kernel_size, 2, f"{cls} kernel_size")
        self.strides = _tuple(strides, 2, f"{cls} strides")
        self.padding = _padding(padding, ("valid", "same"))
        self.depth_multiplier = int(depth_multiplier)
        self.data_format = _channels_last(data_format, cls)
        self.dilation_rate = _tuple(dilation_rate, 2, f"{cls} dilation_rate")
        _check_dilation(cls, self.strides, self.dilation_rate)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.depthwise_regularizer = regularizers.get(depthwise_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)

    def _channels(self, input_shape: tuple) -> int:
        if len(input_shape) != 4:
            raise ValueError(
                f"{type(self).__name__} {self.name!r} expects inputs of rank 4, got shape "
                f"{input_shape}."
            )
        if input_shape[-1] is None:
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: the channel dimension of {input_shape} "
                "must be known."
            )
        return input_shape[-1]

    def _add_bias(self, units: int) -> None:
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                shape=(units,),
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                name="bias",
            )

    def _depthwise(self, inputs: Any, kernel: Any) -> Any:
        return _depthwise_conv2d(inputs, kernel, self.strides, self.padding, self.dilation_rate)

    def _finish(self, y: Any) -> Any:
        if self.bias is not None:
            y = nn_ops.bias_add(y, self.bias)
        return self.activation(y)

    def _output_shape(self, input_shape: tuple, channels: Any) -> tuple:
        spatial = tuple(
            _conv_length(n, k, s, self.padding, d)
            for n, k, s, d in zip(
                input_shape[1:3], self.kernel_size, self.strides, self.dilation_rate
            )
        )
        return (input_shape[0],) + spatial + (channels,)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "kernel_size": self.kernel_size,
            "strides": self.strides,
            "padding": self.padding,
            "depth_multiplier": self.depth_multiplier,
            "data_format": self.data_format,
            "dilation_rate": self.dilation_rate,
            "activation": activations.serialize(self.activation),
            "use_bias": self.use_bias,
            "depthwise_initializer": initializers.serialize(self.depthwise_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "depthwise_regularizer": regularizers.serialize(self.depthwise_regularizer),
            "bias_regularizer": regularizers.serialize(self.bias_regularizer),
        }


@export("layers.DepthwiseConv2D")
class DepthwiseConv2D(_DepthwiseBase):
    """Depthwise 2-D convolution: each input channel convolved with its own `depth_multiplier`
    filters, `activation(depthwise_conv2d(inputs, kernel) + bias)`.

    Weights: `kernel` [kernel_h, kernel_w, in_channels, depth_multiplier], `bias`
    [in_channels * depth_multiplier]. Output channel c * depth_multiplier + j comes from input
    channel c and kernel[:, :, c, j].

    Args:
      kernel_size, strides, dilation_rate: an int or a pair.
      padding: "valid" or "same".
      depth_multiplier: the number of output channels per input channel.
      data_format: "channels_last" only.
      activation, use_bias, bias_initializer, bias_regularizer, activity_regularizer: as in
        Dense; depthwise_initializer, depthwise_regularizer: the kernel's.

    Runs Conv2D on a block-diagonal kernel: in_channels times the work of a grouped convolution.

    >>> DepthwiseConv2D(3, depth_multiplier=2)(sl.Input((8, 8, 4))).shape.as_list()
    [None, 6, 6, 8]
    """

    def build(self, input_shape: tuple) -> None:
        channels = self._channels(input_shape)
        self.kernel = self.add_weight(
            shape=self.kernel_size + (channels, self.depth_multiplier),
            initializer=self.depthwise_initializer,
            regularizer=self.depthwise_regularizer,
            name="kernel",
        )
        self._add_bias(channels * self.depth_multiplier)

    def call(self, inputs: Any) -> Any:
        return self._finish(self._depthwise(inputs, self.kernel))

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        channels = input_shape[-1]
        return self._output_shape(
            input_shape, None if channels is None else channels * self.depth_multiplier
        )


@export("layers.SeparableConv2D")
class SeparableConv2D(_DepthwiseBase):
    """Depthwise then pointwise 2-D convolution:
    `activation(conv2d(depthwise_conv2d(inputs, depthwise_kernel), pointwise_kernel) + bias)`.

    Weights: `depthwise_kernel` [kernel_h, kernel_w, in_channels, depth_multiplier],
    `pointwise_kernel` [1, 1, in_channels * depth_multiplier, filters], `bias` [filters].
    `strides`, `padding` and `dilation_rate` apply to the depthwise step; the pointwise step is
    a 1x1 convolution.

    Args:
      filters: the number of output channels.
      kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate, activation,
      use_bias, depthwise_initializer, bias_initializer, depthwise_regularizer,
      bias_regularizer, activity_regularizer: as in DepthwiseConv2D.
      pointwise_initializer, pointwise_regularizer: the pointwise kernel's.

    >>> SeparableConv2D(16, 3, padding="same")(sl.Input((8, 8, 4))).shape.as_list()
    [None, 8, 8, 16]
    """

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = (1, 1),
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = (1, 1),
        depth_multiplier: int = 1,
        pointwise_initializer: Any = "glorot_uniform",
        pointwise_regularizer: Any = None,
        pointwise_constraint: Any = None,
        **kwargs: Any,
    ):
        super().__init__(
            kernel_size,
            strides=strides,
            padding=padding,
            depth_multiplier=depth_multiplier,
            data_format=data_format,
            dilation_rate=dilation_rate,
            **kwargs,
        )
        _check_no_constraint(pointwise_constraint=pointwise_constraint)
        if int(filters) <= 0:
            raise ValueError(f"SeparableConv2D: filters must be a positive int, got {filters}.")
        self.filters = int(filters)
        self.pointwise_initializer = initializers.get(pointwise_initializer)
        self.pointwise_regularizer = regularizers.get(pointwise_regularizer)

    def build(self, input_shape: tuple) -> None:
        channels = self._channels(input_shape)
        self.depthwise_kernel = self.add_weight(
            shape=self.kernel_size + (channels, self.depth_multiplier),
            initializer=self.depthwise_initializer,
            regularizer=self.depthwise_regularizer,
            name="depthwise_kernel",
        )
        self.pointwise_kernel = self.add_weight(
            shape=(1, 1, channels * self.depth_multiplier, self.filters),
            initializer=self.pointwise_initializer,
            regularizer=self.pointwise_regularizer,
            name="pointwise_kernel",
        )
        self._add_bias(self.filters)

    def call(self, inputs: Any) -> Any:
        y = self._depthwise(inputs, self.depthwise_kernel)
        y = conv_ops.conv2d(y, self.pointwise_kernel, strides=1, padding="VALID")
        return self._finish(y)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return self._output_shape(input_shape, self.filters)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "filters": self.filters,
            "pointwise_initializer": initializers.serialize(self.pointwise_initializer),
            "pointwise_regularizer": regularizers.serialize(self.pointwise_regularizer),
        }
