"""`SeparableConv2D`: a depthwise convolution, then a 1x1 pointwise one."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import constraints, initializers, regularizers
from sluice._keras.layers.convolutional.base_conv import image_format
from sluice._keras.layers.convolutional.base_depthwise_conv import BaseDepthwiseConv
from sluice.framework.ops.nn import conv_ops


@export("layers.SeparableConv2D", "layers.SeparableConvolution2D")
class SeparableConv2D(BaseDepthwiseConv):
    """Depthwise then pointwise 2-D convolution:
    `activation(conv2d(depthwise_conv2d(inputs, depthwise_kernel), pointwise_kernel) + bias)`.

    Weights: `depthwise_kernel` [kernel_h, kernel_w, in_channels, depth_multiplier],
    `pointwise_kernel` [1, 1, in_channels * depth_multiplier, filters], `bias` [filters].
    `strides`, `padding` and `dilation_rate` apply to the depthwise step; the pointwise step is
    a 1x1 convolution.

    Args:
      filters: the number of output channels.
      kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate, activation,
      use_bias, depthwise_initializer, bias_initializer, depthwise_regularizer,
      bias_regularizer, activity_regularizer: as in DepthwiseConv2D.
      pointwise_initializer, pointwise_regularizer: the pointwise kernel's.

    >>> SeparableConv2D(16, 3, padding="same")(sl.Input((8, 8, 4))).shape.as_list()
    [None, 8, 8, 16]
    """

    config_keys = BaseDepthwiseConv.config_keys + (
        "filters",
        "pointwise_initializer",
        "pointwise_regularizer",
    )
    constraint_keys = BaseDepthwiseConv.constraint_keys + ("pointwise_constraint",)

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = (1, 1),
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = (1, 1),
        depth_multiplier: int = 1,
        pointwise_initializer: Any = "glorot_uniform",
        pointwise_regularizer: Any = None,
        pointwise_constraint: Any = None,
        **kwargs: Any,
    ):
        super().__init__(
            kernel_size,
            strides=strides,
            padding=padding,
            depth_multiplier=depth_multiplier,
            data_format=data_format,
            dilation_rate=dilation_rate,
            filters=filters,
            **kwargs,
        )
        self.pointwise_initializer = initializers.get(pointwise_initializer)
        self.pointwise_regularizer = regularizers.get(pointwise_regularizer)
        self.pointwise_constraint = constraints.get(pointwise_constraint)

    def build(self, input_shape: tuple) -> None:
        channels = self.input_channels(input_shape)
        self.depthwise_kernel = self.add_weight(
            shape=self.depthwise_kernel_shape(channels),
            initializer=self.depthwise_initializer,
            regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint,
            name="depthwise_kernel",
        )
        self.pointwise_kernel = self.add_weight(
            shape=(1, 1, channels * self.depth_multiplier, self.filters),
            initializer=self.pointwise_initializer,
            regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint,
            name="pointwise_kernel",
        )
        self.add_bias_weight(self.filters)

    def call(self, inputs: Any) -> Any:
        y = self.depthwise(inputs, self.depthwise_kernel)
        y = conv_ops.conv2d(
            y,
            self.pointwise_kernel,
            strides=1,
            padding="VALID",
            data_format=image_format(self.channels_first),
        )
        return self.finish(y)
