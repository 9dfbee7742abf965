"""Keras 3's random colour layers: `RandomContrast` and `RandomBrightness`
(`keras/src/layers/preprocessing/image_preprocessing/`); see `augmentation` for training and
inference."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.preprocessing import augmentation, image_utils
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.composite import clip_ops
from sluice.framework.ops.math import reduction_ops


def _value_range(layer: str, value_range: Any) -> list:
    if not isinstance(value_range, (tuple, list)) or len(value_range) != 2:
        raise ValueError(
            f"{layer}: the `value_range` argument should be a list of two numbers. Received: "
            f"value_range={value_range}"
        )
    return sorted(float(v) for v in value_range)


@export("layers.RandomContrast")
class RandomContrast(augmentation.RandomImageLayer):
    """In training, scales each image's deviation from its per-channel mean by a factor drawn
    from [1 - lower, 1 + upper], then clips to `value_range`. `factor` is a pair (lower, upper)
    or a number f, which Keras 3 reads as (0, f): [1, 1 + f].

    Args:
      factor: a number or a pair of numbers in [0, 1].
      value_range: the (low, high) range of the pixel values (default (0, 255)).
      seed: the seed of the layer's SeedGenerator.
    """

    def __init__(
        self, factor: Any, value_range: Any = (0, 255), seed: int | None = None, **kwargs: Any
    ):
        super().__init__(seed=seed, **kwargs)
        self.factor = augmentation.factor_range("RandomContrast", factor, (0.0, 1.0))
        self.value_range = _value_range("RandomContrast", value_range)

    def transform(self, images: Tensor) -> Tensor:
        batch = augmentation.batch_size(images)
        scale = self.uniform([batch, 1, 1, 1], 1.0 - self.factor[0], 1.0 + self.factor[1])
        scale = fill_ops.cast(scale, images.dtype)
        mean = reduction_ops.reduce_mean(images, axis=[1, 2], keepdims=True)
        out = (images - mean) * scale + mean
        return clip_ops.clip_by_value(out, self.value_range[0], self.value_range[1])

    def get_config(self) -> dict:
        return {**super().get_config(), "factor": self.factor, "value_range": self.value_range}


@export("layers.RandomBrightness")
class RandomBrightness(augmentation.RandomImageLayer):
    """In training, adds to each image a delta drawn from `factor` (a number f: [-f, f]; a
    pair: [lower, upper]; in [-1, 1]) times the width of `value_range`, then clips to it.
    Float images keep their dtype; integer images are computed in float32 and rounded back,
    where Keras adds a delta cast to the integer dtype.

    Args:
      factor: a number or a pair of numbers in [-1, 1].
      value_range: the (low, high) range of the pixel values (default (0, 255)).
      seed: the seed of the layer's SeedGenerator.
    """

    _casts_inputs = False

    def __init__(
        self, factor: Any, value_range: Any = (0, 255), seed: int | None = None, **kwargs: Any
    ):
        super().__init__(seed=seed, **kwargs)
        self.factor = augmentation.factor_range("RandomBrightness", factor)
        self.value_range = _value_range("RandomBrightness", value_range)

    def transform(self, images: Tensor) -> Tensor:
        batch = augmentation.batch_size(images)
        delta = self.uniform([batch, 1, 1, 1], self.factor[0], self.factor[1])
        delta = delta * (self.value_range[1] - self.value_range[0])
        work = images if dtypes.is_floating(images.dtype) else fill_ops.cast(images, "float32")
        out = work + fill_ops.cast(delta, work.dtype)
        out = clip_ops.clip_by_value(out, self.value_range[0], self.value_range[1])
        return image_utils.saturate_cast(out, images.dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "factor": self.factor, "value_range": self.value_range}
