"""CIFAR-100: 50,000 training and 10,000 test colour images of 32x32 pixels (uint8) in 100
fine classes grouped in 20 coarse ones, read from Keras's `cifar-100-python` (see `cifar`).

The implementation is sluice/_keras/datasets/cifar100.py."""

from sluice._keras.datasets.cifar100 import load_data

__all__ = ["load_data"]
