"""`tf.keras` is sluice itself: TF programs that import Keras through TensorFlow run with only
`tensorflow` renamed to `sluice`."""

import importlib

import sluice as sl


def test_tf_keras_is_sluice_and_its_namespaces_import_under_it():
    assert sl.keras is sl
    layers = importlib.import_module("sluice.keras.layers")
    assert layers is sl.layers
    assert importlib.import_module("sluice.keras.models").Model is sl.Model
    assert importlib.import_module("sluice.keras.optimizers").Adam is sl.optimizers.Adam
    assert importlib.import_module("sluice.keras.backend") is sl.backend


def test_from_tensorflow_keras_import_forms():
    from sluice.keras import layers
    from sluice.keras.layers import Dense

    model = sl.keras.Sequential([sl.keras.Input((3,)), layers.Dense(2), Dense(1)])
    assert model.output_shape == (None, 1)


def test_compat_v1_namespaces_import_under_it():
    assert importlib.import_module("sluice.compat.v1.nn") is sl.nn
    assert importlib.import_module("sluice.compat.v1.train") is sl.train


def test_keras_utils_holds_the_serialization_names_as_keras_3():
    for name in (
        "register_keras_serializable",
        "get_registered_name",
        "get_registered_object",
        "get_custom_objects",
        "serialize_keras_object",
        "deserialize_keras_object",
        "custom_object_scope",
        "CustomObjectScope",
    ):
        assert getattr(sl.utils, name) is getattr(sl.saving, name)
