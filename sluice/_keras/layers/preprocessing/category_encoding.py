"""`CategoryEncoding`: integer features to one-hot, multi-hot or count vectors (Keras 3's
`keras/src/layers/preprocessing/category_encoding.py`)."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice._keras.layers.preprocessing import encoding
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops


@export("layers.CategoryEncoding")
class CategoryEncoding(Layer):
    """Encodes integer indices in [0, num_tokens) as vectors of `num_tokens` (see `encoding`
    for the axes): "one_hot" per element, "multi_hot" (1 for each index present in a sample)
    or "count" (how often, weighted by `count_weights` when given) per sample.

    Args:
      num_tokens: the number of categories.
      output_mode: "one_hot", "multi_hot" (default; "binary" is its old name) or "count".
      sparse: must be False (sluice has no sparse outputs).

    >>> layer = sl.layers.CategoryEncoding(num_tokens=4, output_mode="multi_hot")
    >>> np.asarray(layer(np.array([[0, 1], [0, 0], [1, 2], [3, 1]]))).tolist()
    [[1.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]]
    """

    def __init__(
        self,
        num_tokens: int | None = None,
        output_mode: str = "multi_hot",
        sparse: bool = False,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        if output_mode == "binary":
            output_mode = "multi_hot"
        if output_mode not in ("count", "one_hot", "multi_hot"):
            raise ValueError(f"Unknown arg for output_mode: {output_mode}")
        if num_tokens is None:
            raise ValueError(
                "num_tokens must be set to use this layer. If the number of tokens is not "
                "known beforehand, use the IntegerLookup layer instead."
            )
        if num_tokens < 1:
            raise ValueError(f"`num_tokens` must be >= 1. Received: num_tokens={num_tokens}.")
        if sparse:
            raise ValueError(
                "CategoryEncoding: `sparse=True` is not supported (no sparse tensors)."
            )
        self.num_tokens = int(num_tokens)
        self.output_mode = output_mode
        self.sparse = False

    def call(self, inputs: Any, count_weights: Any = None) -> Any:
        if count_weights is not None and self.output_mode != "count":
            raise ValueError(
                "`count_weights` is not used when `output_mode` is not `'count'`. Received "
                f"`count_weights={count_weights}`."
            )
        if count_weights is not None:
            count_weights = fill_ops.cast(core_ops.convert_to_tensor(count_weights), self._dtype)
        return encoding.encode_categorical_inputs(
            inputs, self.output_mode, self.num_tokens, self._dtype, count_weights
        )

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return encoding.encoded_shape(input_shape, self.output_mode, self.num_tokens)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "num_tokens": self.num_tokens,
            "output_mode": self.output_mode,
            "sparse": self.sparse,
        }
