"""1-D pooling layers: MaxPooling1D, AveragePooling1D (Keras 3 arguments; the global ones are in
`global_pooling1d`).

They take [batch, steps, channels] ("channels_last") or [batch, channels, steps]
("channels_first"; None means `sl.config.image_data_format()`), and run the 2-D pooling ops on a
height-1 image (`expand_dims` before the steps), in NHWC or NCHW.
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.arguments import _data_format
from sluice._keras.layers.base import Layer
from sluice._keras.layers.convolutional.base_conv import (
    conv_output_length,
    image_format,
    spatial_dims,
    standardize_padding,
    standardize_tuple,
    with_spatial_dims,
)
from sluice.framework.ops.array import array_ops
from sluice.framework.ops.nn import pool_ops


def check_rank(layer: Layer, input_shape: Any, rank: int, layout: str) -> None:
    """Raises ValueError naming `layer` when its inputs are not of `rank` ([`layout`])."""
    if input_shape is None or len(input_shape) != rank:
        raise ValueError(
            f"{type(layer).__name__} {layer.name!r} expects inputs of rank {rank} {layout}, "
            f"got shape {input_shape}."
        )


def layout_1d(data_format: str) -> str:
    """How a 1-D layer with `data_format` wants its inputs, for error messages."""
    if data_format == "channels_first":
        return "[batch, channels, steps]"
    return "[batch, steps, channels]"


class _Pooling1D(Layer):
    _op = None  # pool_ops.max_pool or pool_ops.avg_pool

    def __init__(
        self,
        pool_size: Any = 2,
        strides: Any = None,
        padding: str = "valid",
        data_format: str | None = None,
        name: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(name=name, **kwargs)
        cls = type(self).__name__
        self.pool_size = standardize_tuple(pool_size, 1, f"{cls} pool_size")
        self.strides = (
            self.pool_size if strides is None else standardize_tuple(strides, 1, f"{cls} strides")
        )
        self.padding = standardize_padding(padding, ("valid", "same"))
        self.data_format = _data_format(data_format)

    def build(self, input_shape: Any) -> None:
        check_rank(self, input_shape, 3, layout_1d(self.data_format))
        super().build(input_shape)

    def call(self, inputs: Any) -> Any:
        first = self.data_format == "channels_first"
        axis = 2 if first else 1  # the height-1 axis, before the steps
        y = type(self)._op(
            array_ops.expand_dims(inputs, axis),
            ksize=[1, self.pool_size[0]],
            strides=[1, self.strides[0]],
            padding=self.padding.upper(),
            data_format=image_format(first),
        )
        return array_ops.squeeze(y, [axis])

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        steps = conv_output_length(
            spatial_dims(input_shape, 1, self.data_format)[0],
            self.pool_size[0],
            self.strides[0],
            self.padding,
            1,
        )
        channels = input_shape[1] if self.data_format == "channels_first" else input_shape[2]
        return with_spatial_dims(input_shape, (steps,), channels, self.data_format)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "pool_size": self.pool_size,
            "strides": self.strides,
            "padding": self.padding,
            "data_format": self.data_format,
        }


@export("layers.MaxPooling1D", "layers.MaxPool1D")
class MaxPooling1D(_Pooling1D):
    """The maximum of each `pool_size` window of [batch, steps, channels] (or channels first),
    moved by `strides` (default: `pool_size`).

    >>> MaxPooling1D(2)(sl.Input((10, 3))).shape.as_list()
    [None, 5, 3]
    """

    _op = staticmethod(pool_ops.max_pool)


@export("layers.AveragePooling1D", "layers.AvgPool1D")
class AveragePooling1D(_Pooling1D):
    """The mean of each `pool_size` window of [batch, steps, channels] ("same" padding: over the
    window's inside part).

    >>> AveragePooling1D(3, strides=2, padding="same")(sl.Input((10, 3))).shape.as_list()
    [None, 5, 3]
    """

    _op = staticmethod(pool_ops.avg_pool)
