"""`keras.utils.timeseries_dataset_from_array`: sliding windows over an array as a `sl.data`
dataset that `fit`, `evaluate` and `predict` read (Keras 3's
`keras/src/utils/timeseries_dataset_utils.py`, its "tf" format).

Window `i` starts at position `p_i = start_positions[i]` of `data[start_index:end_index]` and
holds the rows `p_i, p_i + sampling_rate, ..., p_i + (sequence_length - 1) * sampling_rate`;
its target is `targets[start_index + p_i]`. The start positions are `0, sequence_stride, ...`
below `end_index - start_index - (sequence_length - 1) * sampling_rate` (and below
`len(targets)`). Shuffling permutes them with `np.random.RandomState(seed)`, as Keras does,
then shuffles the windows again with a buffer of `batch_size * 8` (Keras's order after that
second shuffle comes from TensorFlow's generator, so it is not reproduced number for number).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._tf1.data.dataset import Dataset
from sluice.framework.ops.array import gather_ops
from sluice.framework.ops.core import core_ops


def _check(data: Any, start_index, end_index, sampling_rate, sequence_stride) -> None:
    """Keras's argument checks, with its messages."""
    n = len(data)
    if start_index:
        if start_index < 0:
            raise ValueError(
                f"`start_index` must be 0 or greater. Received: start_index={start_index}"
            )
        if start_index >= n:
            raise ValueError(
                "`start_index` must be lower than the length of the data. Received: "
                f"start_index={start_index}, for data of length {n}"
            )
    if end_index:
        if start_index and end_index <= start_index:
            raise ValueError(
                "`end_index` must be higher than `start_index`. Received: "
                f"start_index={start_index}, and end_index={end_index} "
            )
        if end_index >= n:
            raise ValueError(
                "`end_index` must be lower than the length of the data. Received: "
                f"end_index={end_index}, for data of length {n}"
            )
        if end_index <= 0:
            raise ValueError(f"`end_index` must be higher than 0. Received: end_index={end_index}")
    for name, value in (("sampling_rate", sampling_rate), ("sequence_stride", sequence_stride)):
        if value <= 0:
            raise ValueError(f"`{name}` must be higher than 0. Received: {name}={value}")
        if value >= n:
            raise ValueError(
                f"`{name}` must be lower than the length of the data. Received: "
                f"{name}={value}, for data of length {n}"
            )


def start_positions(
    num_rows: int,
    num_targets: int | None,
    sequence_length: int,
    sequence_stride: int,
    sampling_rate: int,
    shuffle: bool,
    seed: int | None,
) -> np.ndarray:
    """The first row (relative to `start_index`) of every window, in the order they are
    given, before the buffer shuffle: Keras's `start_positions`."""
    num_seqs = num_rows - (sequence_length - 1) * sampling_rate
    if num_targets is not None:
        num_seqs = min(num_seqs, num_targets)
    positions = np.arange(0, max(num_seqs, 0), sequence_stride, dtype=np.int64)
    if shuffle:
        np.random.RandomState(seed).shuffle(positions)
    return positions


@export("utils.timeseries_dataset_from_array")
def timeseries_dataset_from_array(
    data: Any,
    targets: Any,
    sequence_length: int,
    sequence_stride: int = 1,
    sampling_rate: int = 1,
    batch_size: int | None = 128,
    shuffle: bool = False,
    seed: int | None = None,
    start_index: int | None = None,
    end_index: int | None = None,
) -> Dataset:
    """A dataset of sliding windows over `data` (see the module docstring).

    Args:
      data: an array of rows (axis 0 is time).
      targets: the target of each window's first row (`targets[i]` for the window starting at
        row `i`), or None for windows alone.
      sequence_length: rows per window.
      sequence_stride: rows between the starts of consecutive windows.
      sampling_rate: rows between the rows of one window.
      batch_size: windows per batch (None: one window per element, unbatched).
      shuffle: whether to shuffle the windows.
      seed: the shuffling seed (None: one drawn from NumPy's global generator, as Keras).
      start_index, end_index: the rows `data[start_index:end_index]` to window.

    Returns:
      A `sl.data.Dataset` of `windows` or `(windows, targets)`: windows of shape
      `(batch, sequence_length) + data.shape[1:]`.

    Raises:
      ValueError: the argument checks of Keras, with its messages.

    >>> ds = sl.utils.timeseries_dataset_from_array(np.arange(10), None, 3, batch_size=2)
    >>> sl.Session().run(ds.make_one_shot_iterator().get_next()).tolist()
    [[0, 1, 2], [1, 2, 3]]
    """
    data = np.asarray(data)
    _check(data, start_index, end_index, sampling_rate, sequence_stride)
    start = start_index or 0
    end = len(data) if end_index is None else end_index
    rows = data[start:end]
    if shuffle and seed is None:
        seed = int(np.random.randint(1_000_000))
    target_rows = None if targets is None else np.asarray(targets)[start:]
    positions = start_positions(
        len(rows),
        None if targets is None else len(targets),
        int(sequence_length),
        int(sequence_stride),
        int(sampling_rate),
        shuffle,
        seed,
    )
    offsets = np.arange(sequence_length, dtype=np.int64) * int(sampling_rate)

    def windows(first: Any) -> Any:
        index = first[..., None] + core_ops.constant(offsets)
        x = gather_ops.gather(core_ops.constant(rows), index)
        if target_rows is None:
            return x
        return x, gather_ops.gather(core_ops.constant(target_rows), first)

    dataset = Dataset.from_tensor_slices(positions)
    if shuffle:  # Keras shuffles the windows, then batches them
        dataset = dataset.shuffle(1024 if batch_size is None else batch_size * 8, seed=seed)
    if batch_size is not None:
        dataset = dataset.batch(int(batch_size))
    return dataset.map(windows)  # one gather per batch: the windows of its start positions
