"""Argument checks and shape helpers the reshaping layers share."""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._keras.layers.base import Layer
from sluice.framework.ops.array import array_ops, fill_ops, join_ops


def from_channels_last(items: Any, data_format: str) -> Any:
    """`items` given per axis of a channels_last image ([batch, *spatial, channels]), in the
    order of `data_format`'s axes ([batch, channels, *spatial] for channels_first)."""
    if data_format == "channels_last":
        return items
    return type(items)([items[0], items[-1], *items[1:-1]])


def to_channels_last(items: Any, data_format: str) -> Any:
    """The inverse of `from_channels_last`: per axis of `data_format`, in channels_last order."""
    if data_format == "channels_last":
        return items
    return type(items)([items[0], *items[2:], items[1]])


def image_layout(data_format: str) -> str:
    """The axes of a 2-D layer's inputs in `data_format`, for error messages."""
    if data_format == "channels_first":
        return "[batch, channels, rows, cols]"
    return "[batch, rows, cols, channels]"


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
