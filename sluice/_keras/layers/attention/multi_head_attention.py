"""`MultiHeadAttention`, Keras 3's layer ("Attention is all you need"), for inputs of shape
[batch, steps, dim] (attention over the steps axis).

With N heads of size H (key_dim) and Hv (value_dim), for query [B, T, dim], value [B, S, dv]
and key [B, S, dk] (the value when not given):

    q = query @ query/kernel + query/bias        # [B, T, N, H]; kernel [dim, N, H]
    k = key @ key/kernel + key/bias              # [B, S, N, H]
    v = value @ value/kernel + value/bias        # [B, S, N, Hv]
    scores[b, n, t, s] = sum_h q[b, t, n, h] * k[b, s, n, h] / sqrt(H)
    weights = softmax over s, with masked (b, t, s) at -1e9 and their weights set to 0
    o[b, t, n, :] = sum_s dropout(weights)[b, n, t, s] * v[b, s, n, :]
    output = sum over n, Hv of o * attention_output/kernel + attention_output/bias
                                                 # kernel [N, Hv, *output_shape]

The mask of (t, s) is the logical and of `attention_mask` [B, T, S], the query's Keras mask
[B, T, 1], the value's (and a given key's) [B, 1, S], and the causal mask [1, T, S] with
use_causal_mask. The output keeps the query's Keras mask.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras import constraints, initializers, regularizers
from sluice._keras.layers.activations.softmax import Softmax
from sluice._keras.layers.attention.attention import causal_mask, combine_masks
from sluice._keras.layers.base import Layer
from sluice._keras.layers.regularization.dropout import Dropout
from sluice._keras.layers.tracking import get_mask, shape_tuple
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops, fill_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import matmul_ops
from sluice.framework.ops.nn import nn_ops


def _reshape_tail(x: Tensor, tail: int, new_tail: tuple) -> Tensor:
    """`x` with its last `tail` axes reshaped to `new_tail` (the leading axes kept, known or
    not)."""
    static = shape_tuple(x)
    lead = static[: len(static) - tail]
    if None not in lead:
        return array_ops.reshape(x, list(lead) + list(new_tail))
    lead_dims = fill_ops.shape(x)[: len(lead)]
    new = core_ops.constant(np.array(new_tail, np.int32))
    return array_ops.reshape(x, join_ops.concat([lead_dims, new], 0))


class _Projection(Layer):
    """`x` [..., *in] -> [..., *out]: a contraction of the last len(in) axes with `kernel`
    [*in, *out], plus `bias` [*out] (Keras's EinsumDense in the shapes MultiHeadAttention uses)."""

    def __init__(self, contracted: int, output_shape: tuple, use_bias: bool, kernel_initializer:
                 Any, bias_initializer: Any, kernel_regularizer: Any, bias_regularizer: Any,
                 kernel_constraint: Any = None, bias_constraint: Any = None,
                 **kwargs: Any):  # fmt: skip
        super().__init__(**kwargs)
        self.contracted = contracted
        self.out_shape = tuple(int(d) for d in output_shape)
        self.use_bias = use_bias
        self.initializers = (kernel_initializer, bias_initializer)
        self.regularizers = (kernel_regularizer, bias_regularizer)
        self.constraints = (kernel_constraint, bias_constraint)
        self.bias = None

    def build(self, input_shape: Any) -> None:
        in_shape = tuple(input_shape[len(input_shape) - self.contracted :])
        if None in in_shape:
            raise ValueError(
                f"MultiHeadAttention projection {self.path!r}: the last {self.contracted} input "
                f"dims must be known; got input shape {input_shape}."
            )
        self.in_shape = in_shape
        self.kernel = self.add_weight(shape=in_shape + self.out_shape, name="kernel",
                                      initializer=self.initializers[0],
                                      regularizer=self.regularizers[0],
                                      constraint=self.constraints[0])  # fmt: skip
        if self.use_bias:
            self.bias = self.add_weight(shape=self.out_shape, name="bias",
                                        initializer=self.initializers[1],
                                        regularizer=self.regularizers[1],
                                        constraint=self.constraints[1])  # fmt: skip

    def call(self, inputs: Any) -> Any:
        n_in, n_out = math.prod(self.in_shape), math.prod(self.out_shape)
        x = _reshape_tail(inputs, self.contracted, (n_in,)) if self.contracted > 1 else inputs
        y = matmul_ops.matmul(x, array_ops.reshape(self.kernel, [n_in, n_out]))
        if self.bias is not None:
            y = nn_ops.bias_add(y, array_ops.reshape(self.bias, [n_out]))
        return _reshape_tail(y, 1, self.out_shape) if len(self.out_shape) > 1 else y


@export("layers.MultiHeadAttention")
class MultiHeadAttention(Layer):
    """Multi-head attention, Keras 3's `MultiHeadAttention` (see the module docstring).

    Weights (Keras 3's names and shapes): `query/kernel` [dim, N, H], `query/bias` [N, H],
    `key/kernel` [dk, N, H], `key/bias` [N, H], `value/kernel` [dv, N, Hv], `value/bias`
    [N, Hv], `attention_output/kernel` [N, Hv, *output_shape], `attention_output/bias`
    [*output_shape]; no biases with use_bias=False.

    Args:
      num_heads: N, the number of heads.
      key_dim: H, the size of each head for query and key.
      value_dim: Hv, the size of each head for value (default key_dim).
      dropout: the fraction of the attention weights dropped in training.
      use_bias: whether the projections have biases.
      output_shape: the output's shape after the batch and steps (an int or tuple); default the
        query's last dim.
      attention_axes: None (or the steps axis, 1 or -2): attention over the steps axis. Other
        axes raise NotImplementedError.
      kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer: for the four
        projections.
      seed: the op seed of the dropout.
      kernel_constraint, bias_constraint: applied to the four projections' weights after each
        optimizer step.
      flash_attention: accepted for Keras signatures; flash attention is not used (the result
        is the same).
      **kwargs: base Layer arguments (activity_regularizer, name, dtype, ...).

    Call arguments:
      query [B, T, dim], value [B, S, dv], key [B, S, dk] (default value); query_mask [B, T],
      value_mask and key_mask [B, S] (default: the tensors' own masks); attention_mask bool
      [B, T, S] (or broadcastable); return_attention_scores: also return the weights
      [B, N, T, S]; training; use_causal_mask.

    >>> x = sl.Input((5, 8))
    >>> layer = MultiHeadAttention(num_heads=2, key_dim=4)
    >>> layer(x, x).shape, layer.weights[0].shape
    (TensorShape([None, 5, 8]), TensorShape([8, 2, 4]))
    """

    def __init__(
        self,
        num_heads: int,
        key_dim: int,
        value_dim: int | None = None,
        dropout: float = 0.0,
        use_bias: bool = True,
        output_shape: Any = None,
        attention_axes: Any = None,
        flash_attention: bool | None = None,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        seed: int | None = None,
        **kwargs: Any,
    ):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        for arg, value in (("num_heads", num_heads), ("key_dim", key_dim)):
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(
                    f"MultiHeadAttention: {arg} must be a positive int, got {value!r}."
                )
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"MultiHeadAttention: dropout must be in [0, 1), got {dropout}.")
        self.num_heads = int(num_heads)
        self.key_dim = int(key_dim)
        self.value_dim = int(value_dim) if value_dim else self.key_dim
        self.dropout = float(dropout)
        self.use_bias = bool(use_bias)
        if isinstance(output_shape, (int, np.integer)):
            output_shape = (int(output_shape),)
        self._output_shape = tuple(int(d) for d in output_shape) if output_shape else None
        if isinstance(attention_axes, int):
            attention_axes = (attention_axes,)
        if attention_axes is not None and tuple(attention_axes) not in ((1,), (-2,)):
            raise NotImplementedError(
                f"MultiHeadAttention: attention_axes={attention_axes!r} is not supported; only "
                "attention over the steps axis of [batch, steps, dim] inputs (None, 1 or -2)."
            )
        self.attention_axes = tuple(attention_axes) if attention_axes is not None else None
        self.flash_attention = flash_attention
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.seed = seed
        self.supports_masking = True

    def _projection(self, name: str, contracted: int, output_shape: tuple) -> _Projection:
        # a clone per projection, as Keras does: an unseeded initializer gives the same values
        # on every call, and the query and key kernels must differ
        return _Projection(contracted, output_shape, self.use_bias,
                           initializers.clone(self.kernel_initializer),
                           initializers.clone(self.bias_initializer), self.kernel_regularizer,
                           self.bias_regularizer, self.kernel_constraint, self.bias_constraint,
                           name=name, dtype=self.dtype)  # fmt: skip

    def build(self, query_shape: Any, value_shape: Any = None, key_shape: Any = None) -> None:
        value_shape = query_shape if value_shape is None else value_shape
        key_shape = value_shape if key_shape is None else key_shape
        self._check_shapes(query_shape, value_shape, key_shape)
        heads = self.num_heads
        # public names: Keras saves the projections under its properties `query_dense`, ...
        self.query_dense = self._projection("query", 1, (heads, self.key_dim))
        self.key_dense = self._projection("key", 1, (heads, self.key_dim))
        self.value_dense = self._projection("value", 1, (heads, self.value_dim))
        self.output_dense = self._projection(
            "attention_output", 2, self._output_shape or (query_shape[-1],)
        )
        # no weights, but Keras saves them (empty) in its weights file: keep its layout
        self._softmax = Softmax(axis=-1, name="softmax", dtype=self.dtype)
        self._dropout_layer = Dropout(
            self.dropout, seed=self.seed, name="dropout", dtype=self.dtype
        )
        self._build_sublayer(self.query_dense, tuple(query_shape))
        self._build_sublayer(self.key_dense, tuple(key_shape))
        self._build_sublayer(self.value_dense, tuple(value_shape))
        self._build_sublayer(self.output_dense, (None, None, heads, self.value_dim))

    def _build_for_call(self, input_shape: Any) -> None:
        pass  # the first call builds, once it knows the value's and key's shapes too

    def _check_shapes(self, query_shape: Any, value_shape: Any, key_shape: Any) -> None:
        name = f"MultiHeadAttention {self.name!r}"
        shapes = {"query": query_shape, "value": value_shape, "key": key_shape}
        for what, shape in shapes.items():
            if shape is None or len(shape) != 3 or shape[-1] is None:
                raise NotImplementedError(
                    f"{name}: {what} must have shape [batch, steps, dim] with dim known (other "
                    f"ranks need attention_axes, which is not supported); got {shape}."
                )
        if None not in (value_shape[1], key_shape[1]) and value_shape[1] != key_shape[1]:
            raise ValueError(
                f"{name}: all dimensions of `value` and `key`, except the last one, must be "
                f"equal; got value shape {value_shape} and key shape {key_shape}."
            )

    def call(self, query: Any, value: Any, key: Any = None, query_mask: Any = None,
             value_mask: Any = None, key_mask: Any = None, attention_mask: Any = None,
             return_attention_scores: bool = False, training: bool = False,
             use_causal_mask: bool = False) -> Any:  # fmt: skip
        # a mask given explicitly replaces the tensor's own (Keras fills these from them)
        query_mask = get_mask(query) if query_mask is None else query_mask
        value_mask = get_mask(value) if value_mask is None else value_mask
        if key_mask is None and key is not None and key is not value:
            key_mask = get_mask(key)
        key = value if key is None else key
        shapes = [shape_tuple(t) for t in (query, value, key)]
        self._check_shapes(*shapes)
        if not hasattr(self, "query_dense"):
            self.build(*shapes)
        mask = combine_masks(
            array_ops.expand_dims(query_mask, -1) if query_mask is not None else None,
            array_ops.expand_dims(value_mask, -2) if value_mask is not None else None,
            array_ops.expand_dims(key_mask, -2) if key_mask is not None else None,
            causal_mask(query, value) if use_causal_mask else None,
            attention_mask,
        )  # fmt: skip
        q = array_ops.transpose(self.query_dense(query), [0, 2, 1, 3])  # [B, N, T, H]
        k = array_ops.transpose(self.key_dense(key), [0, 2, 1, 3])  # [B, N, S, H]
        v = array_ops.transpose(self.value_dense(value), [0, 2, 1, 3])  # [B, N, S, Hv]
        q = q * core_ops.constant(1.0 / math.sqrt(self.key_dim), dtype=q.dtype)
        scores = matmul_ops.matmul(q, k, transpose_b=True)  # [B, N, T, S]
        if mask is not None:
            while mask.shape.rank is not None and mask.shape.rank < 4:
                mask = array_ops.expand_dims(mask, -3)  # a heads axis (and a batch axis)
        weights = self._softmax(scores, mask=mask)
        dropped = self._dropout_layer(weights, training=training)
        combined = array_ops.transpose(matmul_ops.matmul(dropped, v), [0, 2, 1, 3])
        output = self.output_dense(combined)  # [B, T, *output_shape]
        return [output, weights] if return_attention_scores else output

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return get_mask(inputs)  # the query's mask

    def compute_output_shape(self, query_shape: Any, value_shape: Any = None,
                             key_shape: Any = None) -> tuple:  # fmt: skip
        if self._output_shape:
            return tuple(query_shape[:-1]) + self._output_shape
        return tuple(query_shape)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "num_heads": self.num_heads,
            "key_dim": self.key_dim,
            "value_dim": self.value_dim,
            "dropout": self.dropout,
            "use_bias": self.use_bias,
            "output_shape": list(self._output_shape) if self._output_shape else None,
            "attention_axes": list(self.attention_axes) if self.attention_axes else None,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
            "bias_regularizer": regularizers.serialize(self.bias_regularizer),
            "kernel_constraint": constraints.serialize(self.kernel_constraint),
            "bias_constraint": constraints.serialize(self.bias_constraint),
            "seed": self.seed,
        }
