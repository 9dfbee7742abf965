"""Keras 3 weight regularizers: `reg(weight) -> scalar Tensor`, added to the training loss.

The implementation is sluice/_keras/layers/regularizers.py."""

from sluice._keras.layers.regularizers import L1, L1L2, L2, Regularizer, get, serialize

__all__ = ["L1", "L1L2", "L2", "Regularizer", "get", "serialize"]
