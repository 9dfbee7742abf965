"""`Multiply` and `multiply`: the product of the inputs."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.merging.base_merge import Merge, _fold
from sluice.framework.ops.math import math_ops


@export("layers.Multiply")
class Multiply(Merge):
    """The elementwise product of a list of tensors."""

    def _merge_function(self, inputs: list) -> Any:
        return _fold(math_ops.multiply, inputs)


@export("layers.multiply")
def multiply(inputs: list, **kwargs: Any) -> Any:
    """`Multiply(**kwargs)(inputs)`."""
    return Multiply(**kwargs)(inputs)
