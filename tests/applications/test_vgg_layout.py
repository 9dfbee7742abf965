"""VGG under `image_data_format="channels_first"`: its input shape is (channels, height,
width), and it computes what the channels-last model computes on transposed images."""

import numpy as np
import pytest

import sluice as sl


@pytest.fixture
def channels_first():
    sl.config.set_image_data_format("channels_first")
    yield
    sl.config.set_image_data_format("channels_last")


@pytest.mark.slow  # two VGG16 compiles
def test_vgg16_channels_first_matches_channels_last(channels_first):
    first = sl.applications.VGG16(weights=None, include_top=False, input_shape=(3, 32, 32))
    assert first.output_shape == (None, 512, 1, 1)
    with pytest.raises(ValueError, match=r"\(channels, height, width\)"):
        sl.applications.VGG16(weights=None, include_top=False, input_shape=(32, 32))
    sl.config.set_image_data_format("channels_last")
    last = sl.applications.VGG16(weights=None, include_top=False, input_shape=(32, 32, 3))
    last.set_weights(first.get_weights())  # kernels do not depend on the layout
    images = np.random.default_rng(0).uniform(size=(2, 32, 32, 3)).astype("float32")
    want = last.predict(images, verbose=0).transpose(0, 3, 1, 2)
    got = first.predict(images.transpose(0, 3, 1, 2), verbose=0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
