"""`keras.ops.image` beyond `resize` (Keras's `ops/image.py`): `rgb_to_grayscale`,
`crop_images`, `pad_images`; graph code that `eager.keras_op` also runs at once on values.
Images are 3-D (one image) or 4-D (a batch), channels last unless `data_format` says
"channels_first".

>>> sl.ops.image.pad_images(np.ones((2, 2, 1)), 1, 0, target_height=4, target_width=3).shape
(4, 3, 1)
"""

from __future__ import annotations

from typing import Any

from sluice._keras import config
from sluice._keras.ops.eager import floating, keras_op, result_dtype, tensor
from sluice.framework.ops.array import array_ops, fill_ops, join_ops
from sluice.framework.ops.math import einsum_ops


def _images(images: Any, what: str, data_format: str | None) -> tuple[Any, bool, int]:
    """(images, channels first?, the axis of the height)."""
    x = tensor(images)
    if x.shape.rank not in (3, 4):
        raise ValueError(
            f"{what}: images must be 3-D (one image) or 4-D (a batch), got shape {x.shape}."
        )
    first = (data_format or config.image_data_format()) == "channels_first"
    return x, first, x.shape.rank - (2 if first else 3)


@keras_op("image.rgb_to_grayscale")
def rgb_to_grayscale(images: Any, data_format: str | None = None) -> Any:
    """0.2989 R + 0.5870 G + 0.1140 B as one channel, in the images' dtype (a single channel
    is returned as it is).

    Raises:
      ValueError: images that are not 3-D or 4-D, or a channel axis not of 1 or 3.
    """
    x, first, _ = _images(images, "rgb_to_grayscale", data_format)
    axis = x.shape.rank - 3 if first else x.shape.rank - 1
    if x.shape[axis] not in (1, 3):
        raise ValueError(
            f"rgb_to_grayscale: the channel axis must be 3 (RGB) or 1, got shape {x.shape}."
        )
    if x.shape[axis] == 1:
        return x
    compute = floating(fill_ops.cast(x, result_dtype(x, 1.0)))
    weights = tensor([0.2989, 0.5870, 0.1140], compute.dtype)
    gray = array_ops.expand_dims(einsum_ops.tensordot(compute, weights, [[axis], [0]]), axis)
    return gray if gray.dtype == x.dtype else fill_ops.cast(gray, x.dtype)


def _amounts(before: Any, after: Any, target: Any, size: int | None, what: str, sign: int) -> tuple:
    """(before, after) from two of before, after and the target size (padding: sign 1, the
    target is size + before + after; cropping: sign -1, size - before - after)."""
    given = sum(v is not None for v in (before, after, target))
    if given != 2 or (size is None and target is not None):
        raise ValueError(
            f"{what}: give exactly two of the amount before, the amount after and the target "
            f"size per axis (and a known size with a target); got {before}, {after}, {target}."
        )
    if before is None:
        before = sign * (target - size) - after
    if after is None:
        after = sign * (target - size) - before
    if before < 0 or after < 0:
        raise ValueError(f"{what}: the amounts must be >= 0, got {before} and {after}.")
    return int(before), int(after)


@keras_op("image.pad_images")
def pad_images(
    images: Any,
    top_padding: int | None = None,
    left_padding: int | None = None,
    bottom_padding: int | None = None,
    right_padding: int | None = None,
    target_height: int | None = None,
    target_width: int | None = None,
    data_format: str | None = None,
) -> Any:
    """The images with zeros added above, left, below and right (two of the amount before,
    the amount after and the target size per axis).

    Raises:
      ValueError: not two of them for an axis, or a negative amount.
    """
    x, _, h = _images(images, "pad_images", data_format)
    rows = _amounts(top_padding, bottom_padding, target_height, x.shape[h], "pad_images", 1)
    cols = _amounts(left_padding, right_padding, target_width, x.shape[h + 1], "pad_images", 1)
    widths = [[0, 0]] * x.shape.rank
    widths[h], widths[h + 1] = list(rows), list(cols)
    return join_ops.pad(x, widths)


@keras_op("image.crop_images")
def crop_images(
    images: Any,
    top_cropping: int | None = None,
    left_cropping: int | None = None,
    bottom_cropping: int | None = None,
    right_cropping: int | None = None,
    target_height: int | None = None,
    target_width: int | None = None,
    data_format: str | None = None,
) -> Any:
    """The images without `top_cropping` rows above, ... (two of the amount before, the
    amount after and the target size per axis).

    Raises:
      ValueError: not two of them for an axis, or a negative amount.
    """
    x, _, h = _images(images, "crop_images", data_format)
    top, bottom = _amounts(top_cropping, bottom_cropping, target_height, x.shape[h],
                           "crop_images", -1)  # fmt: skip
    left, right = _amounts(left_cropping, right_cropping, target_width, x.shape[h + 1],
                           "crop_images", -1)  # fmt: skip
    index = [slice(None)] * x.shape.rank
    index[h] = slice(top, -bottom if bottom else None)
    index[h + 1] = slice(left, -right if right else None)
    return x[tuple(index)]
