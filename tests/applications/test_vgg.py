"""sl.applications.VGG16 / VGG19: Keras's layers, names and parameter counts; weights from a
file in Keras 2's layout (as Keras publishes them) or the Keras cache; preprocess_input."""

import h5py
import numpy as np
import pytest

import sluice as sl
from sluice._keras.applications import imagenet_utils, vgg16, vgg19

# Keras's `model.count_params()` of each published configuration.
KERAS_PARAMS = {
    ("VGG16", True): 138_357_544,
    ("VGG16", False): 14_714_688,
    ("VGG19", True): 143_667_240,
    ("VGG19", False): 20_024_384,
}


@pytest.mark.parametrize("name, include_top", list(KERAS_PARAMS))
def test_layers_and_parameter_counts_are_keras(name, include_top):
    model = getattr(sl.applications, name)(include_top=include_top, weights=None)
    assert model.count_params() == KERAS_PARAMS[(name, include_top)]
    assert model.name == name.lower()
    names = [layer.name for layer in model.layers]
    convs = 3 if name == "VGG16" else 4
    assert names[1:4] == ["block1_conv1", "block1_conv2", "block1_pool"]
    assert f"block5_conv{convs}" in names and f"block5_conv{convs + 1}" not in names
    if include_top:
        assert names[-4:] == ["flatten", "fc1", "fc2", "predictions"]
        assert model.output_shape == (None, 1000)
    else:
        assert names[-1] == "block5_pool" and model.output_shape == (None, None, None, 512)


def test_two_models_side_by_side_and_pooling():
    a = sl.applications.VGG19(include_top=False, weights=None, pooling="avg")
    b = sl.applications.VGG19(include_top=False, weights=None, pooling="max")
    assert a.output_shape == b.output_shape == (None, 512)
    custom = sl.applications.VGG16(weights=None, classes=7, classifier_activation=None)
    assert custom.output_shape == (None, 7)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="classes must be 1000"):
        sl.applications.VGG19(weights="imagenet", classes=10)
    with pytest.raises(ValueError, match=r"at least 32x32"):
        sl.applications.VGG19(include_top=False, weights=None, input_shape=(16, 16, 3))
    with pytest.raises(ValueError, match="pooling"):
        sl.applications.VGG19(include_top=False, weights=None, pooling="mean")
    with pytest.raises(FileNotFoundError, match="no weights file"):
        sl.applications.VGG19(weights="/nonexistent/vgg19.h5")


def test_imagenet_weights_missing_from_cache_names_url_and_path(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))

    def offline(url, path):
        raise OSError("network unreachable")

    monkeypatch.setattr(imagenet_utils, "_download", offline)
    notop = "vgg19_weights_tf_dim_ordering_tf_kernels_notop.h5"
    with pytest.raises(FileNotFoundError) as caught:
        sl.applications.VGG19(include_top=False, weights="imagenet")
    message = str(caught.value)
    assert f"https://storage.googleapis.com/tensorflow/keras-applications/vgg19/{notop}" in message
    assert str(tmp_path / "models" / notop) in message and "network unreachable" in message


def test_keras_weight_file_from_the_cache_loads(tmp_path, monkeypatch):
    """A file in the layout of Keras's published `..._notop.h5` (Keras 2 HDF5: `layer_names`,
    `weight_names`), put in the Keras cache, loads layer by layer."""
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    reference = sl.applications.VGG16(include_top=False, weights=None, input_shape=(32, 32, 3))
    (tmp_path / "models").mkdir()
    path = tmp_path / "models" / "vgg16_weights_tf_dim_ordering_tf_kernels_notop.h5"
    values = {}
    with h5py.File(path, "w") as f:
        f.attrs["layer_names"] = [layer.name.encode() for layer in reference.layers]
        for i, layer in enumerate(reference.layers):
            group = f.create_group(layer.name)
            names = [f"{layer.name}/{w}:0" for w in ("kernel", "bias")] if layer.weights else []
            group.attrs["weight_names"] = np.array([n.encode() for n in names], dtype="S")
            for name, weight in zip(names, layer.weights):
                values[weight.op.name] = np.full(weight.shape.as_list(), i, np.float32)
                group[name] = values[weight.op.name]
    model = sl.applications.VGG16(include_top=False, weights="imagenet", input_shape=(32, 32, 3))
    for weight, value in zip(model.weights, model.get_weights()):
        np.testing.assert_array_equal(value, values[weight.op.name])


def test_preprocess_input_is_caffe_mode():
    rgb = np.array([[[255.0, 128.0, 0.0]]])
    want = np.array([[[0 - 103.939, 128 - 116.779, 255 - 123.68]]])
    np.testing.assert_allclose(vgg19.preprocess_input(rgb), want)
    np.testing.assert_allclose(vgg16.preprocess_input(rgb.astype("uint8")), want, rtol=1e-6)
    with sl.Session() as sess:
        tensor = vgg19.preprocess_input(sl.constant(rgb.astype("float32")))
        np.testing.assert_allclose(sess.run(tensor), want, rtol=1e-6)
