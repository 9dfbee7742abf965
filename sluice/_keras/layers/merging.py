"""Merging layers, called on a list of tensors: Add, Subtract, Multiply, Average, Maximum,
Minimum, Concatenate, Dot (Keras 3 arguments, shapes and arithmetic).

>>> a, b = sl.Input((3,)), sl.Input((3,))
>>> model = sl.Model(inputs=[a, b], outputs=Add()([a, b]))
>>> model.predict([np.ones((1, 3)), np.ones((1, 3))], verbose=0)
array([[2., 2., 2.]], dtype=float32)
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice.framework.ops.array import array_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, matmul_ops, reduction_ops, unary_ops


def _shape_list(input_shape: Any, what: str, minimum: int = 1) -> list[tuple]:
    """The list of input shapes, checked to be a list of at least `minimum` shapes."""
    if (
        not isinstance(input_shape, (list, tuple))
        or not input_shape
        or not all(isinstance(s, (list, tuple)) for s in input_shape)
        or len(input_shape) < minimum
    ):
        raise ValueError(
            f"A `{what}` layer should be called on a list of at least {minimum} input"
            f"{'s' if minimum > 1 else ''}. Received: input_shape={input_shape}"
        )
    return [tuple(s) for s in input_shape]


def _inputs_list(inputs: Any, what: str) -> list:
    if not isinstance(inputs, (list, tuple)):
        raise ValueError(
            f"A `{what}` layer should be called on a list of inputs. Received: inputs={inputs} "
            "(not a list of tensors)"
        )
    return list(inputs)


class Merge(Layer):
    """The base of the elementwise merges: `_merge_function` folds the list of inputs.

    The inputs must have one rank and, on every axis, the same size, or size 1 (broadcast), or
    an unknown size; known batch sizes must agree. The output mask (when some inputs have one)
    is the logical AND of the inputs' masks.
    """

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.supports_masking = True

    def _merge_function(self, inputs: list) -> Any:
        raise NotImplementedError

    def build(self, input_shape: Any) -> None:
        self.compute_output_shape(input_shape)

    def call(self, inputs: Any, mask: Any = None) -> Any:
        return self._merge_function(_inputs_list(inputs, type(self).__name__))

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shapes = _shape_list(input_shape, type(self).__name__)
        batch_sizes = {s[0] for s in shapes if s} - {None}
        if len(batch_sizes) > 1:
            raise ValueError(
                "Cannot merge tensors with different batch sizes. Received tensors with shapes "
                f"{shapes}"
            )
        if len({len(s) for s in shapes}) > 1:
            raise ValueError(
                f"A `{type(self).__name__}` layer needs inputs of one rank. Received tensors "
                f"with shapes {shapes}"
            )
        output = list(shapes[0])
        for shape in shapes[1:]:
            merged = []
            for i, j in zip(output, shape):
                if i is None or j is None:
                    merged.append(None)
                elif i == 1:
                    merged.append(j)
                elif j == 1 or i == j:
                    merged.append(i)
                else:
                    raise ValueError(
                        "Inputs have incompatible shapes. Received shapes "
                        f"{tuple(output)} and {shape} (all shapes: {shapes})"
                    )
            output = merged
        return tuple(output)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if mask is None:
            return None
        masks = [m for m in (mask if isinstance(mask, (list, tuple)) else [mask]) if m is not None]
        if not masks:
            return None
        out = masks[0]
        for m in masks[1:]:
            out = math_ops.logical_and(out, m)
        return out


def _fold(fn: Any, inputs: list) -> Any:
    out = inputs[0]
    for x in inputs[1:]:
        out = fn(out, x)
    return out


@export("layers.Add")
class Add(Merge):
    """The elementwise sum of a list of tensors of one shape."""

    def _merge_function(self, inputs: list) -> Any:
        return _fold(math_ops.add, inputs)


@export("layers.Subtract")
class Subtract(Merge):
    """`inputs[0] - inputs[1]`, for exactly two tensors."""

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shapes = _shape_list(input_shape, "Subtract")
        if len(shapes) != 2:
            raise ValueError(
                "A `Subtract` layer should be called on exactly 2 inputs. "
                f"Received: input_shape={shapes}"
            )
        return super().compute_output_shape(shapes)

    def _merge_function(self, inputs: list) -> Any:
        if len(inputs) != 2:
            raise ValueError(
                f"A `Subtract` layer should be called on exactly 2 inputs. Received: {inputs}"
            )
        return math_ops.subtract(inputs[0], inputs[1])


@export("layers.Multiply")
class Multiply(Merge):
    """The elementwise product of a list of tensors."""

    def _merge_function(self, inputs: list) -> Any:
        return _fold(math_ops.multiply, inputs)


@export("layers.Average")
class Average(Merge):
    """The elementwise mean of a list of tensors."""

    def _merge_function(self, inputs: list) -> Any:
        total = _fold(math_ops.add, inputs)
        return total / core_ops.convert_to_tensor(float(len(inputs)), dtype=total.dtype)


@export("layers.Maximum")
class Maximum(Merge):
    """The elementwise maximum of a list of tensors."""

    def _merge_function(self, inputs: list) -> Any:
        return _fold(math_ops.maximum, inputs)


@export("layers.Minimum")
class Minimum(Merge):
    """The elementwise minimum of a list of tensors."""

    def _merge_function(self, inputs: list) -> Any:
        return _fold(math_ops.minimum, inputs)


@export("layers.Concatenate")
class Concatenate(Layer):
    """Joins a list of tensors along `axis`; their other dimensions must agree (unknown
    dimensions agree with any). Masks are not propagated.

    >>> y = Concatenate()([sl.Input((2, 3)), sl.Input((2, 4))])
    >>> y.shape
    TensorShape([None, 2, 7])
    """

    def __init__(self, axis: int = -1, **kwargs: Any):
        super().__init__(**kwargs)
        self.axis = int(axis)

    def build(self, input_shape: Any) -> None:
        self.compute_output_shape(input_shape)

    def call(self, inputs: Any) -> Any:
        return join_ops.concat(_inputs_list(inputs, "Concatenate"), axis=self.axis)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shapes = _shape_list(input_shape, "Concatenate")
        message = (
            "A `Concatenate` layer requires inputs with matching shapes except for the "
            f"concatenation axis. Received: input_shape={shapes}"
        )
        rank = len(shapes[0])
        if any(len(s) != rank for s in shapes) or not -rank <= self.axis < rank:
            raise ValueError(message + f" (axis={self.axis})")
        axis = self.axis % rank
        output: list = []
        for i in range(rank):
            dims = [s[i] for s in shapes]
            if i == axis:
                output.append(None if None in dims else sum(dims))
                continue
            known = set(dims) - {None}
            if len(known) > 1:
                raise ValueError(message)
            output.append(known.pop() if known else None)
        return tuple(output)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}


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


# Keras's functional forms: `add([a, b])` is `Add()([a, b])`, with the layer's keyword arguments.
@export("layers.add")
def add(inputs: list, **kwargs: Any) -> Any:
    """`Add(**kwargs)(inputs)`."""
    return Add(**kwargs)(inputs)


@export("layers.subtract")
def subtract(inputs: list, **kwargs: Any) -> Any:
    """`Subtract(**kwargs)(inputs)`."""
    return Subtract(**kwargs)(inputs)


@export("layers.multiply")
def multiply(inputs: list, **kwargs: Any) -> Any:
    """`Multiply(**kwargs)(inputs)`."""
    return Multiply(**kwargs)(inputs)


@export("layers.average")
def average(inputs: list, **kwargs: Any) -> Any:
    """`Average(**kwargs)(inputs)`."""
    return Average(**kwargs)(inputs)


@export("layers.maximum")
def maximum(inputs: list, **kwargs: Any) -> Any:
    """`Maximum(**kwargs)(inputs)`."""
    return Maximum(**kwargs)(inputs)


@export("layers.minimum")
def minimum(inputs: list, **kwargs: Any) -> Any:
    """`Minimum(**kwargs)(inputs)`."""
    return Minimum(**kwargs)(inputs)


@export("layers.concatenate")
def concatenate(inputs: list, axis: int = -1, **kwargs: Any) -> Any:
    """`Concatenate(axis, **kwargs)(inputs)`."""
    return Concatenate(axis=axis, **kwargs)(inputs)


@export("layers.dot")
def dot(inputs: list, axes: Any, normalize: bool = False, **kwargs: Any) -> Any:
    """`Dot(axes, normalize, **kwargs)(inputs)`."""
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)
