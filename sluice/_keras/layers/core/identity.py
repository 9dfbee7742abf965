"""`Identity`: a layer that returns its inputs."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.base import Layer


@export("layers.Identity")
class Identity(Layer):
    """Returns its `inputs` unchanged (a placeholder where no operation is wanted; Keras 3's
    `Identity`). Masks pass through.

    >>> Identity()(sl.Input((3,))).shape
    TensorShape([None, 3])
    """

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs: Any) -> Any:
        return inputs

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape
