"""Merging layers, called on a list of tensors: Add, Subtract, Multiply, Average, Maximum,
Minimum, Concatenate, Dot (Keras 3 arguments, shapes and arithmetic), one module each; here
the base of the elementwise ones and the checks they all share.
"""

from __future__ import annotations

from typing import Any

from sluice._keras.layers.base import Layer
from sluice.framework.ops.math import math_ops


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
