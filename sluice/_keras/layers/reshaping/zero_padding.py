"""ZeroPadding1D and ZeroPadding2D: zeros around the steps or the image, channels last or first
(`data_format`; None means `sl.config.image_data_format()`)."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.arguments import _data_format
from sluice._keras.layers.base import Layer
from sluice._keras.layers.reshaping.reshaping_utils import (
    _int_pair,
    _pair_of_pairs,
    _plus,
    check_rank,
    from_channels_last,
    image_layout,
    to_channels_last,
)
from sluice.framework.ops.array import join_ops


@export("layers.ZeroPadding1D")
class ZeroPadding1D(Layer):
    """Adds zeros at the start and end of the time axis: [batch, steps, features] ->
    [batch, left + steps + right, features] (channels_first: [batch, features, steps]).

    Args:
      padding: an int (both sides) or a pair (left, right).
      data_format: "channels_last", "channels_first" or None (`sl.config.image_data_format()`).

    >>> y = ZeroPadding1D(padding=(1, 2))(sl.Input((4, 3)))
    >>> y.shape
    TensorShape([None, 7, 3])
    """

    def __init__(self, padding: Any = 1, data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.padding = _int_pair(padding, "padding")
        self.data_format = _data_format(data_format)

    @property
    def steps_axis(self) -> int:
        return 2 if self.data_format == "channels_first" else 1

    def build(self, input_shape: tuple) -> None:
        layout = "[batch, features, steps]" if self.steps_axis == 2 else "[batch, steps, features]"
        check_rank(self, input_shape, 3, layout)

    def call(self, inputs: Any) -> Any:
        pads = [[0, 0], [0, 0], [0, 0]]
        pads[self.steps_axis] = list(self.padding)
        return join_ops.pad(inputs, pads)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        shape = list(input_shape)
        shape[self.steps_axis] = _plus(shape[self.steps_axis], sum(self.padding))
        return tuple(shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "padding": self.padding, "data_format": self.data_format}


@export("layers.ZeroPadding2D")
class ZeroPadding2D(Layer):
    """Adds rows and columns of zeros around each image: [batch, rows, cols, channels] ->
    [batch, top + rows + bottom, left + cols + right, channels] (channels_first: [batch,
    channels, rows, cols]).

    Args:
      padding: an int (everywhere), a pair (rows, cols) (symmetric), or
        ((top, bottom), (left, right)).
      data_format: "channels_last", "channels_first" or None (`sl.config.image_data_format()`).

    >>> y = ZeroPadding2D(padding=((1, 0), (2, 2)))(sl.Input((3, 3, 1)))
    >>> y.shape
    TensorShape([None, 4, 7, 1])
    """

    def __init__(self, padding: Any = (1, 1), data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.padding = _pair_of_pairs(padding, "padding")
        self.data_format = _data_format(data_format)

    def build(self, input_shape: tuple) -> None:
        check_rank(self, input_shape, 4, image_layout(self.data_format))

    def call(self, inputs: Any) -> Any:
        rows, cols = self.padding
        pads = [[0, 0], list(rows), list(cols), [0, 0]]
        return join_ops.pad(inputs, from_channels_last(pads, self.data_format))

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        batch, r, c, channels = to_channels_last(tuple(input_shape), self.data_format)
        rows, cols = self.padding
        shape = (batch, _plus(r, sum(rows)), _plus(c, sum(cols)), channels)
        return from_channels_last(shape, self.data_format)

    def get_config(self) -> dict:
        return {**super().get_config(), "padding": self.padding, "data_format": self.data_format}
