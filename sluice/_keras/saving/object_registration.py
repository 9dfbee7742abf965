"""The registry of custom objects, with Keras 3's names (`keras.saving.register_keras_serializable`
and friends).

The registry itself lives in `sluice._keras.saving.serialization`, below every package that
deserializes configs (layers rebuild the layers and functions their configs name); this module
is its public face under `sl.saving`.

>>> @register_keras_serializable(package="my_package", name="scaled_relu")
... def scaled_relu(x):
...     return 2.0 * sl.nn.relu(x)
>>> get_registered_name(scaled_relu)
'my_package>scaled_relu'
>>> get_registered_object("my_package>scaled_relu") is scaled_relu
True
>>> with custom_object_scope({"Twice": scaled_relu}):
...     get_registered_object("Twice") is scaled_relu
True
"""

from sluice._keras.saving.serialization import (
    CustomObjectScope,
    custom_object_scope,
    get_custom_objects,
    get_registered_name,
    get_registered_object,
    register_keras_serializable,
)

__all__ = [
    "CustomObjectScope",
    "custom_object_scope",
    "get_custom_objects",
    "get_registered_name",
    "get_registered_object",
    "register_keras_serializable",
]
