"""`Reshape`: the dimensions after the batch, reshaped."""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice._keras.layers.reshaping.flatten import _static_product
from sluice.framework.ops.array import array_ops, fill_ops, join_ops


@export("layers.Reshape")
class Reshape(Layer):
    """Reshapes each example to `target_shape` (without the batch; one entry may be -1).

    >>> y = Reshape((4, 3))(sl.Input((12,)))
    >>> y.shape
    TensorShape([None, 4, 3])
    """

    def __init__(self, target_shape: Any, **kwargs: Any):
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if sum(d == -1 for d in self.target_shape) > 1:
            raise ValueError(f"Reshape: at most one -1 in target_shape, got {self.target_shape}.")

    def call(self, inputs: Any) -> Any:
        static = self.compute_output_shape(tuple(inputs.shape.as_list()))
        if None not in static[1:]:
            return array_ops.reshape(inputs, [-1] + list(static[1:]))
        batch = fill_ops.shape(inputs)[0]
        return array_ops.reshape(
            inputs, join_ops.stack([batch] + [np.int32(d) for d in self.target_shape])
        )

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        target = list(self.target_shape)
        if -1 in target:
            known = _static_product(input_shape[1:])
            rest = int(np.prod([d for d in target if d != -1], dtype=np.int64))
            if known is None:
                target[target.index(-1)] = None
            elif rest == 0 or known % rest:
                raise ValueError(
                    f"Reshape {self.name!r}: cannot reshape input of shape {input_shape} "
                    f"to {self.target_shape}."
                )
            else:
                target[target.index(-1)] = known // rest
        else:
            known = _static_product(input_shape[1:])
            if known is not None and known != int(np.prod(target, dtype=np.int64)):
                raise ValueError(
                    f"Reshape {self.name!r}: the input has {known} elements per example "
                    f"(shape {input_shape}), target_shape {self.target_shape} has "
                    f"{int(np.prod(target))}."
                )
        return (input_shape[0],) + tuple(target)

    def get_config(self) -> dict:
        return {**super().get_config(), "target_shape": self.target_shape}
