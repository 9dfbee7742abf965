"""SpatialDropout1D/2D/3D: dropout of whole channels, only in training (Keras 3 arguments)."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.arguments import _data_format
from sluice._keras.layers.regularization.dropout import Dropout
from sluice._keras.layers.reshaping.reshaping_utils import check_rank, image_layout


@export("layers.SpatialDropout1D")
class SpatialDropout1D(Dropout):
    """Dropout of whole feature channels: in training, each channel of each example is zeroed
    at every step with probability `rate` (noise shape [batch, 1, channels]) and the kept ones
    scaled by 1 / (1 - rate); in inference, the identity.

    Args:
      rate: the fraction of channels to drop, in [0, 1).
      seed: the seed of the layer's SeedGenerator (see `Dropout`).

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
    probability `rate` (noise shape [batch, 1, 1, channels], or [batch, channels, 1, 1] channels
    first) and the kept ones scaled by 1 / (1 - rate); in inference, the identity.

    Args:
      rate: the fraction of channels to drop, in [0, 1).
      data_format: "channels_last", "channels_first" or None (`sl.config.image_data_format()`).
      seed: the seed of the layer's SeedGenerator (see `Dropout`).

    >>> y = SpatialDropout2D(0.25)(sl.Input((8, 8, 4)), training=True)
    >>> y.shape
    TensorShape([None, 8, 8, 4])
    """

    def __init__(
        self, rate: float, data_format: str | None = None, seed: int | None = None, **kwargs: Any
    ):
        data_format = _data_format(data_format)
        noise_shape = (None, None, 1, 1) if data_format == "channels_first" else (None, 1, 1, None)
        super().__init__(rate, noise_shape=noise_shape, seed=seed, **kwargs)
        self.data_format = data_format

    def build(self, input_shape: tuple) -> None:
        check_rank(self, input_shape, 4, image_layout(self.data_format))

    def get_config(self) -> dict:
        config = {**super().get_config(), "data_format": self.data_format}
        del config["noise_shape"], config["trainable"]  # Keras's __init__ takes neither
        return config


@export("layers.SpatialDropout3D")
class SpatialDropout3D(Dropout):
    """Dropout of whole 3-D feature maps: in training, each channel of each volume is zeroed
    with probability `rate` (noise shape [batch, 1, 1, 1, channels], or [batch, channels, 1, 1,
    1] channels first) and the kept ones scaled by 1 / (1 - rate); in inference, the identity.

    Args:
      rate: the fraction of channels to drop, in [0, 1).
      data_format: "channels_last", "channels_first" or None (`sl.config.image_data_format()`).
      seed: the seed of the layer's SeedGenerator (see `Dropout`).

    >>> y = SpatialDropout3D(0.25)(sl.Input((4, 4, 4, 2)), training=True)
    >>> y.shape
    TensorShape([None, 4, 4, 4, 2])
    """

    def __init__(
        self, rate: float, data_format: str | None = None, seed: int | None = None, **kwargs: Any
    ):
        data_format = _data_format(data_format)
        noise_shape = (
            (None, None, 1, 1, 1) if data_format == "channels_first" else (None, 1, 1, 1, None)
        )
        super().__init__(rate, noise_shape=noise_shape, seed=seed, **kwargs)
        self.data_format = data_format

    def build(self, input_shape: tuple) -> None:
        axes = ["dim1", "dim2", "dim3", "channels"]
        if self.data_format == "channels_first":
            axes = axes[-1:] + axes[:-1]
        check_rank(self, input_shape, 5, f"[batch, {', '.join(axes)}]")

    def get_config(self) -> dict:
        config = {**super().get_config(), "data_format": self.data_format}
        del config["noise_shape"], config["trainable"]  # Keras's __init__ takes neither
        return config
