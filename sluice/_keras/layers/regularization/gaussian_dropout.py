"""`GaussianDropout`: multiplicative one-centred Gaussian noise in training."""

from __future__ import annotations

import math
from typing import Any

from sluice._export import export
from sluice._keras import random as keras_random
from sluice._keras.layers.base import Layer
from sluice._keras.layers.regularization.dropout import check_rate
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.random import random_ops


@export("layers.GaussianDropout")
class GaussianDropout(Layer):
    """In training, multiplies the inputs by noise drawn from N(1, rate / (1 - rate)) (Keras's
    `GaussianDropout`; the variance of dropout at `rate`), from the layer's
    `keras.random.SeedGenerator(seed)`; in inference, the identity.

    Args:
      rate: the drop probability it stands for, in [0, 1].
      seed: the seed of the layer's SeedGenerator (None: one from Python's `random`).

    >>> y = GaussianDropout(0.2)(sl.Input((3,)), training=True)
    >>> y.shape
    TensorShape([None, 3])
    """

    def __init__(self, rate: float, seed: int | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.rate = check_rate("GaussianDropout", rate)
        self.seed = seed
        if self.rate > 0:
            self.seed_generator = keras_random.SeedGenerator(seed)
        self.supports_masking = True

    def call(self, inputs: Any, training: bool = False) -> Any:
        if not training or self.rate == 0:
            return inputs
        stddev = math.sqrt(self.rate / (1.0 - self.rate)) if self.rate < 1 else math.inf
        noise = random_ops.random_normal(
            fill_ops.shape(inputs), mean=1.0, stddev=stddev, dtype=inputs.dtype,
            seed=self.seed_generator,
        )  # fmt: skip
        return inputs * noise

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}
