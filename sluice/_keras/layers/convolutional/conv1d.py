"""`Conv1D`: 1-D convolution over [batch, steps, channels]."""

from __future__ import annotations

from sluice._export import export
from sluice._keras.layers.convolutional.base_conv import BaseConv


@export("layers.Conv1D", "layers.Convolution1D")
class Conv1D(BaseConv):
    """1-D convolution (cross-correlation) over [batch, steps, channels] (or channels first):
    `activation(conv1d(inputs, kernel) + bias)`.

    Weights: `kernel` [kernel_size, in_channels, filters], `bias` [filters].

    Args:
      filters: the number of output channels.
      kernel_size, strides, dilation_rate: an int or a 1-tuple.
      padding: "valid", "same" (output length ceil(steps / strides)) or "causal" (pads
        (kernel_size - 1) * dilation_rate zeros before the steps, so output t sees inputs <= t).
      data_format: "channels_last" ([batch, steps, c]) or "channels_first" ([batch, c, steps]);
        None: `sl.config.image_data_format()`.
      groups: must be 1.
      activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
      bias_regularizer, activity_regularizer: as in Dense.

    >>> Conv1D(8, 3, padding="causal")(sl.Input((20, 4))).shape.as_list()
    [None, 20, 8]
    """

    rank = 1
    paddings = ("valid", "same", "causal")
    config_keys = BaseConv.config_keys + ("groups",)
