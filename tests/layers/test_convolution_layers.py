"""Conv1D, the transposed convolutions and the 1-D pooling layers: `run_layer_test` over a table
of rows, and the forward values against NumPy loops of Keras's definitions."""

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L
from sluice._keras.layers.convolutional.conv1d import Conv1D
from sluice._keras.layers.convolutional.conv1d_transpose import Conv1DTranspose
from sluice._keras.layers.convolutional.conv2d_transpose import Conv2DTranspose
from sluice._keras.layers.convolutional.depthwise_conv2d import DepthwiseConv2D
from sluice._keras.layers.convolutional.separable_conv2d import SeparableConv2D
from sluice._keras.layers.pooling.global_pooling1d import GlobalAveragePooling1D, GlobalMaxPooling1D
from sluice._keras.layers.pooling.pooling1d import AveragePooling1D, MaxPooling1D
from sluice.testing import run_layer_test

RNG = np.random.default_rng(3)

LAYERS = [
    # id, class, init kwargs, input shape, output shape, weights, non-trainable, extra
    ("conv1d_valid", Conv1D, {"filters": 2, "kernel_size": 3}, (2, 5, 3), (None, 3, 2),
     {"kernel": (3, 3, 2), "bias": (2,)}, 0, {}),
    ("conv1d_same_strided", Conv1D, {"filters": 2, "kernel_size": 3, "strides": 2,
     "padding": "same", "activation": "tanh"}, (2, 5, 2), (None, 3, 2),
     {"kernel": (3, 2, 2), "bias": (2,)}, 0, {}),
    ("conv1d_causal_dilated", Conv1D, {"filters": 2, "kernel_size": 2, "padding": "causal",
     "dilation_rate": 2, "use_bias": False}, (2, 5, 2), (None, 5, 2), {"kernel": (2, 2, 2)},
     0, {}),
    ("conv1d_transpose_same", Conv1DTranspose, {"filters": 2, "kernel_size": 3, "strides": 2,
     "padding": "same"}, (2, 3, 2), (None, 6, 2), {"kernel": (3, 2, 2), "bias": (2,)}, 0, {}),
    ("conv1d_transpose_output_padding", Conv1DTranspose, {"filters": 3, "kernel_size": 2,
     "strides": 3, "output_padding": 1}, (2, 3, 2), (None, 9, 3),
     {"kernel": (2, 3, 2), "bias": (3,)}, 0, {}),
    ("conv2d_transpose_same", Conv2DTranspose, {"filters": 2, "kernel_size": 3, "strides": 2,
     "padding": "same"}, (2, 3, 3, 2), (None, 6, 6, 2), {"kernel": (3, 3, 2, 2), "bias": (2,)},
     0, {}),
    ("conv2d_transpose_output_padding", Conv2DTranspose, {"filters": 2, "kernel_size": (2, 3),
     "strides": (2, 3), "output_padding": (1, 2), "activation": "tanh"}, (2, 2, 2, 1),
     (None, 5, 8, 2), {"kernel": (2, 3, 2, 1), "bias": (2,)}, 0, {}),
    ("conv2d_transpose_dilated", Conv2DTranspose, {"filters": 1, "kernel_size": 2,
     "dilation_rate": 2, "padding": "same", "use_bias": False}, (2, 3, 3, 2), (None, 3, 3, 1),
     {"kernel": (2, 2, 1, 2)}, 0, {}),
    ("depthwise_conv2d", DepthwiseConv2D, {"kernel_size": 2, "depth_multiplier": 2},
     (2, 3, 3, 2), (None, 2, 2, 4), {"kernel": (2, 2, 2, 2), "bias": (4,)}, 0, {}),
    ("depthwise_conv2d_same_strided", DepthwiseConv2D, {"kernel_size": (3, 2), "strides": 2,
     "padding": "same", "use_bias": False, "activation": "tanh"}, (2, 4, 3, 3), (None, 2, 2, 3),
     {"kernel": (3, 2, 3, 1)}, 0, {}),
    ("separable_conv2d", SeparableConv2D, {"filters": 3, "kernel_size": 2, "depth_multiplier": 2,
     "padding": "same"}, (2, 3, 3, 2), (None, 3, 3, 3),
     {"depthwise_kernel": (2, 2, 2, 2), "pointwise_kernel": (1, 1, 4, 3), "bias": (3,)}, 0, {}),
    ("max_pooling1d", MaxPooling1D, {}, (2, 4, 2), (None, 2, 2), {}, 0, {}),
    ("average_pooling1d", AveragePooling1D, {"pool_size": 3, "strides": 2, "padding": "same"},
     (2, 5, 2), (None, 3, 2), {}, 0, {}),
    ("global_average_pooling1d", GlobalAveragePooling1D, {}, (2, 3, 2), (None, 2), {}, 0, {}),
    ("global_max_pooling1d", GlobalMaxPooling1D, {"keepdims": True}, (2, 3, 2), (None, 1, 2),
     {}, 0, {}),
]  # fmt: skip


@pytest.mark.parametrize(
    "cls, kwargs, input_shape, output_shape, weights, non_trainable, extra",
    [row[1:] for row in LAYERS],
    ids=[row[0] for row in LAYERS],
)
def test_layer_contract(cls, kwargs, input_shape, output_shape, weights, non_trainable, extra):
    run_layer_test(
        cls, kwargs, input_shape, output_shape, weights, expected_num_non_trainable=non_trainable,
        **extra,
    )  # fmt: skip


# -- NumPy references ([batch, *spatial, channels]) ---------------------------------------------
def same_pads(size, k, stride):
    """TF's / Keras's "same" (before, after) padding of one dimension."""
    total = max((-(-size // stride) - 1) * stride + k - size, 0)
    return total // 2, total - total // 2


def np_conv1d(x, w, stride, padding, dilation):
    """Keras's Conv1D: w [k, in, filters]; padding "valid", "same" or "causal"."""
    k = (w.shape[0] - 1) * dilation + 1
    pads = {"valid": (0, 0), "causal": (k - 1, 0), "same": same_pads(x.shape[1], k, stride)}
    xp = np.pad(x, [(0, 0), pads[padding], (0, 0)])
    steps = (xp.shape[1] - k) // stride + 1
    out = np.zeros((x.shape[0], steps, w.shape[2]))
    for t in range(steps):
        for j in range(w.shape[0]):
            out[:, t] += xp[:, t * stride + j * dilation] @ w[j]
    return out


def keras_transpose_length(n, k, s, padding, output_padding, d):
    """keras.src.ops.operation_utils.compute_conv_transpose_output_shape, one dimension."""
    k = (k - 1) * d + 1
    if padding == "valid":
        output_padding = max(k, s) - k if output_padding is None else output_padding
        return (n - 1) * s + k + output_padding
    return n * s if output_padding is None else (n - 1) * s + k % 2 + output_padding


def keras_transpose_left_pad(k, s, padding, output_padding, d):
    """The left padding Keras's JAX backend gives lax.conv_transpose, one dimension."""
    k = (k - 1) * d + 1
    if padding == "valid":
        return k - 1
    pad_len = s + k - 2 if output_padding is None else k + k % 2 - 2 + output_padding
    return min(pad_len // 2 + pad_len % 2, k - 1)


def np_conv_transpose(x, w, strides, padding, output_padding, dilations):
    """Keras's ConvNDTranspose, w [*kernel, filters, in]: every input position scatters
    x @ w[tap].T to position * stride + tap * dilation of the full output, which is then cut
    (or zero-extended) to Keras's size, starting at k - 1 - left_pad."""
    rank = x.ndim - 2
    output_padding = output_padding or (None,) * rank
    ks = w.shape[:rank]
    full = [(n - 1) * s + (k - 1) * d + 1 for n, k, s, d in zip(x.shape[1:-1], ks, strides,
                                                                   dilations)]  # fmt: skip
    y = np.zeros((x.shape[0], *full, w.shape[-2]))
    for pos in np.ndindex(*x.shape[1:-1]):
        for tap in np.ndindex(*ks):
            at = tuple(p * s + t * d for p, t, s, d in zip(pos, tap, strides, dilations))
            y[(slice(None),) + at] += x[(slice(None),) + pos] @ w[tap].T
    for axis, (n, k, s, p, d) in enumerate(zip(x.shape[1:-1], ks, strides, output_padding,
                                               dilations), start=1):  # fmt: skip
        start = (k - 1) * d - keras_transpose_left_pad(k, s, padding, p, d)
        length = keras_transpose_length(n, k, s, padding, p, d)
        y = np.moveaxis(y, axis, 0)[start : start + length]
        y = np.pad(y, [(0, length - y.shape[0])] + [(0, 0)] * (y.ndim - 1))
        y = np.moveaxis(y, 0, axis)
    return y


def np_pool1d(x, size, stride, padding, kind):
    pads = same_pads(x.shape[1], size, stride) if padding == "same" else (0, 0)
    fill = -np.inf if kind == "max" else np.nan
    xp = np.pad(x, [(0, 0), pads, (0, 0)], constant_values=fill)
    steps = (xp.shape[1] - size) // stride + 1
    windows = np.stack([xp[:, t * stride : t * stride + size] for t in range(steps)], axis=1)
    return windows.max(axis=2) if kind == "max" else np.nanmean(windows, axis=2)


def run_layer(layer, x_value, mask=None):
    """The layer's float64 output on `x_value`, its weights set to random values."""
    with sl.Graph().as_default():
        x = sl.placeholder(sl.float64, list(x_value.shape))
        y = layer(x, mask=mask) if mask is not None else layer(x)
        values = [RNG.normal(size=v.shape.as_list()) for v in layer.weights]
        with sl.Session() as sess:
            for v, value in zip(layer.weights, values):
                v.load(value, sess)
            return sess.run(y, {x: x_value}), values


CONV1D = [
    dict(filters=3, kernel_size=3),
    dict(filters=2, kernel_size=3, strides=2, padding="same"),
    dict(filters=2, kernel_size=4, strides=3, padding="same"),
    dict(filters=2, kernel_size=3, padding="causal", dilation_rate=2),
]


@pytest.mark.parametrize("kwargs", CONV1D, ids=str)
def test_conv1d_matches_numpy(kwargs):
    x = RNG.normal(size=(2, 7, 2))
    y, (kernel, bias) = run_layer(Conv1D(**kwargs, dtype="float64"), x)
    expected = np_conv1d(
        x, kernel, kwargs.get("strides", 1), kwargs.get("padding", "valid"),
        kwargs.get("dilation_rate", 1),
    ) + bias  # fmt: skip
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-12)


CONV_TRANSPOSE = [
    (Conv1DTranspose, dict(filters=2, kernel_size=3, strides=2, padding="same")),
    (Conv1DTranspose, dict(filters=2, kernel_size=4, strides=2, padding="same")),
    (Conv1DTranspose, dict(filters=2, kernel_size=2, strides=3)),  # strides > kernel
    (Conv1DTranspose, dict(filters=2, kernel_size=3, strides=3, padding="same",
                           output_padding=2)),
    (Conv2DTranspose, dict(filters=2, kernel_size=3, strides=2, padding="same")),
    (Conv2DTranspose, dict(filters=2, kernel_size=(2, 3), strides=(2, 3), output_padding=(1, 2))),
    (Conv2DTranspose, dict(filters=2, kernel_size=(3, 2), strides=(1, 2), padding="same",
                           output_padding=(0, 1))),
    (Conv2DTranspose, dict(filters=3, kernel_size=3, dilation_rate=(1, 2))),
]  # fmt: skip


@pytest.mark.parametrize("cls, kwargs", CONV_TRANSPOSE, ids=str)
def test_conv_transpose_matches_numpy(cls, kwargs):
    rank = 1 if cls is Conv1DTranspose else 2
    x = RNG.normal(size=(2,) + (3, 4)[:rank] + (2,))
    layer = cls(**kwargs, dtype="float64")
    y, (kernel, bias) = run_layer(layer, x)
    expected = np_conv_transpose(
        x, kernel, layer.strides, layer.padding, layer.output_padding, layer.dilation_rate
    ) + bias  # fmt: skip
    assert y.shape == layer.compute_output_shape(x.shape)
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-12)


def np_depthwise_conv2d(x, w, strides, padding, dilations):
    """TF's / Keras's depthwise convolution, w [kh, kw, c, m]: output channel c * m + j is input
    channel c correlated with w[:, :, c, j]."""
    ks = [(k - 1) * d + 1 for k, d in zip(w.shape[:2], dilations)]
    pads = [
        same_pads(n, k, s) if padding == "same" else (0, 0)
        for n, k, s in zip(x.shape[1:3], ks, strides)
    ]
    xp = np.pad(x, [(0, 0), *pads, (0, 0)])
    out_h, out_w = ((xp.shape[1 + i] - ks[i]) // strides[i] + 1 for i in (0, 1))
    c, m = w.shape[2:]
    out = np.zeros((x.shape[0], out_h, out_w, c, m))
    for i, j in np.ndindex(out_h, out_w):
        for a, b in np.ndindex(*w.shape[:2]):
            pixel = xp[:, i * strides[0] + a * dilations[0], j * strides[1] + b * dilations[1]]
            out[:, i, j] += pixel[:, :, None] * w[a, b]
    return out.reshape(x.shape[0], out_h, out_w, c * m)


DEPTHWISE = [
    dict(kernel_size=2, depth_multiplier=2),
    dict(kernel_size=3, strides=2, padding="same", depth_multiplier=1),
    dict(kernel_size=(2, 3), dilation_rate=(2, 1), padding="same", depth_multiplier=3),
]


@pytest.mark.parametrize("kwargs", DEPTHWISE, ids=str)
def test_depthwise_and_separable_conv2d_match_numpy(kwargs):
    x = RNG.normal(size=(2, 5, 4, 3))
    layer = DepthwiseConv2D(**kwargs, dtype="float64")
    y, (kernel, bias) = run_layer(layer, x)
    depthwise = np_depthwise_conv2d(x, kernel, layer.strides, layer.padding, layer.dilation_rate)
    assert y.shape == layer.compute_output_shape(x.shape)
    np.testing.assert_allclose(y, depthwise + bias, rtol=1e-12, atol=1e-12)

    layer = SeparableConv2D(2, **kwargs, dtype="float64")
    y, (depthwise_kernel, pointwise_kernel, bias) = run_layer(layer, x)
    depthwise = np_depthwise_conv2d(
        x, depthwise_kernel, layer.strides, layer.padding, layer.dilation_rate
    )
    assert y.shape == layer.compute_output_shape(x.shape)
    np.testing.assert_allclose(y, depthwise @ pointwise_kernel[0, 0] + bias, rtol=1e-12)


@pytest.mark.parametrize(
    "cls, kind, kwargs",
    [
        (MaxPooling1D, "max", dict()),
        (MaxPooling1D, "max", dict(pool_size=3, strides=2, padding="same")),
        (AveragePooling1D, "avg", dict(pool_size=2, strides=3, padding="same")),
        (AveragePooling1D, "avg", dict(pool_size=4, strides=1, padding="same")),
    ],
    ids=str,
)
def test_pooling1d_matches_numpy(cls, kind, kwargs):
    x = RNG.normal(size=(2, 7, 3))
    layer = cls(**kwargs, dtype="float64")
    y, _ = run_layer(layer, x)
    expected = np_pool1d(x, layer.pool_size[0], layer.strides[0], layer.padding, kind)
    assert y.shape == layer.compute_output_shape(x.shape)
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("keepdims", [False, True])
def test_global_pooling1d_matches_numpy(keepdims):
    x = RNG.normal(size=(2, 5, 3))
    y_avg, _ = run_layer(GlobalAveragePooling1D(keepdims=keepdims, dtype="float64"), x)
    y_max, _ = run_layer(GlobalMaxPooling1D(keepdims=keepdims, dtype="float64"), x)
    np.testing.assert_allclose(y_avg, x.mean(axis=1, keepdims=keepdims), rtol=1e-12)
    np.testing.assert_allclose(y_max, x.max(axis=1, keepdims=keepdims), rtol=1e-12)


def test_global_average_pooling1d_honours_an_embedding_mask():
    ids = np.array([[1, 2, 0, 0], [3, 1, 4, 0]], np.int32)
    with sl.Graph().as_default():
        x = sl.placeholder(sl.int32, [2, 4])
        embedding = L.Embedding(5, 3, mask_zero=True, dtype="float64")
        pooled = GlobalAveragePooling1D(dtype="float64")(embedding(x))
        with sl.Session() as sess:
            table = RNG.normal(size=(5, 3))
            embedding.embeddings.load(table, sess)
            y = sess.run(pooled, {x: ids})
    expected = [table[row[row > 0]].mean(axis=0) for row in ids]
    np.testing.assert_allclose(y, expected, rtol=1e-12)


def test_global_average_pooling1d_explicit_mask():
    x = RNG.normal(size=(2, 4, 3))
    mask = np.array([[True, False, True, True], [False, True, False, False]])
    with sl.Graph().as_default():
        xt = sl.placeholder(sl.float64, [2, 4, 3])
        y = GlobalAveragePooling1D(keepdims=True, dtype="float64")(xt, mask=sl.constant(mask))
        with sl.Session() as sess:
            value = sess.run(y, {xt: x})
    expected = [x[i][mask[i]].mean(axis=0, keepdims=True) for i in range(2)]
    np.testing.assert_allclose(value, expected, rtol=1e-12)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Conv1D(2, 3, data_format="NCW"), "'channels_last' or 'channels_first'"),
        (lambda: Conv2DTranspose(2, 3, data_format="nchw"), "'channels_last' or"),
        (lambda: MaxPooling1D(data_format="first"), "got 'first'"),
        (lambda: GlobalAveragePooling1D(data_format=""), "data_format must be"),
        (lambda: Conv2DTranspose(2, 3, strides=2, output_padding=2), "output_padding"),
        (lambda: Conv1D(2, 3, strides=2, dilation_rate=2), "dilation_rate"),
        (lambda: Conv1D(2, 3, padding="full"), "padding"),
        (lambda: DepthwiseConv2D(3, data_format="NHWC"), "channels_last"),
        (lambda: SeparableConv2D(2, 3, padding="causal"), "padding"),
        (lambda: Conv1DTranspose(2, 3, padding="causal"), "padding"),
        (lambda: Conv1D(2, 0), r"Conv1D kernel_size must be positive, got \(0,\)"),
        (lambda: Conv1DTranspose(2, -2), "Conv1DTranspose kernel_size must be positive"),
        (lambda: DepthwiseConv2D((3, 0)), r"DepthwiseConv2D kernel_size .* \(3, 0\)"),
        (lambda: Conv1D(2, 3, strides=0), "Conv1D strides must be positive"),
        (lambda: Conv2DTranspose(2, 3, output_padding=-1), "output_padding must be non-negative"),
        (lambda: MaxPooling1D(0), "MaxPooling1D pool_size must be positive"),
        (lambda: L.Conv2D(2, (3, 0)), "Conv2D kernel_size must be positive"),
        (lambda: L.MaxPooling2D(2, strides=0), "MaxPooling2D strides must be positive"),
    ],
)
def test_invalid_arguments_raise(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize(
    "cls, shape",
    [
        (MaxPooling1D, (4,)),
        (GlobalAveragePooling1D, (4,)),
        (GlobalMaxPooling1D, (4, 2, 2)),
        (L.GlobalMaxPooling2D, (4, 2)),
    ],
)
def test_pooling_inputs_of_the_wrong_rank_are_refused_naming_the_layer(cls, shape):
    with sl.Graph().as_default():
        with pytest.raises(ValueError, match=f"{cls.__name__} 'pool' expects inputs of rank"):
            cls(name="pool")(sl.placeholder(sl.float32, (None, *shape)))


def test_keras_defaults():
    conv = Conv1D(4, 3).get_config()
    assert (conv["strides"], conv["padding"], conv["dilation_rate"]) == ((1,), "valid", (1,))
    assert conv["kernel_initializer"] == Conv2DTranspose(4, 3).get_config()["kernel_initializer"]
    deconv = Conv2DTranspose(4, 3).get_config()
    assert (deconv["strides"], deconv["output_padding"], deconv["padding"]) == (
        (1, 1), None, "valid",
    )  # fmt: skip
    assert MaxPooling1D().get_config()["strides"] == (2,)
    assert AveragePooling1D(3, strides=1).get_config()["pool_size"] == (3,)
