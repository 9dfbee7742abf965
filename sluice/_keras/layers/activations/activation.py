"""`Activation`: an activation function as a layer."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import activations
from sluice._keras.layers.base import Layer


@export("layers.Activation")
class Activation(Layer):
    """Applies `activation` (a name or a function) elementwise.

    >>> logits = sl.constant([[1.0, 1.0], [0.0, np.log(3.0)]])
    >>> y = Activation("softmax")(logits)
    >>> np.round(sl.Session().run(y), 6)
    array([[0.5 , 0.5 ],
           [0.25, 0.75]], dtype=float32)
    """

    def __init__(self, activation: Any, **kwargs: Any):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)
        self.supports_masking = True

    def call(self, inputs: Any) -> Any:
        return self.activation(inputs)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "activation": activations.serialize(self.activation)}
