"""`Conv2DTranspose`: the transpose of Conv2D."""

from __future__ import annotations

from sluice._export import export
from sluice._keras.layers.convolutional.base_conv_transpose import BaseConvTranspose


@export("layers.Conv2DTranspose", "layers.Convolution2DTranspose")
class Conv2DTranspose(BaseConvTranspose):
    """The transpose of Conv2D (a "deconvolution") over [batch, height, width, channels].

    Weights: `kernel` [kernel_h, kernel_w, filters, in_channels], `bias` [filters]. Output sizes
    as in Conv1DTranspose, per spatial dimension (Keras's `compute_conv_transpose_output_shape`).

    Args:
      filters: the number of output channels.
      kernel_size, strides, dilation_rate: an int or a pair.
      padding: "valid" or "same".
      output_padding: None, an int or a pair, each smaller than its stride.
      data_format: "channels_last", "channels_first" or None (`sl.config.image_data_format()`).
      activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
      bias_regularizer, activity_regularizer: as in Dense.

    >>> Conv2DTranspose(3, 3, strides=2, padding="same")(sl.Input((8, 8, 16))).shape.as_list()
    [None, 16, 16, 3]
    """

    rank = 2
