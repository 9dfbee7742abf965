"""What the image preprocessing layers share: their `data_format`, images as a channels-last
batch and back (`as_batch`, `restore`), static sizes, and Keras's `smart_resize` (a centred
crop to the target's aspect ratio, then a resize with half-pixel centres, as `jax.image.resize`
samples)."""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._keras import config
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops, fill_ops, slicing_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, unary_ops
from sluice.framework.ops.nn import image_ops

RESIZE_OPS = {
    "bilinear": "ResizeBilinear",
    "nearest": "ResizeNearestNeighbor",
    "bicubic": "ResizeBicubic",
}


def data_format_arg(layer: str, data_format: str | None) -> str:
    data_format = data_format or config.image_data_format()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(
            f"{layer}: data_format must be 'channels_last' or 'channels_first', got "
            f"{data_format!r}."
        )
    return data_format


def as_batch(layer: str, images: Any, data_format: str) -> tuple[Tensor, bool]:
    """(`images` as a channels-last batch [batch, height, width, channels], whether the input
    was one image).

    Raises:
      ValueError: images that are not 3-D or 4-D.
    """
    x = core_ops.convert_to_tensor(images)
    rank = x.shape.rank
    if rank not in (3, 4):
        raise ValueError(
            f"{layer}: expected images of rank 3 (one image) or 4 (a batch), got shape {x.shape}."
        )
    if rank == 3:
        x = array_ops.expand_dims(x, 0)
    if data_format == "channels_first":
        x = array_ops.transpose(x, [0, 2, 3, 1])
    return x, rank == 3


def restore(x: Tensor, single: bool, data_format: str) -> Tensor:
    """The inverse of `as_batch`."""
    if data_format == "channels_first":
        x = array_ops.transpose(x, [0, 3, 1, 2])
    return array_ops.squeeze(x, [0]) if single else x


def static_hw(layer: str, x: Tensor) -> tuple[int, int]:
    height, width = x.shape.dims[1:3]
    if height is None or width is None:
        raise ValueError(
            f"{layer}: the images' height and width must be known when the model is built, "
            f"got shape {x.shape}."
        )
    return int(height), int(width)


def crop(x: Tensor, top: int, left: int, height: int, width: int) -> Tensor:
    """The [top:top + height, left:left + width] window of a channels-last batch."""
    return slicing_ops.slice(x, [0, top, left, 0], [-1, height, width, -1])


def crop_to_aspect_ratio(x: Tensor, height: int, width: int, layer: str) -> Tensor:
    """The centred crop of a channels-last batch with the aspect ratio of (height, width)
    (Keras's `smart_resize` box)."""
    in_h, in_w = static_hw(layer, x)
    crop_h = max(min(in_h, int(float(in_w * height) / width)), 1)
    crop_w = max(min(in_w, int(float(in_h * width) / height)), 1)
    return crop(x, int(float(in_h - crop_h) / 2), int(float(in_w - crop_w) / 2), crop_h, crop_w)


def resize(x: Tensor, height: int, width: int, interpolation: str, layer: str) -> Tensor:
    """A channels-last batch resized with half-pixel centres, in a float dtype (the input's
    when it is one, else float32)."""
    if interpolation not in RESIZE_OPS:
        raise ValueError(
            f"{layer}: interpolation must be one of {sorted(RESIZE_OPS)}, got {interpolation!r}."
        )
    dtype = x.dtype if dtypes.is_floating(x.dtype) else dtypes.float32
    out = image_ops.resize(RESIZE_OPS[interpolation], x, [height, width], half_pixel_centers=True)
    return out if out.dtype == dtype else fill_ops.cast(out, dtype)


def saturate_cast(x: Tensor, dtype: Any) -> Tensor:
    """`x` rounded and clipped to an integer dtype's range (Keras's `_saturate_cast`), or cast
    to a float dtype."""
    dtype = dtypes.as_dtype(dtype)
    if x.dtype == dtype:
        return x
    if not dtypes.is_integer(dtype):
        return fill_ops.cast(x, dtype)
    info = np.iinfo(np.dtype(dtype))
    low = core_ops.constant(float(info.min), dtype=x.dtype)
    high = core_ops.constant(float(info.max), dtype=x.dtype)
    return fill_ops.cast(math_ops.minimum(math_ops.maximum(unary_ops.round(x), low), high), dtype)
