"""`DepthwiseConv1D` and `SeparableConv1D`: the depthwise (and separable) convolutions over
[batch, steps, channels], run as their 2-D ops on a height-1 image (as Conv1D does)."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.convolutional.base_conv import convolve, image_format
from sluice._keras.layers.convolutional.depthwise_conv2d import DepthwiseConv2D
from sluice._keras.layers.convolutional.separable_conv2d import SeparableConv2D
from sluice.framework.ops.array import array_ops
from sluice.framework.ops.nn import depthwise_conv_ops


class Depthwise1D:
    """The 1-D depthwise step: `inputs` [batch, steps, c] (or [batch, c, steps]) with a kernel
    [k, c, m], as the 2-D op on [batch, 1, steps, c] with the kernel [1, k, c, m]."""

    rank = 1

    def depthwise(self, inputs: Any, kernel: Any) -> Any:
        first = self.channels_first
        axis = 2 if first else 1  # the height-1 axis, before the steps
        y = depthwise_conv_ops.depthwise_conv2d_native(
            array_ops.expand_dims(inputs, axis),
            array_ops.expand_dims(kernel, 0),
            strides=[1, self.strides[0]],
            padding=self.padding.upper(),
            data_format=image_format(first),
            dilations=[1, self.dilation_rate[0]],
        )
        return array_ops.squeeze(y, [axis])


@export("layers.DepthwiseConv1D")
class DepthwiseConv1D(Depthwise1D, DepthwiseConv2D):
    """Depthwise 1-D convolution: each input channel convolved with its own `depth_multiplier`
    filters, `activation(depthwise_conv1d(inputs, kernel) + bias)`.

    Weights: `kernel` [kernel_size, in_channels, depth_multiplier], `bias`
    [in_channels * depth_multiplier]; output channel c * depth_multiplier + j comes from input
    channel c and kernel[:, c, j].

    Args:
      kernel_size, strides, dilation_rate: an int or a 1-tuple.
      padding: "valid" or "same".
      depth_multiplier, data_format, activation, use_bias, depthwise_initializer,
      bias_initializer, depthwise_regularizer, bias_regularizer, activity_regularizer,
      depthwise_constraint, bias_constraint: as in DepthwiseConv2D.

    >>> DepthwiseConv1D(3, depth_multiplier=2)(sl.Input((8, 4))).shape.as_list()
    [None, 6, 8]
    """

    def __init__(self, kernel_size: Any, strides: Any = 1, dilation_rate: Any = 1, **kwargs):
        super().__init__(kernel_size, strides=strides, dilation_rate=dilation_rate, **kwargs)


@export("layers.SeparableConv1D", "layers.SeparableConvolution1D")
class SeparableConv1D(Depthwise1D, SeparableConv2D):
    """Depthwise then pointwise 1-D convolution:
    `activation(conv1d(depthwise_conv1d(inputs, depthwise_kernel), pointwise_kernel) + bias)`.

    Weights: `depthwise_kernel` [kernel_size, in_channels, depth_multiplier], `pointwise_kernel`
    [1, in_channels * depth_multiplier, filters], `bias` [filters]. `strides`, `padding` and
    `dilation_rate` apply to the depthwise step.

    Args: as SeparableConv2D, with ints or 1-tuples for kernel_size, strides and dilation_rate.

    >>> SeparableConv1D(6, 3, padding="same")(sl.Input((8, 4))).shape.as_list()
    [None, 8, 6]
    """

    def __init__(
        self, filters: int, kernel_size: Any, strides: Any = 1, dilation_rate: Any = 1, **kwargs
    ):
        super().__init__(filters, kernel_size, strides=strides, dilation_rate=dilation_rate,
                         **kwargs)  # fmt: skip

    def build(self, input_shape: tuple) -> None:
        channels = self.input_channels(input_shape)
        self.depthwise_kernel = self.add_weight(
            shape=self.depthwise_kernel_shape(channels), name="depthwise_kernel",
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint,
        )  # fmt: skip
        self.pointwise_kernel = self.add_weight(
            shape=(1, channels * self.depth_multiplier, self.filters), name="pointwise_kernel",
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint,
        )  # fmt: skip
        self.add_bias_weight(self.filters)

    def call(self, inputs: Any) -> Any:
        y = self.depthwise(inputs, self.depthwise_kernel)
        y = convolve(y, self.pointwise_kernel, (1,), "valid", (1,), self.channels_first)
        return self.finish(y)
