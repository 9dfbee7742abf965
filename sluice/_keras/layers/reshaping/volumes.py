"""ZeroPadding3D, Cropping3D and UpSampling3D: the reshaping layers over volumes
([batch, depth, height, width, channels], or channels first; `data_format` None means
`sl.config.image_data_format()`), as Keras 3 defines them."""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.layers.arguments import _data_format
from sluice._keras.layers.base import Layer
from sluice._keras.layers.convolutional.base_conv import standardize_tuple
from sluice._keras.layers.input_spec import InputSpec
from sluice._keras.layers.reshaping.cropping import _crop_slice, _cropped
from sluice._keras.layers.reshaping.reshaping_utils import (
    _int_pair,
    _plus,
    _times,
    check_rank,
    from_channels_last,
    to_channels_last,
)
from sluice._keras.layers.reshaping.up_sampling import _repeat
from sluice.framework.ops.array import join_ops

AXES = ("dim1", "dim2", "dim3")


def _three_pairs(layer: str, value: Any, what: str) -> tuple:
    """Keras's 3-D padding/cropping forms: n, (d1, d2, d3) (each symmetric) or three pairs."""
    if isinstance(value, (int, np.integer)):
        if value < 0:
            raise ValueError(f"{layer}: `{what}` cannot be negative. Received: {what}={value}.")
        return ((int(value), int(value)),) * 3
    if not hasattr(value, "__len__") or len(value) != 3:
        raise ValueError(
            f"{layer}: `{what}` should be an int, a tuple of 3 ints or a tuple of 3 tuples of "
            f"2 ints. Received: {what}={value!r}."
        )
    return tuple(_int_pair(v, f"{what}[{i}]") for i, v in enumerate(value))


def volume_layout(data_format: str) -> str:
    if data_format == "channels_first":
        return "[batch, channels, dim1, dim2, dim3]"
    return "[batch, dim1, dim2, dim3, channels]"


@export("layers.ZeroPadding3D")
class ZeroPadding3D(Layer):
    """Adds zeros around each volume: [batch, d1, d2, d3, channels] ->
    [batch, d1 + p1, d2 + p2, d3 + p3, channels] (channels_first: [batch, channels, d1, d2, d3]).

    Args:
      padding: an int (everywhere), 3 ints (symmetric per axis) or 3 (before, after) pairs.
      data_format: "channels_last", "channels_first" or None (`sl.config.image_data_format()`).

    >>> ZeroPadding3D(((1, 0), 2, (0, 1)))(sl.Input((2, 2, 2, 1))).shape
    TensorShape([None, 3, 6, 3, 1])
    """

    def __init__(
        self, padding: Any = ((1, 1), (1, 1), (1, 1)), data_format: str | None = None,
        **kwargs: Any,
    ):  # fmt: skip
        super().__init__(**kwargs)
        self.padding = _three_pairs("ZeroPadding3D", padding, "padding")
        self.data_format = _data_format(data_format)

    def build(self, input_shape: tuple) -> None:
        check_rank(self, input_shape, 5, volume_layout(self.data_format))
        self.input_spec = InputSpec(ndim=5)

    def call(self, inputs: Any) -> Any:
        pads = [[0, 0], *(list(p) for p in self.padding), [0, 0]]
        return join_ops.pad(inputs, from_channels_last(pads, self.data_format))

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        batch, *spatial, channels = to_channels_last(tuple(input_shape), self.data_format)
        spatial = [_plus(d, sum(p)) for d, p in zip(spatial, self.padding)]
        return from_channels_last((batch, *spatial, channels), self.data_format)

    def get_config(self) -> dict:
        return {**super().get_config(), "padding": self.padding, "data_format": self.data_format}


@export("layers.Cropping3D")
class Cropping3D(Layer):
    """Removes the borders of each volume: [batch, d1, d2, d3, channels] ->
    [batch, d1 - c1, d2 - c2, d3 - c3, channels] (channels_first: [batch, channels, d1, d2, d3]).

    Args:
      cropping: an int (everywhere), 3 ints (symmetric per axis) or 3 (before, after) pairs.
      data_format: "channels_last", "channels_first" or None (`sl.config.image_data_format()`).

    >>> Cropping3D(((1, 0), 1, (0, 2)))(sl.Input((4, 4, 4, 2))).shape
    TensorShape([None, 3, 2, 2, 2])
    """

    def __init__(
        self, cropping: Any = ((1, 1), (1, 1), (1, 1)), data_format: str | None = None,
        **kwargs: Any,
    ):  # fmt: skip
        super().__init__(**kwargs)
        self.cropping = _three_pairs("Cropping3D", cropping, "cropping")
        self.data_format = _data_format(data_format)

    def build(self, input_shape: tuple) -> None:
        check_rank(self, input_shape, 5, volume_layout(self.data_format))
        self.input_spec = InputSpec(ndim=5)
        self.compute_output_shape(input_shape)

    def call(self, inputs: Any) -> Any:
        every = slice(None)
        index = (every, *(_crop_slice(c) for c in self.cropping), every)
        return inputs[from_channels_last(index, self.data_format)]

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        batch, *spatial, channels = to_channels_last(tuple(input_shape), self.data_format)
        spatial = [_cropped(self, d, c, a) for d, c, a in zip(spatial, self.cropping, AXES)]
        return from_channels_last((batch, *spatial, channels), self.data_format)

    def get_config(self) -> dict:
        return {**super().get_config(), "cropping": self.cropping, "data_format": self.data_format}


@export("layers.UpSampling3D")
class UpSampling3D(Layer):
    """Repeats each entry of a volume `size` times along each spatial axis (nearest
    neighbour): [batch, d1, d2, d3, channels] -> [batch, s1 d1, s2 d2, s3 d3, channels].

    Args:
      size: an int or 3 ints, the factors.
      data_format: "channels_last", "channels_first" or None (`sl.config.image_data_format()`).

    >>> UpSampling3D((2, 1, 3))(sl.Input((2, 2, 2, 1))).shape
    TensorShape([None, 4, 2, 6, 1])
    """

    def __init__(self, size: Any = (2, 2, 2), data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.size = standardize_tuple(size, 3, "UpSampling3D size")
        self.data_format = _data_format(data_format)

    def build(self, input_shape: tuple) -> None:
        check_rank(self, input_shape, 5, volume_layout(self.data_format))
        self.input_spec = InputSpec(ndim=5)

    def call(self, inputs: Any) -> Any:
        first = 2 if self.data_format == "channels_first" else 1
        y = inputs
        for i, s in enumerate(self.size):
            y = _repeat(y, s, first + i)
        return y

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        batch, *spatial, channels = to_channels_last(tuple(input_shape), self.data_format)
        spatial = [_times(d, s) for d, s in zip(spatial, self.size)]
        return from_channels_last((batch, *spatial, channels), self.data_format)

    def get_config(self) -> dict:
        return {**super().get_config(), "size": self.size, "data_format": self.data_format}
