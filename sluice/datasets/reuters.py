"""Reuters newswires: 11,228 word-id sequences labelled with one of 46 topics, read from
Keras's `reuters.npz` (`x` and `y`), shuffled with `seed` and split by `test_split`.

The implementation is sluice/_keras/datasets/reuters.py."""

from sluice._keras.datasets.reuters import get_label_names, get_word_index, load_data

__all__ = ["get_label_names", "get_word_index", "load_data"]
