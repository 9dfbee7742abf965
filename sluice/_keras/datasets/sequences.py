"""What IMDB and Reuters share: word-id sequences read from an object array, shuffled, offset,
filtered by length and vocabulary, in Keras's order (offset, then length, then vocabulary)."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

__all__ = ["as_sequences", "drop_long", "limit_vocabulary", "offset", "read_word_index", "shuffled"]


def as_sequences(array: Any, where: str) -> list[list[int]]:
    """The rows of a ragged object array as lists of non-negative ints (checked: the file is
    untrusted)."""
    sequences = []
    for i, row in enumerate(array):
        if not isinstance(row, (list, tuple, np.ndarray)):
            raise ValueError(f"{where}: row {i} is a {type(row).__name__}, not a sequence.")
        seq = row.tolist() if isinstance(row, np.ndarray) and row.dtype.kind in "iu" else list(row)
        if not all(type(w) is int for w in seq):  # Keras's rows hold ints; NumPy ints pass too
            bad = next((w for w in seq if not _is_integer(w)), None)
            if bad is not None:
                raise ValueError(
                    f"{where}: row {i} holds {bad!r} ({type(bad).__name__}), not an integer "
                    "word index."
                )
            seq = [int(w) for w in seq]
        if any(w < 0 for w in seq):
            raise ValueError(f"{where}: row {i} holds a negative word index.")
        sequences.append(seq)
    return sequences


def _is_integer(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def shuffled(rng: np.random.RandomState, *arrays: Any) -> list:
    """The arrays in one shared random order (Keras's `rng.shuffle(indices)`)."""
    indices = np.arange(len(arrays[0]))
    rng.shuffle(indices)
    return [[a[i] for i in indices] if isinstance(a, list) else a[indices] for a in arrays]


def offset(xs: list[list[int]], start_char: int | None, index_from: int) -> list[list[int]]:
    """Every word id plus `index_from`, after a leading `start_char` (when not None)."""
    head = [] if start_char is None else [start_char]
    return [head + [w + index_from for w in x] for x in xs]


def drop_long(xs: list[list[int]], labels: np.ndarray, maxlen: int | None) -> tuple:
    """The sequences shorter than `maxlen` (all when it is None or 0), with their labels."""
    if not maxlen:
        return xs, labels
    kept = [i for i, x in enumerate(xs) if len(x) < maxlen]
    return [xs[i] for i in kept], labels[kept]


def limit_vocabulary(
    xs: list[list[int]], num_words: int | None, skip_top: int, oov_char: int | None
) -> list[list[int]]:
    """Ids outside [skip_top, num_words) become `oov_char` (or go when it is None).

    `num_words` None means the largest id present, which Keras's rule then excludes too.
    """
    if not num_words:
        num_words = max((max(x) for x in xs if x), default=0)
    if oov_char is not None:
        return [[w if skip_top <= w < num_words else oov_char for w in x] for x in xs]
    return [[w for w in x if skip_top <= w < num_words] for x in xs]


def read_word_index(path: str) -> dict[str, int]:
    """A word index file: a JSON object of word -> int (checked)."""
    try:
        with open(path, encoding="utf-8") as f:
            index = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise ValueError(f"{path} is not a JSON word index ({type(e).__name__}: {e}).") from None
    if not isinstance(index, dict) or not all(
        isinstance(k, str) and _is_integer(v) for k, v in index.items()
    ):
        raise ValueError(f"{os.path.basename(path)} is not a JSON object of word -> int index.")
    return index
