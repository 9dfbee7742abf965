"""`sl.image` resizing: `resize_images` (= `resize`, TF 1.15's v1) over the 4-D resize ops of
`framework/ops/nn/image_ops.py`, whose docstring gives the coordinate maths."""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._tf1.image.shapes import as_batch, image_tensor, unbatch
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.core.core_ops import convert_to_tensor
from sluice.framework.ops.core.shape_rules import constant_value
from sluice.framework.ops.nn.image_ops import resize as _resize


@export("image.ResizeMethod")
class ResizeMethod:
    """TF1's resize methods (`tf.image.ResizeMethod`, v1 numbering)."""

    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


_RESIZE_OPS = {
    ResizeMethod.BILINEAR: "ResizeBilinear",
    ResizeMethod.NEAREST_NEIGHBOR: "ResizeNearestNeighbor",
    ResizeMethod.BICUBIC: "ResizeBicubic",
    ResizeMethod.AREA: "ResizeArea",
}


def _resize_4d(op_type: str, what: str):
    def resize(
        images: Any,
        size: Any,
        align_corners: bool = False,
        name: str | None = None,
        half_pixel_centers: bool = False,
    ) -> Tensor:
        images = convert_to_tensor(images, name="images")
        if images.shape.rank != 4:
            raise ValueError(
                f"{what}: images must be 4-D [batch, height, width, channels], got "
                f"shape {images.shape}"
            )
        return _resize(op_type, images, size, align_corners, half_pixel_centers, name)

    resize.__name__ = what
    resize.__doc__ = (
        f"TF1 `tf.image.{what}`: a 4-D batch resized to `size` "
        "([new_height, new_width]); see `framework/ops/nn/image_ops.py` for the maths."
    )
    return resize


resize_bilinear = _resize_4d("ResizeBilinear", "resize_bilinear")
export("image.resize_bilinear")(resize_bilinear)
resize_nearest_neighbor = _resize_4d("ResizeNearestNeighbor", "resize_nearest_neighbor")
export("image.resize_nearest_neighbor")(resize_nearest_neighbor)
resize_bicubic = _resize_4d("ResizeBicubic", "resize_bicubic")
export("image.resize_bicubic")(resize_bicubic)
resize_area = _resize_4d("ResizeArea", "resize_area")
export("image.resize_area")(resize_area)


def static_size(size: Any) -> list | None:
    value = constant_value(size) if isinstance(size, Tensor) else np.asarray(size)
    return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]


@export("image.resize", "image.resize_images")
def resize_images(
    images: Any,
    size: Any,
    method: int = ResizeMethod.BILINEAR,
    align_corners: bool = False,
    preserve_aspect_ratio: bool = False,
    name: str | None = None,
) -> Tensor:
    """`images` (3-D or 4-D) resized to `size` = [new_height, new_width] (TF1
    `tf.image.resize_images`).

    Bilinear, bicubic and area give float32; nearest keeps the dtype. When the size already
    matches, the images come back unchanged (dtype included), as in TF1. With
    `preserve_aspect_ratio`, both sides are scaled by the smaller of the two ratios (rounded half
    to even), so the result fits in `size`.

    Raises:
      ValueError: for images that are not 3-D or 4-D, a `size` that is not two ints, or an
        unknown method.
    """
    with graph_lib.name_scope(name, "resize", [images, size]):
        images = image_tensor(images, "resize_images")
        if method not in _RESIZE_OPS:
            raise ValueError(
                f"resize_images: resize method {method!r} is not implemented; "
                f"expected one of ResizeMethod's {sorted(_RESIZE_OPS)}"
            )
        size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        if size.shape.rank != 1 or size.shape[0] not in (None, 2):
            raise ValueError(
                f"resize_images: 'size' must be a 1-D int32 Tensor of 2 elements, "
                f"got shape {size.shape}"
            )
        images, is_batch = as_batch(images)
        height, width = images.shape.dims[1:3]
        new = static_size(size)
        if preserve_aspect_ratio:
            if new is None or height is None or width is None:
                raise ValueError("resize_images: preserve_aspect_ratio needs static sizes")
            factor = min(
                np.float32(new[0]) / np.float32(height), np.float32(new[1]) / np.float32(width)
            )
            new = [
                int(np.round(factor * np.float32(height))),
                int(np.round(factor * np.float32(width))),
            ]
            size = convert_to_tensor(np.int32(new), name="size")
        if new is not None and new == [height, width]:
            return unbatch(images, is_batch)
        resized = _resize(_RESIZE_OPS[method], images, size, align_corners)
        return unbatch(resized, is_batch)


resize = resize_images  # TF 1.15's tf.image.resize is the v1 function
