"""`sl.ops.nn` beyond the first set: convolutions and poolings, activations, normalizations,
attention, CTC, multi-hot, depth/space, polar; against JAX (`lax`, `jax.nn`, optax) and NumPy."""

import jax.nn as jnn
import numpy as np
import optax
import pytest
from jax import lax

import sluice as sl
from sluice._keras.layers.convolutional.base_conv_transpose import transpose_padding
from tests.ops.table import check_case_gradients, check_graph, check_values

ops = sl.ops
RNG = np.random.default_rng(0)
IMG = RNG.normal(size=(2, 5, 4, 3)).astype(np.float32)
SEQ = IMG[:, :, 0, :]
K = RNG.normal(size=(3, 2, 3, 4)).astype(np.float32)
DK = RNG.normal(size=(3, 3, 3, 2)).astype(np.float32)
PK = RNG.normal(size=(1, 1, 6, 5)).astype(np.float32)
TK = RNG.normal(size=(3, 2, 4, 3)).astype(np.float32)  # (*kernel, out, in)
X = RNG.normal(size=(3, 4)) * 2
MEAN, VAR = RNG.normal(size=4), RNG.random(4) + 0.5
OFF, SCALE = RNG.normal(size=4), RNG.normal(size=4)
Q = RNG.normal(size=(2, 5, 4, 3)).astype(np.float32)
KV = RNG.normal(size=(2, 6, 2, 3)).astype(np.float32)
MASK = RNG.random((2, 1, 5, 6)) > 0.3
BIAS = RNG.normal(size=(2, 4, 5, 6)).astype(np.float32)
LOGITS = RNG.normal(size=(2, 6, 4)).astype(np.float32)
DEPTH = RNG.normal(size=(2, 2, 2, 12))
NHWC = ("NHWC", "HWIO", "NHWC")


def _conv(x, k, strides=(1, 1), padding="VALID", dilation=(1, 1), groups=1):
    return lax.conv_general_dilated(
        x, k, strides, padding, rhs_dilation=dilation, dimension_numbers=NHWC,
        feature_group_count=groups,
    )  # fmt: skip


def _conv_transpose(x, k, s, padding, output_padding=None, d=1):
    pads = [transpose_padding(n, s, padding, output_padding, d) for n in k.shape[:2]]
    return lax.conv_transpose(x, k, (s, s), pads, rhs_dilation=(d, d), dimension_numbers=NHWC,
                              transpose_kernel=True)  # fmt: skip


def _pool(x, size, step, padding, kind):
    window, strides = (1, *size, 1), (1, *step, 1)
    if kind == "max":
        return lax.reduce_window(x, -np.inf, lax.max, window, strides, padding)
    total = lax.reduce_window(x, 0.0, lax.add, window, strides, padding)
    return total / lax.reduce_window(np.ones_like(x), 0.0, lax.add, window, strides, padding)


def _adaptive_mean(x, n, m):
    out = np.zeros((x.shape[0], n, m, x.shape[3]), x.dtype)
    h, w = x.shape[1:3]
    for i in range(n):
        for j in range(m):
            rows = slice((i * h) // n, -(-(i + 1) * h // n))
            cols = slice((j * w) // m, -(-(j + 1) * w // m))
            out[:, i, j] = x[:, rows, cols].mean((1, 2))
    return out


def _sparsemax(z):
    top = np.sort(z)[::-1]
    k = np.arange(1, z.size + 1)
    kept = (top - (np.cumsum(top) - 1) / k > 0).sum()
    return np.maximum(z - (top[:kept].sum() - 1) / kept, 0)


def _ctc_reference(target, logits, target_length, logit_length):
    def paddings(lengths, n):
        return (np.arange(n)[None] >= np.asarray(lengths)[:, None]).astype(np.float32)

    return optax.ctc_loss(
        logits, paddings(logit_length, logits.shape[1]), target,
        paddings(target_length, target.shape[1]),
    )  # fmt: skip


CHANNELS_FIRST = np.transpose(IMG, (0, 3, 1, 2))
CASES = [
    ("conv_same_strided", ops.conv, (IMG, K), {"strides": 2, "padding": "same"},
     lambda: _conv(IMG, K, (2, 2), "SAME")),
    ("conv_dilated", ops.conv, (IMG, K), {"dilation_rate": 2},
     lambda: _conv(IMG, K, dilation=(2, 2))),
    ("conv_1d", ops.conv, (SEQ, K[:, 0]), {"padding": "same"},
     lambda: _conv(IMG[:, :, :1], K[:, :1], padding="SAME")[:, :, 0]),
    ("conv_channels_first", ops.conv, (CHANNELS_FIRST, K), {"data_format": "channels_first"},
     lambda: np.transpose(_conv(IMG, K), (0, 3, 1, 2))),
    ("depthwise_conv", ops.depthwise_conv, (IMG, DK), {"padding": "same"},
     lambda: _conv(IMG, DK.reshape(3, 3, 1, 6), padding="SAME", groups=3)),
    ("separable_conv", ops.separable_conv, (IMG, DK, PK), {"padding": "same"},
     lambda: _conv(np.asarray(_conv(IMG, DK.reshape(3, 3, 1, 6), padding="SAME", groups=3)), PK)),
    ("conv_transpose_same", ops.conv_transpose, (IMG, TK), {"strides": 2, "padding": "same"},
     lambda: _conv_transpose(IMG, TK, 2, "same")),
    ("conv_transpose_valid", ops.conv_transpose, (IMG, TK), {"strides": 3, "output_padding": 1},
     lambda: _conv_transpose(IMG, TK, 3, "valid", 1)),
    ("conv_transpose_dilated", ops.conv_transpose, (IMG, TK),
     {"padding": "same", "dilation_rate": 2},
     lambda: _conv_transpose(IMG, TK, 1, "same", None, 2)),
    ("max_pool", ops.max_pool, (IMG, 2), {},
     lambda: _pool(IMG, (2, 2), (2, 2), "VALID", "max")),
    ("max_pool_1d", ops.max_pool, (SEQ, 2), {"strides": 1},
     lambda: _pool(IMG[:, :, :1], (2, 1), (1, 1), "VALID", "max")[:, :, 0]),
    ("average_pool_same", ops.average_pool, (IMG, 3), {"strides": 2, "padding": "same"},
     lambda: _pool(IMG, (3, 3), (2, 2), "SAME", "mean")),
    ("adaptive_average_pool", ops.adaptive_average_pool, (IMG, (3, 3)), {},
     _adaptive_mean(IMG, 3, 3)),
    ("adaptive_max_pool_1d", ops.adaptive_max_pool, (SEQ, 2), {},
     np.stack([SEQ[:, :3].max(1), SEQ[:, 2:].max(1)], 1)),
    ("celu", ops.celu, (X,), {"alpha": 0.5}, np.where(X > 0, X, 0.5 * np.expm1(X / 0.5))),
    ("glu", ops.glu, (X,), {}, X[:, :2] / (1 + np.exp(-X[:, 2:]))),
    ("hard_silu", ops.hard_silu, (X,), {}, X * np.clip(X + 3, 0, 6) / 6),
    ("hard_swish", ops.hard_swish, (X,), {}, X * np.clip(X + 3, 0, 6) / 6),
    ("hard_tanh", ops.hard_tanh, (X,), {}, np.clip(X, -1, 1)),
    ("hard_shrink", ops.hard_shrink, (X,), {}, np.where(np.abs(X) > 0.5, X, 0)),
    ("soft_shrink", ops.soft_shrink, (X,), {"threshold": 1.0},
     np.sign(X) * np.maximum(np.abs(X) - 1, 0)),
    ("sparse_plus", ops.sparse_plus, (X,), {},
     np.where(X <= -1, 0, np.where(X >= 1, X, (X + 1) ** 2 / 4))),
    ("sparse_sigmoid", ops.sparse_sigmoid, (X,), {}, np.clip((X + 1) / 2, 0, 1)),
    ("squareplus", ops.squareplus, (X,), {}, (X + np.sqrt(X * X + 4)) / 2),
    ("tanh_shrink", ops.tanh_shrink, (X,), {}, X - np.tanh(X)),
    ("threshold", ops.threshold, (X, 0.1, -3.0), {}, np.where(X > 0.1, X, -3.0)),
    ("sparsemax", ops.sparsemax, (X,), {}, np.stack([_sparsemax(r) for r in X])),
    ("batch_normalization", ops.batch_normalization, (X, MEAN, VAR, 1),
     {"offset": OFF, "scale": SCALE}, (X - MEAN) / np.sqrt(VAR + 1e-3) * SCALE + OFF),
    ("layer_normalization", ops.layer_normalization, (X, SCALE, OFF), {},
     (X - X.mean(1, keepdims=True)) / np.sqrt(X.var(1, keepdims=True) + 1e-7) * SCALE + OFF),
    ("layer_normalization_axis0", ops.layer_normalization, (X,), {"axis": 0},
     (X - X.mean(0)) / np.sqrt(X.var(0) + 1e-7)),
    ("rms_normalization", ops.rms_normalization, (X, SCALE), {},
     X / np.sqrt((X * X).mean(1, keepdims=True) + 1e-7) * SCALE),
    ("normalize", ops.normalize, (X,), {}, X / np.linalg.norm(X, axis=1, keepdims=True)),
    ("normalize_order1", ops.normalize, (X,), {"order": 1, "axis": 0},
     X / np.abs(X).sum(0, keepdims=True)),
    ("psnr", ops.psnr, (X, X + 0.1 * np.cos(X), 2.0), {},
     20 * np.log10(2.0) - 10 * np.log10(np.mean((0.1 * np.cos(X)) ** 2))),
    ("dot_product_attention", ops.dot_product_attention, (Q, KV, KV),
     {"bias": BIAS, "mask": MASK},
     lambda: jnn.dot_product_attention(Q, KV, KV, bias=BIAS, mask=MASK)),
    ("dot_product_attention_causal", ops.dot_product_attention, (Q, Q[:, :, :2], Q[:, :, :2]),
     {"is_causal": True, "scale": 0.3},
     lambda: jnn.dot_product_attention(Q, Q[:, :, :2], Q[:, :, :2], is_causal=True, scale=0.3)),
    ("ctc_loss", ops.ctc_loss, (np.array([[1, 2], [3, 0]]), LOGITS, np.array([2, 1]),
     np.array([6, 4])), {},
     lambda: _ctc_reference(np.array([[1, 2], [3, 0]]), LOGITS, [2, 1], [6, 4])),
    ("ctc_decode", ops.ctc_decode, (np.log(np.array([[[.1, .9], [.8, .2], [.1, .9], [.2, .8]]])),
     np.array([4])), {},
     (np.array([[[1, 1, -1, -1]]]), -np.log([[0.9 * 0.8 * 0.9 * 0.8]]))),
    ("multi_hot", ops.multi_hot, (np.array([[0, 2], [1, 1]]), 4), {},
     np.array([[1, 0, 1, 0], [0, 1, 0, 0]])),
    ("depth_to_space", ops.depth_to_space, (DEPTH, 2), {},
     DEPTH.reshape(2, 2, 2, 2, 2, 3).transpose(0, 1, 3, 2, 4, 5).reshape(2, 4, 4, 3)),
    ("space_to_depth", ops.space_to_depth, (IMG[:, :4], 2), {},
     IMG[:, :4].reshape(2, 2, 2, 2, 2, 3).transpose(0, 1, 3, 2, 4, 5).reshape(2, 2, 2, 12)),
    ("polar", ops.polar, (np.array([1.0, 2.0]), np.array([0.0, np.pi / 2])), {},
     np.array([1.0, 2j])),
]  # fmt: skip


# A reference computed by JAX or optax (a callable `want`) is computed when its case runs, not
# at every import of this module: each xdist worker imports it to collect, and JAX compiles each
# reference's ops (about 1.2 s of CPU in all). optax's CTC compiles for seconds: that case runs
# under -m slow.
SLOW = {"ctc_loss"}
VALUE_CASES = [
    pytest.param(*c[1:], id=c[0], marks=[pytest.mark.slow] if c[0] in SLOW else []) for c in CASES
]


@pytest.mark.parametrize("fn, args, kwargs, want", VALUE_CASES)
def test_on_values(fn, args, kwargs, want):
    want = want() if callable(want) else want
    check_values(fn, args, kwargs, want, rtol=1e-5, atol=1e-5)  # the JAX references: float32


@pytest.mark.slow  # one graph of every case (the values run the same graph code on constants)
def test_on_graph_tensors():
    check_graph(CASES, rtol=1e-5, atol=1e-6)


GRADIENT_CASES = [
    ("conv_transpose", lambda x, k: ops.conv_transpose(x, k, 2, "same"), [IMG[:1, :3, :3], TK],
     [0, 1]),
    ("adaptive_average_pool", lambda x: ops.adaptive_average_pool(x, 2), [IMG[:1]], [0]),
    ("sparsemax", ops.sparsemax, [X], [0]),
    ("layer_normalization", ops.layer_normalization, [X, SCALE, OFF], [0, 1, 2]),
    ("dot_product_attention", lambda q, k: ops.dot_product_attention(q, k, k, is_causal=True),
     [Q[:1, :3, :2], Q[:1, :3, :1]], [0, 1]),
    ("glu", ops.glu, [X], [0]),
]  # fmt: skip


@pytest.mark.slow  # central differences: a session run per input element
@pytest.mark.parametrize(
    "fn, args, wrt", [c[1:] for c in GRADIENT_CASES], ids=[c[0] for c in GRADIENT_CASES]
)
def test_gradients(fn, args, wrt):
    check_case_gradients(fn, args, {}, wrt)


def test_bad_arguments_say_what_is_wrong():
    with pytest.raises(NotImplementedError, match="3 spatial dimensions"):
        ops.conv(np.ones((1, 2, 2, 2, 1)), np.ones((1, 1, 1, 1, 1)))
    with pytest.raises(NotImplementedError, match="grouped"):
        ops.conv(IMG, K[:, :, :1])
    with pytest.raises(ValueError, match="multiple"):
        ops.dot_product_attention(Q[:, :, :3], KV, KV)
    with pytest.raises(NotImplementedError, match="beam_search"):
        ops.ctc_decode(LOGITS, np.array([6, 6]), strategy="beam_search")
    with pytest.raises(ValueError, match="even"):
        ops.glu(np.ones((2, 3)))
