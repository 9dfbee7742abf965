"""`RepeatVector`: [batch, features] -> [batch, n, features]."""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice._keras.layers.reshaping.reshaping_utils import check_rank
from sluice.framework.ops.array import array_ops, broadcast_ops


@export("layers.RepeatVector")
class RepeatVector(Layer):
    """Repeats its input `n` times along a new time axis: [batch, features] ->
    [batch, n, features].

    >>> y = RepeatVector(3)(sl.Input((5,)))
    >>> y.shape
    TensorShape([None, 3, 5])
    """

    def __init__(self, n: int, **kwargs: Any):
        super().__init__(**kwargs)
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
            raise TypeError(f"Expected an integer value for `n`, got {type(n).__name__} {n!r}.")
        if n < 0:
            raise ValueError(f"RepeatVector: `n` must be >= 0 (the number of copies), got {n}.")
        self.n = int(n)

    def build(self, input_shape: tuple) -> None:
        check_rank(self, input_shape, 2, "[batch, features]")

    def call(self, inputs: Any) -> Any:
        return broadcast_ops.tile(array_ops.expand_dims(inputs, 1), [1, self.n, 1])

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return (input_shape[0], self.n, input_shape[1])

    def get_config(self) -> dict:
        return {**super().get_config(), "n": self.n}
