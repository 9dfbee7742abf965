"""`LeakyReLU`: `x` where positive, `negative_slope * x` elsewhere."""

from __future__ import annotations

import warnings
from typing import Any

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice.framework.ops.nn import nn_ops


@export("layers.LeakyReLU")
class LeakyReLU(Layer):
    """`x` for `x >= 0`, `negative_slope * x` otherwise.

    Args:
      negative_slope: the slope for negative inputs (>= 0); Keras 2's `alpha` is accepted too,
        with a DeprecationWarning.
    """

    def __init__(self, negative_slope: float = 0.3, **kwargs: Any):
        if "alpha" in kwargs:
            negative_slope = kwargs.pop("alpha")
            warnings.warn(
                "Argument `alpha` is deprecated. Use `negative_slope` instead.",
                DeprecationWarning,
                stacklevel=2,
            )
        super().__init__(**kwargs)
        if negative_slope is None or negative_slope < 0:
            raise ValueError(
                "The negative_slope value of a Leaky ReLU layer cannot be None or negative. "
                f"Received: negative_slope={negative_slope}"
            )
        self.negative_slope = float(negative_slope)
        self.supports_masking = True

    def call(self, inputs: Any) -> Any:
        return nn_ops.leaky_relu(inputs, alpha=self.negative_slope)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "negative_slope": self.negative_slope}
