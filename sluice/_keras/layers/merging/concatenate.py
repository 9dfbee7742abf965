"""`Concatenate` and `concatenate`: the inputs joined along an axis."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice._keras.layers.merging.base_merge import _inputs_list, _shape_list
from sluice.framework.ops.array import join_ops


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


@export("layers.concatenate")
def concatenate(inputs: list, axis: int = -1, **kwargs: Any) -> Any:
    """`Concatenate(axis, **kwargs)(inputs)`."""
    return Concatenate(axis=axis, **kwargs)(inputs)
