"""`Conv2D` (Keras 3 arguments, "channels_last" by default)."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import activations, initializers, regularizers
from sluice._keras.layers.arguments import _check_no_constraint, _data_format
from sluice._keras.layers.base import Layer
from sluice.framework.ops.nn import conv_ops, nn_ops


def _pair(value: Any, what: str) -> tuple[int, int]:
    """`value` as two positive ints (Keras's `standardize_tuple`)."""
    if isinstance(value, int):
        value = (value, value)
    value = tuple(int(v) for v in value)
    if len(value) != 2:
        raise ValueError(f"{what} must be an int or a pair of ints, got {value}.")
    if any(v < 1 for v in value):
        raise ValueError(f"{what} must be positive, got {value}.")
    return value


def _padding(padding: str) -> str:
    padding = padding.lower()
    if padding not in ("valid", "same"):
        raise ValueError(f"padding must be 'valid' or 'same', got {padding!r}.")
    return padding


def _output_length(size: int | None, window: int, stride: int, padding: str, dilation: int = 1):
    if size is None:
        return None
    if padding == "same":
        return -(-size // stride)
    span = (window - 1) * dilation + 1
    return max(0, (size - span) // stride + 1)


def _spatial(input_shape: tuple, data_format: str) -> tuple:
    return tuple(input_shape[1:3]) if data_format == "channels_last" else tuple(input_shape[2:4])


def _with_spatial(input_shape: tuple, spatial: tuple, channels: Any, data_format: str) -> tuple:
    if data_format == "channels_last":
        return (input_shape[0],) + tuple(spatial) + (channels,)
    return (input_shape[0], channels) + tuple(spatial)


def _nhwc(data_format: str) -> str:
    return "NHWC" if data_format == "channels_last" else "NCHW"


@export("layers.Conv2D", "layers.Convolution2D")
class Conv2D(Layer):
    """2-D convolution (cross-correlation): `activation(conv2d(inputs, kernel) + bias)`.

    Weights: `kernel` [kernel_h, kernel_w, in_channels, filters], `bias` [filters].

    Args:
      filters: the number of output channels.
      kernel_size: an int or (height, width).
      strides: an int or (height, width).
      padding: "valid" (no padding) or "same" (output size = ceil(input size / stride)).
      data_format: "channels_last" ([batch, h, w, c], the default) or "channels_first".
      dilation_rate: an int or (height, width).
      groups: must be 1 (grouped convolutions are not supported).
      activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
      bias_regularizer, activity_regularizer: as in Dense.

    >>> y = Conv2D(32, 3, padding="same", activation="relu")(sl.Input((28, 28, 1)))
    """

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = (1, 1),
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = (1, 1),
        groups: int = 1,
        activation: Any = None,
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        **kwargs: Any,
    ):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        _check_no_constraint(kernel_constraint=kernel_constraint, bias_constraint=bias_constraint)
        if groups != 1:
            raise NotImplementedError("Conv2D: groups != 1 is not supported.")
        self.filters = int(filters)
        self.kernel_size = _pair(kernel_size, f"{type(self).__name__} kernel_size")
        self.strides = _pair(strides, f"{type(self).__name__} strides")
        self.padding = _padding(padding)
        self.data_format = _data_format(data_format)
        self.dilation_rate = _pair(dilation_rate, f"{type(self).__name__} dilation_rate")
        if self.dilation_rate != (1, 1) and self.strides != (1, 1):
            raise ValueError("Conv2D: dilation_rate > 1 and strides > 1 cannot be combined.")
        self.groups = groups
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)

    def build(self, input_shape: tuple) -> None:
        if len(input_shape) != 4:
            raise ValueError(
                f"Conv2D {self.name!r} expects inputs of rank 4, got shape {input_shape}."
            )
        channels = input_shape[-1] if self.data_format == "channels_last" else input_shape[1]
        if channels is None:
            raise ValueError(
                f"Conv2D {self.name!r}: the channel dimension of {input_shape} must be known."
            )
        self.kernel = self.add_weight(
            shape=self.kernel_size + (channels, self.filters),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            name="kernel",
        )
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                shape=(self.filters,),
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                name="bias",
            )

    def call(self, inputs: Any) -> Any:
        fmt = _nhwc(self.data_format)
        y = conv_ops.conv2d(
            inputs,
            self.kernel,
            strides=list(self.strides),
            padding=self.padding.upper(),
            data_format=fmt,
            dilations=list(self.dilation_rate),
        )
        if self.bias is not None:
            y = nn_ops.bias_add(y, self.bias, data_format=fmt)
        return self.activation(y)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        spatial = tuple(
            _output_length(n, k, s, self.padding, d)
            for n, k, s, d in zip(
                _spatial(input_shape, self.data_format),
                self.kernel_size,
                self.strides,
                self.dilation_rate,
            )
        )
        return _with_spatial(input_shape, spatial, self.filters, self.data_format)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "filters": self.filters,
            "kernel_size": self.kernel_size,
            "strides": self.strides,
            "padding": self.padding,
            "data_format": self.data_format,
            "dilation_rate": self.dilation_rate,
            "groups": self.groups,
            "activation": activations.serialize(self.activation),
            "use_bias": self.use_bias,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
            "bias_regularizer": regularizers.serialize(self.bias_regularizer),
        }
