"""The VGG networks (Simonyan & Zisserman, 2014) as Keras builds them (`keras.applications.vgg16`
and `vgg19`): the same layers, names and shapes, so Keras's weight files load into them.

    block1_conv1, block1_conv2 (64), block1_pool       every conv 3x3, "same", relu;
    block2_conv1, block2_conv2 (128), block2_pool      every pool 2x2, stride 2
    block3_conv1 .. block3_conv3|4 (256), block3_pool  (3 convs in VGG16, 4 in VGG19 for
    block4_conv1 .. block4_conv3|4 (512), block4_pool   blocks 3 to 5)
    block5_conv1 .. block5_conv3|4 (512), block5_pool
    include_top:  flatten, fc1 (4096, relu), fc2 (4096, relu), predictions (classes)
    else pooling: None (the 4-D feature map), "avg" or "max" (global pooling)
"""

from __future__ import annotations

import os
from typing import Any

from sluice._keras import config
from sluice._keras.applications import imagenet_utils
from sluice._keras.layers.convolutional.conv2d import Conv2D
from sluice._keras.layers.core import input_layer
from sluice._keras.layers.core.dense import Dense
from sluice._keras.layers.pooling.pooling2d import (
    GlobalAveragePooling2D,
    GlobalMaxPooling2D,
    MaxPooling2D,
)
from sluice._keras.layers.reshaping.flatten import Flatten
from sluice._keras.models.model import Model
from sluice._keras.utils import rng_utils
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Graph

_WEIGHTS_URL = "https://storage.googleapis.com/tensorflow/keras-applications/{name}/{file}"
_DEFAULT_SIZE, _MIN_SIZE = 224, 32


def _input_shape(input_shape: Any, include_top: bool, weights: Any, name: str) -> tuple:
    """Keras's `obtain_input_shape` for VGG, in `sl.config.image_data_format()`'s layout:
    (224, 224, 3) with the classifier ((3, 224, 224) channels first), any size of at least
    32x32 with 3 channels (for ImageNet weights) without it."""
    first = config.image_data_format() == "channels_first"
    size = _DEFAULT_SIZE if include_top else None
    default = (3, size, size) if first else (size, size, 3)
    if input_shape is None:
        return default
    shape = tuple(input_shape)
    layout = "(channels, height, width)" if first else "(height, width, channels)"
    if len(shape) != 3:
        raise ValueError(f"{name}: input_shape must be {layout}, got {shape}.")
    channels, sizes = (shape[0], shape[1:]) if first else (shape[-1], shape[:2])
    top = (3, _DEFAULT_SIZE, _DEFAULT_SIZE) if first else (_DEFAULT_SIZE, _DEFAULT_SIZE, 3)
    if include_top and shape != top and weights == "imagenet":
        raise ValueError(
            f"{name}: with include_top=True and ImageNet weights, input_shape must be "
            f"{top}, got {shape}."
        )
    if include_top and None in shape:
        raise ValueError(f"{name}: with include_top=True, input_shape must be fully known.")
    if weights == "imagenet" and channels != 3:
        raise ValueError(f"{name}: ImageNet weights need 3 input channels, got {shape}.")
    for size in sizes:
        if size is not None and size < _MIN_SIZE:
            raise ValueError(
                f"{name}: input size must be at least {_MIN_SIZE}x{_MIN_SIZE}, got {shape}."
            )
    return shape


def _new_graph() -> Graph:
    """A graph for a model of its own, seeded like the default graph (or by set_random_seed)."""
    g = Graph()
    seed = rng_utils.get_random_seed()
    g.seed = seed if seed is not None else graph_lib.get_default_graph().seed
    return g


def build_vgg(
    name: str,
    convs_per_block: tuple[int, ...],
    include_top: bool,
    weights: Any,
    input_tensor: Any,
    input_shape: Any,
    pooling: str | None,
    classes: int,
    classifier_activation: Any,
) -> Model:
    """A VGG model named `name` ("vgg16", "vgg19"); see `VGG16`/`VGG19` for the arguments."""
    label = name.upper()
    if not (weights in (None, "imagenet") or isinstance(weights, (str, os.PathLike))):
        raise ValueError(
            f"{label}: weights must be None, 'imagenet' or the path of a weights file, "
            f"got {weights!r}."
        )
    if weights not in (None, "imagenet") and not os.path.exists(weights):
        raise FileNotFoundError(f"{label}: no weights file at {os.fspath(weights)!r}.")
    if weights == "imagenet" and include_top and classes != 1000:
        raise ValueError(
            f"{label}: with ImageNet weights and include_top=True, classes must be 1000, "
            f"got {classes}."
        )
    if pooling not in (None, "avg", "max"):
        raise ValueError(f"{label}: pooling must be None, 'avg' or 'max', got {pooling!r}.")
    if input_tensor is None:  # a model of its own, as Keras builds it
        with _new_graph().as_default():
            inputs = input_layer.Input(_input_shape(input_shape, include_top, weights, label))
    elif input_layer.input_layer_of(input_tensor) is None:  # any tensor, as in Keras
        with input_tensor.graph.as_default():
            inputs = input_layer.Input(tensor=input_tensor)
    else:
        inputs = input_tensor
    x = inputs
    for block, (filters, convs) in enumerate(zip((64, 128, 256, 512, 512), convs_per_block), 1):
        for i in range(1, convs + 1):
            x = Conv2D(filters, 3, padding="same", activation="relu",
                       name=f"block{block}_conv{i}")(x)  # fmt: skip
        x = MaxPooling2D(2, strides=2, name=f"block{block}_pool")(x)
    if include_top:
        x = Flatten(name="flatten")(x)
        x = Dense(4096, activation="relu", name="fc1")(x)
        x = Dense(4096, activation="relu", name="fc2")(x)
        x = Dense(classes, activation=classifier_activation, name="predictions")(x)
    elif pooling == "avg":
        x = GlobalAveragePooling2D()(x)
    elif pooling == "max":
        x = GlobalMaxPooling2D()(x)
    model = Model(inputs, x, name=name)
    if weights == "imagenet":
        suffix = "" if include_top else "_notop"
        file_name = f"{name}_weights_tf_dim_ordering_tf_kernels{suffix}.h5"
        url = _WEIGHTS_URL.format(name=name, file=file_name)
        model.load_weights(imagenet_utils.cached_weights(file_name, url))
    elif weights is not None:
        model.load_weights(os.fspath(weights))
    return model
