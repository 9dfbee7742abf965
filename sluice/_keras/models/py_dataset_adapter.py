"""A `keras.utils.PyDataset` read by `fit`, `evaluate` and `predict`: it becomes a `sl.data`
dataset of its batches (`as_dataset`), so the dataset loops (`dataset_loops`) read it as any
other, one batch ahead on a background thread.

Each pass over it is one epoch, as Keras's `PyDatasetAdapter`: `on_epoch_begin()`, the batches
(`__getitem__`, in the order `random.Random(epoch).shuffle` gives when shuffling), then
`on_epoch_end()`. A batch that is an array is `(x,)`, a list a tuple; a dict is `x`.
Its dtypes and shapes (but for the batch axis) are read from batch 0.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import numpy as np

from sluice._keras.utils.py_dataset import PyDataset
from sluice._tf1.data import structure
from sluice._tf1.data.dataset import INFINITE, Dataset, IterationContext
from sluice._tf1.data.structure import Spec


def is_py_dataset(x: Any) -> bool:
    return isinstance(x, PyDataset)


def standardize_batch(batch: Any) -> Any:
    """Keras's `_standardize_batch`: an array is `(x,)`, a list a tuple; a dict stays.

    Raises:
      ValueError: a batch that is not a dict or a tuple of 1 to 3 items.
    """
    if isinstance(batch, dict):
        return batch
    if isinstance(batch, np.ndarray):
        batch = (batch,)
    if isinstance(batch, list):
        batch = tuple(batch)
    if not isinstance(batch, tuple) or len(batch) not in (1, 2, 3):
        raise ValueError(
            "PyDataset.__getitem__() must return a tuple or a dict. If a tuple, it must be "
            "ordered either (input,) or (inputs, targets) or (inputs, targets, sample_weights). "
            f"Received: {str(batch)[:100]}... of type {type(batch)}"
        )
    return batch


class PyDatasetBatches(Dataset):
    """The batches of a PyDataset as a `sl.data` dataset (one pass per epoch)."""

    def __init__(self, py_dataset: PyDataset, shuffle: bool):
        self.py_dataset = py_dataset
        self.shuffle = bool(shuffle)
        self.epoch = 0
        self._count = py_dataset.num_batches
        if self._count == 0:
            raise ValueError(f"The PyDataset {py_dataset!r} is empty: it has no batches.")
        first = standardize_batch(py_dataset[0])
        leaves = [np.asarray(leaf) for leaf in structure.flatten(first)]
        self.spec = Spec.of(
            structure.map_structure(lambda _: None, first),
            [leaf.dtype for leaf in leaves],
            [[None, *leaf.shape[1:]] if leaf.ndim else [] for leaf in leaves],
        )

    def _cardinality(self) -> int:
        return INFINITE if self._count is None else int(self._count)

    def _elements(self, ctx: IterationContext) -> Iterator[tuple]:
        self.py_dataset.on_epoch_begin()
        if self._count is None:
            order: Any = _endless()
        else:
            order = list(range(self._count))
            if self.shuffle:
                random.Random(self.epoch).shuffle(order)
        for index in order:
            if ctx.stop.is_set():
                return
            batch = standardize_batch(self.py_dataset[index])
            leaves = structure.flatten(batch)
            yield tuple(np.asarray(leaf, dtype=t) for leaf, t in zip(leaves, self.spec.types))
        self.py_dataset.on_epoch_end()
        self.epoch += 1


def _endless() -> Iterator[int]:
    index = 0
    while True:
        yield index
        index += 1


def as_dataset(x: Any, shuffle: bool = False) -> Any:
    """`x` as a `sl.data` dataset when it is a PyDataset, else `x` itself."""
    return PyDatasetBatches(x, shuffle) if is_py_dataset(x) else x
