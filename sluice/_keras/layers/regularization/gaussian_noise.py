"""`GaussianNoise`: additive zero-mean noise in training."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import random as keras_random
from sluice._keras.layers.base import Layer
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.random import random_ops


@export("layers.GaussianNoise")
class GaussianNoise(Layer):
    """In training, adds zero-mean Gaussian noise of standard deviation `stddev`, drawn from the
    layer's `keras.random.SeedGenerator(seed)` (new noise at every step, a sequence fixed by
    `seed`; its state is a non-trainable variable); in inference, the identity.

    Args:
      stddev: the standard deviation of the noise, in [0, 1].
      seed: the seed of the layer's SeedGenerator (None: one from Python's `random`).

    >>> y = GaussianNoise(0.1)(sl.Input((3,)), training=True)
    >>> y.shape
    TensorShape([None, 3])
    """

    def __init__(self, stddev: float, seed: int | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        if not 0 <= stddev <= 1:
            raise ValueError(
                "Invalid value received for argument `stddev`. Expected a float value between "
                f"0 and 1. Received: stddev={stddev}"
            )
        self.stddev = float(stddev)
        self.seed = seed
        if self.stddev > 0:
            self.seed_generator = keras_random.SeedGenerator(seed)
        self.supports_masking = True

    def call(self, inputs: Any, training: bool = False) -> Any:
        if not training or self.stddev == 0:
            return inputs
        noise = random_ops.random_normal(
            fill_ops.shape(inputs), stddev=self.stddev, dtype=inputs.dtype,
            seed=self.seed_generator,
        )  # fmt: skip
        return inputs + noise

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "stddev": self.stddev, "seed": self.seed}
