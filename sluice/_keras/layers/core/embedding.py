"""`Embedding`: integer ids -> rows of a trainable matrix, with Keras's `mask_zero`."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import constraints, initializers, regularizers
from sluice._keras.layers.base import Layer
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import fill_ops, gather_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops


@export("layers.Embedding")
class Embedding(Layer):
    """`embeddings[inputs]`: each id becomes a row of the [input_dim, output_dim] matrix.

    With `mask_zero=True`, id 0 is padding: the output carries the mask `inputs != 0`, which
    RNN layers turn into sequence lengths (padding must then come at the end of each row) and
    losses and metrics use as weights. Id 0 is still a row of the matrix, so `input_dim` is the
    vocabulary size + 1.

    Weights: `embeddings` [input_dim, output_dim].

    Args:
      input_dim: the number of ids (the largest id + 1).
      output_dim: the size of each row.
      embeddings_initializer: default "uniform" (U(-0.05, 0.05)).
      embeddings_regularizer: a penalty on the matrix added to the training loss.
      embeddings_constraint: applied to the matrix after each optimizer step.
      weights, lora_rank: accepted for Keras signatures; must be None.
      mask_zero: whether id 0 is padding (see above).

    >>> x = Embedding(1000, 64, mask_zero=True)(sl.Input((None,), dtype="int32"))
    """

    def __init__(
        self,
        input_dim: int,
        output_dim: int,
        embeddings_initializer: Any = "uniform",
        embeddings_regularizer: Any = None,
        embeddings_constraint: Any = None,
        mask_zero: bool = False,
        weights: Any = None,
        lora_rank: int | None = None,
        **kwargs: Any,
    ):
        input_length = kwargs.pop("input_length", None)  # Keras 2: the sequence length
        if input_length is not None and "input_shape" not in kwargs:
            kwargs["input_shape"] = (input_length,)
        super().__init__(**kwargs)
        if weights is not None or lora_rank is not None:
            raise NotImplementedError("Embedding: weights and lora_rank are not supported.")
        self.input_dim = int(input_dim)
        self.output_dim = int(output_dim)
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer)
        self.embeddings_constraint = constraints.get(embeddings_constraint)
        self.mask_zero = bool(mask_zero)
        self.supports_masking = self.mask_zero

    def build(self, input_shape: Any = None) -> None:
        self.embeddings = self.add_weight(
            shape=(self.input_dim, self.output_dim),
            initializer=self.embeddings_initializer,
            regularizer=self.embeddings_regularizer,
            constraint=self.embeddings_constraint,
            name="embeddings",
        )

    def call(self, inputs: Any) -> Any:
        ids = inputs if dtypes.is_integer(inputs.dtype) else fill_ops.cast(inputs, dtypes.int32)
        return gather_ops.gather(self.embeddings, ids)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if not self.mask_zero:
            return None
        return math_ops.not_equal(inputs, core_ops.convert_to_tensor(0, dtype=inputs.dtype))

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape) + (self.output_dim,)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "input_dim": self.input_dim,
            "output_dim": self.output_dim,
            "embeddings_initializer": initializers.serialize(self.embeddings_initializer),
            "embeddings_regularizer": regularizers.serialize(self.embeddings_regularizer),
            "embeddings_constraint": constraints.serialize(self.embeddings_constraint),
            "mask_zero": self.mask_zero,
        }
