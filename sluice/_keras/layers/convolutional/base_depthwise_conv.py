"""`BaseDepthwiseConv`: the depthwise step of DepthwiseConv2D and SeparableConv2D, over
`BaseConv` (Keras 3 arguments): the engine's DepthwiseConv2dNative op, a grouped convolution with
one group per input channel, in NHWC or NCHW (`data_format`).
"""

from __future__ import annotations

from typing import Any

from sluice._keras.layers.convolutional.base_conv import BaseConv, image_format
from sluice.framework.ops.nn import depthwise_conv_ops


class BaseDepthwiseConv(BaseConv):
    """A 2-D convolution with a depthwise kernel [kh, kw, in, depth_multiplier], whose
    initializer and regularizer are `depthwise_initializer` and `depthwise_regularizer`."""

    rank = 2
    config_keys = (
        "kernel_size", "strides", "padding", "depth_multiplier", "data_format", "dilation_rate",
        "activation", "use_bias", "depthwise_initializer", "bias_initializer",
        "depthwise_regularizer", "bias_regularizer",
    )  # fmt: skip
    constraint_keys = ("depthwise_constraint", "bias_constraint")

    def __init__(
        self,
        kernel_size: Any,
        strides: Any = (1, 1),
        padding: str = "valid",
        depth_multiplier: int = 1,
        data_format: str | None = None,
        dilation_rate: Any = (1, 1),
        activation: Any = None,
        use_bias: bool = True,
        depthwise_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        depthwise_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        depthwise_constraint: Any = None,
        bias_constraint: Any = None,
        filters: int | None = None,
        **kwargs: Any,
    ):
        if int(depth_multiplier) <= 0:
            raise ValueError(
                f"{type(self).__name__}: depth_multiplier must be positive, got {depth_multiplier}."
            )
        super().__init__(
            filters, kernel_size, strides, padding, data_format, dilation_rate,
            activation=activation, use_bias=use_bias, kernel_initializer=depthwise_initializer,
            bias_initializer=bias_initializer, kernel_regularizer=depthwise_regularizer,
            bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
            kernel_constraint=depthwise_constraint, bias_constraint=bias_constraint, **kwargs,
        )  # fmt: skip
        self.depth_multiplier = int(depth_multiplier)

    @property
    def depthwise_initializer(self) -> Any:
        return self.kernel_initializer

    @property
    def depthwise_regularizer(self) -> Any:
        return self.kernel_regularizer

    @property
    def depthwise_constraint(self) -> Any:
        return self.kernel_constraint

    def depthwise_kernel_shape(self, channels: int) -> tuple:
        return self.kernel_size + (channels, self.depth_multiplier)

    def depthwise(self, inputs: Any, kernel: Any) -> Any:
        """`inputs` convolved with `kernel` [kh, kw, c, m], channel by channel: output channel
        c * m + j is input channel c convolved with kernel[:, :, c, j] (TF's and Keras's order)."""
        return depthwise_conv_ops.depthwise_conv2d_native(
            inputs,
            kernel,
            strides=list(self.strides),
            padding=self.padding.upper(),
            data_format=image_format(self.channels_first),
            dilations=list(self.dilation_rate),
        )
