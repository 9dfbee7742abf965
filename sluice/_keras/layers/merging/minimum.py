"""`Minimum` and `minimum`: the elementwise minimum of the inputs."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.merging.base_merge import Merge, _fold
from sluice.framework.ops.math import math_ops


@export("layers.Minimum")
class Minimum(Merge):
    """The elementwise minimum of a list of tensors."""

    def _merge_function(self, inputs: list) -> Any:
        return _fold(math_ops.minimum, inputs)


@export("layers.minimum")
def minimum(inputs: list, **kwargs: Any) -> Any:
    """`Minimum(**kwargs)(inputs)`."""
    return Minimum(**kwargs)(inputs)
