"""`VGG16` as `keras.applications.VGG16`, and its `preprocess_input`.

The implementation is sluice/_keras/applications/vgg16.py."""

from sluice._keras.applications.vgg16 import VGG16, preprocess_input

__all__ = ["VGG16", "preprocess_input"]
