"""`Dropout`: zeroes a fraction of its inputs in training."""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice.framework.ops.array import fill_ops, join_ops
from sluice.framework.ops.nn import nn_ops


@export("layers.Dropout")
class Dropout(Layer):
    """In training, zeroes each input element with probability `rate` and scales the others by
    1 / (1 - rate); in inference, the identity. Every training step draws a new choice, from a
    sequence fixed by the seeds (the op seed `seed` and the graph seed).

    Args:
      rate: the fraction to drop, in [0, 1).
      noise_shape: the shape of the keep/drop choices, broadcast over the inputs (None entries
        are the inputs' dims): [batch, 1, features] drops the same features at every step.
      seed: the op seed.
    """

    def __init__(
        self, rate: float, noise_shape: Any = None, seed: int | None = None, **kwargs: Any
    ):
        super().__init__(**kwargs)
        if not 0 <= rate < 1:
            raise ValueError(
                "Invalid value received for argument `rate`. Expected a float in [0, 1),"
                f" got {rate}."
            )
        self.rate = float(rate)
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)
        self.seed = seed
        self.supports_masking = True

    def call(self, inputs: Any, training: bool = False) -> Any:
        if not training or self.rate == 0:
            return inputs
        noise_shape = None
        if self.noise_shape is not None:
            dynamic = fill_ops.shape(inputs)
            noise_shape = join_ops.stack(
                [dynamic[i] if d is None else np.int32(d) for i, d in enumerate(self.noise_shape)]
            )
        return nn_ops.dropout(inputs, rate=self.rate, noise_shape=noise_shape, seed=self.seed)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "rate": self.rate,
            "noise_shape": self.noise_shape,
            "seed": self.seed,
        }
