"""`RMSNormalization`: each example divided by its root mean square over some axes."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice.framework.ops.array import array_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import reduction_ops, unary_ops


@export("layers.RMSNormalization")
class RMSNormalization(Layer):
    """Root mean square normalization (Zhang & Sennrich, 2019; Keras 3's `RMSNormalization`,
    which is `keras.ops.rms_normalization`):

        output = x * rsqrt(mean(x ** 2, axis, keepdims=True) + epsilon) * scale

    Weights: `scale`, shaped like the normalized axes, initialized to ones. `build` turns `axis`
    into a sorted list, as Keras does.

    Args:
      axis: an int or a list of ints, the axes to normalize over (default -1).
      epsilon: added to the mean square (default 1e-6).

    >>> layer = RMSNormalization()
    >>> layer.build([5, 20, 30, 10])
    >>> tuple(layer.scale.shape.as_list())
    (10,)
    """

    def __init__(self, axis: Any = -1, epsilon: float = 1e-6, **kwargs: Any):
        super().__init__(**kwargs)
        self.axis = axis
        self.epsilon = epsilon

    def _axes(self) -> list:
        return sorted(self.axis) if isinstance(self.axis, (list, tuple)) else [self.axis]

    def build(self, input_shape: tuple) -> None:
        self.compute_output_shape(input_shape)
        self.axis = self._axes()
        shape = tuple(input_shape[a] for a in self.axis)
        if None in shape:
            raise ValueError(
                f"RMSNormalization {self.name!r}: axis {self.axis} of input shape "
                f"{tuple(input_shape)} must be known."
            )
        self.scale = self.add_weight(name="scale", shape=shape, initializer="ones")

    def call(self, x: Any) -> Any:
        axes = self._axes()
        mean_square = reduction_ops.reduce_mean(unary_ops.square(x), axes, keepdims=True)
        epsilon = core_ops.convert_to_tensor(self.epsilon, dtype=x.dtype)
        rank = x.shape.rank
        positive = sorted(a % rank for a in axes)
        scale = self.scale
        if positive != list(range(rank - len(axes), rank)):  # not trailing: line it up
            dims = [1] * rank
            for a, n in zip(positive, self.scale.shape.as_list()):
                dims[a] = n
            scale = array_ops.reshape(scale, dims)
        return x * unary_ops.rsqrt(mean_square + epsilon) * scale

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        for axis in self._axes():
            if axis >= len(input_shape) or axis < -len(input_shape):
                raise ValueError(
                    f"Axis {axis} is out of bounds for input shape {tuple(input_shape)}. "
                    f"Received: axis={self.axis}"
                )
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon}
