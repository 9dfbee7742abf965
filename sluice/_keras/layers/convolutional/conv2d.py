"""`Conv2D` (Keras 3 arguments, "channels_last" by default)."""

from __future__ import annotations

from sluice._export import export
from sluice._keras.layers.convolutional.base_conv import BaseConv


@export("layers.Conv2D", "layers.Convolution2D")
class Conv2D(BaseConv):
    """2-D convolution (cross-correlation): `activation(conv2d(inputs, kernel) + bias)`.

    Weights: `kernel` [kernel_h, kernel_w, in_channels, filters], `bias` [filters].

    Args:
      filters: the number of output channels.
      kernel_size: an int or (height, width).
      strides: an int or (height, width).
      padding: "valid" (no padding) or "same" (output size = ceil(input size / stride)).
      data_format: "channels_last" ([batch, h, w, c]) or "channels_first" ([batch, c, h, w]);
        None: `sl.config.image_data_format()`.
      dilation_rate: an int or (height, width).
      groups: must be 1 (grouped convolutions are not supported).
      activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
      bias_regularizer, activity_regularizer: as in Dense.

    >>> y = Conv2D(32, 3, padding="same", activation="relu")(sl.Input((28, 28, 1)))
    """

    rank = 2
    config_keys = (
        "filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate", "groups",
        "activation", "use_bias", "kernel_initializer", "bias_initializer",
        "kernel_regularizer", "bias_regularizer",
    )  # fmt: skip
