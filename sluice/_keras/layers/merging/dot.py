"""`Dot` and `dot`: batched dot products of two inputs."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice._keras.layers.merging.base_merge import _inputs_list, _shape_list
from sluice.framework.ops.array import array_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, matmul_ops, reduction_ops, unary_ops


def _l2_normalize(x: Any, axis: int) -> Any:
    """`x / max(||x||, 1e-7)` along `axis` (Keras's `normalize`)."""
    square_sum = reduction_ops.reduce_sum(unary_ops.square(x), axis=axis, keepdims=True)
    floor = core_ops.convert_to_tensor(1e-14, dtype=x.dtype)
    return x * unary_ops.rsqrt(math_ops.maximum(square_sum, floor))


@export("layers.Dot")
class Dot(Layer):
    """The dot product of two tensors along the given axes, per example (Keras's `batch_dot`):

        2D [b, n] . [b, n]            -> [b, 1]
        3D [b, n, d] . [b, m, d], axes=2 -> [b, n, m]   (sums over d)
        in general: x's shape without the batch and axes[0], then y's without the batch and
        axes[1]

    Inputs of rank 2 or 3 (one of each is fine).

    Args:
      axes: an int (the same axis of both inputs) or a pair (axis of x, axis of y); not 0.
      normalize: whether to L2-normalize each input along its axis first (then the output
        of two vectors is their cosine similarity).
    """

    def __init__(self, axes: Any, normalize: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        if not isinstance(axes, int):
            if not isinstance(axes, (list, tuple)):
                raise TypeError(
                    f"Invalid type for argument `axes`: it should be a list or an int. "
                    f"Received: axes={axes}"
                )
            if len(axes) != 2:
                raise ValueError(
                    f"Invalid format for argument `axes`: it should contain two elements. "
                    f"Received: axes={axes}"
                )
            if not isinstance(axes[0], int) or not isinstance(axes[1], int):
                raise ValueError(
                    f"Invalid format for argument `axes`: list elements should be integers. "
                    f"Received: axes={axes}"
                )
            axes = list(axes)
        self.axes = axes
        self.normalize = bool(normalize)
        self.supports_masking = True

    def _axes_for(self, ranks: tuple[int, int]) -> list[int]:
        pair = [self.axes, self.axes] if isinstance(self.axes, int) else self.axes
        axes = [a % r if a < 0 else a for a, r in zip(pair, ranks)]
        for a, r in zip(axes, ranks):
            if not 1 <= a < r:
                raise ValueError(
                    f"Dot {self.name!r}: axes {self.axes} do not name a non-batch axis of "
                    f"inputs of ranks {ranks}."
                )
        return axes

    def build(self, input_shape: Any) -> None:
        self.compute_output_shape(input_shape)

    def call(self, inputs: Any) -> Any:
        inputs = _inputs_list(inputs, "Dot")
        if len(inputs) != 2:
            raise ValueError(f"A `Dot` layer should be called on a list of 2 inputs: {inputs}")
        x, y = inputs
        rx, ry = x.shape.rank, y.shape.rank
        ax, ay = self._axes_for((rx, ry))
        if self.normalize:
            x, y = _l2_normalize(x, ax), _l2_normalize(y, ay)
        if rx == 2 and ry == 2:
            return reduction_ops.reduce_sum(x * y, axis=1, keepdims=True)
        # as [b, free_x, k] @ [b, k, free_y]; a 2D input gets (and then loses) a free axis of 1
        x3 = array_ops.expand_dims(x, 1) if rx == 2 else x
        y3 = array_ops.expand_dims(y, 2) if ry == 2 else y
        out = matmul_ops.matmul(
            x3, y3, transpose_a=(rx == 3 and ax == 1), transpose_b=(ry == 3 and ay == 2)
        )
        if rx == 2:
            return array_ops.squeeze(out, [1])
        if ry == 2:
            return array_ops.squeeze(out, [2])
        return out

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shapes = _shape_list(input_shape, "Dot", minimum=2)
        if len(shapes) != 2:
            raise ValueError(
                f"A `Dot` layer should be called on a list of 2 inputs. Received: "
                f"input_shape={shapes}"
            )
        shape1, shape2 = (list(s) for s in shapes)
        if len(shape1) not in (2, 3) or len(shape2) not in (2, 3):
            raise NotImplementedError(
                f"Dot {self.name!r} supports inputs of rank 2 or 3; got shapes {shapes}."
            )
        ax, ay = self._axes_for((len(shape1), len(shape2)))
        if None not in (shape1[ax], shape2[ay]) and shape1[ax] != shape2[ay]:
            raise ValueError(
                f"Incompatible input shapes: axis values {shape1[ax]} (at axis {ax}) != "
                f"{shape2[ay]} (at axis {ay}). Full input shapes: {tuple(shape1)}, "
                f"{tuple(shape2)}"
            )
        shape1.pop(ax)
        shape2.pop(ay)
        shape2.pop(0)
        output = shape1 + shape2
        if len(output) == 1:
            output += [1]
        return tuple(output)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return None

    def get_config(self) -> dict:
        return {**super().get_config(), "axes": self.axes, "normalize": self.normalize}


@export("layers.dot")
def dot(inputs: list, axes: Any, normalize: bool = False, **kwargs: Any) -> Any:
    """`Dot(axes, normalize, **kwargs)(inputs)`."""
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)
