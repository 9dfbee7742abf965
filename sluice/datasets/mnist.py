"""MNIST digits: 60,000 training and 10,000 test images of 28x28 grey pixels (uint8), labels
0-9 (uint8), read from Keras's `mnist.npz`.

The implementation is sluice/_keras/datasets/mnist.py."""

from sluice._keras.datasets.mnist import load_data

__all__ = ["load_data"]
