"""`Conv3D`: 3-D convolution over [batch, depth, height, width, channels]."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.convolutional.base_conv import BaseConv
from sluice.framework.ops.nn import conv3d_ops


def volume_format(channels_first: bool) -> str:
    """The 3-D ops' data_format: "NCDHW" or "NDHWC"."""
    return "NCDHW" if channels_first else "NDHWC"


@export("layers.Conv3D", "layers.Convolution3D")
class Conv3D(BaseConv):
    """3-D convolution (cross-correlation): `activation(conv3d(inputs, kernel) + bias)`, on the
    engine's Conv3D op (NCDHW for channels_first, so no transposes are added).

    Weights: `kernel` [kernel_d, kernel_h, kernel_w, in_channels, filters], `bias` [filters].

    Args:
      filters: the number of output channels.
      kernel_size, strides, dilation_rate: an int or 3 ints (depth, height, width).
      padding: "valid" or "same" (output size ceil(input size / stride)).
      data_format: "channels_last" ([batch, d, h, w, c]) or "channels_first"
        ([batch, c, d, h, w]); None: `sl.config.image_data_format()`.
      groups: must be 1.
      activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
      bias_regularizer, activity_regularizer, kernel_constraint, bias_constraint: as in Dense.

    >>> Conv3D(4, 3, padding="same")(sl.Input((8, 8, 8, 1))).shape
    TensorShape([None, 8, 8, 8, 4])
    """

    rank = 3
    config_keys = BaseConv.config_keys + ("groups",)

    def call(self, inputs: Any) -> Any:
        y = conv3d_ops.conv3d(
            inputs,
            self.kernel,
            strides=list(self.strides),
            padding=self.padding.upper(),
            data_format=volume_format(self.channels_first),
            dilations=list(self.dilation_rate),
        )
        return self.finish(y)
