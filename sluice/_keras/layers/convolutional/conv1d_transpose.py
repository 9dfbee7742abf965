"""`Conv1DTranspose`: the transpose of Conv1D."""

from __future__ import annotations

from sluice._export import export
from sluice._keras.layers.convolutional.base_conv_transpose import BaseConvTranspose


@export("layers.Conv1DTranspose", "layers.Convolution1DTranspose")
class Conv1DTranspose(BaseConvTranspose):
    """The transpose of Conv1D (a "deconvolution") over [batch, steps, channels].

    Weights: `kernel` [kernel_size, filters, in_channels], `bias` [filters]. The output length
    is Keras's: with padding "valid", (steps - 1) * strides + k + output_padding (default
    max(k, strides) - k); with "same", steps * strides (no output_padding) or
    (steps - 1) * strides + k % 2 + output_padding; k = (kernel_size - 1) * dilation_rate + 1.

    Args:
      filters: the number of output channels.
      kernel_size, strides, dilation_rate: an int or a 1-tuple.
      padding: "valid" or "same".
      output_padding: None or an int (a 1-tuple) smaller than strides.
      data_format: "channels_last", "channels_first" or None (`sl.config.image_data_format()`).
      activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
      bias_regularizer, activity_regularizer: as in Dense.

    >>> Conv1DTranspose(4, 3, strides=2, padding="same")(sl.Input((10, 8))).shape.as_list()
    [None, 20, 4]
    """

    rank = 1
