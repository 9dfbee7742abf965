"""The image shapes `sl.image` takes: `[height, width, channels]` or a batch of them."""

from __future__ import annotations

from typing import Any

from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops
from sluice.framework.ops.core.core_ops import convert_to_tensor


def image_tensor(image: Any, what: str) -> Tensor:
    """`image` as a Tensor of static rank 3 or 4."""
    image = convert_to_tensor(image, name="image")
    if image.shape.rank not in (3, 4):
        raise ValueError(
            f"{what}: 'image' must have either 3 or 4 dimensions "
            f"([height, width, channels] or a batch of them), got shape "
            f"{image.shape}"
        )
    return image


def static_height_width(image: Tensor, what: str) -> tuple[int, int]:
    """The static height and width of an image or a batch."""
    height, width = image.shape.dims[-3:-1]
    if height is None or width is None:
        raise ValueError(
            f"{what}: needs the image's static height and width, got shape {image.shape}"
        )
    return height, width


def as_batch(image: Tensor) -> tuple[Tensor, bool]:
    """A batch for the 4-D ops, and whether `image` was one already."""
    if image.shape.rank == 3:
        return array_ops.expand_dims(image, 0), False
    return image, True


def unbatch(images: Tensor, is_batch: bool) -> Tensor:
    """Undoes `as_batch`."""
    return images if is_batch else array_ops.squeeze(images, [0])
