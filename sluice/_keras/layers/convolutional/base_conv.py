"""`BaseConv`, the one base of every convolution layer (Conv1D, Conv2D, their transposes,
DepthwiseConv2D, SeparableConv2D), and the convolution they and TF1's `sl.layers.conv1d/conv2d`
run (`convolve`, `add_bias`).

A layer states its geometry (`rank`, the paddings it takes) and its weights;
the base checks the arguments as Keras's `standardize_tuple` does, builds the bias, adds it and
applies the activation, computes forward output shapes, and writes the config in the order the
layer lists (`config_keys`, as Keras writes it, so saved configs do not change).

Every convolution takes `data_format` "channels_last" ([batch, *spatial, channels]) or
"channels_first" ([batch, channels, *spatial]); None means `sl.config.image_data_format()`, as
Keras's `standardize_data_format`. channels_first runs the engine's NCHW ops (Conv2D, its
backprops, DepthwiseConv2dNative and BiasAdd take `data_format="NCHW"`, gradients included), so
no transposes are added. The kernel's layout does not depend on the data format (as in Keras),
so weights, `get_weights` and saved files are the same for both.

The 1-D convolutions run the 2-D ops on a height-1 image (`expand_dims` at the spatial axis
before the steps). "causal" padding (1-D only) pads (kernel_size - 1) * dilation_rate zeros
before the steps, so output t sees inputs <= t. The transposed convolutions: see
`base_conv_transpose`.
"""

from __future__ import annotations

from typing import Any

from sluice._keras import activations, constraints, initializers, regularizers
from sluice._keras.layers.arguments import _data_format
from sluice._keras.layers.base import Layer
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops
from sluice.framework.ops.nn import conv_ops, nn_ops


def standardize_tuple(value: Any, rank: int, what: str, allow_zero: bool = False) -> tuple:
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


def standardize_padding(padding: str, allowed: tuple[str, ...] = ("valid", "same")) -> str:
    padding = padding.lower()
    if padding not in allowed:
        raise ValueError(f"padding must be one of {allowed}, got {padding!r}.")
    return padding


def conv_output_length(
    size: int | None, kernel: int, stride: int, padding: str, dilation: int = 1
) -> int | None:
    """Keras's `compute_conv_output_shape` for one dimension ("causal" pads k - 1 before)."""
    if size is None:
        return None
    if padding == "same":
        return -(-size // stride)
    span = (kernel - 1) * dilation + 1
    if padding == "causal":
        size += span - 1
    return max(0, (size - span) // stride + 1)


def spatial_dims(input_shape: tuple, rank: int, data_format: str) -> tuple:
    """The spatial dimensions of `input_shape` ([batch, *spatial, channels] or channels first)."""
    if data_format == "channels_last":
        return tuple(input_shape[1 : 1 + rank])
    return tuple(input_shape[2 : 2 + rank])


def with_spatial_dims(input_shape: tuple, spatial: tuple, channels: Any, data_format: str) -> tuple:
    if data_format == "channels_last":
        return (input_shape[0],) + tuple(spatial) + (channels,)
    return (input_shape[0], channels) + tuple(spatial)


def image_format(channels_first: bool) -> str:
    """The 2-D ops' data_format: "NCHW" or "NHWC"."""
    return "NCHW" if channels_first else "NHWC"


def check_dilation(cls: str, strides: tuple, dilation_rate: tuple) -> None:
    if any(d != 1 for d in dilation_rate) and any(s != 1 for s in strides):
        raise ValueError(f"{cls}: dilation_rate > 1 and strides > 1 cannot be combined.")


def convolve(
    inputs: Tensor,
    kernel: Tensor,
    strides: tuple,
    padding: str,
    dilation_rate: tuple,
    channels_first: bool = False,
) -> Tensor:
    """`inputs` [batch, *spatial, in] (or [batch, in, *spatial]) convolved with `kernel`
    [*kernel_size, in, out], for 1 or 2 spatial dimensions; `padding` is "valid", "same" or (1-D
    only) "causal". The convolution of Keras's Conv1D/Conv2D and TF1's conv1d/conv2d."""
    fmt = image_format(channels_first)
    if len(strides) == 2:
        return conv_ops.conv2d(inputs, kernel, strides=list(strides), padding=padding.upper(),
                               data_format=fmt, dilations=list(dilation_rate))  # fmt: skip
    (k,), (s,), (d,) = kernel.shape.as_list()[:1], strides, dilation_rate
    axis = 2 if channels_first else 1  # the height-1 axis, before the steps
    pads = padding.upper()
    if padding == "causal":  # (k - 1) * d zeros before the steps
        steps = [[0, 0], [(k - 1) * d, 0]]
        pads = [[0, 0], [0, 0]] + steps if channels_first else [[0, 0], [0, 0], *steps[::-1]]
    image, kernel = array_ops.expand_dims(inputs, axis), array_ops.expand_dims(kernel, 0)
    y = conv_ops.conv2d(
        image, kernel, strides=[1, s], padding=pads, data_format=fmt, dilations=[1, d]
    )
    return array_ops.squeeze(y, [axis])


def add_bias(outputs: Tensor, bias: Tensor, channels_first: bool = False) -> Tensor:
    """`outputs + bias` along the channel axis (BiasAdd; by hand for channels-first 1-D)."""
    if channels_first and outputs.shape.rank == 3:  # BiasAdd's NCHW wants 4-D
        return outputs + array_ops.reshape(bias, [1, -1, 1])
    return nn_ops.bias_add(outputs, bias, data_format=image_format(channels_first))


class BaseConv(Layer):
    """The arguments, weights, epilogue (bias, activation), output shape and config that every
    convolution layer shares. A subclass sets `rank`, `paddings` and `config_keys`, and
    overrides `kernel_shape` (and `build`/`call` for other weights)."""

    rank = 2
    paddings: tuple[str, ...] = ("valid", "same")
    config_keys: tuple[str, ...] = (
        "filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate",
        "activation", "use_bias", "kernel_initializer", "bias_initializer",
        "kernel_regularizer", "bias_regularizer",
    )  # fmt: skip
    constraint_keys: tuple[str, ...] = ("kernel_constraint", "bias_constraint")

    def __init__(
        self,
        filters: int | None,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = 1,
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
        cls = type(self).__name__
        if groups != 1:
            raise NotImplementedError(f"{cls}: groups != 1 is not supported.")
        self.groups = groups
        if filters is not None:
            if int(filters) <= 0:
                raise ValueError(f"{cls}: filters must be a positive int, got {filters}.")
            self.filters = int(filters)
        self.kernel_size = standardize_tuple(kernel_size, self.rank, f"{cls} kernel_size")
        self.strides = standardize_tuple(strides, self.rank, f"{cls} strides")
        self.padding = standardize_padding(padding, self.paddings)
        self.data_format = _data_format(data_format)
        self.dilation_rate = standardize_tuple(dilation_rate, self.rank, f"{cls} dilation_rate")
        check_dilation(cls, self.strides, self.dilation_rate)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)

    @property
    def channels_first(self) -> bool:
        return self.data_format == "channels_first"

    def input_channels(self, input_shape: tuple) -> int:
        """The channel dimension of `input_shape`, after checking its rank; known."""
        if input_shape is None or len(input_shape) != self.rank + 2:
            raise ValueError(
                f"{type(self).__name__} {self.name!r} expects inputs of rank {self.rank + 2}, "
                f"got shape {input_shape}."
            )
        channels = input_shape[1] if self.channels_first else input_shape[-1]
        if channels is None:
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: the channel dimension of {input_shape} "
                "must be known."
            )
        return channels

    def kernel_shape(self, channels: int) -> tuple:
        """The kernel of a forward convolution: [*kernel_size, in, filters]."""
        return self.kernel_size + (channels, self.filters)

    def build(self, input_shape: tuple) -> None:
        self.kernel = self.add_weight(
            shape=self.kernel_shape(self.input_channels(input_shape)),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
            name="kernel",
        )
        self.add_bias_weight(self.filters)

    def add_bias_weight(self, units: int) -> None:
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                shape=(units,),
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
                name="bias",
            )

    def call(self, inputs: Any) -> Any:
        y = convolve(
            inputs, self.kernel, self.strides, self.padding, self.dilation_rate,
            self.channels_first,
        )  # fmt: skip
        return self.finish(y)

    def finish(self, y: Any) -> Any:
        """`activation(y + bias)`."""
        if self.bias is not None:
            y = add_bias(y, self.bias, self.channels_first)
        return self.activation(y)

    def output_channels(self, input_channels: Any) -> Any:
        return self.filters

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        spatial = tuple(
            conv_output_length(n, k, s, self.padding, d)
            for n, k, s, d in zip(
                spatial_dims(input_shape, self.rank, self.data_format),
                self.kernel_size,
                self.strides,
                self.dilation_rate,
            )
        )
        channels = input_shape[1] if self.channels_first else input_shape[-1]
        return with_spatial_dims(
            input_shape, spatial, self.output_channels(channels), self.data_format
        )

    def get_config(self) -> dict:
        config = super().get_config()
        for key in self.config_keys + self.constraint_keys:
            value = getattr(self, key)
            if key == "activation":
                value = activations.serialize(value)
            elif key.endswith("_initializer"):
                value = initializers.serialize(value)
            elif key.endswith("_regularizer"):
                value = regularizers.serialize(value)
            elif key.endswith("_constraint"):
                value = constraints.serialize(value)
            config[key] = value
        return config
