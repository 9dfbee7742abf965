"""Cropping1D and Cropping2D: steps or pixels cut off the edges."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice._keras.layers.reshaping.reshaping_utils import (
    _int_pair,
    _pair_of_pairs,
    check_rank,
    require_channels_last,
)


def _cropped(layer: Layer, d: int | None, crop: tuple[int, int], axis: str) -> int | None:
    if d is None:
        return None
    if sum(crop) >= d:
        raise ValueError(
            f"{type(layer).__name__} {layer.name!r}: cropping {crop} leaves nothing of the "
            f"{axis} axis of length {d}."
        )
    return d - sum(crop)


def _crop_slice(crop: tuple[int, int]) -> slice:
    return slice(crop[0], -crop[1] if crop[1] else None)


@export("layers.Cropping1D")
class Cropping1D(Layer):
    """Removes steps at the start and end of the time axis: [batch, steps, features] ->
    [batch, steps - start - end, features].

    Args:
      cropping: an int (both sides) or a pair (start, end).

    >>> y = Cropping1D(cropping=(1, 2))(sl.Input((6, 3)))
    >>> y.shape
    TensorShape([None, 3, 3])
    """

    def __init__(self, cropping: Any = (1, 1), **kwargs: Any):
        super().__init__(**kwargs)
        self.cropping = _int_pair(cropping, "cropping")

    def build(self, input_shape: tuple) -> None:
        check_rank(self, input_shape, 3, "[batch, steps, features]")
        self.compute_output_shape(input_shape)

    def call(self, inputs: Any) -> Any:
        return inputs[:, _crop_slice(self.cropping), :]

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        steps = _cropped(self, input_shape[1], self.cropping, "time")
        return (input_shape[0], steps, input_shape[2])

    def get_config(self) -> dict:
        return {**super().get_config(), "cropping": self.cropping}


@export("layers.Cropping2D")
class Cropping2D(Layer):
    """Removes rows and columns at the borders of each image: [batch, rows, cols, channels] ->
    [batch, rows - top - bottom, cols - left - right, channels].

    Args:
      cropping: an int (everywhere), a pair (rows, cols) (symmetric), or
        ((top, bottom), (left, right)).
      data_format: "channels_last" (channels_first is not supported).

    >>> y = Cropping2D(cropping=((1, 0), (1, 1)))(sl.Input((4, 4, 2)))
    >>> y.shape
    TensorShape([None, 3, 2, 2])
    """

    def __init__(
        self, cropping: Any = ((0, 0), (0, 0)), data_format: str | None = None, **kwargs: Any
    ):
        super().__init__(**kwargs)
        self.cropping = _pair_of_pairs(cropping, "cropping")
        self.data_format = require_channels_last("Cropping2D", data_format)

    def build(self, input_shape: tuple) -> None:
        check_rank(self, input_shape, 4, "[batch, rows, cols, channels]")
        self.compute_output_shape(input_shape)

    def call(self, inputs: Any) -> Any:
        rows, cols = self.cropping
        return inputs[:, _crop_slice(rows), _crop_slice(cols), :]

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        rows, cols = self.cropping
        return (
            input_shape[0],
            _cropped(self, input_shape[1], rows, "rows"),
            _cropped(self, input_shape[2], cols, "cols"),
            input_shape[3],
        )

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "cropping": self.cropping,
            "data_format": self.data_format,
        }
