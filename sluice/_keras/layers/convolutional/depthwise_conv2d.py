"""`DepthwiseConv2D`: one filter bank per input channel."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.convolutional.base_depthwise_conv import BaseDepthwiseConv


@export("layers.DepthwiseConv2D")
class DepthwiseConv2D(BaseDepthwiseConv):
    """Depthwise 2-D convolution: each input channel convolved with its own `depth_multiplier`
    filters, `activation(depthwise_conv2d(inputs, kernel) + bias)`.

    Weights: `kernel` [kernel_h, kernel_w, in_channels, depth_multiplier], `bias`
    [in_channels * depth_multiplier]. Output channel c * depth_multiplier + j comes from input
    channel c and kernel[:, :, c, j].

    Args:
      kernel_size, strides, dilation_rate: an int or a pair.
      padding: "valid" or "same".
      depth_multiplier: the number of output channels per input channel.
      data_format: "channels_last", "channels_first" or None (`sl.config.image_data_format()`).
      activation, use_bias, bias_initializer, bias_regularizer, activity_regularizer: as in
        Dense; depthwise_initializer, depthwise_regularizer: the kernel's.

    >>> DepthwiseConv2D(3, depth_multiplier=2)(sl.Input((8, 8, 4))).shape.as_list()
    [None, 6, 6, 8]
    """

    def kernel_shape(self, channels: int) -> tuple:
        return self.depthwise_kernel_shape(channels)

    def build(self, input_shape: tuple) -> None:
        channels = self.input_channels(input_shape)
        self.kernel = self.add_weight(
            shape=self.kernel_shape(channels),
            initializer=self.depthwise_initializer,
            regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint,
            name="kernel",
        )
        self.add_bias_weight(channels * self.depth_multiplier)

    def call(self, inputs: Any) -> Any:
        return self.finish(self.depthwise(inputs, self.kernel))

    def output_channels(self, input_channels: Any) -> Any:
        return None if input_channels is None else input_channels * self.depth_multiplier
