"""`Dropout`: zeroes a fraction of its inputs in training."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import random as keras_random
from sluice._keras.layers.base import Layer


def check_rate(layer: str, rate: float, upper: str = "]") -> float:
    """`rate` as a float, checked in [0, 1] (or [0, 1) with `upper=")"`)."""
    if not (0 <= rate < 1 if upper == ")" else 0 <= rate <= 1):
        raise ValueError(
            f"{layer}: invalid value received for argument `rate`. Expected a float in "
            f"[0, 1{upper}, got {rate}."
        )
    return float(rate)


@export("layers.Dropout")
class Dropout(Layer):
    """In training, zeroes each input element with probability `rate` and scales the others by
    1 / (1 - rate); in inference, the identity. The choices are drawn from the layer's
    `keras.random.SeedGenerator(seed)` (`self.seed_generator`, made when `rate > 0`), whose
    state is the layer's one non-trainable variable: every training step draws anew, the
    sequence is fixed by `seed`, and `stateless_call` takes and returns the state.

    Args:
      rate: the fraction to drop, in [0, 1).
      noise_shape: the shape of the keep/drop choices, broadcast over the inputs (None entries
        are the inputs' dims): [batch, 1, features] drops the same features at every step.
      seed: the seed of the layer's SeedGenerator (None: one from Python's `random`).

    >>> layer = Dropout(0.5, seed=1)
    >>> y = layer(np.ones((2, 4), np.float32), training=True)
    >>> sorted(set(np.asarray(y).ravel().tolist())) == [0.0, 2.0]
    True
    >>> [v.path for v in layer.variables], layer.weights
    (['dropout/seed_generator/seed_generator_state'], [])
    """

    def __init__(
        self, rate: float, noise_shape: Any = None, seed: int | None = None, **kwargs: Any
    ):
        super().__init__(**kwargs)
        self.rate = check_rate(type(self).__name__, rate, ")")
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)
        self.seed = seed
        if self.rate > 0:
            self.seed_generator = keras_random.SeedGenerator(seed)
        self.supports_masking = True

    def call(self, inputs: Any, training: bool = False) -> Any:
        if not training or self.rate == 0:
            return inputs
        return keras_random.dropout(
            inputs, self.rate, noise_shape=self.noise_shape, seed=self.seed_generator
        )

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "rate": self.rate,
            "noise_shape": self.noise_shape,
            "seed": self.seed,
        }
