"""Attention layers with Keras 3's arguments and numerics: `Attention` (dot-product, Luong
style) and, in `additive_attention`, `AdditiveAttention` (Bahdanau style). `MultiHeadAttention`
is in `multi_head_attention`; the masks both use are built here.

For a query [batch, Tq, dim], a value [batch, Tv, dim] and a key (the value when not given):

    scores  = score(query, key)                             # [batch, Tq, Tv]
    scores -= 1e9 * (not value_mask[:, None, :] and causal)   # masked keys get ~0 weight
    weights = softmax(scores, axis=-1)                       # then dropout, in training
    output  = (weights @ value) * query_mask[:, :, None]     # [batch, Tq, dim]

score: "dot" is `query @ key^T` (times the `scale` weight with use_scale; no 1/sqrt(dim), as in
Keras); "concat" is `concat_score_weight * sum(tanh(scale * (query_i + key_j)), -1)`; additive
is `sum(scale * tanh(query_i + key_j), -1)` with `scale` a weight of shape [dim].
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import random as keras_random
from sluice._keras.layers.base import Layer
from sluice._keras.layers.tracking import shape_tuple
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, matmul_ops, reduction_ops, unary_ops
from sluice.framework.ops.nn import nn_ops


def causal_mask(query: Tensor, value: Tensor) -> Tensor:
    """A bool [1, Tq, Tv] mask, True where key position j <= query position i (i, j along axis
    1 of `query` and `value`): no position attends to a later one."""
    rows = fill_ops.range(fill_ops.shape(query)[1])
    cols = fill_ops.range(fill_ops.shape(value)[1])
    below = math_ops.greater_equal(array_ops.expand_dims(rows, 1), array_ops.expand_dims(cols, 0))
    return array_ops.expand_dims(below, 0)


def combine_masks(*masks: Tensor | None) -> Tensor | None:
    """The logical and of the masks given (bool, broadcast), None if all are None."""
    found = [fill_ops.cast(m, "bool") for m in masks if m is not None]
    combined = found[0] if found else None
    for m in found[1:]:
        combined = math_ops.logical_and(combined, m)
    return combined


def dropout_in_training(x: Tensor, rate: float, training: bool, seed_generator: Any) -> Tensor:
    """`x` with dropout at `rate` when training (new choices every step, drawn from
    `seed_generator`), else `x`."""
    if training and rate > 0:
        return keras_random.dropout(x, rate, seed=seed_generator)
    return x


def _scalar(like: Tensor, value: float) -> Tensor:
    return core_ops.constant(value, dtype=like.dtype)


@export("layers.Attention")
class Attention(Layer):
    """Dot-product attention (Luong style), Keras 3's `Attention`; see the module docstring.

    Weights: `scale` [] (use_scale, initialised to 1); `concat_score_weight` [] (score_mode
    "concat", initialised to 1).

    Args:
      use_scale: learn a scalar that scales the scores.
      score_mode: "dot" or "concat".
      dropout: the fraction of the attention weights dropped in training.
      seed: the seed of the layer's SeedGenerator, which the dropout draws from.
      **kwargs: base Layer arguments.

    Call arguments:
      inputs: [query, value] or [query, value, key], of shapes [batch, Tq, dim], [batch, Tv,
        dim], [batch, Tv, dim].
      mask: [query_mask, value_mask] (bool [batch, Tq], [batch, Tv]; by default the inputs'
        Keras masks): the output is 0 where the query is masked; masked values get no weight.
      training: dropout applies only in training.
      return_attention_scores: also return the weights [batch, Tq, Tv] (after softmax).
      use_causal_mask: position i attends only to positions j <= i (decoder self-attention).

    >>> q, v = sl.Input((2, 3)), sl.Input((4, 3))
    >>> Attention()([q, v]).shape
    TensorShape([None, 2, 3])
    """

    def __init__(self, use_scale: bool = False, score_mode: str = "dot", dropout: float = 0.0,
                 seed: int | None = None, **kwargs: Any):  # fmt: skip
        super().__init__(**kwargs)
        if score_mode not in ("dot", "concat"):
            raise ValueError(
                f"{type(self).__name__}: score_mode must be one of {{'dot', 'concat'}}, got "
                f"{score_mode!r}."
            )
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"{type(self).__name__}: dropout must be in [0, 1), got {dropout}.")
        self.use_scale = bool(use_scale)
        self.score_mode = score_mode
        self.dropout = float(dropout)
        self.seed = seed
        if self.dropout > 0:
            self.seed_generator = keras_random.SeedGenerator(seed)
        self.supports_masking = True
        self.scale = None
        self.concat_score_weight = None

    def build(self, input_shape: Any) -> None:
        self._validate(input_shape, None)
        if self.use_scale:
            self.scale = self.add_weight(shape=(), initializer="ones", name="scale")
        if self.score_mode == "concat":
            self.concat_score_weight = self.add_weight(
                shape=(), initializer="ones", name="concat_score_weight"
            )

    def _calculate_scores(self, query: Tensor, key: Tensor) -> Tensor:
        if self.score_mode == "dot":
            scores = matmul_ops.matmul(query, key, transpose_b=True)
            return scores * self.scale if self.scale is not None else scores
        pairs = array_ops.expand_dims(query, -2) + array_ops.expand_dims(key, -3)
        if self.scale is not None:
            pairs = self.scale * pairs
        return self.concat_score_weight * reduction_ops.reduce_sum(unary_ops.tanh(pairs), -1)

    def call(
        self,
        inputs: Any,
        mask: Any = None,
        training: bool = False,
        return_attention_scores: bool = False,
        use_causal_mask: bool = False,
    ) -> Any:
        self._validate([shape_tuple(t) for t in inputs], mask)
        query, value = inputs[0], inputs[1]
        key = inputs[2] if len(inputs) > 2 else value
        query_mask = mask[0] if mask else None
        value_mask = mask[1] if mask else None
        scores = self._calculate_scores(query, key)
        scores_mask = combine_masks(
            array_ops.expand_dims(value_mask, -2) if value_mask is not None else None,
            causal_mask(query, value) if use_causal_mask else None,
        )
        if scores_mask is not None:
            blocked = fill_ops.cast(math_ops.logical_not(scores_mask), scores.dtype)
            scores = scores - _scalar(scores, 1e9) * blocked
        weights = nn_ops.softmax(scores, axis=-1)
        dropped = dropout_in_training(
            weights, self.dropout, training, getattr(self, "seed_generator", None)
        )
        result = matmul_ops.matmul(dropped, value)
        if query_mask is not None:
            result = result * fill_ops.cast(array_ops.expand_dims(query_mask, -1), result.dtype)
        return [result, weights] if return_attention_scores else result

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return mask[0] if mask else None

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return tuple(input_shape[0][:-1]) + (input_shape[1][-1],)

    def _validate(self, shapes: Any, mask: Any) -> None:
        name = f"{type(self).__name__} {self.name!r}"
        if not isinstance(shapes, (list, tuple)) or not 2 <= len(shapes) <= 3:
            raise ValueError(
                f"{name} must be called on a list [query, value] or [query, value, key]; got "
                f"{shapes!r}."
            )
        if any(s is None or len(s) != 3 for s in shapes):
            raise ValueError(
                f"{name} takes inputs of rank 3 ([batch, steps, dim]); got shapes {list(shapes)}."
            )
        q, v = shapes[0], shapes[1]
        k = shapes[2] if len(shapes) > 2 else v
        if None not in (k[1], v[1]) and k[1] != v[1]:
            raise ValueError(f"{name}: key and value need the same steps; got {k} and {v}.")
        if None not in (q[-1], k[-1]) and q[-1] != k[-1]:
            raise ValueError(f"{name}: query and key need the same last dim; got {q} and {k}.")
        if mask is not None and (not isinstance(mask, (list, tuple)) or not 2 <= len(mask) <= 3):
            raise ValueError(f"{name}: mask must be a list [query_mask, value_mask]; got {mask!r}.")

    def get_config(self) -> dict:
        config = {**super().get_config(), "use_scale": self.use_scale,
                  "score_mode": self.score_mode, "dropout": self.dropout}  # fmt: skip
        if self.seed is not None:
            config["seed"] = self.seed
        return config
