"""`Conv3DTranspose`: the transpose of Conv3D.

Keras's output (`padding`, `output_padding`, `dilation_rate`: see `base_conv_transpose`) is cut
from the full transposed convolution, which is Conv3DBackpropInputV2 with "VALID" padding onto
a volume of size (n - 1) * stride + (k - 1) * dilation + 1 per dimension: per dimension it
starts at (k - 1) * dilation - left, where `left` is the padding Keras's JAX backend gives
`lax.conv_transpose`, and runs for Keras's output length; positions past the full output (an
output_padding, or strides larger than the kernel) are zeros.
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.convolutional.base_conv_transpose import (
    BaseConvTranspose,
    transpose_output_length,
    transpose_padding,
)
from sluice._keras.layers.convolutional.conv3d import volume_format
from sluice.framework.ops.array import fill_ops, join_ops
from sluice.framework.ops.nn import conv3d_ops


@export("layers.Conv3DTranspose", "layers.Convolution3DTranspose")
class Conv3DTranspose(BaseConvTranspose):
    """The transpose of Conv3D (a "deconvolution") over [batch, depth, height, width, channels].

    Weights: `kernel` [kernel_d, kernel_h, kernel_w, filters, in_channels], `bias` [filters].
    Output sizes per spatial dimension as Keras's `compute_conv_transpose_output_shape`: "same"
    without output_padding gives size * stride.

    Args:
      filters: the number of output channels.
      kernel_size, strides, dilation_rate: an int or 3 ints.
      padding: "valid" or "same".
      output_padding: None, an int or 3 ints, each smaller than its stride.
      data_format: "channels_last" or "channels_first"; None: `sl.config.image_data_format()`.
      activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
      bias_regularizer, activity_regularizer, kernel_constraint, bias_constraint: as in Dense.

    >>> Conv3DTranspose(2, 3, strides=2, padding="same")(sl.Input((4, 4, 4, 3))).shape
    TensorShape([None, 8, 8, 8, 2])
    """

    rank = 3

    def call(self, inputs: Any) -> Any:
        first = self.channels_first
        spatial = inputs.shape.as_list()[2:5] if first else inputs.shape.as_list()[1:4]
        if None in spatial:
            raise ValueError(
                f"Conv3DTranspose {self.name!r} needs inputs of known spatial size, got "
                f"{inputs.shape}."
            )
        output_padding = self.output_padding or (None,) * 3
        full, cuts, tails = [], [], []
        for n, k, s, p, d in zip(spatial, self.kernel_size, self.strides, output_padding,
                                 self.dilation_rate):  # fmt: skip
            span = (k - 1) * d + 1
            size = (n - 1) * s + span
            start = span - 1 - transpose_padding(k, s, self.padding, p, d)[0]
            length = transpose_output_length(n, k, s, self.padding, p, d)
            stop = min(start + length, size)
            full.append(size)
            cuts.append(slice(start, stop))
            tails.append(start + length - stop)
        batch = fill_ops.shape(inputs)[0]
        if first:
            sizes = join_ops.stack([batch, self.filters, *full])
            index = (slice(None), slice(None), *cuts)
            tails = [[0, 0], [0, 0]] + [[0, t] for t in tails]
        else:
            sizes = join_ops.stack([batch, *full, self.filters])
            index = (slice(None), *cuts, slice(None))
            tails = [[0, 0]] + [[0, t] for t in tails] + [[0, 0]]
        y = conv3d_ops.conv3d_transpose(
            inputs,
            self.kernel,
            sizes,
            strides=list(self.strides),
            padding="VALID",
            data_format=volume_format(first),
            dilations=list(self.dilation_rate),
        )
        y = y[index]
        if any(t[1] for t in tails):
            y = join_ops.pad(y, tails)
        return self.finish(y)
