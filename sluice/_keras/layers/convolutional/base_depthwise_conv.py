"""`BaseDepthwiseConv`: the depthwise step of DepthwiseConv2D and SeparableConv2D, over
`BaseConv` (Keras 3 arguments, "channels_last" only): Conv2D run on a block-diagonal kernel (see
`depthwise_conv2d`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._keras.layers.arguments import _check_no_constraint
from sluice._keras.layers.convolutional.base_conv import BaseConv
from sluice.framework.ops.array import array_ops
from sluice.framework.ops.nn import conv_ops


def depthwise_conv2d(x: Any, kernel: Any, strides, padding: str, dilations) -> Any:
    """The depthwise convolution of `x` [batch, h, w, c] with `kernel` [kh, kw, c, m]: output
    channel c * m + j is input channel c convolved with kernel[:, :, c, j] (TF's order).

    It runs Conv2D on the block-diagonal kernel [kh, kw, c, c * m] whose column c * m + j is
    kernel[:, :, c, j] on row c and zeros elsewhere: exact, but c times the work of a grouped
    convolution (there is no grouped convolution op yet)."""
    kh, kw, c, m = kernel.shape.as_list()
    eye = np.eye(c, dtype=kernel.dtype)[:, :, None]  # [c (in), c, 1]
    blocks = array_ops.expand_dims(kernel, 2) * eye  # [kh, kw, c (in), c, m]
    return conv_ops.conv2d(
        x,
        array_ops.reshape(blocks, [kh, kw, c, c * m]),
        strides=list(strides),
        padding=padding.upper(),
        dilations=list(dilations),
    )


class BaseDepthwiseConv(BaseConv):
    """A 2-D convolution with a depthwise kernel [kh, kw, in, depth_multiplier], whose
    initializer and regularizer are `depthwise_initializer` and `depthwise_regularizer`."""

    rank = 2
    config_keys = (
        "kernel_size", "strides", "padding", "depth_multiplier", "data_format", "dilation_rate",
        "activation", "use_bias", "depthwise_initializer", "bias_initializer",
        "depthwise_regularizer", "bias_regularizer",
    )  # fmt: skip

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
        _check_no_constraint(
            depthwise_constraint=depthwise_constraint, bias_constraint=bias_constraint
        )
        if int(depth_multiplier) <= 0:
            raise ValueError(
                f"{type(self).__name__}: depth_multiplier must be positive, got {depth_multiplier}."
            )
        super().__init__(
            filters, kernel_size, strides, padding, data_format, dilation_rate,
            activation=activation, use_bias=use_bias, kernel_initializer=depthwise_initializer,
            bias_initializer=bias_initializer, kernel_regularizer=depthwise_regularizer,
            bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
            **kwargs,
        )  # fmt: skip
        self.depth_multiplier = int(depth_multiplier)

    @property
    def depthwise_initializer(self) -> Any:
        return self.kernel_initializer

    @property
    def depthwise_regularizer(self) -> Any:
        return self.kernel_regularizer

    def depthwise_kernel_shape(self, channels: int) -> tuple:
        return self.kernel_size + (channels, self.depth_multiplier)

    def depthwise(self, inputs: Any, kernel: Any) -> Any:
        return depthwise_conv2d(inputs, kernel, self.strides, self.padding, self.dilation_rate)
