"""`Average` and `average`: the mean of the inputs."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.merging.base_merge import Merge, _fold
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops


@export("layers.Average")
class Average(Merge):
    """The elementwise mean of a list of tensors."""

    def _merge_function(self, inputs: list) -> Any:
        total = _fold(math_ops.add, inputs)
        return total / core_ops.convert_to_tensor(float(len(inputs)), dtype=total.dtype)


@export("layers.average")
def average(inputs: list, **kwargs: Any) -> Any:
    """`Average(**kwargs)(inputs)`."""
    return Average(**kwargs)(inputs)
