"""`ELU`: the exponential linear unit as a layer."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import activations
from sluice._keras.layers.base import Layer


@export("layers.ELU")
class ELU(Layer):
    """`x` for `x >= 0`, `alpha * (exp(x) - 1)` otherwise (Keras 3's `ELU`).

    Args:
      alpha: the scale of the negative part (default 1.0).

    >>> ELU(alpha=0.5)(sl.Input((3,))).shape
    TensorShape([None, 3])
    """

    def __init__(self, alpha: float = 1.0, **kwargs: Any):
        super().__init__(**kwargs)
        self.alpha = alpha
        self.supports_masking = True

    def call(self, inputs: Any) -> Any:
        return activations.elu(inputs, alpha=self.alpha)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "alpha": self.alpha}
