"""IMDB movie reviews: 25,000 training and 25,000 test reviews as word-id sequences, labels 1
(positive) or 0, read from Keras's `imdb.npz`; word ids rank words by frequency.

The implementation is sluice/_keras/datasets/imdb.py."""

from sluice._keras.datasets.imdb import get_word_index, load_data

__all__ = ["get_word_index", "load_data"]
