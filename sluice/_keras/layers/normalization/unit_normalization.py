"""`UnitNormalization`: each example scaled to L2 norm 1 over some axes."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops, unary_ops


@export("layers.UnitNormalization")
class UnitNormalization(Layer):
    """Scales each example to an L2 norm of 1 over `axis` (Keras 3's `UnitNormalization`, which
    is `keras.ops.normalize(x, axis, order=2, epsilon=1e-12)`):

        output = x * rsqrt(max(sum(x ** 2, axis, keepdims=True), 1e-12 ** 2))

    so an all-zero example stays zero, with a finite gradient.

    Args:
      axis: an int or a list of ints, the axes to normalize across (default -1).

    >>> y = UnitNormalization()(np.arange(6.0).reshape(2, 3))
    >>> round(float(np.sum(y[0] ** 2)), 6)
    1.0
    """

    def __init__(self, axis: Any = -1, **kwargs: Any):
        super().__init__(**kwargs)
        if isinstance(axis, (list, tuple)):
            self.axis = list(axis)
        elif isinstance(axis, int):
            self.axis = axis
        else:
            raise TypeError(
                "Invalid value for `axis` argument: expected an int or a list/tuple of ints. "
                f"Received: axis={axis}"
            )
        self.supports_masking = True

    def _axes(self) -> list:
        return [self.axis] if isinstance(self.axis, int) else list(self.axis)

    def call(self, inputs: Any) -> Any:
        x = inputs
        square_sum = reduction_ops.reduce_sum(unary_ops.square(x), self._axes(), keepdims=True)
        floor = core_ops.convert_to_tensor(1e-12 * 1e-12, dtype=x.dtype)
        return x * unary_ops.rsqrt(math_ops.maximum(square_sum, floor))

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        for axis in self._axes():
            if axis >= len(input_shape) or axis < -len(input_shape):
                raise ValueError(
                    f"Axis {self.axis} is out of bounds for input shape {tuple(input_shape)}."
                )
        return tuple(input_shape)

    def build(self, input_shape: tuple) -> None:
        self.compute_output_shape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}
