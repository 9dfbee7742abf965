"""`BufferedElements`: a pipeline's elements made ahead on a daemon thread (`prefetch`, and every
iterator's one-element lookahead)."""

from __future__ import annotations

import queue
import threading
from typing import Iterator

from sluice._tf1.data.dataset import Element
from sluice.framework.ir import errors
from sluice.framework.ir.x64 import with_x64
from sluice.framework.ops.host.host_ops import register_host_thread


class BufferedElements:
    """The elements of `source`, made up to `size` ahead by a daemon thread.

    The thread stops when the consumer closes this iterator (or is collected), when `stop` is
    set (the iterator is re-initialised or its session closes), or at the end; an exception in
    `source` is raised to the consumer in its place in the sequence.
    """

    _POLL = 0.05  # seconds between checks of the stop signals while the buffer is full

    def __init__(self, source: Iterator[Element], size: int, stop: threading.Event):
        self._buffer: queue.Queue = queue.Queue(maxsize=size)
        self._stop = stop
        self._done = threading.Event()
        self._finished = False
        self._thread = threading.Thread(
            target=self._produce, args=(source,), daemon=True, name="sluice-data-prefetch"
        )
        register_host_thread(self._thread)
        self._thread.start()

    def _put(self, item: tuple) -> bool:
        while not (self._stop.is_set() or self._done.is_set()):
            try:
                self._buffer.put(item, timeout=self._POLL)
                return True
            except queue.Full:
                continue
        return False

    @with_x64  # a thread of its own: it enters sluice's JAX setting itself (see `ir.x64`)
    def _produce(self, source: Iterator[Element]) -> None:
        try:
            for element in source:
                if not self._put(("element", element)):
                    return
            self._put(("end", None))
        except BaseException as err:  # noqa: BLE001 (handed to the consumer, raised there)
            self._put(("error", err))
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()

    def __iter__(self) -> "BufferedElements":
        return self

    def __next__(self) -> Element:
        if self._finished:
            raise StopIteration
        while True:
            if self._stop.is_set():
                self.close()
                raise errors.CancelledError(
                    None, None, "The iterator was re-initialized or its session closed."
                )
            try:
                kind, value = self._buffer.get(timeout=self._POLL)
                break
            except queue.Empty:
                continue
        if kind == "element":
            return value
        self.close()
        if kind == "error":
            raise value
        raise StopIteration

    def close(self) -> None:
        self._finished = True
        self._done.set()

    def __del__(self) -> None:
        self._done.set()
