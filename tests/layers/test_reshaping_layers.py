"""Reshaping, TimeDistributed and noise layers: `run_layer_test` rows and NumPy references."""

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L
from sluice._keras.layers.regularization.alpha_dropout import AlphaDropout
from sluice._keras.layers.regularization.gaussian_dropout import GaussianDropout
from sluice._keras.layers.regularization.gaussian_noise import GaussianNoise
from sluice._keras.layers.regularization.spatial_dropout import (
    SpatialDropout1D,
    SpatialDropout2D,
    SpatialDropout3D,
)
from sluice._keras.layers.reshaping.cropping import Cropping1D, Cropping2D
from sluice._keras.layers.reshaping.permute import Permute
from sluice._keras.layers.reshaping.repeat_vector import RepeatVector
from sluice._keras.layers.reshaping.up_sampling import UpSampling1D, UpSampling2D
from sluice._keras.layers.reshaping.zero_padding import ZeroPadding1D, ZeroPadding2D
from sluice._keras.layers.rnn.time_distributed import TimeDistributed
from sluice._keras.layers.tracking import get_mask
from sluice.testing import run_layer_test

LAYERS = [
    # id, class, init kwargs, input shape, output shape, weights, non-trainable, extra
    ("up_sampling1d", UpSampling1D, {"size": 3}, (2, 2, 3), (None, 6, 3), {}, 0, {}),
    ("up_sampling2d", UpSampling2D, {"size": (2, 1)}, (2, 2, 3, 1), (None, 4, 3, 1), {}, 0, {}),
    ("zero_padding1d", ZeroPadding1D, {"padding": (1, 2)}, (2, 2, 3), (None, 5, 3), {}, 0, {}),
    ("zero_padding2d", ZeroPadding2D, {"padding": ((1, 0), (0, 2))}, (2, 2, 2, 1),
     (None, 3, 4, 1), {}, 0, {}),
    ("cropping1d", Cropping1D, {"cropping": (1, 2)}, (2, 5, 2), (None, 2, 2), {}, 0, {}),
    ("cropping2d", Cropping2D, {"cropping": ((1, 0), (1, 1))}, (2, 3, 4, 1), (None, 2, 2, 1),
     {}, 0, {}),
    ("repeat_vector", RepeatVector, {"n": 3}, (2, 4), (None, 3, 4), {}, 0, {}),
    ("permute", Permute, {"dims": (3, 1, 2)}, (2, 2, 3, 4), (None, 4, 2, 3), {}, 0, {}),
    ("time_distributed_dense", TimeDistributed, {"layer": L.Dense(3)}, (2, 4, 2), (None, 4, 3),
     {"dense/kernel": (2, 3), "dense/bias": (3,)}, 0, {}),
    ("spatial_dropout1d", SpatialDropout1D, {"rate": 0.5, "seed": 1}, (2, 3, 4), (None, 3, 4),
     {}, 0, {"call_kwargs": {"training": False}}),
    ("spatial_dropout2d", SpatialDropout2D, {"rate": 0.5, "seed": 1}, (2, 2, 2, 3),
     (None, 2, 2, 3), {}, 0, {"call_kwargs": {"training": False}}),
    ("spatial_dropout3d", SpatialDropout3D, {"rate": 0.5, "seed": 1}, (2, 2, 2, 1, 3),
     (None, 2, 2, 1, 3), {}, 0, {"call_kwargs": {"training": False}}),
    ("gaussian_noise", GaussianNoise, {"stddev": 0.5, "seed": 1}, (2, 3), (None, 3), {}, 0, {}),
    ("gaussian_dropout", GaussianDropout, {"rate": 0.3, "seed": 1}, (2, 3), (None, 3), {}, 0, {}),
    ("alpha_dropout", AlphaDropout, {"rate": 0.3, "seed": 1}, (2, 3), (None, 3), {}, 0, {}),
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


def _forward(layer, x, training=False, runs=1):
    """The layer's outputs for `x` (fed with an unknown batch and time), `runs` times, and the
    values of its weights."""
    with sl.Graph().as_default():
        t = sl.placeholder("float32", [None, None] + list(x.shape[2:]))
        y = layer(t, training=training)
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            outputs = [sess.run(y, {t: x}) for _ in range(runs)]
            return outputs, sess.run(layer.weights)


X3 = np.arange(2 * 4 * 3, dtype=np.float32).reshape(2, 4, 3)
X4 = np.arange(2 * 4 * 5 * 3, dtype=np.float32).reshape(2, 4, 5, 3)

FORWARD = [
    (UpSampling1D(size=2), X3, lambda x: np.repeat(x, 2, axis=1)),
    (UpSampling2D(size=(2, 3)), X4, lambda x: np.repeat(np.repeat(x, 2, 1), 3, 2)),
    (ZeroPadding1D(padding=2), X3, lambda x: np.pad(x, [(0, 0), (2, 2), (0, 0)])),
    (ZeroPadding1D(padding=(0, 1)), X3, lambda x: np.pad(x, [(0, 0), (0, 1), (0, 0)])),
    (ZeroPadding2D(padding=1), X4, lambda x: np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)])),
    (ZeroPadding2D(padding=(2, 0)), X4, lambda x: np.pad(x, [(0, 0), (2, 2), (0, 0), (0, 0)])),
    (ZeroPadding2D(padding=((1, 0), (0, 2))), X4,
     lambda x: np.pad(x, [(0, 0), (1, 0), (0, 2), (0, 0)])),
    (Cropping1D(), X3, lambda x: x[:, 1:-1]),
    (Cropping1D(cropping=(2, 0)), X3, lambda x: x[:, 2:]),
    (Cropping2D(), X4, lambda x: x),
    (Cropping2D(cropping=1), X4, lambda x: x[:, 1:-1, 1:-1]),
    (Cropping2D(cropping=(0, 2)), X4, lambda x: x[:, :, 2:-2]),
    (Cropping2D(cropping=((1, 2), (0, 1))), X4, lambda x: x[:, 1:-2, :-1]),
    (Permute((2, 1)), X3, lambda x: x.transpose(0, 2, 1)),
    (Permute((3, 1, 2)), X4, lambda x: x.transpose(0, 3, 1, 2)),
]  # fmt: skip


@pytest.mark.parametrize(
    "layer, x, reference",
    FORWARD,
    ids=[f"{type(r[0]).__name__}_{i}" for i, r in enumerate(FORWARD)],
)
def test_forward_matches_numpy(layer, x, reference):
    (y,), _ = _forward(layer, x)
    np.testing.assert_array_equal(y, reference(x))
    assert layer.compute_output_shape((None,) + x.shape[1:]) == (None,) + y.shape[1:]


def test_repeat_vector_matches_numpy():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with sl.Graph().as_default():
        t = sl.placeholder("float32", [None, 3])
        y = RepeatVector(4)(t)
        with sl.Session() as sess:
            np.testing.assert_array_equal(sess.run(y, {t: x}), np.repeat(x[:, None], 4, axis=1))


def test_time_distributed_applies_the_layer_at_every_step():
    x = np.random.default_rng(0).normal(size=(2, 5, 3)).astype(np.float32)
    layer = TimeDistributed(L.Dense(4, activation="tanh"))
    (y,), (kernel, bias) = _forward(layer, x)
    np.testing.assert_allclose(y, np.tanh(x @ kernel + bias), rtol=1e-5, atol=1e-6)
    assert [v.op.name for v in layer.weights] == [
        "time_distributed/dense/kernel", "time_distributed/dense/bias"
    ]  # fmt: skip
    assert layer.compute_output_shape((None, 5, 3)) == (None, 5, 4)


def test_time_distributed_over_images_and_config_round_trip():
    x = np.random.default_rng(1).normal(size=(2, 3, 4, 4, 1)).astype(np.float32)
    layer = TimeDistributed(L.Flatten(), name="td")
    (y,), _ = _forward(layer, x)
    np.testing.assert_array_equal(y, x.reshape(2, 3, 16))
    config = layer.get_config()
    assert config["layer"]["class_name"] == "Flatten"
    clone = TimeDistributed.from_config(config)
    assert isinstance(clone.layer, L.Flatten) and clone.get_config() == config


def test_time_distributed_passes_the_mask_through():
    with sl.Graph().as_default():
        x = L.Input((4,), dtype="int32")
        e = L.Embedding(5, 2, mask_zero=True)(x)
        y = TimeDistributed(L.Dense(3))(e)
        assert y.shape.as_list() == [None, 4, 3]
        mask = get_mask(y)
        assert mask is not None and mask.shape.as_list() == [None, 4]


def test_time_distributed_passes_inner_masks_to_the_layer():
    words = np.array([[[1, 2, 0], [0, 0, 0]], [[3, 0, 0], [4, 1, 2]]], np.int32)
    with sl.Graph().as_default():
        x = L.Input((2, 3), dtype="int32")
        e = L.Embedding(5, 2, mask_zero=True)(x)
        layer = TimeDistributed(L.SimpleRNN(3))
        y = layer(e)
        mask = get_mask(y)
        inner = L.SimpleRNN.from_config(layer.layer.get_config())
        z = inner(sl.reshape(e, [-1, 3, 2]), mask=sl.reshape(get_mask(e), [-1, 3]))
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            for v, w in zip(inner.weights, layer.layer.weights):
                v.load(sess.run(w), sess)
            y_value, mask_value, z_value = sess.run([y, mask, z], {x: words})
    np.testing.assert_allclose(y_value, z_value.reshape(2, 2, 3), rtol=1e-6)
    np.testing.assert_array_equal(mask_value, [[True, False], [True, True]])


@pytest.mark.parametrize(
    "cls, x, noise_axes",
    [(SpatialDropout1D, np.ones((64, 3, 8), np.float32), (1,)),
     (SpatialDropout2D, np.ones((64, 2, 3, 8), np.float32), (1, 2)),
     pytest.param(SpatialDropout3D, np.ones((64, 2, 1, 2, 8), np.float32), (1, 2, 3),
                  marks=pytest.mark.slow)],  # a third instance of the contract
)  # fmt: skip
def test_spatial_dropout_drops_whole_channels(cls, x, noise_axes):
    layer = cls(0.5, seed=3)
    (first, second), _ = _forward(layer, x, training=True, runs=2)
    for y in (first, second):
        assert set(np.unique(y)) <= {0.0, 2.0}  # kept channels scaled by 1 / (1 - rate)
        channels = y.max(axis=noise_axes)
        np.testing.assert_array_equal(y.min(axis=noise_axes), channels)  # all steps alike
        assert 0.3 < (channels == 0).mean() < 0.7
    assert not np.array_equal(first, second)  # new choices at every run
    (y,), _ = _forward(cls(0.5, seed=3), x, training=False)
    np.testing.assert_array_equal(y, x)


def test_gaussian_noise_only_in_training():
    x = np.zeros((200, 50), np.float32)
    (y,), _ = _forward_2d(GaussianNoise(0.5, seed=2), x, training=True)
    assert abs(y.mean()) < 0.02 and abs(y.std() - 0.5) < 0.02
    (y,), _ = _forward_2d(GaussianNoise(0.5, seed=2), x + 1.5, training=False)
    np.testing.assert_array_equal(y, x + 1.5)


def test_gaussian_dropout_multiplies_by_noise_of_dropouts_variance():
    x = np.full((200, 50), 2.0, np.float32)
    (y,), _ = _forward_2d(GaussianDropout(0.2, seed=2), x, training=True)
    assert abs(y.mean() - 2.0) < 0.02 and abs(y.std() - 2.0 * 0.5) < 0.02  # sqrt(.2 / .8)
    (y,), _ = _forward_2d(GaussianDropout(0.2, seed=2), x, training=False)
    np.testing.assert_array_equal(y, x)


def test_alpha_dropout_keeps_mean_and_variance():
    x = np.random.default_rng(0).normal(size=(400, 50)).astype(np.float32)
    rate, alpha_p = 0.2, -1.6732632423543772 * 1.0507009873554805
    (y,), _ = _forward_2d(AlphaDropout(rate, seed=2), x, training=True)
    a = ((1 - rate) * (1 + rate * alpha_p**2)) ** -0.5
    b = -a * alpha_p * rate
    dropped = np.isclose(y, a * alpha_p + b, atol=1e-6)
    assert abs(dropped.mean() - rate) < 0.02
    np.testing.assert_allclose(y[~dropped], a * x[~dropped] + b, rtol=1e-5, atol=1e-6)
    assert abs(y.mean()) < 0.03 and abs(y.std() - 1.0) < 0.03
    (y,), _ = _forward_2d(AlphaDropout(rate, seed=2), x, training=False)
    np.testing.assert_array_equal(y, x)


def _forward_2d(layer, x, training):
    with sl.Graph().as_default():
        t = sl.placeholder("float32", [None, x.shape[1]])
        y = layer(t, training=training)
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())  # the layer's seed generator state
            return [sess.run(y, {t: x})], []


@pytest.mark.parametrize(
    "make, error",
    [(lambda: Permute((1, 3)), ValueError),
     (lambda: Permute((0, 1)), ValueError),
     (lambda: UpSampling2D(interpolation="bicubic"), NotImplementedError),
     (lambda: ZeroPadding2D(data_format="NCHW"), ValueError),
     (lambda: Cropping2D(cropping=((1, 2, 3), (0, 0))), ValueError),
     (lambda: ZeroPadding1D(padding=-1), ValueError),
     (lambda: RepeatVector(-1), ValueError),  # n=0 is allowed, as in Keras
     (lambda: RepeatVector(2.0), TypeError),
     (lambda: GaussianNoise(2.0), ValueError),
     (lambda: SpatialDropout1D(1.0), ValueError),
     (lambda: TimeDistributed("dense"), ValueError)],
)  # fmt: skip
def test_invalid_arguments(make, error):
    with pytest.raises(error):
        make()


def test_cropping_too_much_is_an_error():
    with sl.Graph().as_default(), pytest.raises(ValueError, match="leaves nothing"):
        Cropping1D(cropping=(2, 2))(L.Input((4, 1)))
