"""`sl.image` geometry: flips (fixed and random), transposes, rotations, crops and pads."""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._tf1.image.resizing import static_size
from sluice._tf1.image.shapes import image_tensor, static_height_width
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops, join_ops, slicing_ops
from sluice.framework.ops.core.core_ops import convert_to_tensor
from sluice.framework.ops.core.shape_rules import constant_value
from sluice.framework.ops.math import math_ops
from sluice.framework.ops.random import random_ops


def _flip(image: Any, axis_from_end: int, what: str, name: str | None) -> Tensor:
    with graph_lib.name_scope(name, what, [image]):
        image = image_tensor(image, what)
        return array_ops.reverse(image, [image.shape.rank - axis_from_end])


@export("image.flip_left_right")
def flip_left_right(image: Any, name: str | None = None) -> Tensor:
    """The image mirrored along its width (each image of a batch)."""
    return _flip(image, 2, "flip_left_right", name)


@export("image.flip_up_down")
def flip_up_down(image: Any, name: str | None = None) -> Tensor:
    """The image mirrored along its height (each image of a batch)."""
    return _flip(image, 3, "flip_up_down", name)


def _random_flip(image: Any, axis_from_end: int, seed: int | None, what: str) -> Tensor:
    """Each image flipped with probability 1/2, one coin per image of a batch."""
    with graph_lib.name_scope(None, what, [image]):
        image = image_tensor(image, what)
        coins = [] if image.shape.rank == 3 else [fill_ops.shape(image)[0], 1, 1, 1]
        flip = math_ops.less(random_ops.random_uniform(coins, 0, 1.0, seed=seed), 0.5)
        flipped = array_ops.reverse(image, [image.shape.rank - axis_from_end])
        return gather_ops.where_v2(flip, flipped, image)


@export("image.random_flip_left_right")
def random_flip_left_right(image: Any, seed: int | None = None) -> Tensor:
    """Mirrors the image along its width with probability 1/2 (each image of a batch apart)."""
    return _random_flip(image, 2, seed, "random_flip_left_right")


@export("image.random_flip_up_down")
def random_flip_up_down(image: Any, seed: int | None = None) -> Tensor:
    """Mirrors the image along its height with probability 1/2 (each image of a batch apart)."""
    return _random_flip(image, 3, seed, "random_flip_up_down")


@export("image.transpose", "image.transpose_image")
def transpose_image(image: Any, name: str | None = None) -> Tensor:
    """Height and width swapped (TF1 `tf.image.transpose_image`)."""
    with graph_lib.name_scope(name, "transpose", [image]):
        image = image_tensor(image, "transpose_image")
        perm = [1, 0, 2] if image.shape.rank == 3 else [0, 2, 1, 3]
        return array_ops.transpose(image, perm)


transpose = transpose_image


@export("image.rot90")
def rot90(image: Any, k: Any = 1, name: str | None = None) -> Tensor:
    """The image rotated counter-clockwise by k * 90 degrees (k a constant int).

    Raises:
      TypeError: for a k whose value is not known when the graph is built.
    """
    if isinstance(k, Tensor):
        value = constant_value(k)
        if value is None:
            raise TypeError(
                "rot90: sluice needs k as a constant int, got a Tensor of unknown value"
            )
        k = int(value)
    k = int(k) % 4
    with graph_lib.name_scope(name, "rot90", [image]):
        image = image_tensor(image, "rot90")
        if k == 0:
            return image
        if k == 2:
            return flip_up_down(flip_left_right(image))
        if k == 1:
            return transpose_image(flip_left_right(image))
        return flip_left_right(transpose_image(image))


# -- crops and pads -------------------------------------------------------------------------------
def _box(image: Tensor, offset_height: int, offset_width: int, height: int, width: int) -> Tensor:
    begin = [offset_height, offset_width, 0]
    size = [height, width, -1]
    if image.shape.rank == 4:
        begin, size = [0, *begin], [-1, *size]
    return slicing_ops.slice(image, begin, size)


@export("image.crop_to_bounding_box")
def crop_to_bounding_box(
    image: Any, offset_height: int, offset_width: int, target_height: int, target_width: int
) -> Tensor:
    """The `target_height x target_width` window whose top-left corner is at the offsets.

    Raises:
      ValueError: for negative offsets, empty targets, or a window past the image's edge.
    """
    with graph_lib.name_scope(None, "crop_to_bounding_box", [image]):
        image = image_tensor(image, "crop_to_bounding_box")
        height, width = static_height_width(image, "crop_to_bounding_box")
        checks = [
            (offset_width >= 0, "offset_width must be >= 0."),
            (offset_height >= 0, "offset_height must be >= 0."),
            (target_width > 0, "target_width must be > 0."),
            (target_height > 0, "target_height must be > 0."),
            (width >= target_width + offset_width, "width must be >= target + offset."),
            (height >= target_height + offset_height, "height must be >= target + offset."),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(
                    f"crop_to_bounding_box: {message} Image {height}x{width}, "
                    f"offsets ({offset_height}, {offset_width}), target "
                    f"{target_height}x{target_width}."
                )
        return _box(image, offset_height, offset_width, target_height, target_width)


@export("image.pad_to_bounding_box")
def pad_to_bounding_box(
    image: Any, offset_height: int, offset_width: int, target_height: int, target_width: int
) -> Tensor:
    """The image placed at the offsets in a zero `target_height x target_width` canvas.

    Raises:
      ValueError: for negative offsets or a canvas too small for image + offset.
    """
    with graph_lib.name_scope(None, "pad_to_bounding_box", [image]):
        image = image_tensor(image, "pad_to_bounding_box")
        height, width = static_height_width(image, "pad_to_bounding_box")
        after_height = target_height - offset_height - height
        after_width = target_width - offset_width - width
        checks = [
            (offset_height >= 0, "offset_height must be >= 0"),
            (offset_width >= 0, "offset_width must be >= 0"),
            (after_width >= 0, "width must be <= target - offset"),
            (after_height >= 0, "height must be <= target - offset"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(
                    f"pad_to_bounding_box: {message}. Image {height}x{width}, "
                    f"offsets ({offset_height}, {offset_width}), target "
                    f"{target_height}x{target_width}."
                )
        paddings = [[offset_height, after_height], [offset_width, after_width], [0, 0]]
        if image.shape.rank == 4:
            paddings = [[0, 0], *paddings]
        return join_ops.pad(image, paddings)


@export("image.resize_image_with_crop_or_pad", "image.resize_with_crop_or_pad")
def resize_image_with_crop_or_pad(image: Any, target_height: int, target_width: int) -> Tensor:
    """The image centrally cropped and/or zero-padded to the target size (TF1's offsets:
    the crop drops floor(excess / 2) at the top/left, the pad adds floor(missing / 2) there)."""
    with graph_lib.name_scope(None, "resize_image_with_crop_or_pad", [image]):
        image = image_tensor(image, "resize_image_with_crop_or_pad")
        if target_height <= 0 or target_width <= 0:
            raise ValueError(
                f"resize_image_with_crop_or_pad: target size must be positive, got "
                f"{target_height}x{target_width}"
            )
        height, width = static_height_width(image, "resize_image_with_crop_or_pad")
        width_diff, height_diff = target_width - width, target_height - height
        cropped = crop_to_bounding_box(
            image,
            max(-height_diff // 2, 0),
            max(-width_diff // 2, 0),
            min(target_height, height),
            min(target_width, width),
        )
        return pad_to_bounding_box(
            cropped, max(height_diff // 2, 0), max(width_diff // 2, 0), target_height, target_width
        )


resize_with_crop_or_pad = resize_image_with_crop_or_pad


@export("image.central_crop")
def central_crop(image: Any, central_fraction: float) -> Tensor:
    """The central `central_fraction` of each side (TF 1.15's offsets: int((side - side *
    fraction) / 2) on each side).

    Raises:
      ValueError: for a fraction outside (0, 1].
    """
    if not 0.0 < central_fraction <= 1.0:
        raise ValueError(
            f"central_crop: central_fraction must be within (0, 1], got {central_fraction}"
        )
    with graph_lib.name_scope(None, "central_crop", [image]):
        image = image_tensor(image, "central_crop")
        if central_fraction == 1.0:
            return image
        height, width = static_height_width(image, "central_crop")
        top = int((float(height) - float(height) * central_fraction) / 2)
        left = int((float(width) - float(width) * central_fraction) / 2)
        return _box(image, top, left, height - 2 * top, width - 2 * left)


@export("image.random_crop")
def random_crop(value: Any, size: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """A `size` window of `value` (any rank) at a uniformly random offset.

    Raises:
      ValueError: when `size` has the wrong length or exceeds `value`'s static shape.
    """
    with graph_lib.name_scope(name, "random_crop", [value, size]):
        value = convert_to_tensor(value, name="value")
        size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        static = static_size(size)
        dims = value.shape.as_list() if value.shape.rank is not None else None
        if static is not None and dims is not None:
            if len(static) != len(dims):
                raise ValueError(
                    f"random_crop: size {static} must have one entry per dimension "
                    f"of value, shape {value.shape}"
                )
            if any(d is not None and s > d for s, d in zip(static, dims)):
                raise ValueError(
                    f"random_crop: need value.shape >= size, got {value.shape} and {static}"
                )
        shape = fill_ops.shape(value)
        limit = shape - size + 1
        top = np.iinfo(np.int32).max
        offset = (
            random_ops.random_uniform(
                fill_ops.shape(shape), maxval=top, dtype=dtypes.int32, seed=seed
            )
            % limit
        )
        return slicing_ops.slice(value, offset, size)
