"""`keras.utils.PyDataset` (and its Keras 2 name `keras.utils.Sequence`): batches written in
Python, which `fit`, `evaluate` and `predict` read (Keras 3's
`keras/src/trainers/data_adapters/py_dataset_adapter.py`; the reading is in
`sluice/_keras/models/py_dataset_adapter.py`)."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterator
from typing import Any

from sluice._export import export


@export("utils.PyDataset", "utils.Sequence")
class PyDataset:
    """A dataset of batches: subclasses implement `__getitem__(index)` (the batch at `index`:
    `x`, `(x,)`, `(x, y)` or `(x, y, sample_weight)`, arrays or dicts of arrays) and `__len__`
    (the number of batches) or the property `num_batches` (None: an endless dataset), and
    may implement `on_epoch_begin` and `on_epoch_end` (called around each pass, e.g. to
    shuffle the samples). `fit(shuffle=True)`, its default, visits the batches of epoch `e`
    in the order `random.Random(e)` shuffles them, as Keras does; evaluate and predict read
    them in order.

    Args:
      workers, use_multiprocessing, max_queue_size: Keras's parallel reading options; they
        are kept (sluice reads one batch ahead on one background thread whatever they say).

    >>> class Squares(sl.utils.PyDataset):
    ...     def __len__(self):
    ...         return 3
    ...     def __getitem__(self, index):
    ...         x = np.full((2, 1), index, np.float32)
    ...         return x, x**2
    >>> model = sl.Sequential([sl.Input((1,)), sl.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> len(model.fit(Squares(), epochs=2, verbose=0).history["loss"])
    2
    """

    def __init__(
        self, workers: int = 1, use_multiprocessing: bool = False, max_queue_size: int = 10
    ):
        self._workers = workers
        self._use_multiprocessing = use_multiprocessing
        self._max_queue_size = max_queue_size

    def _warn_if_super_not_called(self) -> None:
        missing = False
        for name, default in (
            ("_workers", 1),
            ("_use_multiprocessing", False),
            ("_max_queue_size", 10),
        ):
            if not hasattr(self, name):
                setattr(self, name, default)
                missing = True
        if missing:
            warnings.warn(
                "Your `PyDataset` class should call `super().__init__(**kwargs)` in its "
                "constructor. `**kwargs` can include `workers`, `use_multiprocessing`, "
                "`max_queue_size`. Do not pass these arguments to `fit()`, as they will be "
                "ignored.",
                stacklevel=3,
            )

    @property
    def workers(self) -> int:
        self._warn_if_super_not_called()
        return self._workers

    @workers.setter
    def workers(self, value: int) -> None:
        self._workers = value

    @property
    def use_multiprocessing(self) -> bool:
        self._warn_if_super_not_called()
        return self._use_multiprocessing

    @use_multiprocessing.setter
    def use_multiprocessing(self, value: bool) -> None:
        self._use_multiprocessing = value

    @property
    def max_queue_size(self) -> int:
        self._warn_if_super_not_called()
        return self._max_queue_size

    @max_queue_size.setter
    def max_queue_size(self, value: int) -> None:
        self._max_queue_size = value

    def __getitem__(self, index: int) -> Any:
        """The batch at position `index`."""
        raise NotImplementedError(f"{type(self).__name__} must implement `__getitem__`.")

    @property
    def num_batches(self) -> int | None:
        """The number of batches (`len(self)` by default), or None for an endless dataset."""
        if hasattr(self, "__len__"):
            return len(self)
        raise NotImplementedError(
            "You need to implement the `num_batches` property:\n\n"
            "@property\ndef num_batches(self):\n  return ..."
        )

    def __iter__(self) -> Iterator[Any]:
        """The batches in order (endless when `num_batches` is None or not implemented)."""
        try:
            count = self.num_batches
        except NotImplementedError:
            count = None
        for index in itertools.count() if count is None else range(count):
            yield self[index]

    def on_epoch_begin(self) -> None:
        """Called at the beginning of every epoch."""

    def on_epoch_end(self) -> None:
        """Called at the end of every epoch."""
