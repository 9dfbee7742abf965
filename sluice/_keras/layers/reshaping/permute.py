"""`Permute`: the dimensions after the batch, reordered."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice._keras.layers.reshaping.reshaping_utils import check_rank
from sluice.framework.ops.array import array_ops


@export("layers.Permute")
class Permute(Layer):
    """Permutes the non-batch axes: `dims` (1-based, as in Keras) lists, for each output axis,
    the input axis it takes.

    >>> y = Permute((2, 1))(sl.Input((10, 64)))
    >>> y.shape
    TensorShape([None, 64, 10])
    """

    def __init__(self, dims: Any, **kwargs: Any):
        super().__init__(**kwargs)
        self.dims = tuple(int(d) for d in dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError(
                "Invalid permutation argument `dims` for Permute Layer. The set of indices in "
                f"`dims` must be consecutive and start from 1. Received dims={dims}"
            )

    def build(self, input_shape: tuple) -> None:
        check_rank(self, input_shape, len(self.dims) + 1, f"of rank {len(self.dims) + 1}")

    def call(self, inputs: Any) -> Any:
        return array_ops.transpose(inputs, (0,) + self.dims)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return (input_shape[0],) + tuple(input_shape[d] for d in self.dims)

    def get_config(self) -> dict:
        return {**super().get_config(), "dims": self.dims}
