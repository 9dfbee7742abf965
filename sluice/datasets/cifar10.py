"""CIFAR-10: 50,000 training and 10,000 test colour images of 32x32 pixels (uint8) in 10
classes, read from the Python batches of Keras's `cifar-10-batches-py` (see `cifar`).

The implementation is sluice/_keras/datasets/cifar10.py."""

from sluice._keras.datasets.cifar10 import load_data

__all__ = ["load_data"]
