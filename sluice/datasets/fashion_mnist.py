"""Fashion-MNIST: 60,000 training and 10,000 test 28x28 grey images of clothes (uint8), labels
0-9 (uint8), read from the four gzipped IDX files Keras keeps in `datasets/fashion-mnist`.

The implementation is sluice/_keras/datasets/fashion_mnist.py."""

from sluice._keras.datasets.fashion_mnist import load_data

__all__ = ["load_data"]
