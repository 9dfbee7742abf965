"""`Subtract` and `subtract`: the first input minus the second."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.merging.base_merge import Merge, _shape_list
from sluice.framework.ops.math import math_ops


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


@export("layers.subtract")
def subtract(inputs: list, **kwargs: Any) -> Any:
    """`Subtract(**kwargs)(inputs)`."""
    return Subtract(**kwargs)(inputs)
