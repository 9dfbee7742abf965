"""`PReLU`: a leaky ReLU whose slopes are weights."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import constraints, initializers, regularizers
from sluice._keras.layers.base import Layer
from sluice.framework.ops.nn import nn_ops


@export("layers.PReLU")
class PReLU(Layer):
    """A leaky ReLU whose slopes are learned: `relu(x) - alpha * relu(-x)`.

    Weight: `alpha`, of the input shape without the batch, with size 1 along `shared_axes`
    (axes counted with the batch as 0: `shared_axes=[1, 2]` shares over height and width).

    Args:
      alpha_initializer, alpha_regularizer: for `alpha`.
      alpha_constraint: applied to `alpha` after each optimizer step.
      shared_axes: an axis or a list of axes along which one slope is shared.
    """

    def __init__(
        self,
        alpha_initializer: Any = "Zeros",
        alpha_regularizer: Any = None,
        alpha_constraint: Any = None,
        shared_axes: Any = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.alpha_initializer = initializers.get(alpha_initializer)
        self.alpha_regularizer = regularizers.get(alpha_regularizer)
        self.alpha_constraint = constraints.get(alpha_constraint)
        if shared_axes is None:
            self.shared_axes = None
        elif isinstance(shared_axes, (list, tuple)):
            self.shared_axes = [int(a) for a in shared_axes]
        else:
            self.shared_axes = [int(shared_axes)]
        self.supports_masking = True

    def build(self, input_shape: tuple) -> None:
        param_shape = list(input_shape[1:])
        for axis in self.shared_axes or ():
            if not 1 <= axis < len(input_shape):
                raise ValueError(
                    f"PReLU {self.name!r}: shared axis {axis} is not an axis of the inputs "
                    f"(without the batch) of shape {input_shape}."
                )
            param_shape[axis - 1] = 1
        if None in param_shape:
            raise ValueError(
                f"PReLU {self.name!r}: the input shape {input_shape} has unknown dimensions "
                "that are not in shared_axes; alpha needs a known shape."
            )
        self.alpha = self.add_weight(
            shape=param_shape,
            initializer=self.alpha_initializer,
            regularizer=self.alpha_regularizer,
            constraint=self.alpha_constraint,
            name="alpha",
        )

    def call(self, inputs: Any) -> Any:
        return nn_ops.relu(inputs) - self.alpha.value() * nn_ops.relu(-inputs)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "alpha_initializer": initializers.serialize(self.alpha_initializer),
            "alpha_regularizer": regularizers.serialize(self.alpha_regularizer),
            "alpha_constraint": constraints.serialize(self.alpha_constraint),
            "shared_axes": self.shared_axes,
        }
