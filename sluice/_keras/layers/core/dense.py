"""`Dense`: `activation(inputs @ kernel + bias)`."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import activations, constraints, initializers, regularizers
from sluice._keras.layers.base import Layer
from sluice.framework.ops.math import matmul_ops
from sluice.framework.ops.nn import nn_ops


@export("layers.Dense")
class Dense(Layer):
    """`activation(inputs @ kernel + bias)`, over the last axis of inputs of any rank >= 2.

    Weights: `kernel` [input_dim, units], `bias` [units].

    Args:
      units: the size of the last axis of the output.
      activation: a name ("relu") or function; None is linear.
      use_bias: whether to add `bias`.
      kernel_initializer, bias_initializer: initializers (names or objects).
      kernel_regularizer, bias_regularizer: add a penalty on the weight to the training loss.
      activity_regularizer: adds a penalty on the outputs to the training loss.
      kernel_constraint, bias_constraint: applied to the weight after each optimizer step.
      lora_rank: accepted for Keras signatures; must be None.
      **kwargs: base Layer arguments (name, dtype, trainable, input_shape).

    >>> y = Dense(4, activation="relu")(sl.Input((8,)))
    >>> y.shape
    TensorShape([None, 4])
    """

    def __init__(
        self,
        units: int,
        activation: Any = None,
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        lora_rank: int | None = None,
        **kwargs: Any,
    ):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if lora_rank is not None:
            raise NotImplementedError("lora_rank is not supported.")
        if int(units) <= 0:
            raise ValueError(
                f"Received an invalid value for `units`, expected a positive integer, got {units}."
            )
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.supports_masking = True

    def build(self, input_shape: tuple) -> None:
        input_dim = input_shape[-1] if input_shape else None
        if input_dim is None:
            raise ValueError(
                f"Dense {self.name!r}: the last dimension of the inputs must be known, got "
                f"input shape {input_shape}."
            )
        self.kernel = self.add_weight(
            shape=(input_dim, self.units),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
            name="kernel",
        )
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                shape=(self.units,),
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
                name="bias",
            )

    def call(self, inputs: Any) -> Any:
        x = matmul_ops.matmul(inputs, self.kernel)
        if self.bias is not None:
            x = nn_ops.bias_add(x, self.bias)
        return self.activation(x)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape[:-1]) + (self.units,)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "units": self.units,
            "activation": activations.serialize(self.activation),
            "use_bias": self.use_bias,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
            "bias_regularizer": regularizers.serialize(self.bias_regularizer),
            "kernel_constraint": constraints.serialize(self.kernel_constraint),
            "bias_constraint": constraints.serialize(self.bias_constraint),
        }
