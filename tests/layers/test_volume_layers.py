"""The 3-D layers (Conv3D, Conv3DTranspose, MaxPooling3D, AveragePooling3D, the global 3-D
poolings, ZeroPadding3D, Cropping3D, UpSampling3D): `run_layer_test` channels last and first,
forward values against `lax` and NumPy references, channels_first equal to channels_last
transposed with the same weights, and a model of them that trains, saves and loads."""

import itertools

import numpy as np
import pytest
from jax import lax

import sluice as sl
from sluice import layers as L
from sluice.testing import run_layer_test
from tests.layers.test_convolution_layers import np_conv_transpose, same_pads

RNG = np.random.default_rng(13)


def to_first(a):
    """A channels-last array (or shape tuple) with its channels moved to axis 1."""
    if isinstance(a, tuple):
        return (a[0], a[-1], *a[1:-1])
    return np.moveaxis(a, -1, 1)


ROWS = [
    # id, class, kwargs, channels-last input shape, channels-last output shape, weights
    ("conv3d_valid", L.Conv3D, dict(filters=2, kernel_size=2), (2, 3, 3, 2, 2),
     (None, 2, 2, 1, 2), {"kernel": (2, 2, 2, 2, 2), "bias": (2,)}),
    ("conv3d_same_strided", L.Conv3D, dict(filters=2, kernel_size=(2, 3, 2), strides=(2, 1, 2),
     padding="same", activation="tanh"), (2, 3, 3, 3, 1), (None, 2, 3, 2, 2),
     {"kernel": (2, 3, 2, 1, 2), "bias": (2,)}),
    ("conv3d_dilated", L.Conv3D, dict(filters=1, kernel_size=2, dilation_rate=(2, 1, 1),
     use_bias=False), (2, 3, 2, 2, 2), (None, 1, 1, 1, 1), {"kernel": (2, 2, 2, 2, 1)}),
    ("conv3d_transpose_same", L.Conv3DTranspose, dict(filters=2, kernel_size=2, strides=2,
     padding="same"), (2, 2, 1, 2, 2), (None, 4, 2, 4, 2),
     {"kernel": (2, 2, 2, 2, 2), "bias": (2,)}),
    ("conv3d_transpose_output_padding", L.Conv3DTranspose, dict(filters=1, kernel_size=2,
     strides=(2, 3, 1), output_padding=(1, 2, 0)), (2, 2, 1, 2, 1), (None, 5, 4, 3, 1),
     {"kernel": (2, 2, 2, 1, 1), "bias": (1,)}),
    ("max_pooling3d", L.MaxPooling3D, dict(), (2, 4, 2, 3, 2), (None, 2, 1, 1, 2), {}),
    ("average_pooling3d_same", L.AveragePooling3D, dict(pool_size=(2, 3, 2), strides=(1, 2, 2),
     padding="same"), (2, 3, 4, 3, 2), (None, 3, 2, 2, 2), {}),
    ("global_max_pooling3d", L.GlobalMaxPooling3D, dict(), (2, 2, 3, 2, 3), (None, 3), {}),
    ("global_average_pooling3d_keepdims", L.GlobalAveragePooling3D, dict(keepdims=True),
     (2, 2, 3, 2, 3), (None, 1, 1, 1, 3), {}),
    ("zero_padding3d", L.ZeroPadding3D, dict(padding=((1, 0), 2, (0, 1))), (2, 2, 1, 2, 2),
     (None, 3, 5, 3, 2), {}),
    ("cropping3d", L.Cropping3D, dict(cropping=((1, 0), 1, (0, 2))), (2, 3, 3, 4, 2),
     (None, 2, 1, 2, 2), {}),
    ("up_sampling3d", L.UpSampling3D, dict(size=(2, 1, 3)), (2, 2, 2, 1, 2),
     (None, 4, 2, 3, 2), {}),
]  # fmt: skip


@pytest.mark.parametrize(
    "cls, kwargs, shape, out_shape, weights", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS]
)
def test_layer_contract(cls, kwargs, shape, out_shape, weights):
    run_layer_test(cls, kwargs, shape, out_shape, weights)


CHANNELS_FIRST_ROWS = [r for r in ROWS if r[0] in (
    "conv3d_same_strided", "conv3d_transpose_output_padding", "average_pooling3d_same",
    "global_average_pooling3d_keepdims", "cropping3d")]  # fmt: skip


@pytest.mark.parametrize(
    "cls, kwargs, shape, out_shape, weights",
    [r[1:] for r in CHANNELS_FIRST_ROWS],
    ids=[r[0] for r in CHANNELS_FIRST_ROWS],
)
def test_layer_contract_channels_first(cls, kwargs, shape, out_shape, weights):
    out_first = out_shape if len(out_shape) == 2 else to_first(out_shape)
    run_layer_test(
        cls, {**kwargs, "data_format": "channels_first"}, to_first(shape), out_first, weights
    )


@pytest.mark.parametrize("cls, kwargs, shape", [
    (L.Conv3D, dict(filters=3, kernel_size=(2, 1, 2), strides=(1, 2, 1), padding="same"),
     (2, 3, 4, 3, 2)),
    pytest.param(L.Conv3DTranspose, dict(filters=2, kernel_size=3, strides=2, padding="same"),
                 (1, 2, 3, 2, 2), marks=pytest.mark.slow),
    (L.MaxPooling3D, dict(pool_size=2, strides=1), (2, 3, 3, 3, 2)),
    (L.AveragePooling3D, dict(pool_size=2, padding="same"), (2, 3, 3, 3, 2)),
    (L.GlobalMaxPooling3D, dict(), (2, 3, 2, 2, 3)),
    (L.ZeroPadding3D, dict(padding=1), (1, 2, 2, 2, 2)),
    (L.UpSampling3D, dict(size=2), (1, 2, 1, 2, 2)),
])  # fmt: skip
def test_channels_first_is_channels_last_transposed(cls, kwargs, shape):
    x = RNG.normal(size=shape).astype("float32")
    last = cls(**kwargs, data_format="channels_last")
    expected = np.asarray(last(x))
    first = cls(**kwargs, data_format="channels_first")
    if last.weights:
        first.build(to_first(shape))
        first.set_weights(last.get_weights())  # the kernel layout does not depend on the format
    got = np.asarray(first(to_first(x)))
    want = expected if expected.ndim == 2 else to_first(expected)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("strides, padding, dilation", [
    ((1, 1, 1), "valid", (1, 1, 1)),
    ((2, 1, 2), "same", (1, 1, 1)),
    pytest.param((1, 1, 1), "same", (2, 1, 2), marks=pytest.mark.slow),
])  # fmt: skip
def test_conv3d_matches_lax(strides, padding, dilation):
    x = RNG.normal(size=(2, 5, 4, 5, 2)).astype("float32")
    layer = L.Conv3D(3, (2, 3, 2), strides=strides, padding=padding, dilation_rate=dilation,
                     bias_initializer="random_normal")  # fmt: skip
    y = np.asarray(layer(x))
    kernel, bias = layer.get_weights()
    expected = lax.conv_general_dilated(
        x.astype(np.float64), kernel.astype(np.float64), strides, padding.upper(),
        rhs_dilation=dilation, dimension_numbers=("NDHWC", "DHWIO", "NDHWC"),
    ) + bias  # fmt: skip
    np.testing.assert_allclose(y, np.asarray(expected), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=3, strides=2, padding="same"),
    dict(kernel_size=(2, 3, 2), strides=(2, 3, 1), output_padding=(1, 2, 0)),
    pytest.param(dict(kernel_size=2, strides=3, padding="valid"), marks=pytest.mark.slow),
    pytest.param(dict(kernel_size=2, dilation_rate=2, padding="same"), marks=pytest.mark.slow),
])  # fmt: skip
def test_conv3d_transpose_matches_numpy(kwargs):
    x = RNG.normal(size=(1, 2, 3, 2, 2)).astype("float32")
    layer = L.Conv3DTranspose(2, **kwargs, bias_initializer="random_normal")
    y = np.asarray(layer(x))
    kernel, bias = layer.get_weights()
    expected = np_conv_transpose(x, kernel, layer.strides, layer.padding, layer.output_padding,
                                 layer.dilation_rate) + bias  # fmt: skip
    assert y.shape == expected.shape == layer.compute_output_shape(x.shape)[:1] + y.shape[1:]
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)


def np_pool3d(x, size, strides, padding, kind):
    pads = [same_pads(n, k, s) if padding == "same" else (0, 0)
            for n, k, s in zip(x.shape[1:4], size, strides)]  # fmt: skip
    xp = np.pad(x, [(0, 0), *pads, (0, 0)], constant_values=np.nan)
    outs = [(n - k) // s + 1 for n, k, s in zip(xp.shape[1:4], size, strides)]
    y = np.zeros((x.shape[0], *outs, x.shape[-1]))
    for o in itertools.product(*map(range, outs)):
        index = tuple(slice(i * s, i * s + k) for i, s, k in zip(o, strides, size))
        window = xp[(slice(None), *index)]
        y[(slice(None), *o)] = (np.nanmax if kind == "max" else np.nanmean)(window, (1, 2, 3))
    return y


@pytest.mark.parametrize("cls, kind", [(L.MaxPooling3D, "max"), (L.AveragePooling3D, "avg")])
@pytest.mark.parametrize("size, strides, padding", [
    ((2, 2, 2), None, "valid"), ((3, 2, 2), (2, 1, 2), "same"),
])  # fmt: skip
def test_pooling3d_matches_numpy(cls, kind, size, strides, padding):
    x = RNG.normal(size=(2, 4, 3, 5, 2)).astype("float32")
    y = np.asarray(cls(size, strides, padding)(x))
    expected = np_pool3d(x, size, strides or size, padding, kind)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


def test_global_pooling3d_and_reshaping_match_numpy():
    x = RNG.normal(size=(2, 3, 4, 2, 3)).astype("float32")
    np.testing.assert_allclose(np.asarray(L.GlobalAveragePooling3D()(x)), x.mean((1, 2, 3)),
                               rtol=1e-5)  # fmt: skip
    np.testing.assert_allclose(np.asarray(L.GlobalMaxPooling3D(keepdims=True)(x)),
                               x.max((1, 2, 3), keepdims=True))  # fmt: skip
    np.testing.assert_array_equal(
        np.asarray(L.ZeroPadding3D(((1, 0), 2, (0, 1)))(x)),
        np.pad(x, [(0, 0), (1, 0), (2, 2), (0, 1), (0, 0)]),
    )
    np.testing.assert_array_equal(
        np.asarray(L.Cropping3D(((1, 0), 1, (0, 1)))(x)), x[:, 1:, 1:3, 0:1, :]
    )
    np.testing.assert_array_equal(
        np.asarray(L.UpSampling3D((2, 1, 3))(x)), x.repeat(2, 1).repeat(3, 3)
    )


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: L.Conv3D(2, 3)(L.Input((4, 4, 2))), "rank 5"),
        (lambda: L.Conv3D(2, (3, 3)), "3 ints"),
        (lambda: L.Conv3DTranspose(2, 2, strides=2, output_padding=2), "smaller than its stride"),
        (lambda: L.Conv3DTranspose(2, 2)(L.Input((None, 4, 4, 2))), "known spatial size"),
        (lambda: L.MaxPooling3D(2)(L.Input((4, 4, 2))), "rank 5"),
        (lambda: L.GlobalAveragePooling3D()(L.Input((4, 4, 2))), "rank 5"),
        (lambda: L.ZeroPadding3D((1, 2)), "3 tuples of 2 ints"),
        (lambda: L.Cropping3D(-1), "cannot be negative"),
        (lambda: L.Cropping3D(2)(L.Input((4, 4, 4, 1))), "leaves nothing"),
        (lambda: L.UpSampling3D((2, 2)), "3 ints"),
    ],
)
def test_invalid_arguments(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_keras_aliases():
    assert L.Convolution3D is L.Conv3D
    assert L.Convolution3DTranspose is L.Conv3DTranspose
    assert L.MaxPool3D is L.MaxPooling3D and L.AvgPool3D is L.AveragePooling3D
    assert L.GlobalMaxPool3D is L.GlobalMaxPooling3D
    assert L.GlobalAvgPool3D is L.GlobalAveragePooling3D
    assert L.Convolution1DTranspose is L.Conv1DTranspose
    assert L.Convolution2DTranspose is L.Conv2DTranspose
    assert L.SeparableConvolution2D is L.SeparableConv2D


def volume_model(data_format):
    fmt = {"data_format": data_format}
    shape = (4, 4, 4, 1) if data_format == "channels_last" else (1, 4, 4, 4)
    return sl.Sequential([
        L.Input(shape),
        L.ZeroPadding3D(1, **fmt),
        L.Conv3D(2, 3, activation="relu", **fmt),
        L.MaxPooling3D(2, **fmt),
        L.Conv3DTranspose(2, 2, strides=2, padding="same", **fmt),
        L.Cropping3D(1, **fmt),
        L.UpSampling3D(1, **fmt),
        L.AveragePooling3D(2, padding="same", **fmt),
        L.GlobalAveragePooling3D(**fmt),
        L.Dense(2, activation="softmax"),
    ])  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_volume_model_trains_saves_and_loads(tmp_path, data_format):
    x = RNG.normal(size=(8, 4, 4, 4, 1)).astype("float32")
    if data_format == "channels_first":
        x = to_first(x)
    y = RNG.integers(0, 2, size=(8,))
    model = volume_model(data_format)
    model.compile(optimizer=sl.optimizers.Adam(0.05), loss="sparse_categorical_crossentropy")
    losses = model.fit(x, y, batch_size=8, epochs=4, verbose=0).history["loss"]
    assert losses[-1] < losses[0]
    path = str(tmp_path / "volumes.keras")
    model.save(path)
    loaded = sl.models.load_model(path)
    np.testing.assert_allclose(
        loaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-5, atol=1e-6
    )
