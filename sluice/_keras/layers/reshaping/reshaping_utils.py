"""Argument checks and shape helpers the reshaping layers share."""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._keras.layers.base import Layer
from sluice.framework.ops.array import array_ops, fill_ops, join_ops


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
