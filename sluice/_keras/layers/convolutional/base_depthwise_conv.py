"""DepthwiseConv2D and SeparableConv2D (Keras 3 arguments, "channels_last" only): Conv2D run on
a block-diagonal kernel (see `_depthwise_conv2d`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._keras import activations, initializers, regularizers
from sluice._keras.layers.arguments import _check_no_constraint
from sluice._keras.layers.base import Layer
from sluice._keras.layers.convolutional.base_conv import (
    _channels_last,
    _check_dilation,
    _conv_length,
    _padding,
    _tuple,
)
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
