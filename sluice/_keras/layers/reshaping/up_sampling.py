"""UpSampling1D and UpSampling2D: each step or pixel repeated (or, bilinear, interpolated);
UpSampling2D channels last or first (Keras's UpSampling1D takes no data_format)."""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.layers.arguments import _data_format
from sluice._keras.layers.base import Layer
from sluice._keras.layers.reshaping.reshaping_utils import (
    _dims,
    _int_pair,
    _reshape,
    _times,
    check_rank,
    from_channels_last,
    image_layout,
    to_channels_last,
)
from sluice.framework.ops.array import array_ops, broadcast_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import matmul_ops


def _repeat(x: Any, size: int, axis: int) -> Any:
    """Each entry of `x` along `axis` repeated `size` times in place (np.repeat)."""
    if size == 1:
        return x
    static = x.shape.as_list()
    dims = _dims(x)
    multiples = [1] * (len(static) + 1)
    multiples[axis + 1] = size
    y = broadcast_ops.tile(array_ops.expand_dims(x, axis + 1), multiples)
    dims[axis] = dims[axis] * size
    static[axis] = None if static[axis] is None else static[axis] * size
    return _reshape(y, dims, tuple(static))


def linear_resize_matrix(n: int, size: int) -> np.ndarray:
    """[n * size, n]: output i of a linear upsampling of n values by `size` as a weighted sum
    of the inputs. Its centre maps back to (i + 0.5) / size - 0.5 (clamped to the edge values),
    between inputs floor and floor + 1, weighed by the distance to each.

    >>> linear_resize_matrix(2, 2)
    array([[1.  , 0.  ],
           [0.75, 0.25],
           [0.25, 0.75],
           [0.  , 1.  ]])
    """
    centre = np.clip((np.arange(n * size) + 0.5) / size - 0.5, 0, n - 1)
    low = np.floor(centre).astype(np.int64)
    high = np.minimum(low + 1, n - 1)
    weights = np.zeros((n * size, n))
    rows = np.arange(n * size)
    np.add.at(weights, (rows, low), 1.0 - (centre - low))
    np.add.at(weights, (rows, high), centre - low)
    return weights


@export("layers.UpSampling1D")
class UpSampling1D(Layer):
    """Repeats each step `size` times along the time axis: [batch, steps, features] ->
    [batch, steps * size, features].

    >>> y = UpSampling1D(size=3)(sl.Input((4, 2)))
    >>> y.shape
    TensorShape([None, 12, 2])
    """

    def __init__(self, size: int = 2, **kwargs: Any):
        super().__init__(**kwargs)
        if int(size) <= 0:
            raise ValueError(f"`size` must be a positive int, got {size!r}.")
        self.size = int(size)

    def build(self, input_shape: tuple) -> None:
        check_rank(self, input_shape, 3, "[batch, steps, features]")

    def call(self, inputs: Any) -> Any:
        return _repeat(inputs, self.size, 1)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return (input_shape[0], _times(input_shape[1], self.size), input_shape[2])

    def get_config(self) -> dict:
        return {**super().get_config(), "size": self.size}


@export("layers.UpSampling2D")
class UpSampling2D(Layer):
    """Upsamples rows by `size[0]` and columns by `size[1]`: [batch, rows, cols, channels] ->
    [batch, rows * size[0], cols * size[1], channels] (channels_first: [batch, channels, rows,
    cols]). "nearest" repeats each row and column;
    "bilinear" interpolates between the two nearest ones as Keras 3 does (`jax.image.resize`:
    pixel centres at i + 0.5, the edge rows repeated beyond the edges), which needs the rows
    and columns known.

    Args:
      size: an int or a pair (rows, cols).
      data_format: "channels_last", "channels_first" or None (`sl.config.image_data_format()`).
      interpolation: "nearest" or "bilinear" (the others are not supported).

    >>> y = UpSampling2D(size=(2, 3))(sl.Input((4, 4, 1)))
    >>> y.shape
    TensorShape([None, 8, 12, 1])
    """

    def __init__(
        self,
        size: Any = (2, 2),
        data_format: str | None = None,
        interpolation: str = "nearest",
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.size = _int_pair(size, "size")
        if 0 in self.size:
            raise ValueError(f"`size` must be positive, got {size!r}.")
        self.data_format = _data_format(data_format)
        if interpolation not in ("nearest", "bilinear"):
            raise NotImplementedError(
                f"UpSampling2D: interpolation={interpolation!r} is not supported; only "
                "'nearest' and 'bilinear' are."
            )
        self.interpolation = interpolation

    @property
    def rows_axis(self) -> int:
        return 2 if self.data_format == "channels_first" else 1

    def build(self, input_shape: tuple) -> None:
        check_rank(self, input_shape, 4, image_layout(self.data_format))
        spatial = tuple(input_shape)[self.rows_axis : self.rows_axis + 2]
        if self.interpolation == "bilinear" and None in spatial:
            raise ValueError(
                f"UpSampling2D {self.name!r}: bilinear upsampling needs the rows and columns "
                f"known; got input shape {tuple(input_shape)}."
            )

    def call(self, inputs: Any) -> Any:
        axis = self.rows_axis
        if self.interpolation == "nearest":
            return _repeat(_repeat(inputs, self.size[0], axis), self.size[1], axis + 1)
        rows, cols = inputs.shape.as_list()[axis : axis + 2]
        dtype = inputs.dtype
        by_rows = core_ops.constant(linear_resize_matrix(rows, self.size[0]), dtype=dtype)
        if self.data_format == "channels_first":  # [batch, channels, rows, cols]
            by_cols = core_ops.constant(linear_resize_matrix(cols, self.size[1]).T, dtype=dtype)
            return matmul_ops.matmul(matmul_ops.matmul(by_rows, inputs), by_cols)
        by_cols = core_ops.constant(linear_resize_matrix(cols, self.size[1]), dtype=dtype)
        x = array_ops.transpose(inputs, [0, 2, 1, 3])  # [batch, cols, rows, channels]
        x = array_ops.transpose(matmul_ops.matmul(by_rows, x), [0, 2, 1, 3])
        return matmul_ops.matmul(by_cols, x)  # each matrix applied to every batch entry

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        batch, rows, cols, channels = to_channels_last(tuple(input_shape), self.data_format)
        shape = (batch, _times(rows, self.size[0]), _times(cols, self.size[1]), channels)
        return from_channels_last(shape, self.data_format)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "size": self.size,
            "data_format": self.data_format,
            "interpolation": self.interpolation,
        }
