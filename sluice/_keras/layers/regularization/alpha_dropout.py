"""`AlphaDropout`: dropout that keeps a SELU network's mean and variance, in training."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import random as keras_random
from sluice._keras.layers.base import Layer
from sluice._keras.layers.regularization.dropout import check_rate
from sluice.framework.ops.array import fill_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops
from sluice.framework.ops.random import random_ops

_ALPHA = 1.6732632423543772848170429916717  # SELU's constants
_SCALE = 1.0507009873554804934193349852946


@export("layers.AlphaDropout")
class AlphaDropout(Layer):
    """In training, sets each input (or each entry of `noise_shape`, broadcast) to SELU's
    negative saturation value `-alpha * scale` with probability `rate`, then applies the affine
    map `a * x + b` that restores the inputs' mean and variance (Keras's `AlphaDropout`):

        kept = uniform(noise_shape) >= rate
        x = where(kept, inputs, -alpha * scale)
        a = ((1 - rate) * (1 + rate * (alpha * scale)**2)) ** -0.5;  b = a * alpha * scale * rate
        output = a * x + b

    The draws come from the layer's `keras.random.SeedGenerator(seed)`; in inference, the
    identity.

    Args:
      rate: the fraction to drop, in [0, 1].
      noise_shape: the shape of the choices (None entries are the inputs' dims).
      seed: the seed of the layer's SeedGenerator (None: one from Python's `random`).

    >>> y = AlphaDropout(0.1)(sl.Input((3,)), training=True)
    >>> y.shape
    TensorShape([None, 3])
    """

    def __init__(
        self, rate: float, noise_shape: Any = None, seed: int | None = None, **kwargs: Any
    ):
        super().__init__(**kwargs)
        self.rate = check_rate("AlphaDropout", rate)
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)
        self.seed = seed
        if self.rate > 0:
            self.seed_generator = keras_random.SeedGenerator(seed)
        self.supports_masking = True

    def call(self, inputs: Any, training: bool = False) -> Any:
        if not training or self.rate == 0:
            return inputs
        dtype = inputs.dtype
        shape = fill_ops.shape(inputs)
        if self.noise_shape is not None:
            shape = join_ops.stack([
                shape[i] if d is None else core_ops.constant(d, shape.dtype)
                for i, d in enumerate(self.noise_shape)
            ])  # fmt: skip
        draws = random_ops.random_uniform(shape, dtype=dtype, seed=self.seed_generator)
        kept = fill_ops.cast(math_ops.greater_equal(draws, self.rate), dtype)
        alpha_p = -_ALPHA * _SCALE
        a = ((1 - self.rate) * (1 + self.rate * alpha_p**2)) ** -0.5
        b = -a * alpha_p * self.rate
        x = inputs * kept + alpha_p * (1.0 - kept)
        return x * a + b

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "rate": self.rate,
            "seed": self.seed,
            "noise_shape": self.noise_shape,
        }
