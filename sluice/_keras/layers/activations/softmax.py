"""`Softmax`: the softmax over an axis, with an optional mask."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.activations.relu import _const
from sluice._keras.layers.base import Layer
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import reduction_ops, unary_ops
from sluice.framework.ops.nn import nn_ops


@export("layers.Softmax")
class Softmax(Layer):
    """Softmax along `axis` (an int or a tuple of axes).

    With a mask (True where valid, broadcastable against the inputs; a mask of lower rank, such
    as an Embedding's [batch, time] mask, gets trailing axes of size 1), masked positions get a
    large negative logit (-1e9) before the softmax and an output of 0, as in Keras.

    >>> y = Softmax()(sl.constant([[0.0, np.log(3.0)]]))
    >>> np.round(sl.Session().run(y), 6)
    array([[0.25, 0.75]], dtype=float32)
    """

    def __init__(self, axis: Any = -1, **kwargs: Any):
        super().__init__(**kwargs)
        self.axis = tuple(int(a) for a in axis) if isinstance(axis, (list, tuple)) else int(axis)
        self.supports_masking = True

    def call(self, inputs: Any, mask: Any = None) -> Any:
        x = inputs
        if mask is not None:
            mask = fill_ops.cast(mask, x.dtype)
            while mask.shape.rank is not None and mask.shape.rank < x.shape.rank:
                mask = array_ops.expand_dims(mask, -1)
            x = x + (_const(x, 1.0) - mask) * _const(x, -1e9)
        if isinstance(self.axis, tuple):
            axes = list(self.axis)
            shifted = x - core_ops.stop_gradient(
                reduction_ops.reduce_max(x, axis=axes, keepdims=True)
            )
            e = unary_ops.exp(shifted)
            y = e / reduction_ops.reduce_sum(e, axis=axes, keepdims=True)
        else:
            y = nn_ops.softmax(x, axis=self.axis)
        if mask is not None:
            y = y * mask
        return y

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        axis = list(self.axis) if isinstance(self.axis, tuple) else self.axis
        return {**super().get_config(), "axis": axis}
