"""`DepthwiseConv2D`: one filter bank per input channel."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.convolutional.base_depthwise_conv import _DepthwiseBase


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
