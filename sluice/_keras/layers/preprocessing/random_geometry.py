"""Keras 3's random geometric image layers: `RandomFlip`, `RandomRotation`, `RandomZoom`,
`RandomTranslation` and `RandomCrop` (`keras/src/layers/preprocessing/image_preprocessing/`),
with Keras's factors and draws; see `augmentation` for training and inference."""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.layers.preprocessing import augmentation, image_utils
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops

_FLIP_MODES = ("horizontal", "vertical", "horizontal_and_vertical")


@export("layers.RandomFlip")
class RandomFlip(augmentation.RandomImageLayer):
    """In training, flips each image with probability 1/2: left-right ("horizontal"),
    upside down ("vertical"), or both at once ("horizontal_and_vertical", one draw per image,
    as Keras 3).

    Args:
      mode: "horizontal", "vertical" or "horizontal_and_vertical" (default).
      seed: the seed of the layer's SeedGenerator.
      data_format: "channels_last" or "channels_first".

    >>> flip = sl.layers.RandomFlip("horizontal", seed=1)
    >>> image = np.arange(6, dtype=np.float32).reshape(1, 2, 3, 1)
    >>> np.array_equal(flip(image, training=False), image)
    True
    """

    def __init__(
        self,
        mode: str = "horizontal_and_vertical",
        seed: int | None = None,
        data_format: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        if mode not in _FLIP_MODES:
            raise ValueError(
                f"RandomFlip layer {self.name} received an unknown mode argument {mode}"
            )
        self.mode = mode

    def transform(self, images: Tensor) -> Tensor:
        batch = augmentation.batch_size(images)
        flips = math_ops.less_equal(self.uniform([batch, 1, 1, 1], 0.0, 1.0), 0.5)
        flips = math_ops.logical_and(flips, fill_ops.ones_like(images, dtype=dtypes.bool_))
        out = images
        if self.mode in ("horizontal", "horizontal_and_vertical"):
            out = gather_ops.where_v2(flips, array_ops.reverse(out, [2]), out)
        if self.mode in ("vertical", "horizontal_and_vertical"):
            out = gather_ops.where_v2(flips, array_ops.reverse(out, [1]), out)
        return out

    def get_config(self) -> dict:
        return {**super().get_config(), "mode": self.mode}


@export("layers.RandomRotation")
class RandomRotation(augmentation.AffineLayer):
    """In training, rotates each image about its centre by an angle drawn uniformly from
    `factor` * 360 degrees (a number f: [-f, f]; a pair: [lower, upper]), resampled by
    `interpolation` with `fill_mode` outside the image.

    Args:
      factor: a number or a pair of numbers in [-1, 1], fractions of a full turn.
      fill_mode: "reflect" (default), "wrap", "constant" (`fill_value`) or "nearest".
      interpolation: "bilinear" (default) or "nearest".
      seed, fill_value, data_format: as Keras's.
    """

    def __init__(
        self,
        factor: Any,
        fill_mode: str = "reflect",
        interpolation: str = "bilinear",
        seed: int | None = None,
        fill_value: float = 0.0,
        data_format: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.factor = augmentation.factor_range("RandomRotation", factor)

    def transform(self, images: Tensor) -> Tensor:
        height, width = image_utils.static_hw(self.name, images)
        batch = augmentation.batch_size(images)
        angle = self.uniform([batch], self.factor[0] * 360.0, self.factor[1] * 360.0)
        zeros = fill_ops.zeros_like(angle)
        return self.resample(images, augmentation.affine_matrix(angle, zeros, zeros, height, width))

    def get_config(self) -> dict:
        return {**super().get_config(), "factor": self.factor}


@export("layers.RandomZoom")
class RandomZoom(augmentation.AffineLayer):
    """In training, zooms each image about its centre: the sampling step along the height is
    1 + h with h drawn from `height_factor` (a number f: [-f, f]; a pair: [lower, upper]),
    along the width likewise from `width_factor` (None: the same step as the height's).
    A positive factor zooms out (the image shrinks), a negative one in, as in Keras.

    Args:
      height_factor, width_factor: numbers or pairs in (-1, 1].
      fill_mode, interpolation, seed, fill_value, data_format: as `RandomRotation`.
    """

    def __init__(
        self,
        height_factor: Any,
        width_factor: Any = None,
        fill_mode: str = "reflect",
        interpolation: str = "bilinear",
        seed: int | None = None,
        fill_value: float = 0.0,
        data_format: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.height_factor = height_factor
        self.width_factor = width_factor
        self._height = _zoom_range(height_factor, "height_factor")
        self._width = None if width_factor is None else _zoom_range(width_factor, "width_factor")

    def transform(self, images: Tensor) -> Tensor:
        height, width = image_utils.static_hw(self.name, images)
        batch = augmentation.batch_size(images)
        zoom_y = self.uniform([batch], 1.0 + self._height[0], 1.0 + self._height[1])
        zoom_x = zoom_y
        if self._width is not None:
            zoom_x = self.uniform([batch], 1.0 + self._width[0], 1.0 + self._width[1])
        zeros = fill_ops.zeros_like(zoom_x)
        x_offset = (width - 1) / 2.0 * (1.0 - zoom_x)
        y_offset = (height - 1) / 2.0 * (1.0 - zoom_y)
        transforms = join_ops.stack(
            [zoom_x, zeros, x_offset, zeros, zoom_y, y_offset, zeros, zeros], axis=1
        )
        return self.resample(images, transforms)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "height_factor": self.height_factor,
            "width_factor": self.width_factor,
        }


def _zoom_range(factor: Any, name: str) -> tuple:
    """Keras's zoom factor: a number f gives [-|f|, |f|], a pair is sorted; each in (-1, 1]."""
    lower, upper = augmentation.factor_range("RandomZoom", factor, (-1.0, 1.0), name)
    if lower <= -1.0:
        raise ValueError(
            "The `height_factor` and `width_factor` arguments should be a number (or a list of "
            f"two numbers) in the range (-1.0, 1.0]. Received: {name}={factor}"
        )
    return lower, upper


@export("layers.RandomTranslation")
class RandomTranslation(augmentation.AffineLayer):
    """In training, shifts each image by a fraction of its height drawn from `height_factor`
    and of its width from `width_factor` (numbers f: [-f, f]; pairs: [lower, upper]; positive
    shifts move the content down and right).

    Args:
      height_factor, width_factor: numbers or pairs in [-1, 1].
      fill_mode, interpolation, seed, fill_value, data_format: as `RandomRotation`.
    """

    def __init__(
        self,
        height_factor: Any,
        width_factor: Any,
        fill_mode: str = "reflect",
        interpolation: str = "bilinear",
        seed: int | None = None,
        fill_value: float = 0.0,
        data_format: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.height_factor = height_factor
        self.width_factor = width_factor
        name = "RandomTranslation"
        self._height = augmentation.factor_range(name, height_factor, name="height_factor")
        self._width = augmentation.factor_range(name, width_factor, name="width_factor")

    def transform(self, images: Tensor) -> Tensor:
        height, width = image_utils.static_hw(self.name, images)
        batch = augmentation.batch_size(images)
        shift_y = self.uniform([batch], self._height[0], self._height[1]) * float(height)
        shift_x = self.uniform([batch], self._width[0], self._width[1]) * float(width)
        zeros = fill_ops.zeros_like(shift_x)
        ones = fill_ops.ones_like(shift_x)
        transforms = join_ops.stack(
            [ones, zeros, -shift_x, zeros, ones, -shift_y, zeros, zeros], axis=1
        )
        return self.resample(images, transforms)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "height_factor": self.height_factor,
            "width_factor": self.width_factor,
        }


@export("layers.RandomCrop")
class RandomCrop(augmentation.RandomImageLayer):
    """In training, crops a (`height`, `width`) window at a random place, one for the whole
    batch (as Keras 3); an image not larger than the window in both directions is centre
    cropped to the window's aspect ratio and resized instead. In inference the images pass
    unchanged (Keras 3's RandomCrop).

    Args:
      height, width: the crop size.
      seed, data_format: as Keras's.
    """

    def __init__(
        self,
        height: int,
        width: int,
        seed: int | None = None,
        data_format: str | None = None,
        name: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(seed=seed, data_format=data_format, name=name, **kwargs)
        self.height, self.width = int(height), int(width)

    def transform(self, images: Tensor) -> Tensor:
        in_h, in_w = image_utils.static_hw(self.name, images)
        if in_h > self.height and in_w > self.width:
            top = fill_ops.cast(self.uniform([], 0.0, float(in_h - self.height + 1)), dtypes.int32)
            left = fill_ops.cast(self.uniform([], 0.0, float(in_w - self.width + 1)), dtypes.int32)
            rows = top + core_ops.constant(np.arange(self.height, dtype=np.int32))
            cols = left + core_ops.constant(np.arange(self.width, dtype=np.int32))
            return gather_ops.gather(gather_ops.gather(images, rows, axis=1), cols, axis=2)
        cropped = image_utils.crop_to_aspect_ratio(images, self.height, self.width, self.name)
        out = image_utils.resize(cropped, self.height, self.width, "bilinear", self.name)
        return out if out.dtype == images.dtype else fill_ops.cast(out, images.dtype)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return tuple(input_shape)  # inference passes the images through

    def get_config(self) -> dict:
        return {**super().get_config(), "height": self.height, "width": self.width}
