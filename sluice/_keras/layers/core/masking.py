"""`Masking`: marks the time steps whose features all equal `mask_value` as padding."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops


@export("layers.Masking")
class Masking(Layer):
    """Skips padded time steps in the layers that follow (RNN, LSTM, GRU, Bidirectional, ...).

    For inputs [batch, time, features], as Keras 3 computes it:

        mask = any(inputs != mask_value, axis=-1)          # [batch, time]: True = a real step
        outputs = inputs * mask[..., None]                  # masked steps become zeros

    The outputs carry `mask` (`tracking.get_mask`), which the next layer receives as
    its `mask=` argument; masks need not be right-padded (a skipped step in the middle keeps the
    RNN's state and repeats its previous output).

    Args:
      mask_value: the value that marks padding.

    >>> x = sl.Input((None, 3))
    >>> y = sl.layers.LSTM(4)(Masking(mask_value=0.0)(x))
    >>> y.shape
    TensorShape([None, 4])
    """

    def __init__(self, mask_value: float = 0.0, **kwargs: Any):
        super().__init__(**kwargs)
        self.mask_value = mask_value
        self.supports_masking = True

    def _keep(self, inputs: Any, keepdims: bool) -> Any:
        if inputs.shape.rank is not None and inputs.shape.rank < 2:
            raise ValueError(
                f"Masking {self.name!r} masks along the last axis of inputs [batch, ..., "
                f"features]; got inputs of shape {inputs.shape}."
            )
        padding = core_ops.convert_to_tensor(self.mask_value, dtype=inputs.dtype)
        return reduction_ops.reduce_any(
            math_ops.not_equal(inputs, padding), axis=-1, keepdims=keepdims
        )

    def call(self, inputs: Any) -> Any:
        return inputs * fill_ops.cast(self._keep(inputs, keepdims=True), inputs.dtype)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return self._keep(inputs, keepdims=False)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "mask_value": self.mask_value}
