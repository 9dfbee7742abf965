"""`keras.ops` functions on sequences, classes and channels (Keras's `ops/nn.py`):
`dot_product_attention`, `ctc_loss`, `ctc_decode` (greedy), `multi_hot`, `depth_to_space`,
`space_to_depth`, `polar`; graph code that `eager.keras_op` also runs at once on values.

>>> sl.ops.multi_hot(np.array([0, 4]), num_classes=5)
Array([1., 0., 0., 0., 1.], dtype=float32)
>>> paths, scores = sl.ops.ctc_decode(np.log(np.array([[[0.1, 0.9], [0.8, 0.2], [0.1, 0.9]]])), [3])
>>> paths
Array([[[ 1,  1, -1]]], dtype=int32)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sluice._keras.ops.arrays import take_along_axis
from sluice._keras.ops.eager import (
    floating,
    keras_op,
    known_rank,
    promoted,
    standard_dtype,
    tensor,
)
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import (
    array_ops,
    fill_ops,
    gather_ops,
    join_ops,
    space_depth_ops,
)
from sluice.framework.ops.math import einsum_ops, math_ops, reduction_ops, sort_ops, unary_ops
from sluice.framework.ops.nn import ctc_ops, nn_ops


def _c(x: Any, value: float) -> Any:
    return tensor(value, x.dtype)


@keras_op("dot_product_attention", "nn.dot_product_attention")
def dot_product_attention(
    query: Any,
    key: Any,
    value: Any,
    bias: Any = None,
    mask: Any = None,
    scale: float | None = None,
    is_causal: bool = False,
    flash_attention: bool | None = None,
    attn_logits_soft_cap: float | None = None,
) -> Any:
    """softmax(query . key * scale + bias, masked) . value, per head, as
    `jax.nn.dot_product_attention`.

    query is [batch, T, N, H], key and value [batch, S, K, H] with N a multiple of K (query head
    n reads key head n // (N / K): grouped-query attention). `bias` and `mask` broadcast to
    [batch, N, T, S]; where `mask` is False (or, with `is_causal`, for s > t) a logit is
    replaced by a large negative number. `scale` defaults to 1 / sqrt(H). With
    `attn_logits_soft_cap` the logits become cap * tanh(logits / cap) before masking.

    Raises:
      ValueError: inputs that are not 4-D, or N not a multiple of K.
      NotImplementedError: flash_attention=True (there is no fused kernel here).
    """
    if flash_attention:
        raise NotImplementedError("dot_product_attention: flash_attention is not supported.")
    query, key, value = promoted(floating(query), floating(key), floating(value))
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t.shape.rank != 4:
            raise ValueError(
                f"dot_product_attention supports 4-D inputs only; got {name}.shape={t.shape}."
            )
    n, k, h = query.shape[2], key.shape[2], query.shape[3]
    if n is None or k is None or h is None:
        raise ValueError(
            f"dot_product_attention: the heads and depth of query {query.shape} and key "
            f"{key.shape} must be known."
        )
    if n % k:
        raise ValueError(
            f"dot_product_attention: query's {n} heads must be a multiple of key's {k}."
        )
    groups = n // k
    if groups > 1:  # each key/value head serves `groups` query heads
        key, value = _repeat_heads(key, groups), _repeat_heads(value, groups)
    scale = 1.0 / math.sqrt(h) if scale is None else scale
    wide = dtypes.as_dtype(np.promote_types(query.dtype, np.float32))
    logits = einsum_ops.einsum("btnh,bsnh->bnts", query, key)
    logits = fill_ops.cast(logits, wide) if logits.dtype != wide else logits
    logits = logits * _c(logits, scale)
    if bias is not None:
        logits = logits + tensor(bias, wide)
    if attn_logits_soft_cap is not None:
        cap = _c(logits, attn_logits_soft_cap)
        logits = cap * unary_ops.tanh(logits / cap)
    keep = None if mask is None else tensor(mask, dtypes.bool_)
    if is_causal:
        t_len, s_len = fill_ops.shape(logits)[2], fill_ops.shape(logits)[3]
        rows = array_ops.expand_dims(fill_ops.range(0, t_len), 1)
        causal = math_ops.less_equal(array_ops.expand_dims(fill_ops.range(0, s_len), 0), rows)
        keep = causal if keep is None else math_ops.logical_and(keep, causal)
    if keep is not None:
        low = _c(logits, -0.7 * float(np.finfo(np.dtype(wide)).max))
        logits = gather_ops.where_v2(keep, logits, low + fill_ops.zeros_like(logits))
    probabilities = nn_ops.softmax(logits, axis=-1)
    probabilities = fill_ops.cast(probabilities, key.dtype)
    return einsum_ops.einsum("bnts,bsnh->btnh", probabilities, value)


def _repeat_heads(t: Any, groups: int) -> Any:
    """[b, s, k, h] -> [b, s, k * groups, h]: each head repeated `groups` times in a row."""
    repeated = array_ops.expand_dims(t, 3) * fill_ops.ones([1, 1, 1, groups, 1], t.dtype)
    shape = fill_ops.shape(t)
    return array_ops.reshape(repeated, join_ops.concat([shape[:2], [-1], shape[3:]], 0))


@keras_op("ctc_loss", "nn.ctc_loss")
def ctc_loss(
    target: Any, output: Any, target_length: Any, output_length: Any, mask_index: int = 0
) -> Any:
    """The CTC loss of each sequence: -log of the probability (softmax over `output`'s last
    axis, logits [batch, time, classes]) of the alignments that collapse to `target[b,
    :target_length[b]]`, class `mask_index` the blank."""
    output = floating(output)
    wide = dtypes.as_dtype(np.promote_types(output.dtype, np.float32))
    output = fill_ops.cast(output, wide) if output.dtype != wide else output
    return ctc_ops.ctc_loss_dense(
        output,
        tensor(target, dtypes.int32),
        tensor(target_length, dtypes.int32),
        tensor(output_length, dtypes.int32),
        blank_index=mask_index,
    )


@keras_op("ctc_decode", "nn.ctc_decode")
def ctc_decode(
    inputs: Any,
    sequence_lengths: Any,
    strategy: str = "greedy",
    beam_width: int = 100,
    top_paths: int = 1,
    merge_repeated: bool = True,
    mask_index: int | None = 0,
) -> Any:
    """Greedy CTC decoding as Keras's JAX backend: the best class per step (steps past
    `sequence_lengths` and, with `merge_repeated`, repeats of the step before count as the
    blank `mask_index`), blanks dropped and the rest moved to the front, -1 after; returns
    (paths [1, batch, time] int32, scores [batch, 1] = -sum of the best scores).

    Raises:
      NotImplementedError: strategy="beam_search".
      ValueError: another strategy.
    """
    if strategy == "beam_search":
        raise NotImplementedError("ctc_decode: strategy='beam_search' is not supported.")
    if strategy != "greedy":
        raise ValueError(
            f"ctc_decode: strategy must be 'greedy' or 'beam_search', got {strategy!r}."
        )
    x = floating(inputs)
    wide = dtypes.as_dtype(np.promote_types(x.dtype, np.float32))
    x = fill_ops.cast(x, wide) if x.dtype != wide else x
    known_rank(x, "ctc_decode")
    classes = x.shape[-1]
    blank = (classes - 1) if mask_index is None else mask_index
    lengths = tensor(sequence_lengths, dtypes.int32)
    ids = reduction_ops.argmax(x, axis=-1, output_type=dtypes.int32)
    scores = reduction_ops.reduce_max(x, axis=-1)
    steps = fill_ops.shape(x)[1]
    positions = array_ops.expand_dims(fill_ops.range(0, steps), 0)
    past = math_ops.greater_equal(positions, array_ops.expand_dims(lengths, 1))
    blanks = tensor(blank, dtypes.int32) + fill_ops.zeros_like(ids)
    ids = gather_ops.where_v2(past, blanks, ids)
    scores = gather_ops.where_v2(past, fill_ops.zeros_like(scores), scores)
    if merge_repeated:
        same = math_ops.equal(ids[:, 1:], ids[:, :-1])
        repeat = join_ops.concat([fill_ops.zeros_like(same[:, :1]), same], 1)
        ids = gather_ops.where_v2(repeat, blanks, ids)
    dropped = math_ops.equal(ids, blanks)
    ids = gather_ops.where_v2(dropped, -fill_ops.ones_like(ids), ids)
    order = gather_ops.where_v2(
        dropped, steps + fill_ops.zeros_like(ids), positions + fill_ops.zeros_like(ids)
    )
    order = sort_ops.argsort(order, axis=-1, stable=True)
    ids = take_along_axis(ids, order, axis=-1)
    return array_ops.expand_dims(ids, 0), -reduction_ops.reduce_sum(scores, axis=1, keepdims=True)


@keras_op("multi_hot", "nn.multi_hot")
def multi_hot(
    inputs: Any,
    num_classes: int | None = None,
    axis: int = -1,
    dtype: Any = None,
    sparse: bool = False,
    **kwargs: Any,
) -> Any:
    """One vector per row of integer ids with 1 at each id present (the row's one-hot vectors
    combined by max); a 1-D input is one row.

    Raises:
      ValueError: no num_classes.
      NotImplementedError: sparse.
    """
    if num_classes is None:
        num_classes = kwargs.pop("num_tokens", None)
    if num_classes is None:
        raise ValueError("multi_hot: the argument `num_classes` must be given.")
    if sparse:
        raise NotImplementedError("multi_hot: sparse tensors are not supported.")
    ids = tensor(inputs, dtypes.int32)
    hot = fill_ops.one_hot(ids, int(num_classes), axis=axis, dtype=standard_dtype(dtype))
    return reduction_ops.reduce_max(hot, axis=1 if known_rank(ids, "multi_hot") > 1 else 0)


def _block_op(graph_fn: Any, path: str, doc: str) -> Any:
    def fn(x: Any, block_size: int, data_format: str = "channels_last") -> Any:
        x = tensor(x)
        fmt = "NCHW" if data_format == "channels_first" else "NHWC"
        return graph_fn(x, int(block_size), data_format=fmt)

    fn.__name__, fn.__doc__ = path, doc
    return keras_op(path, f"nn.{path}")(fn)


depth_to_space = _block_op(
    space_depth_ops.depth_to_space,
    "depth_to_space",
    "Each block_size**2 channels of a 4-D image as a block_size x block_size block.",
)
space_to_depth = _block_op(
    space_depth_ops.space_to_depth,
    "space_to_depth",
    "Each block_size x block_size block of a 4-D image as block_size**2 channels.",
)


@keras_op("polar", "nn.polar")
def polar(abs_: Any, angle: Any) -> Any:
    """The complex numbers abs_ * (cos(angle) + i sin(angle)) (complex64 for float32)."""
    r, theta = promoted(floating(abs_), floating(angle))
    complex_dtype = np.dtype("complex128") if r.dtype == dtypes.float64 else dtypes.complex64
    real = fill_ops.cast(r * unary_ops.cos(theta), complex_dtype)
    imaginary = fill_ops.cast(r * unary_ops.sin(theta), complex_dtype)
    return real + imaginary * tensor(np.asarray(1j, complex_dtype))
