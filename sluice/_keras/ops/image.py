"""`keras.ops.image.resize` (Keras's `ops/image.py`), over the resize ops of
`framework/ops/nn/image_ops.py` with half-pixel centres, as `jax.image.resize` samples.

>>> sl.ops.image.resize(np.ones((1, 2, 2, 1), np.float32), (4, 4)).shape
(1, 4, 4, 1)
"""

from __future__ import annotations

from typing import Any

from sluice._keras import config
from sluice._keras.ops.eager import keras_op, tensor
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.nn import image_ops

_OPS = {
    "bilinear": "ResizeBilinear",
    "nearest": "ResizeNearestNeighbor",
    "bicubic": "ResizeBicubic",
}


@keras_op("image.resize")
def resize(
    images: Any,
    size: Any,
    interpolation: str = "bilinear",
    antialias: bool = False,
    crop_to_aspect_ratio: bool = False,
    pad_to_aspect_ratio: bool = False,
    fill_mode: str = "constant",
    fill_value: float = 0.0,
    data_format: str | None = None,
) -> Any:
    """`images` (3-D or 4-D, channels last unless `data_format="channels_first"`) resized to
    `size` = (height, width) by `interpolation` ("bilinear", "nearest", "bicubic"), in the
    images' float dtype.

    Raises:
      ValueError: images that are not 3-D or 4-D, a size that is not two ints, or an unknown
        interpolation.
      NotImplementedError: antialias, crop_to_aspect_ratio or pad_to_aspect_ratio.
    """
    if antialias or crop_to_aspect_ratio or pad_to_aspect_ratio:
        raise NotImplementedError(
            "image.resize: antialias, crop_to_aspect_ratio and pad_to_aspect_ratio are not "
            "supported."
        )
    if interpolation not in _OPS:
        raise ValueError(
            f"image.resize: interpolation must be one of {sorted(_OPS)}, got {interpolation!r}."
        )
    size = tuple(size)
    if len(size) != 2:
        raise ValueError(f"image.resize: size must be (height, width), got {size!r}.")
    images = tensor(images)
    rank = images.shape.rank
    if rank not in (3, 4):
        raise ValueError(f"image.resize: images must be 3-D or 4-D, got shape {images.shape}.")
    data_format = data_format or config.image_data_format()
    x = images if rank == 4 else array_ops.expand_dims(images, 0)
    if data_format == "channels_first":
        x = array_ops.transpose(x, [0, 2, 3, 1])
    dtype = x.dtype if x.dtype.kind == "f" else dtypes.float32
    resized = image_ops.resize(_OPS[interpolation], x, list(size), half_pixel_centers=True)
    if resized.dtype != dtype:
        resized = fill_ops.cast(resized, dtype)
    if data_format == "channels_first":
        resized = array_ops.transpose(resized, [0, 3, 1, 2])
    return resized if rank == 4 else array_ops.squeeze(resized, [0])
