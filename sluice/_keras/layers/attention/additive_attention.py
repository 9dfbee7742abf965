"""`AdditiveAttention`: Bahdanau-style ("concat") attention."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.attention.attention import Attention
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops
from sluice.framework.ops.math import reduction_ops, unary_ops


@export("layers.AdditiveAttention")
class AdditiveAttention(Attention):
    """Additive attention (Bahdanau style), Keras 3's `AdditiveAttention`: scores
    `sum(scale * tanh(query_i + key_j), -1)`; otherwise as `Attention` (same call arguments).

    Weights: `scale` [dim] (use_scale, glorot_uniform).

    >>> q, v = sl.Input((2, 3)), sl.Input((4, 3))
    >>> layer = AdditiveAttention()
    >>> layer([q, v]).shape, [w.shape.as_list() for w in layer.weights]
    (TensorShape([None, 2, 3]), [[3]])
    """

    def __init__(self, use_scale: bool = True, dropout: float = 0.0, **kwargs: Any):
        kwargs.pop("score_mode", None)
        super().__init__(use_scale=use_scale, dropout=dropout, **kwargs)

    def build(self, input_shape: Any) -> None:
        self._validate(input_shape, None)
        if self.use_scale:
            dim = input_shape[0][-1]
            if dim is None:
                raise ValueError(f"AdditiveAttention {self.name!r}: the query's last dim must "
                                 f"be known; got {input_shape[0]}.")  # fmt: skip
            self.scale = self.add_weight(shape=(dim,), initializer="glorot_uniform",
                                         name="scale")  # fmt: skip

    def _calculate_scores(self, query: Tensor, key: Tensor) -> Tensor:
        pairs = unary_ops.tanh(array_ops.expand_dims(query, -2) + array_ops.expand_dims(key, -3))
        if self.scale is not None:
            pairs = pairs * self.scale
        return reduction_ops.reduce_sum(pairs, -1)

    def get_config(self) -> dict:
        config = super().get_config()
        config.pop("score_mode")
        return config
