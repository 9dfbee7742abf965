"""`VGG19` as `keras.applications.VGG19`, and its `preprocess_input`.

The implementation is sluice/_keras/applications/vgg19.py."""

from sluice._keras.applications.vgg19 import VGG19, preprocess_input

__all__ = ["VGG19", "preprocess_input"]
