"""`Maximum` and `maximum`: the elementwise maximum of the inputs."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.merging.base_merge import Merge, _fold
from sluice.framework.ops.math import math_ops


@export("layers.Maximum")
class Maximum(Merge):
    """The elementwise maximum of a list of tensors."""

    def _merge_function(self, inputs: list) -> Any:
        return _fold(math_ops.maximum, inputs)


@export("layers.maximum")
def maximum(inputs: list, **kwargs: Any) -> Any:
    """`Maximum(**kwargs)(inputs)`."""
    return Maximum(**kwargs)(inputs)
