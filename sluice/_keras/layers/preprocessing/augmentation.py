"""What Keras 3's random image layers share (`image_preprocessing/
base_image_preprocessing_layer.py`): training-only application, a `keras.random.SeedGenerator`
per layer, the `factor` conventions and the affine matrix of a rotation, zoom or shift.

In training (inside `fit`'s step, or `layer(x, training=True)`) each call draws new random
numbers from the layer's generator, whose state is a variable that every draw advances: each
step transforms differently, and the whole sequence is fixed by `seed`. In inference (predict,
evaluate, a model called with `training=False`) the layers return their input, cast to the
layer's dtype. A layer called directly on arrays without `training` trains, as Keras 3's
(`call(data, training=True)`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sluice._keras import random as keras_random
from sluice._keras.layers import tracking, value_calls
from sluice._keras.layers.base import Layer
from sluice._keras.layers.preprocessing import image_utils
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import fill_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import unary_ops
from sluice.framework.ops.nn import image_transform_ops
from sluice.framework.ops.random import random_ops

FILL_MODES = ("reflect", "wrap", "constant", "nearest")
INTERPOLATIONS = ("nearest", "bilinear")


def factor_range(
    layer: str, factor: Any, bounds: tuple = (-1.0, 1.0), name: str = "factor"
) -> tuple:
    """(lower, upper) of a `factor` given as a number f (-|f|, |f|, clipped to `bounds`) or a
    pair (sorted), checked against `bounds` (Keras's `_set_factor`)."""
    message = (
        f"{layer}: the `{name}` argument should be a number (or a list of two numbers) in the "
        f"range [{bounds[0]}, {bounds[1]}]. Received: {name}={factor}"
    )
    if isinstance(factor, (tuple, list)):
        if len(factor) != 2 or factor[0] > bounds[1] or factor[1] < bounds[0]:
            raise ValueError(message)
        lower, upper = sorted(float(f) for f in factor)
        if lower < bounds[0] or upper > bounds[1]:
            raise ValueError(message)
        return lower, upper
    if isinstance(factor, (int, float)) and not isinstance(factor, bool):
        if not bounds[0] <= factor <= bounds[1]:
            raise ValueError(message)
        factor = abs(float(factor))
        return max(-factor, bounds[0]), factor
    raise ValueError(message)


def check_choice(layer: str, name: str, value: str, choices: tuple) -> str:
    if value not in choices:
        raise NotImplementedError(
            f"{layer}: unknown `{name}` {value!r}. Expected one of {choices}."
        )
    return value


class RandomImageLayer(Layer):
    """The base of the random image layers: `transform(images, training)` receives a
    channels-last batch in the layer's dtype and returns it transformed; `call` handles the
    data format, single images and inference."""

    def __init__(self, seed: int | None = None, data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.seed = seed
        self.generator = keras_random.SeedGenerator(seed)
        self.data_format = image_utils.data_format_arg(type(self).__name__, data_format)
        self.supports_masking = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        inputs = args[0] if args else kwargs.get("inputs")
        if (
            kwargs.get("training") is None
            and tracking.outer_training() is None
            and value_calls.are_values(inputs)
        ):
            kwargs["training"] = True  # Keras 3's default for a direct call
        if args and value_calls.are_values(inputs) and np.ndim(inputs) == 3:
            # one image called on values: as a batch of one, so its height and width stay
            # static in the traced graph (a value call leaves the first dimension unknown)
            out = super().__call__(np.asarray(inputs)[None], *args[1:], **kwargs)
            return out[0]
        return super().__call__(*args, **kwargs)

    def call(self, inputs: Any, training: bool = False) -> Any:
        x, single = image_utils.as_batch(self.name, inputs, self.data_format)
        if self._casts_inputs and x.dtype != self._dtype:
            x = fill_ops.cast(x, self._dtype)
        if training:
            x = self.transform(x)
        return image_utils.restore(x, single, self.data_format)

    _casts_inputs = True  # the output is in the layer's dtype (Keras's compute_dtype)

    def transform(self, images: Tensor) -> Tensor:
        raise NotImplementedError

    def uniform(self, shape: list, low: float, high: float) -> Tensor:
        """Numbers drawn uniformly from [low, high) by the layer's generator."""
        if shape:  # a dynamic batch size among the dimensions
            shape = join_ops.stack([core_ops.convert_to_tensor(d, dtypes.int32) for d in shape])
        return random_ops.random_uniform(
            shape, low, high, dtype=dtypes.float32, seed=self.generator
        )

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "seed": self.seed, "data_format": self.data_format}


def batch_size(x: Tensor) -> Tensor:
    return fill_ops.shape(x)[0]


def affine_matrix(
    angle: Tensor, translate_x: Tensor, translate_y: Tensor, height: int, width: int
) -> Tensor:
    """[batch, 8] transforms rotating by `angle` (degrees) about the image centre, then
    shifting the sampled point by (translate_x, translate_y) (Keras's `_compute_affine_matrix`
    at scale 1 without shear): output (x, y) samples the input at
    R (x - c) + c + t, with c = ((width - 1) / 2, (height - 1) / 2)."""
    radians = angle * (math.pi / 180.0)
    cos, sin = unary_ops.cos(radians), unary_ops.sin(radians)
    cx, cy = 0.5 * (width - 1), 0.5 * (height - 1)
    a0, a1 = cos, -sin
    b0, b1 = sin, cos
    a2 = translate_x + cx - cx * a0 - cy * a1
    b2 = translate_y + cy - cx * b0 - cy * b1
    zeros = fill_ops.zeros_like(angle)
    return join_ops.stack([a0, a1, a2, b0, b1, b2, zeros, zeros], axis=1)


class AffineLayer(RandomImageLayer):
    """A random layer that resamples with an affine transform (`fill_mode`, `fill_value`,
    `interpolation`, as Keras's rotation, zoom and translation)."""

    def __init__(
        self,
        fill_mode: str = "reflect",
        interpolation: str = "bilinear",
        seed: int | None = None,
        fill_value: float = 0.0,
        data_format: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        name = type(self).__name__
        self.fill_mode = check_choice(name, "fill_mode", fill_mode, FILL_MODES)
        self.interpolation = check_choice(name, "interpolation", interpolation, INTERPOLATIONS)
        self.fill_value = float(fill_value)

    def resample(self, images: Tensor, transforms: Tensor) -> Tensor:
        return image_transform_ops.image_projective_transform(
            images,
            transforms,
            output_shape=list(image_utils.static_hw(self.name, images)),
            interpolation=self.interpolation,
            fill_mode=self.fill_mode,
            fill_value=self.fill_value,
        )

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "fill_mode": self.fill_mode,
            "fill_value": self.fill_value,
            "interpolation": self.interpolation,
        }
