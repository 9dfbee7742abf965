"""The batches `adapt(data)` reads, as Keras 3's preprocessing layers take them: a NumPy array
or array-like (one batch), a `sl.data` dataset (each element a batch; of `(x, ...)` tuples,
`x`), a `keras.utils.PyDataset`, or any iterable of batches (a list of arrays, a generator)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from sluice._keras.utils.py_dataset import PyDataset
from sluice._tf1.data.dataset import Dataset
from sluice._tf1.data.iterators import host_elements


def first_part(batch: Any) -> Any:
    """`x` of an `(x, y)` or `(x, y, sample_weight)` batch; the batch itself otherwise."""
    return batch[0] if isinstance(batch, tuple) else batch


def is_single_array(data: Any) -> bool:
    """Whether `data` is one batch (an array, a Keras weight or value) rather than batches."""
    if isinstance(data, np.ndarray):
        return True
    return hasattr(data, "__array__") and not isinstance(data, (list, tuple, Dataset, PyDataset))


def batches(data: Any, steps: int | None = None, what: str = "adapt") -> Iterator[np.ndarray]:
    """The batches of `data` as NumPy arrays (at most `steps` of them).

    Raises:
      TypeError: data of another kind.
    """
    if is_single_array(data):
        yield np.asarray(data)
        return
    if isinstance(data, Dataset):
        source: Any = host_elements(data)
    elif isinstance(data, PyDataset) or hasattr(data, "__iter__"):
        source = iter(data)
    else:
        raise TypeError(
            f"{what}: unsupported data type {type(data).__name__}; pass a NumPy array, a "
            "sl.data.Dataset, a keras.utils.PyDataset or an iterable of batches."
        )
    for i, batch in enumerate(source):
        if steps is not None and i >= steps:
            return
        yield np.asarray(first_part(batch))
