"""`sl.config`: Keras's global settings, and the places that read them."""

import numpy as np
import pytest

import sluice as sl
from sluice._keras import config as config_lib


@pytest.fixture
def restore_config():
    saved = sl.config.floatx(), sl.config.epsilon()
    yield
    sl.config.set_floatx(saved[0])
    sl.config.set_epsilon(saved[1])


def test_defaults_are_keras_defaults():
    assert sl.config.floatx() == "float32" and sl.config.epsilon() == 1e-7
    assert sl.config.image_data_format() == "channels_last" and sl.config.backend() == "jax"


def test_floatx_is_the_default_dtype_of_layers_weights_and_inputs(restore_config):
    sl.config.set_floatx("float64")
    model = sl.Sequential([sl.Input((3,)), sl.layers.Dense(2)])
    assert model.inputs[0].dtype == sl.float64
    assert model.layers[-1].dtype == "float64"
    assert {w.dtype for w in model.get_weights()} == {np.dtype("float64")}
    assert model.predict(np.ones((2, 3)), verbose=0).dtype == np.float64
    assert sl.layers.Dense(2, dtype="float32").dtype == "float32"  # an explicit dtype wins
    sl.config.set_floatx("float32")
    assert sl.layers.Dense(2).dtype == "float32"
    with pytest.raises(ValueError, match="float32"):
        sl.config.set_floatx("int32")


def test_losses_clip_with_epsilon_read_when_the_graph_is_built(restore_config):
    y_true = np.array([[1.0], [0.0]])
    y_pred = np.array([[0.0], [1.0]])  # both maximally wrong: the clip decides the loss
    with sl.Graph().as_default():  # in float64, where 1 - 1e-7 is exact
        default = sl.losses.BinaryCrossentropy(dtype="float64")(y_true, y_pred)
        sl.config.set_epsilon(1e-3)
        coarse = sl.losses.BinaryCrossentropy(dtype="float64")(y_true, y_pred)
        with sl.Session() as s:
            default, coarse = s.run([default, coarse])
    np.testing.assert_allclose(coarse, -np.log(1e-3), rtol=1e-5)
    np.testing.assert_allclose(default, -np.log(1e-7), rtol=1e-4)
    for bad in (0, -1.0, "small", float("inf")):
        with pytest.raises(ValueError, match="positive"):
            sl.config.set_epsilon(bad)


def test_image_data_format_is_the_default_of_layers_created_after_it_is_set():
    try:
        sl.config.set_image_data_format("channels_first")
        assert sl.config.image_data_format() == "channels_first"
        assert sl.layers.Conv2D(2, 3).data_format == "channels_first"
        assert sl.layers.MaxPooling1D().data_format == "channels_first"
        assert sl.layers.Flatten(data_format="channels_last").data_format == "channels_last"
    finally:
        sl.config.set_image_data_format("channels_last")
    assert sl.layers.Conv2D(2, 3).data_format == "channels_last"
    with pytest.raises(ValueError, match="channels_last"):
        sl.config.set_image_data_format("NHWC")
    assert sl.config.image_data_format() == "channels_last"


def test_enable_unsafe_deserialization_is_remembered(monkeypatch):
    monkeypatch.setitem(config_lib._settings, "unsafe_deserialization", False)
    assert not sl.config.unsafe_deserialization_enabled()
    sl.config.enable_unsafe_deserialization()
    assert sl.config.unsafe_deserialization_enabled()
