"""`Add` and `add`: the sum of the inputs.

>>> a, b = sl.Input((3,)), sl.Input((3,))
>>> model = sl.Model(inputs=[a, b], outputs=Add()([a, b]))
>>> model.predict([np.ones((1, 3)), np.ones((1, 3))], verbose=0)
array([[2., 2., 2.]], dtype=float32)
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.merging.base_merge import Merge, _fold
from sluice.framework.ops.math import math_ops


@export("layers.Add")
class Add(Merge):
    """The elementwise sum of a list of tensors of one shape."""

    def _merge_function(self, inputs: list) -> Any:
        return _fold(math_ops.add, inputs)


# Keras's functional forms: `add([a, b])` is `Add()([a, b])`, with the layer's keyword arguments.
@export("layers.add")
def add(inputs: list, **kwargs: Any) -> Any:
    """`Add(**kwargs)(inputs)`."""
    return Add(**kwargs)(inputs)
