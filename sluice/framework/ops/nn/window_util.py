"""Helpers shared by the windowed ops (`conv_ops`, `pool_ops`): TF's attrs and output sizes.

Attrs are stored as TensorFlow stores them: `strides`, `ksize` and `dilations` are 4-lists in the
order of `data_format` ("NHWC" or "NCHW"), `padding` is "SAME", "VALID" or "EXPLICIT" (Conv2D only,
with the 8 ints of `explicit_paddings`). Output sizes follow TF exactly, per spatial dimension:

    effective_k = (k - 1) * dilation + 1
    SAME:     out = ceil(in / stride), padded with max(0, (out - 1) * stride + effective_k - in)
              split as (total // 2 before, the rest after)
    VALID:    out = (in - effective_k) // stride + 1, an error when in < effective_k
    EXPLICIT: out = (in + before + after - effective_k) // stride + 1

The backprop ops (Conv2DBackpropInput, AvgPoolGrad, ...) read the forward input's shape as a host
input; `run_jitted` compiles their kernels once per shape and attrs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.core.array_util import int_values, require_index_dtype, require_vector

PADDINGS = ("SAME", "VALID")


def four_list(value: Any, data_format: str, what: str) -> list[int]:
    """TF's `strides`/`ksize`/`dilations` argument: an int or a list of 1, 2 or 4 ints, as the
    4-list in `data_format` order (batch and channel entries 1 unless given)."""
    if value is None:
        value = [1]
    elif isinstance(value, (int, np.integer)):
        value = [value]
    value = [int(v) for v in value]
    if len(value) == 4:
        return value
    if len(value) == 1:
        value = value * 2
    elif len(value) != 2:
        raise ValueError(f"{what} must be an int or a list of 1, 2 or 4 ints, got {value}")
    return [1, 1, *value] if data_format == "NCHW" else [1, *value, 1]


def spatial_axes(data_format: str) -> tuple[int, int]:
    return (2, 3) if data_format == "NCHW" else (1, 2)


def channel_axis(data_format: str) -> int:
    return 1 if data_format == "NCHW" else 3


def check_format(data_format: str) -> None:
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"data_format must be 'NHWC' or 'NCHW', got {data_format!r}")


def check_window_attr(values: Sequence[int], data_format: str, what: str) -> None:
    if len(values) != 4 or any(v < 1 for v in values):
        raise ValueError(f"{what} must be 4 positive ints, got {list(values)}")
    if values[0] != 1 or values[channel_axis(data_format)] != 1:
        raise ValueError(
            f"{what} {list(values)} must be 1 in the batch and channel dimensions ({data_format})"
        )


def padding_arg(padding: Any) -> tuple[str, list[int]]:
    """TF's `padding` argument: "SAME", "VALID", or 4 [before, after] pairs in data_format order."""
    if isinstance(padding, (list, tuple)):
        pairs = [list(p) for p in padding]
        if len(pairs) != 4 or any(len(p) != 2 for p in pairs):
            raise ValueError(f"explicit padding must be 4 [before, after] pairs, got {padding}")
        return "EXPLICIT", [int(v) for p in pairs for v in p]
    if padding not in PADDINGS:
        raise ValueError(
            f"padding must be 'SAME', 'VALID' or a list of 4 [before, after] pairs, got {padding!r}"
        )
    return padding, []


def _output_size(
    size: int | None, k: int | None, stride: int, dilation: int, padding: str, pads: Sequence[int]
) -> int | None:
    if size is None:
        return None
    if padding == "SAME":
        return -(-size // stride)
    if k is None:
        return None
    effective_k = (k - 1) * dilation + 1
    padded = size + (sum(pads) if padding == "EXPLICIT" else 0)
    if padded < effective_k:
        raise ValueError(
            f"Negative dimension size caused by subtracting {effective_k} from {padded}: the "
            f"window ({k}, dilation {dilation}) is larger than the input ({size})"
        )
    return (padded - effective_k) // stride + 1


def window_output_shape(
    op, shape: TensorShape, window: Sequence[int | None], channels: int | None
) -> TensorShape:
    """The 4-D output shape of a windowed op `op` over an input of `shape` with spatial window
    sizes `window` and `channels` output channels."""
    data_format = op.get_attr("data_format")
    strides = op.get_attr("strides")
    dilations = op.attrs.get("dilations", [1, 1, 1, 1])
    padding = op.get_attr("padding")
    explicit = op.attrs.get("explicit_paddings", [])
    if padding == "EXPLICIT":
        if len(explicit) != 8 or min(explicit) < 0:
            raise ValueError(f"explicit_paddings must be 8 non-negative ints, got {explicit}")
        if any(explicit[2 * d : 2 * d + 2] != [0, 0] for d in (0, channel_axis(data_format))):
            raise ValueError(
                "explicit padding must be [0, 0] in the batch and channel dimensions, got "
                f"{explicit}"
            )
    elif padding not in PADDINGS:
        raise ValueError(f"padding must be 'SAME', 'VALID' or 'EXPLICIT', got {padding!r}")
    dims = shape.with_rank(4).as_list()
    out = [dims[0], None, None, None]
    for k, d in zip(window, spatial_axes(data_format)):
        pads = explicit[2 * d : 2 * d + 2]
        out[d] = _output_size(dims[d], k, strides[d], dilations[d], padding, pads)
    out[channel_axis(data_format)] = channels
    return TensorShape(out)


def lax_padding(padding: str, explicit: Sequence[int], axes: Sequence[int]) -> Any:
    if padding == "EXPLICIT":
        return [(explicit[2 * d], explicit[2 * d + 1]) for d in axes]
    return padding


def sizes_shape(sizes: Tensor, what: str) -> TensorShape:
    """The 4-D shape given by the int vector `sizes` (a backprop op's host input), with whatever
    is known statically."""
    require_index_dtype(sizes, what)
    require_vector(sizes, what)
    values = int_values(sizes)
    if values is None:
        return TensorShape([None] * 4)
    if len(values) != 4:
        raise ValueError(f"{what} must have 4 entries, got {len(values)}")
    return TensorShape([v if v is not None and v >= 0 else None for v in values])


def merge_dim(a: int | None, b: int | None, what: str) -> int | None:
    """Two statically known sizes of the same dimension; raises when they differ."""
    if a is not None and b is not None and a != b:
        raise ValueError(f"{what}: {a} and {b} do not match")
    return a if a is not None else b


_JITTED: dict[tuple, Callable] = {}


def run_jitted(fn: Callable, static: tuple, *arrays: Any, **attrs: Any) -> Any:
    """`fn(*static, *arrays, **attrs)`, compiled once per `fn`, `static` values and attrs: for
    kernels that read a shape from a host input and then do array work on `arrays`."""
    frozen = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in attrs.items()))
    key = (fn, static, frozen)
    compiled = _JITTED.get(key)
    if compiled is None:
        compiled = _JITTED[key] = jax.jit(functools.partial(fn, *static, **attrs))
    return compiled(*arrays)
