"""`sl.image` pixel values: dtype conversion with TF1's scaling, standardization, brightness,
contrast and grayscale."""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._tf1.image.shapes import image_tensor
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.array.broadcast_ops import tile
from sluice.framework.ops.core.core_ops import convert_to_tensor, identity
from sluice.framework.ops.math import einsum_ops, float_ops, math_ops, reduction_ops, unary_ops
from sluice.framework.ops.nn import nn_ops


def _dtype_max(dtype) -> int:
    return int(np.iinfo(dtype).max)


@export("image.convert_image_dtype")
def convert_image_dtype(
    image: Any, dtype: Any, saturate: bool = False, name: str | None = None
) -> Tensor:
    """The image in `dtype`, its pixel values rescaled: floats in [0, 1], integers in
    [0, max]. Integer to integer shifts by the ratio of the ranges; float to integer multiplies
    by (max + 0.5) and truncates; integer to float divides by the max; float to float casts.
    `saturate` clamps before a cast that could overflow.

    Raises:
      AttributeError: for a dtype that is neither floating nor integer (as TF1).
    """
    image = convert_to_tensor(image, name="image")
    dtype = dtypes.as_dtype(dtype)
    if not (dtypes.is_floating(dtype) or dtypes.is_integer(dtype)):
        raise AttributeError(
            f"convert_image_dtype: dtype must be either floating point or integer, got {dtype.name}"
        )
    cast = float_ops.saturate_cast if saturate else fill_ops.cast
    with graph_lib.name_scope(name, "convert_image", [image]):
        if dtype == image.dtype:
            return identity(image)
        source_int, target_int = dtypes.is_integer(image.dtype), dtypes.is_integer(dtype)
        if source_int and target_int:
            scale_in, scale_out = _dtype_max(image.dtype), _dtype_max(dtype)
            if scale_in > scale_out:
                scale = (scale_in + 1) // (scale_out + 1)
                return cast(math_ops.floordiv(image, np.asarray(scale, image.dtype)), dtype)
            scale = (scale_out + 1) // (scale_in + 1)
            return math_ops.multiply(cast(image, dtype), np.asarray(scale, dtype))
        if not source_int and not target_int:
            return fill_ops.cast(image, dtype)
        if source_int:
            scale = 1.0 / _dtype_max(image.dtype)
            return math_ops.multiply(fill_ops.cast(image, dtype), np.asarray(scale, dtype))
        scale = _dtype_max(dtype) + 0.5  # keeps 1.0 from rounding past the max
        return cast(math_ops.multiply(image, np.asarray(scale, image.dtype)), dtype)


def _in_float(image: Tensor) -> Tensor:
    """The image as float (float16/float32 kept, others converted to float32)."""
    if image.dtype in (dtypes.float16, dtypes.float32):
        return image
    return convert_image_dtype(image, dtypes.float32)


@export("image.per_image_standardization")
def per_image_standardization(image: Any) -> Tensor:
    """Each image scaled to mean 0 and variance 1 over its pixels and channels:
    (x - mean) / max(stddev, 1 / sqrt(num_elements)), in float32."""
    with graph_lib.name_scope(None, "per_image_standardization", [image]):
        image = image_tensor(image, "per_image_standardization")
        axes = [-1, -2, -3]
        num_pixels = reduction_ops.reduce_prod(fill_ops.shape(image)[-3:])
        image = fill_ops.cast(image, dtypes.float32)
        mean = reduction_ops.reduce_mean(image, axis=axes, keepdims=True)
        variance = reduction_ops.reduce_mean(
            unary_ops.square(image), axis=axes, keepdims=True
        ) - unary_ops.square(mean)
        stddev = unary_ops.sqrt(nn_ops.relu(variance))
        min_stddev = unary_ops.rsqrt(fill_ops.cast(num_pixels, dtypes.float32))
        return math_ops.divide(image - mean, math_ops.maximum(stddev, min_stddev))


@export("image.adjust_brightness")
def adjust_brightness(image: Any, delta: Any) -> Tensor:
    """`delta` added to every pixel value (in float, [0, 1] scale), converted back to the
    image's dtype with saturation."""
    with graph_lib.name_scope(None, "adjust_brightness", [image, delta]):
        image = convert_to_tensor(image, name="image")
        adjusted = _in_float(image)
        adjusted = adjusted + fill_ops.cast(delta, adjusted.dtype)
        return convert_image_dtype(adjusted, image.dtype, saturate=True)


@export("image.adjust_contrast")
def adjust_contrast(images: Any, contrast_factor: Any) -> Tensor:
    """Each channel of each image moved away from its mean: (x - mean) * factor + mean, in
    float, converted back to the images' dtype with saturation."""
    with graph_lib.name_scope(None, "adjust_contrast", [images, contrast_factor]):
        images = image_tensor(images, "adjust_contrast")
        adjusted = _in_float(images)
        mean = reduction_ops.reduce_mean(adjusted, axis=[-3, -2], keepdims=True)
        factor = fill_ops.cast(contrast_factor, adjusted.dtype)
        adjusted = (adjusted - mean) * factor + mean
        return convert_image_dtype(adjusted, images.dtype, saturate=True)


@export("image.rgb_to_grayscale")
def rgb_to_grayscale(images: Any, name: str | None = None) -> Tensor:
    """Luma 0.2989 R + 0.5870 G + 0.1140 B, as a last dimension of size 1, in the images'
    dtype."""
    with graph_lib.name_scope(name, "rgb_to_grayscale", [images]):
        images = convert_to_tensor(images, name="images")
        if images.shape.rank is not None and images.shape.dims[-1] not in (None, 3):
            raise ValueError(
                f"rgb_to_grayscale: the last dimension must be 3 (RGB), got shape {images.shape}"
            )
        flt = convert_image_dtype(images, dtypes.float32)
        weights = convert_to_tensor(np.float32([0.2989, 0.5870, 0.1140]), name="rgb_weights")
        gray = array_ops.expand_dims(einsum_ops.tensordot(flt, weights, [[-1], [-1]]), -1)
        return convert_image_dtype(gray, images.dtype)


@export("image.grayscale_to_rgb")
def grayscale_to_rgb(images: Any, name: str | None = None) -> Tensor:
    """The single channel repeated into three (R = G = B)."""
    with graph_lib.name_scope(name, "grayscale_to_rgb", [images]):
        images = convert_to_tensor(images, name="images")
        rank = images.shape.rank
        if rank is None or rank < 2 or images.shape.dims[-1] not in (None, 1):
            raise ValueError(
                f"grayscale_to_rgb: needs a last dimension of size 1, got shape {images.shape}"
            )
        return tile(images, [1] * (rank - 1) + [3])
