"""`Flatten`: [batch, ...] -> [batch, features]."""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.layers.arguments import _data_format
from sluice._keras.layers.base import Layer
from sluice.framework.ops.array import array_ops, fill_ops, join_ops


def _static_product(dims: Any) -> int | None:
    return None if any(d is None for d in dims) else int(np.prod(dims, dtype=np.int64))


@export("layers.Flatten")
class Flatten(Layer):
    """[batch, d1, d2, ...] -> [batch, d1 * d2 * ...]; channels_first inputs are first moved to
    channels last, as Keras does, so the order of features does not depend on the data format."""

    def __init__(self, data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.data_format = _data_format(data_format)

    def call(self, inputs: Any) -> Any:
        x = inputs
        rank = x.shape.rank
        if rank is None:
            raise ValueError(f"Flatten {self.name!r} needs inputs of known rank.")
        if self.data_format == "channels_first" and rank > 2:
            x = array_ops.transpose(x, [0] + list(range(2, rank)) + [1])
        features = _static_product(x.shape.as_list()[1:])
        if features is not None:
            return array_ops.reshape(x, [-1, features])
        return array_ops.reshape(x, join_ops.stack([fill_ops.shape(x)[0], np.int32(-1)]))

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return (input_shape[0], _static_product(input_shape[1:]))

    def get_config(self) -> dict:
        return {**super().get_config(), "data_format": self.data_format}
