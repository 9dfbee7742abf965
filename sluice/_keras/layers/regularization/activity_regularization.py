"""`ActivityRegularization`: the identity, with an L1/L2 penalty on its output."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import regularizers
from sluice._keras.layers.base import Layer


@export("layers.ActivityRegularization")
class ActivityRegularization(Layer):
    """Returns its inputs and adds `l1 * sum(|x|) + l2 * sum(x**2)` of them to the training
    loss (its `activity_regularizer` is `L1L2(l1, l2)`, applied as any layer's is).

    Args:
      l1: the L1 factor (a non-negative float).
      l2: the L2 factor (a non-negative float).

    >>> ActivityRegularization(l2=0.01)(sl.Input((3,))).shape
    TensorShape([None, 3])
    """

    def __init__(self, l1: float = 0.0, l2: float = 0.0, **kwargs: Any):
        kwargs.pop("activity_regularizer", None)  # a saved config's, rebuilt from l1 and l2
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2), **kwargs)
        self.supports_masking = True
        self.l1, self.l2 = l1, l2

    def call(self, inputs: Any) -> Any:
        return inputs

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape

    def get_config(self) -> dict:
        config = super().get_config()
        config.pop("activity_regularizer", None)
        return {**config, "l1": self.l1, "l2": self.l2}
