"""Boston housing prices: 506 samples of 13 attributes (float64) and the median price in k$,
read from Keras's `boston_housing.npz`, shuffled with `seed` and split as Keras does.

The implementation is sluice/_keras/datasets/boston_housing.py."""

from sluice._keras.datasets.boston_housing import load_data

__all__ = ["load_data"]
