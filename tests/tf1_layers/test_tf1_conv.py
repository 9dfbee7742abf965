"""TF1's functional convolution and pooling layers (`tf.layers.conv2d`, `max_pooling2d`, ...):
names, shapes, values against NumPy loops (TF's padding rules) and gradients."""

import math

import numpy as np
import pytest

import sluice as sl
from sluice.testing import check_gradients

RNG = np.random.default_rng(11)


def session(engine="compiled"):
    return sl.Session(config=sl.SessionConfig(engine=engine))


def same_pads(size, k, stride, dilation=1):
    """TF's SAME padding of one spatial dimension: (before, after)."""
    span = (k - 1) * dilation + 1
    total = max((math.ceil(size / stride) - 1) * stride + span - size, 0)
    return total // 2, total - total // 2


def np_conv2d(x, w, strides=(1, 1), padding="valid", dilation=(1, 1)):
    """NHWC cross-correlation with TF's padding."""
    if padding == "same":
        (t, b), (lf, r) = (
            same_pads(x.shape[i + 1], w.shape[i], strides[i], dilation[i]) for i in range(2)
        )
        x = np.pad(x, [(0, 0), (t, b), (lf, r), (0, 0)])
    kh, kw = [(w.shape[i] - 1) * dilation[i] + 1 for i in range(2)]
    oh = (x.shape[1] - kh) // strides[0] + 1
    ow = (x.shape[2] - kw) // strides[1] + 1
    out = np.zeros((x.shape[0], oh, ow, w.shape[3]))
    for i in range(oh):
        for j in range(ow):
            patch = x[
                :,
                i * strides[0] : i * strides[0] + kh : dilation[0],
                j * strides[1] : j * strides[1] + kw : dilation[1],
                :,
            ]
            out[:, i, j, :] = np.tensordot(patch, w, axes=([1, 2, 3], [0, 1, 2]))
    return out


def np_pool2d(x, size, strides, padding, kind):
    """NHWC pooling; SAME windows see only the input's elements (TF)."""
    pads = [
        same_pads(x.shape[i + 1], size[i], strides[i]) if padding == "same" else (0, 0)
        for i in range(2)
    ]
    fill = -np.inf if kind == "max" else np.nan
    x = np.pad(x, [(0, 0), pads[0], pads[1], (0, 0)], constant_values=fill)
    oh = (x.shape[1] - size[0]) // strides[0] + 1
    ow = (x.shape[2] - size[1]) // strides[1] + 1
    out = np.zeros((x.shape[0], oh, ow, x.shape[3]))
    reduce = np.max if kind == "max" else np.nanmean
    for i in range(oh):
        for j in range(ow):
            window = x[
                :,
                i * strides[0] : i * strides[0] + size[0],
                j * strides[1] : j * strides[1] + size[1],
                :,
            ]
            out[:, i, j, :] = reduce(window, axis=(1, 2))
    return out


def run_with_weights(outputs, feed):
    with session() as s:
        s.run(sl.global_variables_initializer())
        weights = s.run(sl.global_variables())
        return weights, s.run(outputs, feed)


# -- conv2d --------------------------------------------------------------------------------------
def test_conv2d_names_its_variables_and_infers_shapes():
    x = sl.placeholder(sl.float32, [None, 8, 7, 3])
    a = sl.layers.conv2d(x, 5, 3, padding="same")
    b = sl.layers.conv2d(x, 4, (3, 2), strides=2, padding="VALID")
    c = sl.layers.conv2d(x, 2, 3, dilation_rate=2, name="dilated")
    assert [v.name for v in sl.global_variables()] == [
        "conv2d/kernel:0",
        "conv2d/bias:0",
        "conv2d_1/kernel:0",
        "conv2d_1/bias:0",
        "dilated/kernel:0",
        "dilated/bias:0",
    ]
    assert sl.global_variables()[2].shape.as_list() == [3, 2, 3, 4]
    assert [t.shape.as_list() for t in (a, b, c)] == [
        [None, 8, 7, 5],
        [None, 3, 3, 4],
        [None, 4, 3, 2],
    ]
    assert a.name == "conv2d/BiasAdd:0"


@pytest.mark.parametrize(
    "engine", ["compiled", pytest.param("interpreted", marks=pytest.mark.slow)]
)
def test_conv2d_values_match_numpy(engine):
    value = RNG.normal(size=(2, 6, 5, 3))
    x = sl.placeholder(sl.float64, [None, 6, 5, 3])
    init = sl.random_normal_initializer(seed=1)
    outs = [
        sl.layers.conv2d(x, 4, 3, padding="same", bias_initializer=init, activation=sl.nn.relu),
        sl.layers.conv2d(x, 2, (2, 3), strides=(2, 1)),
        sl.layers.conv2d(x, 2, 2, strides=2, padding="same", use_bias=False),
        sl.layers.conv2d(x, 3, 2, dilation_rate=2, padding="same", use_bias=False),
    ]
    with session(engine) as s:
        s.run(sl.global_variables_initializer())
        (k0, b0, k1, b1, k2, k3), got = s.run(sl.global_variables()), s.run(outs, {x: value})
    expected = [
        np.maximum(np_conv2d(value, k0, padding="same") + b0, 0),
        np_conv2d(value, k1, strides=(2, 1)) + b1,
        np_conv2d(value, k2, strides=(2, 2), padding="same"),
        np_conv2d(value, k3, padding="same", dilation=(2, 2)),
    ]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6)


def test_conv2d_channels_first_equals_channels_last():
    value = RNG.normal(size=(2, 5, 5, 3))
    x = sl.placeholder(sl.float64, [2, 5, 5, 3])
    last = sl.layers.conv2d(
        x, 4, 3, padding="same", name="c", bias_initializer=sl.constant_initializer(0.5)
    )
    nchw = sl.transpose(x, [0, 3, 1, 2])
    first = sl.layers.conv2d(
        nchw, 4, 3, padding="same", data_format="channels_first", name="c", reuse=True
    )
    assert first.shape.as_list() == [2, 4, 5, 5]
    _, (a, b) = run_with_weights([last, first], {x: value})
    np.testing.assert_allclose(b.transpose(0, 2, 3, 1), a, rtol=1e-6, atol=1e-6)


def test_conv2d_gradients_match_central_differences():
    x, k, b = RNG.normal(size=(1, 4, 4, 2)), RNG.normal(size=(3, 3, 2, 2)), RNG.normal(size=2)

    def build(x, k, b):
        def getter(getter, name, *args, **kwargs):
            return {"net/conv2d/kernel": k, "net/conv2d/bias": b}[name]

        with sl.variable_scope("net", custom_getter=getter):
            return sl.layers.conv2d(x, 2, 3, strides=2, padding="same", activation=sl.tanh)

    check_gradients(build, [x, k, b])


def test_conv_layers_refuse_bad_arguments_when_the_graph_is_built():
    x = sl.placeholder(sl.float32, [None, 5, 5, 3])
    with pytest.raises(ValueError, match="padding"):
        sl.layers.conv2d(x, 2, 3, padding="full")
    with pytest.raises(ValueError, match="data_format"):
        sl.layers.conv2d(x, 2, 3, data_format="NHWC")
    with pytest.raises(ValueError, match="dilation_rate"):
        sl.layers.conv2d(x, 2, 3, strides=2, dilation_rate=2)
    with pytest.raises(ValueError, match="expected ndim=4"):
        sl.layers.conv2d(sl.placeholder(sl.float32, [None, 5, 3]), 2, 3)
    with pytest.raises(ValueError, match="channel dimension"):
        sl.layers.conv2d(sl.placeholder(sl.float32, [None, 5, 5, None]), 2, 3)
    with pytest.raises(ValueError, match="kernel_size"):
        sl.layers.conv2d(x, 2, (3, 3, 3))


# -- conv1d, conv2d_transpose, separable_conv2d ----------------------------------------------------
def test_conv1d_valid_and_causal_match_numpy():
    value = RNG.normal(size=(2, 7, 3))
    x = sl.placeholder(sl.float64, [None, 7, 3])
    valid = sl.layers.conv1d(x, 4, 3, strides=2)
    causal = sl.layers.conv1d(x, 2, 2, padding="causal", dilation_rate=2, use_bias=False)
    assert (valid.shape.as_list(), causal.shape.as_list()) == ([None, 3, 4], [None, 7, 2])
    (k0, b0, k1), (a, c) = run_with_weights([valid, causal], {x: value})
    as_2d = value[:, None]  # [batch, 1, width, channels]
    np.testing.assert_allclose(a, np_conv2d(as_2d, k0[None], (1, 2))[:, 0] + b0, rtol=1e-6)
    padded = np.pad(value, [(0, 0), (2, 0), (0, 0)])[:, None]  # the past only
    np.testing.assert_allclose(
        c, np_conv2d(padded, k1[None], dilation=(1, 2))[:, 0], rtol=1e-6, atol=1e-6
    )


def test_conv2d_transpose_is_the_adjoint_of_conv2d():
    # <conv2d_transpose(y, K), x> == <y, conv2d(x, K)> for the same kernel K
    y_value = RNG.normal(size=(1, 3, 3, 2))
    y = sl.placeholder(sl.float64, [None, 3, 3, 2])
    up = sl.layers.conv2d_transpose(y, 4, 3, strides=2, use_bias=False)
    same = sl.layers.conv2d_transpose(y, 4, 3, strides=2, padding="same", use_bias=False)
    assert sl.global_variables()[0].shape.as_list() == [3, 3, 4, 2]
    assert (up.shape.as_list(), same.shape.as_list()) == ([None, 7, 7, 4], [None, 6, 6, 4])
    (k, k_same), (out, out_same) = run_with_weights([up, same], {y: y_value})
    x = RNG.normal(size=(1, 7, 7, 4))
    np.testing.assert_allclose(
        np.sum(out * x), np.sum(y_value * np_conv2d(x, k, (2, 2))), rtol=1e-6
    )
    x = RNG.normal(size=(1, 6, 6, 4))
    np.testing.assert_allclose(
        np.sum(out_same * x), np.sum(y_value * np_conv2d(x, k_same, (2, 2), "same")), rtol=1e-6
    )


def test_separable_conv2d_is_depthwise_then_pointwise():
    value = RNG.normal(size=(2, 5, 5, 2))
    x = sl.placeholder(sl.float64, [None, 5, 5, 2])
    y = sl.layers.separable_conv2d(x, 3, 3, depth_multiplier=2, padding="same")
    assert [v.name for v in sl.global_variables()] == [
        "separable_conv2d/depthwise_kernel:0",
        "separable_conv2d/pointwise_kernel:0",
        "separable_conv2d/bias:0",
    ]
    (dw, pw, b), got = run_with_weights(y, {x: value})
    depthwise = np.concatenate(
        [
            np_conv2d(value[..., c : c + 1], dw[:, :, c : c + 1, :], padding="same")
            for c in range(2)
        ],
        axis=-1,
    )
    np.testing.assert_allclose(got, depthwise @ pw[0, 0] + b, rtol=1e-6, atol=1e-6)


# -- pooling -------------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ["compiled", "interpreted"])
def test_pooling_matches_numpy(engine):
    value = RNG.normal(size=(2, 5, 6, 3))
    x = sl.placeholder(sl.float64, [None, 5, 6, 3])
    outs = [
        sl.layers.max_pooling2d(x, 2, 2),
        sl.layers.max_pooling2d(x, 3, 2, padding="same"),
        sl.layers.average_pooling2d(x, (2, 3), (1, 2)),
        sl.layers.average_pooling2d(x, 3, 2, padding="same"),
    ]
    assert outs[0].name.startswith("max_pooling2d/")
    assert outs[3].name.startswith("average_pooling2d_1/")
    with session(engine) as s:
        got = s.run(outs, {x: value})
    expected = [
        np_pool2d(value, (2, 2), (2, 2), "valid", "max"),
        np_pool2d(value, (3, 3), (2, 2), "same", "max"),
        np_pool2d(value, (2, 3), (1, 2), "valid", "avg"),
        np_pool2d(value, (3, 3), (2, 2), "same", "avg"),
    ]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6)


def test_1d_pooling_and_channels_first_pooling_match_numpy():
    value = RNG.normal(size=(2, 7, 3))
    x = sl.placeholder(sl.float64, [None, 7, 3])
    mx = sl.layers.max_pooling1d(x, 3, 2)
    avg = sl.layers.average_pooling1d(x, 2, 2, padding="same")
    avg_first = sl.layers.average_pooling1d(
        sl.transpose(x, [0, 2, 1]), 2, 2, padding="same", data_format="channels_first"
    )
    assert (mx.shape.as_list(), avg.shape.as_list()) == ([None, 3, 3], [None, 4, 3])
    with session() as s:
        a, b, c = s.run([mx, avg, avg_first], {x: value})
    np.testing.assert_allclose(a, np_pool2d(value[:, None], (1, 3), (1, 2), "valid", "max")[:, 0])
    expected = np_pool2d(value[:, None], (1, 2), (1, 2), "same", "avg")[:, 0]
    np.testing.assert_allclose(b, expected, rtol=1e-6)
    np.testing.assert_allclose(c.transpose(0, 2, 1), expected, rtol=1e-6)


def test_pooling_gradients_match_central_differences():
    x = RNG.permutation(32).reshape(1, 4, 4, 2).astype(np.float64)  # distinct: max is unique
    check_gradients(
        lambda x: (
            sl.layers.max_pooling2d(x, 2, 2, padding="same") + sl.layers.average_pooling2d(x, 3, 1)
        ),
        [x],
    )
