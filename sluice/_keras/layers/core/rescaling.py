"""`Rescaling`: multiplies inputs by `scale` and adds `offset` (Keras's preprocessing layer)."""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops


@export("layers.Rescaling")
class Rescaling(Layer):
    """`outputs = inputs * scale + offset`, in the layer's dtype (integer images become floats).

    `scale` and `offset` may be numbers or lists broadcast over the last axis (per-channel
    values), as in Keras 3; `Rescaling(1 / 127.5, offset=-1)` maps [0, 255] to [-1, 1].

    >>> layer = Rescaling(scale=1 / 255.0, offset=-0.5)
    >>> print(layer(np.array([[0.0, 255.0]], np.float32)))
    [[-0.5  0.5]]
    """

    def __init__(self, scale: Any, offset: Any = 0.0, **kwargs: Any):
        super().__init__(**kwargs)
        self.scale = scale
        self.offset = offset
        self.supports_masking = True

    def call(self, inputs: Any) -> Any:
        dtype = self._dtype if dtypes.is_floating(self._dtype) else dtypes.float32
        x = fill_ops.cast(inputs, dtype)
        scale = core_ops.convert_to_tensor(np.asarray(self.scale, dtype))
        offset = core_ops.convert_to_tensor(np.asarray(self.offset, dtype))
        return x * scale + offset

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "scale": _plain(self.scale), "offset": _plain(self.offset)}


def _plain(value: Any) -> Any:
    """A number or a (nested) list: what a config holds."""
    return np.asarray(value).tolist() if not isinstance(value, (int, float)) else value
