"""`Rescaling`: values, per-channel scale and offset, integer inputs, config, gradients."""

import numpy as np

import sluice as sl
from sluice.testing import run_layer_test


def test_rescaling_maps_values_and_keeps_shapes():
    run_layer_test(
        sl.layers.Rescaling,
        {"scale": 1 / 127.5, "offset": -1},
        input_shape=(2, 3, 4),
        expected_output_shape=(None, 3, 4),
        expected_weights={},
    )
    layer = sl.layers.Rescaling(1 / 127.5, offset=-1)
    out = layer(np.array([[0.0, 127.5, 255.0]], np.float32))
    np.testing.assert_allclose(np.asarray(out), [[-1.0, 0.0, 1.0]], atol=1e-6)


def test_per_channel_scale_and_integer_images():
    layer = sl.layers.Rescaling(scale=[1.0, 0.5, 0.25], offset=[0.0, 1.0, 2.0])
    x = sl.Input((2, 3), dtype="uint8")
    model = sl.Model(x, layer(x))
    images = np.full((1, 2, 3), 4, np.uint8)
    np.testing.assert_allclose(model.predict(images, verbose=0), [[[4.0, 3.0, 3.0]] * 2])
    again = sl.layers.Rescaling.from_config(layer.get_config())
    assert again.get_config()["scale"] == [1.0, 0.5, 0.25]
