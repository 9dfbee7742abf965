"""Keras 3 activation functions on graph tensors, and `get(name)`.

The implementation is sluice/_keras/layers/activations.py."""

from sluice._keras.layers.activations import (
    elu,
    exponential,
    gelu,
    get,
    hard_sigmoid,
    leaky_relu,
    linear,
    log_softmax,
    mish,
    relu,
    relu6,
    selu,
    serialize,
    sigmoid,
    silu,
    softmax,
    softplus,
    softsign,
    swish,
    tanh,
)

__all__ = [
    "elu",
    "exponential",
    "gelu",
    "get",
    "hard_sigmoid",
    "leaky_relu",
    "linear",
    "log_softmax",
    "mish",
    "relu",
    "relu6",
    "selu",
    "serialize",
    "sigmoid",
    "silu",
    "softmax",
    "softplus",
    "softsign",
    "swish",
    "tanh",
]
