"""`VGG16` as `keras.applications.VGG16`, and its `preprocess_input`."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.applications import imagenet_utils
from sluice._keras.applications.vgg import build_vgg
from sluice._keras.models.model import Model


@export("applications.VGG16", "applications.vgg16.VGG16")
def VGG16(  # noqa: N802 (Keras's name)
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: Any = "softmax",
    name: str = "vgg16",
) -> Model:
    """The VGG16 network with Keras's layers and names (see `sluice._keras.applications.vgg`).

    Args:
      include_top: end with the classifier (flatten, fc1, fc2, predictions); inputs are then
        224x224x3.
      weights: None (random), "imagenet" (Keras's published file, from the Keras cache
        `~/.keras/models/`, downloaded when missing) or the path of a weights file (sluice's,
        Keras 3's or Keras 2's).
      input_tensor: a Tensor from `sl.Input` to use as the input.
      input_shape: (height, width, 3); default (224, 224, 3), or (None, None, 3) without top.
      pooling: without the top: None (the last block's feature map), "avg" or "max".
      classes, classifier_activation: of the "predictions" layer.

    Raises:
      FileNotFoundError: ImageNet weights not cached and not downloadable (the message names
        the URL and the cache path), or no file at the path given.

    >>> model = VGG16(include_top=False, weights=None, input_shape=(32, 32, 3))
    >>> [layer.name for layer in model.layers][1:4], model.output_shape
    (['block1_conv1', 'block1_conv2', 'block1_pool'], (None, 1, 1, 512))
    """
    return build_vgg(
        name, (2, 2, 3, 3, 3), include_top, weights, input_tensor, input_shape, pooling,
        classes, classifier_activation,
    )  # fmt: skip


@export("applications.vgg16.preprocess_input")
def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """VGG16's input preprocessing: RGB pixels in [0, 255] to BGR minus the ImageNet mean."""
    return imagenet_utils.preprocess_caffe(x, data_format)
