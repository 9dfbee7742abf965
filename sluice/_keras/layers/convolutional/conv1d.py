"""`Conv1D`: 1-D convolution over [batch, steps, channels]."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.convolutional.base_conv import _Conv, _conv_length, _padding
from sluice.framework.ops.array import array_ops
from sluice.framework.ops.nn import conv_ops


@export("layers.Conv1D", "layers.Convolution1D")
class Conv1D(_Conv):
    """1-D convolution (cross-correlation) over [batch, steps, channels]:
    `activation(conv1d(inputs, kernel) + bias)`.

    Weights: `kernel` [kernel_size, in_channels, filters], `bias` [filters].

    Args:
      filters: the number of output channels.
      kernel_size, strides, dilation_rate: an int or a 1-tuple.
      padding: "valid", "same" (output length ceil(steps / strides)) or "causal" (pads
        (kernel_size - 1) * dilation_rate zeros before the steps, so output t sees inputs <= t).
      data_format: "channels_last" only.
      groups: must be 1.
      activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
      bias_regularizer, activity_regularizer: as in Dense.

    >>> Conv1D(8, 3, padding="causal")(sl.Input((20, 4))).shape.as_list()
    [None, 20, 8]
    """

    rank = 1

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = 1,
        groups: int = 1,
        **kwargs: Any,
    ):
        super().__init__(filters, kernel_size, strides, data_format, dilation_rate, **kwargs)
        if groups != 1:
            raise NotImplementedError("Conv1D: groups != 1 is not supported.")
        self.groups = groups
        self.padding = _padding(padding, ("valid", "same", "causal"))

    def _kernel_shape(self, channels: int) -> tuple:
        return self.kernel_size + (channels, self.filters)

    def call(self, inputs: Any) -> Any:
        (k,), (s,), (d,) = self.kernel_size, self.strides, self.dilation_rate
        if self.padding == "causal":
            padding = [[0, 0], [0, 0], [(k - 1) * d, 0], [0, 0]]
        else:
            padding = self.padding.upper()
        y = conv_ops.conv2d(
            array_ops.expand_dims(inputs, 1),
            array_ops.expand_dims(self.kernel, 0),
            strides=[1, s],
            padding=padding,
            dilations=[1, d],
        )
        return self._finish(array_ops.squeeze(y, [1]))

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        steps = _conv_length(
            input_shape[1],
            self.kernel_size[0],
            self.strides[0],
            self.padding,
            self.dilation_rate[0],
        )
        return (input_shape[0], steps, self.filters)

    def get_config(self) -> dict:
        return {**super().get_config(), "groups": self.groups}
