"""`sl.config`: Keras's global settings: the default float dtype, the fuzz factor, the image
layout, the backend name and unsafe deserialization.

The implementation is sluice/_keras/config.py."""

from sluice._keras.config import (
    backend,
    enable_unsafe_deserialization,
    epsilon,
    floatx,
    image_data_format,
    set_epsilon,
    set_floatx,
    set_image_data_format,
    unsafe_deserialization_enabled,
)

__all__ = [
    "backend",
    "enable_unsafe_deserialization",
    "epsilon",
    "floatx",
    "image_data_format",
    "set_epsilon",
    "set_floatx",
    "set_image_data_format",
    "unsafe_deserialization_enabled",
]
