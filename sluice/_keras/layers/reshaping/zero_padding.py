"""ZeroPadding1D and ZeroPadding2D: zeros around the steps or the image."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice._keras.layers.reshaping.reshaping_utils import (
    _int_pair,
    _pair_of_pairs,
    _plus,
    check_rank,
    require_channels_last,
)
from sluice.framework.ops.array import join_ops


@export("layers.ZeroPadding1D")
class ZeroPadding1D(Layer):
    """Adds zeros at the start and end of the time axis: [batch, steps, features] ->
    [batch, left + steps + right, features].

    Args:
      padding: an int (both sides) or a pair (left, right).
      data_format: "channels_last" (channels_first is not supported).

    >>> y = ZeroPadding1D(padding=(1, 2))(sl.Input((4, 3)))
    >>> y.shape
    TensorShape([None, 7, 3])
    """

    def __init__(self, padding: Any = 1, data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.padding = _int_pair(padding, "padding")
        self.data_format = require_channels_last("ZeroPadding1D", data_format)

    def build(self, input_shape: tuple) -> None:
        check_rank(self, input_shape, 3, "[batch, steps, features]")

    def call(self, inputs: Any) -> Any:
        return join_ops.pad(inputs, [[0, 0], list(self.padding), [0, 0]])

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return (input_shape[0], _plus(input_shape[1], sum(self.padding)), input_shape[2])

    def get_config(self) -> dict:
        return {**super().get_config(), "padding": self.padding, "data_format": self.data_format}


@export("layers.ZeroPadding2D")
class ZeroPadding2D(Layer):
    """Adds rows and columns of zeros around each image: [batch, rows, cols, channels] ->
    [batch, top + rows + bottom, left + cols + right, channels].

    Args:
      padding: an int (everywhere), a pair (rows, cols) (symmetric), or
        ((top, bottom), (left, right)).
      data_format: "channels_last" (channels_first is not supported).

    >>> y = ZeroPadding2D(padding=((1, 0), (2, 2)))(sl.Input((3, 3, 1)))
    >>> y.shape
    TensorShape([None, 4, 7, 1])
    """

    def __init__(self, padding: Any = (1, 1), data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.padding = _pair_of_pairs(padding, "padding")
        self.data_format = require_channels_last("ZeroPadding2D", data_format)

    def build(self, input_shape: tuple) -> None:
        check_rank(self, input_shape, 4, "[batch, rows, cols, channels]")

    def call(self, inputs: Any) -> Any:
        rows, cols = self.padding
        return join_ops.pad(inputs, [[0, 0], list(rows), list(cols), [0, 0]])

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        rows, cols = self.padding
        return (
            input_shape[0],
            _plus(input_shape[1], sum(rows)),
            _plus(input_shape[2], sum(cols)),
            input_shape[3],
        )

    def get_config(self) -> dict:
        return {**super().get_config(), "padding": self.padding, "data_format": self.data_format}
