"""Reuters newswires: 11,228 word-id sequences labelled with one of 46 topics, read from
Keras's `reuters.npz` (`x` and `y`), shuffled with `seed` and split by `test_split`.

As for IMDB, the ragged sequences are object arrays read by `safe_arrays.SafeUnpickler` (plain
lists and NumPy arrays only), and come back as 1-D object arrays of lists.
"""

from __future__ import annotations

import numpy as np

from sluice._export import export
from sluice._keras.datasets import files, safe_arrays, sequences
from sluice._keras.datasets.imdb import object_array

__all__ = ["get_label_names", "get_word_index", "load_data"]

ORIGIN_FOLDER = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
FILE_HASH = "d6586e694ee56d7a4e65172e12b3e987c03096cb01eab99753921ef915959916"
WORD_INDEX_HASH = "4d44cc38712099c9e383dc6e5f11a921"

_LABEL_NAMES = (
    "cocoa", "grain", "veg-oil", "earn", "acq", "wheat", "copper", "housing", "money-supply",
    "coffee", "sugar", "trade", "reserves", "ship", "cotton", "carcass", "crude", "nat-gas",
    "cpi", "money-fx", "interest", "gnp", "meal-feed", "alum", "oilseed", "gold", "tin",
    "strategic-metal", "livestock", "retail", "ipi", "iron-steel", "rubber", "heat", "jobs",
    "lei", "bop", "zinc", "orange", "pet-chem", "dlr", "gas", "silver", "wpi", "hog", "lead",
)  # fmt: skip


@export("datasets.reuters.load_data")
def load_data(
    path: str = "reuters.npz",
    num_words: int | None = None,
    skip_top: int = 0,
    maxlen: int | None = None,
    test_split: float = 0.2,
    seed: int = 113,
    start_char: int | None = 1,
    oov_char: int | None = 2,
    index_from: int = 3,
):
    """`(x_train, y_train), (x_test, y_test)`; the arguments mean what they mean for
    `imdb.load_data`, and `test_split` is the fraction of the shuffled, filtered sequences kept
    for testing.

    Raises:
      ValueError: `test_split` outside [0, 1], or a malformed file.
      sl.datasets.DownloadError: not cached and not downloadable.
    """
    if not 0 <= test_split <= 1:
        raise ValueError(f"reuters.load_data: test_split must be in [0, 1], got {test_split}.")
    where = files.get_file(path, ORIGIN_FOLDER + "reuters.npz", FILE_HASH)
    arrays = safe_arrays.read_npz(where, allow_objects=True)
    safe_arrays.require(arrays, ("x", "y"), where)
    xs = sequences.as_sequences(arrays["x"], f"{where}:x")
    labels = np.asarray(arrays["y"])
    if len(xs) != len(labels):
        raise ValueError(f"{where}: {len(xs)} sequences but {len(labels)} labels.")
    xs, labels = sequences.shuffled(np.random.RandomState(seed), xs, labels)
    xs = sequences.offset(xs, start_char, index_from)
    xs, labels = sequences.drop_long(xs, labels, maxlen)
    xs = sequences.limit_vocabulary(xs, num_words, skip_top, oov_char)
    cut = int(len(xs) * (1 - test_split))
    return (object_array(xs[:cut]), labels[:cut]), (object_array(xs[cut:]), labels[cut:])


@export("datasets.reuters.get_word_index")
def get_word_index(path: str = "reuters_word_index.json") -> dict[str, int]:
    """The word -> rank index of the Reuters word ids (add `index_from` to compare)."""
    where = files.get_file(path, ORIGIN_FOLDER + "reuters_word_index.json", WORD_INDEX_HASH)
    return sequences.read_word_index(where)


@export("datasets.reuters.get_label_names")
def get_label_names() -> tuple[str, ...]:
    """The 46 topic names, indexed by label."""
    return _LABEL_NAMES
