"""IMDB movie reviews: 25,000 training and 25,000 test reviews as word-id sequences, labels 1
(positive) or 0, read from Keras's `imdb.npz`; word ids rank words by frequency.

The file stores the ragged sequences as NumPy object arrays (a pickle stream): they are read by
`safe_arrays.SafeUnpickler`, which builds lists and NumPy arrays only, where Keras 2 used
`np.load(allow_pickle=True)`. The sequences come back as 1-D object arrays of lists, ready for
`sl.utils.pad_sequences`.

>>> (x_train, y_train), _ = sl.datasets.imdb.load_data(num_words=10000)  # doctest: +SKIP
>>> x_train[0][:3]                                                      # doctest: +SKIP
[1, 14, 22]
"""

from __future__ import annotations

import numpy as np

from sluice._export import export
from sluice._keras.datasets import files, safe_arrays, sequences

__all__ = ["get_word_index", "load_data"]

ORIGIN_FOLDER = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
FILE_HASH = "69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f"
WORD_INDEX_HASH = "bfafd718b763782e994055a2d397834f"


def object_array(rows: list) -> np.ndarray:
    """A 1-D object array of `rows` (also when they all have one length)."""
    out = np.empty(len(rows), dtype=object)
    out[:] = rows
    return out


@export("datasets.imdb.load_data")
def load_data(
    path: str = "imdb.npz",
    num_words: int | None = None,
    skip_top: int = 0,
    maxlen: int | None = None,
    seed: int = 113,
    start_char: int | None = 1,
    oov_char: int | None = 2,
    index_from: int = 3,
) -> tuple:
    """`(x_train, y_train), (x_test, y_test)`, each split shuffled with `seed` as Keras does.

    Args:
      num_words: keep the ids below `num_words` (others become `oov_char`); None: all but the
        largest id, as Keras's own rule gives.
      skip_top: ids below it become `oov_char` too.
      maxlen: drop the sequences of `maxlen` ids or more (counting `start_char`).
      start_char: the id that starts every sequence (None: none).
      oov_char: the id of dropped words (None: remove them).
      index_from: added to every word id (ids below it stay free for pad, start and oov).

    Raises:
      ValueError: `maxlen` keeps no sequence of a split, or a malformed file.
      sl.datasets.DownloadError: not cached and not downloadable.
    """
    where = files.get_file(path, ORIGIN_FOLDER + "imdb.npz", FILE_HASH)
    arrays = safe_arrays.read_npz(where, allow_objects=True)
    safe_arrays.require(arrays, ("x_train", "y_train", "x_test", "y_test"), where)
    rng = np.random.RandomState(seed)
    splits = []
    for split in ("train", "test"):
        x = sequences.as_sequences(arrays[f"x_{split}"], f"{where}:x_{split}")
        y = np.asarray(arrays[f"y_{split}"])
        if len(x) != len(y):
            raise ValueError(f"{where}: {len(x)} x_{split} sequences but {len(y)} labels.")
        splits.append(sequences.shuffled(rng, x, y))
    (x_train, y_train), (x_test, y_test) = splits
    xs, labels, counts = [], [], []
    for x, y in ((x_train, y_train), (x_test, y_test)):  # maxlen filters each split on its own
        x, y = sequences.drop_long(sequences.offset(x, start_char, index_from), y, maxlen)
        if not x:
            raise ValueError(
                f"imdb.load_data: no sequence is shorter than maxlen={maxlen}; increase maxlen."
            )
        xs, labels, counts = xs + x, labels + [y], counts + [len(x)]
    xs = sequences.limit_vocabulary(xs, num_words, skip_top, oov_char)
    cut = counts[0]
    return (object_array(xs[:cut]), labels[0]), (object_array(xs[cut:]), labels[1])


@export("datasets.imdb.get_word_index")
def get_word_index(path: str = "imdb_word_index.json") -> dict[str, int]:
    """The word -> rank index of the IMDB word ids (add `index_from` to compare with the data)."""
    where = files.get_file(path, ORIGIN_FOLDER + "imdb_word_index.json", WORD_INDEX_HASH)
    return sequences.read_word_index(where)
