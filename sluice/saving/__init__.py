"""Saving: whole models in Keras 3's `.keras` files (`save_model` / `load_model`, see
`keras_archive`), a model's weights in one h5 file (`Model.save_weights` / `load_weights`),
and the registry of custom objects (`register_keras_serializable`, see `object_registration`).
"""

from sluice._keras.saving.keras_archive import load_model, save_model
from sluice._keras.saving.object_registration import (
    CustomObjectScope,
    custom_object_scope,
    get_custom_objects,
    get_registered_name,
    get_registered_object,
    register_keras_serializable,
)
from sluice._keras.saving.serialization import deserialize_keras_object, serialize_keras_object
from sluice._keras.saving.weights_file import load_weights, save_weights

__all__ = [
    "CustomObjectScope",
    "custom_object_scope",
    "deserialize_keras_object",
    "get_custom_objects",
    "get_registered_name",
    "get_registered_object",
    "load_model",
    "load_weights",
    "register_keras_serializable",
    "save_model",
    "save_weights",
    "serialize_keras_object",
]
