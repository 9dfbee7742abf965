"""`HostQueue`: the elements of one TF1 queue in one session (FIFO, random-shuffle or padding).

Blocking follows TF1's queue kernels: an enqueue waits while the queue is full, a dequeue of n
waits until n elements are there (a random-shuffle queue keeps `min_after_dequeue` more until it
is closed). Closing wakes everyone: enqueues then fail with CancelledError, dequeues take what is
left and then fail with OutOfRangeError; `dequeue_up_to` returns a smaller final batch.
"""

from __future__ import annotations

import threading

import numpy as np

from sluice.framework.ir import errors
from sluice.framework.ir.tensor_shape import TensorShape

FIFO, RANDOM_SHUFFLE, PADDING_FIFO = "FIFOQueue", "RandomShuffleQueue", "PaddingFIFOQueue"


class HostQueue:
    def __init__(
        self,
        name: str,
        kind: str,
        capacity: int,
        types: list,
        shapes: list,
        min_after_dequeue: int = 0,
        seed: tuple[int, int] = (0, 0),
    ):
        self.name = name
        self.kind = kind
        self.capacity = capacity
        self.types = list(types)
        self.shapes = [TensorShape(s) if not isinstance(s, TensorShape) else s for s in shapes]
        self.min_after_dequeue = min_after_dequeue
        self._rng = np.random.default_rng(list(seed))
        self._items: list[tuple] = []
        self._cond = threading.Condition()
        self._closed = False
        self._cancel_enqueues = False
        self._session_closed = False

    # -- enqueue -------------------------------------------------------------------------------
    def enqueue(self, components: list, many: bool) -> None:
        arrays = [np.asarray(c, t) for c, t in zip(components, self.types)]
        if many:
            sizes = {a.shape[0] if a.ndim else None for a in arrays}
            if len(sizes) != 1 or None in sizes:
                raise errors.InvalidArgumentError(
                    None,
                    None,
                    f"{self.kind} '{self.name}': enqueue_many needs components with "
                    f"one first dimension; got shapes {[a.shape for a in arrays]}.",
                )
            elements = [tuple(a[i] for a in arrays) for i in range(sizes.pop())]
        else:
            elements = [tuple(arrays)]
        for element in elements:
            self._check_shapes(element)
        for element in elements:
            self._put(element)

    def _check_shapes(self, element: tuple) -> None:
        for i, (value, shape) in enumerate(zip(element, self.shapes)):
            if not shape.is_compatible_with(value.shape):
                raise errors.InvalidArgumentError(
                    None,
                    None,
                    f"Shape mismatch in tuple component {i}. Expected {shape}, got "
                    f"{list(value.shape)}",
                )

    def _put(self, element: tuple) -> None:
        with self._cond:
            if self._closed:
                raise errors.CancelledError(None, None, f"{self.kind} '{self.name}' is closed.")
            while 0 <= self.capacity <= len(self._items):  # pending enqueues outlive a close ...
                if self._cancel_enqueues or self._session_closed:  # ... unless cancelled
                    raise errors.CancelledError(
                        None,
                        None,
                        f"{self.kind} '{self.name}' is closed: pending enqueue cancelled.",
                    )
                self._cond.wait()
            self._items.append(element)
            self._cond.notify_all()

    # -- dequeue -------------------------------------------------------------------------------
    def dequeue(self, n: int | None, up_to: bool = False) -> list:
        """One element (n None) or a batch of n stacked along a new first dimension."""
        count = 1 if n is None else n
        with self._cond:
            while True:
                if self._session_closed:
                    raise errors.CancelledError(
                        None, None, f"{self.kind} '{self.name}' was closed with its session."
                    )
                kept = 0 if self._closed else self.min_after_dequeue
                if len(self._items) - kept >= count:
                    break
                if self._closed:
                    if up_to and self._items:
                        count = len(self._items)
                        break
                    raise errors.OutOfRangeError(
                        None,
                        None,
                        f"{self.kind} '{self.name}' is closed and has insufficient "
                        f"elements (requested {count}, current size "
                        f"{len(self._items)})",
                    )
                self._cond.wait()
            taken = [self._take() for _ in range(count)]
            self._cond.notify_all()
        if n is None:
            return list(taken[0])
        return [self._stack([element[i] for element in taken], i) for i in range(len(self.types))]

    def _take(self) -> tuple:
        if self.kind == RANDOM_SHUFFLE:
            index = int(self._rng.integers(len(self._items)))
            self._items[index], self._items[-1] = self._items[-1], self._items[index]
            return self._items.pop()
        return self._items.pop(0)

    def _stack(self, parts: list, component: int) -> np.ndarray:
        if not parts:  # dequeue_many(0): an empty batch, as in TF1
            dims = [0 if d is None else d for d in (self.shapes[component].dims or [])]
            return np.zeros([0] + dims, self.types[component])
        if self.kind != PADDING_FIFO:
            return np.stack(parts)
        longest = np.max([p.shape for p in parts], axis=0) if parts[0].ndim else ()
        out = np.zeros((len(parts),) + tuple(longest), dtype=self.types[component])
        for j, part in enumerate(parts):
            out[(j,) + tuple(slice(0, s) for s in part.shape)] = part
        return out

    # -- state ---------------------------------------------------------------------------------
    def size(self) -> int:
        with self._cond:
            return len(self._items)

    def has_room(self, count: int) -> bool:
        """Whether `count` more elements fit now (an enqueue of them would not wait)."""
        with self._cond:
            return self.capacity < 0 or len(self._items) + count <= self.capacity

    def is_closed(self) -> bool:
        with self._cond:
            return self._closed

    def close_queue(self, cancel_pending_enqueues: bool = False) -> None:
        """TF1's QueueClose: later enqueues fail; pending ones still wait for room unless
        `cancel_pending_enqueues`; dequeues take what is left."""
        with self._cond:
            self._closed = True
            self._cancel_enqueues = self._cancel_enqueues or cancel_pending_enqueues
            self._cond.notify_all()

    def close(self) -> None:
        """The session closes: every blocked caller fails with CancelledError."""
        with self._cond:
            self._session_closed = True
            self._closed = self._cancel_enqueues = True
            self._cond.notify_all()
