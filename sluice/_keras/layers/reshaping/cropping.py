"""Cropping1D and Cropping2D: steps or pixels cut off the edges (Cropping2D channels last or
first; Keras's Cropping1D takes no data_format)."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.arguments import _data_format
from sluice._keras.layers.base import Layer
from sluice._keras.layers.reshaping.reshaping_utils import (
    _int_pair,
    _pair_of_pairs,
    check_rank,
    from_channels_last,
    image_layout,
    to_channels_last,
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
    [batch, rows - top - bottom, cols - left - right, channels] (channels_first: [batch,
    channels, rows, cols]).

    Args:
      cropping: an int (everywhere), a pair (rows, cols) (symmetric), or
        ((top, bottom), (left, right)).
      data_format: "channels_last", "channels_first" or None (`sl.config.image_data_format()`).

    >>> y = Cropping2D(cropping=((1, 0), (1, 1)))(sl.Input((4, 4, 2)))
    >>> y.shape
    TensorShape([None, 3, 2, 2])
    """

    def __init__(
        self, cropping: Any = ((0, 0), (0, 0)), data_format: str | None = None, **kwargs: Any
    ):
        super().__init__(**kwargs)
        self.cropping = _pair_of_pairs(cropping, "cropping")
        self.data_format = _data_format(data_format)

    def build(self, input_shape: tuple) -> None:
        check_rank(self, input_shape, 4, image_layout(self.data_format))
        self.compute_output_shape(input_shape)

    def call(self, inputs: Any) -> Any:
        rows, cols = self.cropping
        every = slice(None)
        index = (every, _crop_slice(rows), _crop_slice(cols), every)
        return inputs[from_channels_last(index, self.data_format)]

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        batch, r, c, channels = to_channels_last(tuple(input_shape), self.data_format)
        rows, cols = self.cropping
        shape = (
            batch,
            _cropped(self, r, rows, "rows"),
            _cropped(self, c, cols, "cols"),
            channels,
        )
        return from_channels_last(shape, self.data_format)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "cropping": self.cropping,
            "data_format": self.data_format,
        }
