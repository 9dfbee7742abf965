"""Reshaping layers: UpSampling1D/2D, ZeroPadding1D/2D, Cropping1D/2D, RepeatVector, Permute
(Keras 3 arguments; channels_last only)."""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice.framework.ops.array import array_ops, broadcast_ops, fill_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import matmul_ops


def require_channels_last(layer: str, data_format: str | None) -> str:
    """`data_format` (None means channels_last); channels_first raises a ValueError."""
    data_format = data_format or "channels_last"
    if data_format == "channels_first":
        raise ValueError(
            f"{layer}: data_format='channels_first' is not supported; use channels_last."
        )
    if data_format != "channels_last":
        raise ValueError(
            f"data_format must be 'channels_last' or 'channels_first', got {data_format!r}."
        )
    return data_format


def _int_pair(value: Any, what: str) -> tuple[int, int]:
    """An int `n` as (n, n); a pair of ints as itself; both checked non-negative."""
    pair = (value, value) if isinstance(value, (int, np.integer)) else tuple(value)
    if len(pair) != 2 or any(not isinstance(v, (int, np.integer)) or v < 0 for v in pair):
        raise ValueError(f"`{what}` must be a non-negative int or a pair of them, got {value!r}.")
    return int(pair[0]), int(pair[1])


def _pair_of_pairs(value: Any, what: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """Keras's 2-D padding/cropping forms: n, (h, w), or ((top, bottom), (left, right))."""
    if isinstance(value, (int, np.integer)):
        return _int_pair(value, what), _int_pair(value, what)
    value = tuple(value)
    if len(value) != 2:
        raise ValueError(
            f"`{what}` must be an int, a pair of ints or a pair of pairs, got {value!r}."
        )
    return _int_pair(value[0], what), _int_pair(value[1], what)


def _dims(x: Any) -> list:
    """x's dims: the static ones as ints, the unknown ones as scalar int32 Tensors."""
    static = x.shape.as_list()
    dynamic = fill_ops.shape(x) if None in static else None
    return [d if d is not None else dynamic[i] for i, d in enumerate(static)]


def _reshape(x: Any, dims: list, static: tuple) -> Any:
    """`x` reshaped to `dims` (ints or scalar Tensors; dims[0] is the batch), shape `static`."""
    if all(isinstance(d, int) for d in dims[1:]):
        y = array_ops.reshape(x, [-1] + list(dims[1:]))
    else:
        y = array_ops.reshape(
            x, join_ops.stack([np.int32(d) if isinstance(d, int) else d for d in dims])
        )
    y.set_shape(list(static))
    return y


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


def _times(d: int | None, size: int) -> int | None:
    return None if d is None else d * size


def _plus(d: int | None, extra: int) -> int | None:
    return None if d is None else d + extra


def check_rank(layer: Layer, input_shape: Any, rank: int, layout: str) -> None:
    """Raises a ValueError naming `layer` when `input_shape` is not of rank `rank`."""
    if len(input_shape) != rank:
        raise ValueError(
            f"{type(layer).__name__} {layer.name!r} expects inputs {layout}, got shape "
            f"{tuple(input_shape)}."
        )


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
    [batch, rows * size[0], cols * size[1], channels]. "nearest" repeats each row and column;
    "bilinear" interpolates between the two nearest ones as Keras 3 does (`jax.image.resize`:
    pixel centres at i + 0.5, the edge rows repeated beyond the edges), which needs the rows
    and columns known.

    Args:
      size: an int or a pair (rows, cols).
      data_format: "channels_last" (channels_first is not supported).
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
        self.data_format = require_channels_last("UpSampling2D", data_format)
        if interpolation not in ("nearest", "bilinear"):
            raise NotImplementedError(
                f"UpSampling2D: interpolation={interpolation!r} is not supported; only "
                "'nearest' and 'bilinear' are."
            )
        self.interpolation = interpolation

    def build(self, input_shape: tuple) -> None:
        check_rank(self, input_shape, 4, "[batch, rows, cols, channels]")
        if self.interpolation == "bilinear" and None in tuple(input_shape[1:3]):
            raise ValueError(
                f"UpSampling2D {self.name!r}: bilinear upsampling needs the rows and columns "
                f"known; got input shape {tuple(input_shape)}."
            )

    def call(self, inputs: Any) -> Any:
        if self.interpolation == "nearest":
            return _repeat(_repeat(inputs, self.size[0], 1), self.size[1], 2)
        rows, cols = inputs.shape.as_list()[1:3]
        dtype = inputs.dtype
        by_rows = core_ops.constant(linear_resize_matrix(rows, self.size[0]), dtype=dtype)
        by_cols = core_ops.constant(linear_resize_matrix(cols, self.size[1]), dtype=dtype)
        x = array_ops.transpose(inputs, [0, 2, 1, 3])  # [batch, cols, rows, channels]
        x = array_ops.transpose(matmul_ops.matmul(by_rows, x), [0, 2, 1, 3])
        return matmul_ops.matmul(by_cols, x)  # each matrix applied to every batch entry

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return (
            input_shape[0],
            _times(input_shape[1], self.size[0]),
            _times(input_shape[2], self.size[1]),
            input_shape[3],
        )

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "size": self.size,
            "data_format": self.data_format,
            "interpolation": self.interpolation,
        }


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


@export("layers.RepeatVector")
class RepeatVector(Layer):
    """Repeats its input `n` times along a new time axis: [batch, features] ->
    [batch, n, features].

    >>> y = RepeatVector(3)(sl.Input((5,)))
    >>> y.shape
    TensorShape([None, 3, 5])
    """

    def __init__(self, n: int, **kwargs: Any):
        super().__init__(**kwargs)
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
            raise TypeError(f"Expected an integer value for `n`, got {type(n).__name__} {n!r}.")
        if n < 0:
            raise ValueError(f"RepeatVector: `n` must be >= 0 (the number of copies), got {n}.")
        self.n = int(n)

    def build(self, input_shape: tuple) -> None:
        check_rank(self, input_shape, 2, "[batch, features]")

    def call(self, inputs: Any) -> Any:
        return broadcast_ops.tile(array_ops.expand_dims(inputs, 1), [1, self.n, 1])

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return (input_shape[0], self.n, input_shape[1])

    def get_config(self) -> dict:
        return {**super().get_config(), "n": self.n}


@export("layers.Permute")
class Permute(Layer):
    """Permutes the non-batch axes: `dims` (1-based, as in Keras) lists, for each output axis,
    the input axis it takes.

    >>> y = Permute((2, 1))(sl.Input((10, 64)))
    >>> y.shape
    TensorShape([None, 64, 10])
    """

    def __init__(self, dims: Any, **kwargs: Any):
        super().__init__(**kwargs)
        self.dims = tuple(int(d) for d in dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError(
                "Invalid permutation argument `dims` for Permute Layer. The set of indices in "
                f"`dims` must be consecutive and start from 1. Received dims={dims}"
            )

    def build(self, input_shape: tuple) -> None:
        check_rank(self, input_shape, len(self.dims) + 1, f"of rank {len(self.dims) + 1}")

    def call(self, inputs: Any) -> Any:
        return array_ops.transpose(inputs, (0,) + self.dims)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return (input_shape[0],) + tuple(input_shape[d] for d in self.dims)

    def get_config(self) -> dict:
        return {**super().get_config(), "dims": self.dims}
