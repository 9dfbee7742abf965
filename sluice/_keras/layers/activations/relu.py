"""`ReLU` (Keras 3 arguments and arithmetic); the other activation layers are beside it.

>>> y = ReLU(max_value=6.0)(sl.Input((3,)))
>>> y.shape
TensorShape([None, 3])
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice.framework.ops.array import fill_ops, gather_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops
from sluice.framework.ops.nn import nn_ops


def _const(x: Any, value: float) -> Any:
    return core_ops.convert_to_tensor(value, dtype=x.dtype)


@export("layers.ReLU")
class ReLU(Layer):
    """Keras's rectifier with an optional ceiling, leak and threshold:

        f(x) = min(x, max_value)                 if x > threshold   (no ceiling when None)
        f(x) = negative_slope * (x - threshold)  otherwise

    Args:
      max_value: the ceiling (>= 0), or None.
      negative_slope: the slope below the threshold (>= 0).
      threshold: the value below which the output is leaked (>= 0).

    >>> relu = ReLU(max_value=2.0, negative_slope=0.5)
    >>> np.round(sl.Session().run(relu(sl.constant([[-2.0, 1.0, 3.0]]))), 3)
    array([[-1.,  1.,  2.]], dtype=float32)
    """

    def __init__(
        self,
        max_value: float | None = None,
        negative_slope: float = 0.0,
        threshold: float = 0.0,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0.0:
            raise ValueError(
                f"max_value of a ReLU layer cannot be a negative value. Received: {max_value}"
            )
        if negative_slope is None or negative_slope < 0.0:
            raise ValueError(
                "negative_slope of a ReLU layer cannot be a negative value. "
                f"Received: {negative_slope}"
            )
        if threshold is None or threshold < 0.0:
            raise ValueError(
                f"threshold of a ReLU layer cannot be a negative value. Received: {threshold}"
            )
        self.max_value = None if max_value is None else float(max_value)
        self.negative_slope = float(negative_slope)
        self.threshold = float(threshold)
        self.supports_masking = True

    def call(self, inputs: Any) -> Any:
        x = inputs
        if self.threshold == 0.0:
            y = nn_ops.relu(x)
        else:
            above = math_ops.greater(x, _const(x, self.threshold))
            y = gather_ops.where(above, x, fill_ops.zeros_like(x))
        if self.max_value is not None:
            y = math_ops.minimum(y, _const(x, self.max_value))
        if self.negative_slope != 0.0:
            below = nn_ops.relu(_const(x, self.threshold) - x)
            y = y - _const(x, self.negative_slope) * below
        return y

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "max_value": self.max_value,
            "negative_slope": self.negative_slope,
            "threshold": self.threshold,
        }
