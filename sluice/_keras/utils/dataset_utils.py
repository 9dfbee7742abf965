"""`keras.utils.split_dataset` (Keras 3's `keras/src/utils/dataset_utils.py`) for arrays, tuples
or lists of arrays and unbatched `sl.data` datasets: two `sl.data` datasets of samples."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from sluice._export import export
from sluice._tf1.cells import nest
from sluice._tf1.data.dataset import Dataset
from sluice._tf1.data.iterators import host_elements


def split_sizes(left_size: Any, right_size: Any, total: int) -> tuple[int, int]:
    """(left, right) sample counts from sizes given as ints (counts), floats (fractions of
    `total`, rounded) or None (the complement), with Keras's checks and messages."""
    for name, size in (("left_size", left_size), ("right_size", right_size)):
        if size is not None and type(size) not in (int, float):
            raise TypeError(
                f"Invalid `{name}` Type. Expected: int or float or None, Received: "
                f"type({name})={type(size)}."
            )
    if left_size is None and right_size is None:
        raise ValueError(
            "At least one of the `left_size` or `right_size` must be specified. Received: "
            "left_size=None and right_size=None"
        )
    if left_size == 0 and right_size == 0:
        raise ValueError(
            "Both `left_size` and `right_size` are zero. At least one of the split sizes must "
            "be non-zero."
        )
    for name, size in (("left_size", left_size), ("right_size", right_size)):
        if (type(size) is int and not 0 < size < total) or (
            type(size) is float and not 0 < size < 1
        ):
            raise ValueError(
                f"`{name}` should be either a positive integer smaller than {total}, or a "
                f"float within the range `[0, 1]`. Received: {name}={size}"
            )
    if type(left_size) is float and type(right_size) is float and left_size + right_size > 1:
        raise ValueError(
            "The sum of `left_size` and `right_size` is greater than 1. It must be less than "
            "or equal to 1."
        )
    left = round(left_size * total) if type(left_size) is float else left_size
    right = round(right_size * total) if type(right_size) is float else right_size
    left = total - right if left is None else left
    right = total - left if right is None else right
    if left + right > total:
        raise ValueError(
            f"The sum of `left_size` and `right_size` should be smaller than the {total}. "
            f"Received: left_size + right_size = {left + right}and total_length = {total}"
        )
    for split, side in ((left, "left"), (right, "right")):
        if split == 0:
            raise ValueError(
                f"With `dataset` of length={total}, `left_size`={left} and "
                f"`right_size`={right}.Resulting {side} side dataset split will be empty. "
                "Adjust any of the aforementioned parameters"
            )
    return int(left), int(right)


def _as_samples(dataset: Any) -> tuple[Any, int]:
    """(a structure of arrays whose first axis is the sample, the number of samples)."""
    if isinstance(dataset, Dataset):
        elements = list(host_elements(dataset))
        if not elements:
            raise ValueError("split_dataset: the dataset is empty.")
        columns = zip(*[nest.flatten(e) for e in elements])
        structure = nest.pack_sequence_as(elements[0], [np.stack(c) for c in columns])
        return structure, len(elements)
    if isinstance(dataset, np.ndarray):
        return dataset, len(dataset)
    if isinstance(dataset, (list, tuple)) and dataset:
        arrays = tuple(np.asarray(a) for a in dataset)
        lengths = {len(a) for a in arrays}
        if len(lengths) != 1:
            raise ValueError(
                "split_dataset: the arrays of a list or tuple must have the same length, got "
                f"lengths {[len(a) for a in arrays]}."
            )
        return arrays, lengths.pop()
    raise TypeError(
        "The `dataset` argument must be either a `sl.data.Dataset` object, or a list/tuple "
        f"of arrays. Received: dataset={dataset!r} of type {type(dataset)}"
    )


@export("utils.split_dataset")
def split_dataset(
    dataset: Any,
    left_size: Any = None,
    right_size: Any = None,
    shuffle: bool = False,
    seed: int | None = None,
) -> tuple[Dataset, Dataset]:
    """Splits samples into a left and a right `sl.data.Dataset` (e.g. train and test).

    Args:
      dataset: an array, a list or tuple of arrays of one length (each element a tuple of
        their rows), or an unbatched `sl.data.Dataset`.
      left_size, right_size: an int (samples), a float in (0, 1) (a fraction of the samples,
        rounded) or None (the rest); at least one is given.
      shuffle: whether to shuffle the samples before splitting, with Python's
        `random.Random(seed)` (the permutation of Keras's `random.seed(seed)` and
        `random.shuffle`, without touching the global generator).
      seed: the shuffling seed (None: a random one).

    Returns:
      (left, right): datasets of the first `left` and the last `right` samples.

    Raises:
      TypeError, ValueError: Keras's checks of the dataset and the sizes.

    >>> left, right = sl.utils.split_dataset(np.arange(10), left_size=0.8)
    >>> right.output_shapes, right.static_cardinality()
    (TensorShape([]), 2)
    """
    samples, total = _as_samples(dataset)
    left, right = split_sizes(left_size, right_size, total)
    order = list(range(total))
    if shuffle:
        random.Random(random.randint(0, int(1e6)) if seed is None else seed).shuffle(order)
    order = np.asarray(order, dtype=np.int64)
    pieces = []
    for index in (order[:left], order[total - right :]):
        part = nest.map_structure(lambda a, i=index: np.asarray(a)[i], samples)
        pieces.append(Dataset.from_tensor_slices(part))
    return pieces[0], pieces[1]
