"""The base of Conv1D, Conv1DTranspose, Conv2DTranspose (Keras 3 arguments, "channels_last"
only; DepthwiseConv2D and SeparableConv2D are in `base_depthwise_conv`).

The 1-D layers run the 2-D ops on a height-1 image (`expand_dims` at axis 1). The transposed
convolutions are `conv2d_backprop_input`, the gradient of a forward convolution whose filter
is the layer's kernel [kernel_h, kernel_w, filters, in_channels]: for each spatial dimension
the transposed output of Keras (`padding`, `output_padding`, `dilation_rate`) is the input of a
forward convolution with explicit padding (before, after) = (k - 1 - left, k - 1 - right), where
(left, right) is the padding Keras's JAX backend gives `lax.conv_transpose` and k the dilated
kernel size. A negative `after` (output_padding, or strides > kernel size) means trailing
outputs no kernel tap reaches: they are zeros, appended with `pad`.
"""

from __future__ import annotations

from typing import Any

from sluice._keras import activations, initializers, regularizers
from sluice._keras.layers.arguments import _check_no_constraint
from sluice._keras.layers.base import Layer
from sluice.framework.ops.nn import nn_ops


def _tuple(value: Any, rank: int, what: str, allow_zero: bool = False) -> tuple[int, ...]:
    """`value` (an int or `rank` ints) as `rank` ints, each positive (or >= 0 with
    `allow_zero`), as Keras's `standardize_tuple`; `what` names the layer and argument."""
    if isinstance(value, int):
        value = (value,) * rank
    value = tuple(int(v) for v in value)
    if len(value) != rank:
        raise ValueError(f"{what} must be an int or a tuple of {rank} ints, got {value}.")
    if any(v < (0 if allow_zero else 1) for v in value):
        kind = "non-negative" if allow_zero else "positive"
        raise ValueError(f"{what} must be {kind}, got {value}.")
    return value


def _padding(padding: str, allowed: tuple[str, ...]) -> str:
    padding = padding.lower()
    if padding not in allowed:
        raise ValueError(f"padding must be one of {allowed}, got {padding!r}.")
    return padding


def _channels_last(data_format: str | None, cls: str) -> str:
    data_format = data_format or "channels_last"
    if data_format != "channels_last":
        raise ValueError(
            f"{cls} supports only data_format='channels_last', got {data_format!r}; transpose "
            "the inputs to [batch, ..., channels] first."
        )
    return data_format


def _conv_length(size: int | None, kernel: int, stride: int, padding: str, dilation: int):
    """Keras's `compute_conv_output_shape` for one dimension ("causal" pads k - 1 before)."""
    if size is None:
        return None
    if padding == "same":
        return -(-size // stride)
    span = (kernel - 1) * dilation + 1
    if padding == "causal":
        size += span - 1
    return max(0, (size - span) // stride + 1)


def _transpose_padding(
    kernel: int, stride: int, padding: str, output_padding: int | None, dilation: int
) -> tuple[int, int]:
    """The (left, right) padding Keras's JAX backend gives `lax.conv_transpose`."""
    kernel = (kernel - 1) * dilation + 1
    if padding == "valid":
        if output_padding is None:
            output_padding = max(kernel, stride) - kernel
        return kernel - 1, kernel - 1 + output_padding
    if output_padding is None:
        pad_len = stride + kernel - 2
    else:
        pad_len = kernel + kernel % 2 - 2 + output_padding
    left = min(pad_len // 2 + pad_len % 2, kernel - 1)
    return left, pad_len - left


def _transpose_length(
    size: int | None,
    kernel: int,
    stride: int,
    padding: str,
    output_padding: int | None,
    dilation: int,
):
    """Keras's `compute_conv_transpose_output_shape` for one dimension."""
    if size is None:
        return None
    kernel = (kernel - 1) * dilation + 1
    if padding == "valid":
        if output_padding is None:
            output_padding = max(kernel, stride) - kernel
        return (size - 1) * stride + kernel + output_padding
    if output_padding is None:
        return size * stride
    return (size - 1) * stride + kernel % 2 + output_padding


def _check_dilation(cls: str, strides: tuple, dilation_rate: tuple) -> None:
    if any(d != 1 for d in dilation_rate) and any(s != 1 for s in strides):
        raise ValueError(f"{cls}: dilation_rate > 1 and strides > 1 cannot be combined.")


class _Conv(Layer):
    """The weights, configuration and epilogue (bias, activation) shared by the layers here."""

    rank = 1

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        data_format: str | None = None,
        dilation_rate: Any = 1,
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
        cls = type(self).__name__
        _check_no_constraint(kernel_constraint=kernel_constraint, bias_constraint=bias_constraint)
        if int(filters) <= 0:
            raise ValueError(f"{cls}: filters must be a positive int, got {filters}.")
        self.filters = int(filters)
        self.kernel_size = _tuple(kernel_size, self.rank, f"{cls} kernel_size")
        self.strides = _tuple(strides, self.rank, f"{cls} strides")
        self.data_format = _channels_last(data_format, cls)
        self.dilation_rate = _tuple(dilation_rate, self.rank, f"{cls} dilation_rate")
        _check_dilation(cls, self.strides, self.dilation_rate)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)

    def _kernel_shape(self, channels: int) -> tuple:
        raise NotImplementedError

    def build(self, input_shape: tuple) -> None:
        if len(input_shape) != self.rank + 2:
            raise ValueError(
                f"{type(self).__name__} {self.name!r} expects inputs of rank {self.rank + 2}, "
                f"got shape {input_shape}."
            )
        if input_shape[-1] is None:
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: the channel dimension of {input_shape} "
                "must be known."
            )
        self.kernel = self.add_weight(
            shape=self._kernel_shape(input_shape[-1]),
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

    def _finish(self, y: Any) -> Any:
        if self.bias is not None:
            y = nn_ops.bias_add(y, self.bias)
        return self.activation(y)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "filters": self.filters,
            "kernel_size": self.kernel_size,
            "strides": self.strides,
            "padding": self.padding,
            "data_format": self.data_format,
            "dilation_rate": self.dilation_rate,
            "activation": activations.serialize(self.activation),
            "use_bias": self.use_bias,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
            "bias_regularizer": regularizers.serialize(self.bias_regularizer),
        }
