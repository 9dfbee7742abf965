"""Noise layers, active only in training: SpatialDropout1D/2D (whole channels) and GaussianNoise
(Keras 3 arguments)."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice._keras.layers.core import Dropout
from sluice._keras.layers.reshaping import check_rank, require_channels_last
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.random import random_ops


@export("layers.SpatialDropout1D")
class SpatialDropout1D(Dropout):
    """Dropout of whole feature channels: in training, each channel of each example is zeroed
    at every step with probability `rate` (noise shape [batch, 1, channels]) and the kept ones
    scaled by 1 / (1 - rate); in inference, the identity.

    Args:
      rate: the fraction of channels to drop, in [0, 1).
      seed: the op seed.

    >>> y = SpatialDropout1D(0.5)(sl.Input((4, 3)), training=True)
    >>> y.shape
    TensorShape([None, 4, 3])
    """

    def __init__(self, rate: float, seed: int | None = None, **kwargs: Any):
        super().__init__(rate, noise_shape=(None, 1, None), seed=seed, **kwargs)

    def build(self, input_shape: tuple) -> None:
        check_rank(self, input_shape, 3, "[batch, steps, channels]")

    def get_config(self) -> dict:
        config = super().get_config()
        del config["noise_shape"], config["trainable"]  # Keras's __init__ takes neither
        return config


@export("layers.SpatialDropout2D")
class SpatialDropout2D(Dropout):
    """Dropout of whole feature maps: in training, each channel of each image is zeroed with
    probability `rate` (noise shape [batch, 1, 1, channels]) and the kept ones scaled by
    1 / (1 - rate); in inference, the identity.

    Args:
      rate: the fraction of channels to drop, in [0, 1).
      data_format: "channels_last" (channels_first is not supported).
      seed: the op seed.

    >>> y = SpatialDropout2D(0.25)(sl.Input((8, 8, 4)), training=True)
    >>> y.shape
    TensorShape([None, 8, 8, 4])
    """

    def __init__(
        self, rate: float, data_format: str | None = None, seed: int | None = None, **kwargs: Any
    ):
        super().__init__(rate, noise_shape=(None, 1, 1, None), seed=seed, **kwargs)
        self.data_format = require_channels_last("SpatialDropout2D", data_format)

    def build(self, input_shape: tuple) -> None:
        check_rank(self, input_shape, 4, "[batch, rows, cols, channels]")

    def get_config(self) -> dict:
        config = {**super().get_config(), "data_format": self.data_format}
        del config["noise_shape"], config["trainable"]  # Keras's __init__ takes neither
        return config


@export("layers.GaussianNoise")
class GaussianNoise(Layer):
    """In training, adds zero-mean Gaussian noise of standard deviation `stddev` (new noise at
    every step, a sequence fixed by the seeds); in inference, the identity.

    Args:
      stddev: the standard deviation of the noise, in [0, 1].
      seed: the op seed.

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
        self.supports_masking = True

    def call(self, inputs: Any, training: bool = False) -> Any:
        if not training or self.stddev == 0:
            return inputs
        noise = random_ops.random_normal(
            fill_ops.shape(inputs), stddev=self.stddev, dtype=inputs.dtype, seed=self.seed
        )
        return inputs + noise

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "stddev": self.stddev, "seed": self.seed}
