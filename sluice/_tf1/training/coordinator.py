"""`Coordinator` and `LooperThread` (TF1 `tf.train.Coordinator`): threads that stop together.

    coord = sl.train.Coordinator()
    threads = [threading.Thread(target=work, args=(coord,)) for _ in range(4)]
    for t in threads: t.start()
    coord.join(threads)     # returns when they stop; re-raises the first error one reported

A thread that fails calls `request_stop(exc)` (or runs under `stop_on_exception()`): every
thread sees `should_stop()`, and `join` re-raises that first error in the joining thread.
OutOfRangeError (the end of the input) stops the threads cleanly, without an error.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from typing import Any, Callable, Iterator

from sluice._export import export
from sluice.framework.ir import errors

_logger = logging.getLogger("sluice")


@export("train.Coordinator")
class Coordinator:
    """Stop requests and error reports shared by a set of threads.

    Args:
      clean_stop_exception_types: errors that stop the threads without being re-raised by
        `join` (default: OutOfRangeError).
    """

    def __init__(self, clean_stop_exception_types: Any = None):
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise: tuple | None = None
        self._joined = False
        self._registered_threads: set[threading.Thread] = set()

    def request_stop(self, ex: BaseException | tuple | None = None) -> None:
        """Asks every thread to stop; the first error reported (an exception, or an exc_info
        tuple) is re-raised by `join`.

        Raises:
          the error itself when reported after `join` returned.
        """
        with self._lock:
            ex = self._filter_exception(ex)
            if self._joined and ex is not None:  # nobody is left to re-raise it
                _, value, traceback = _exc_info_of(ex)
                raise value.with_traceback(traceback)
            if self._stop_event.is_set():
                return
            if ex is not None and self._exc_info_to_raise is None:
                exc_info = _exc_info_of(ex)
                _logger.info("Error reported to Coordinator: %s", exc_info[1])
                self._exc_info_to_raise = exc_info
            self._stop_event.set()

    def _filter_exception(self, ex: Any) -> Any:
        value = ex[1] if isinstance(ex, tuple) else ex
        return None if isinstance(value, self._clean_stop_exception_types) else ex

    def clear_stop(self) -> None:
        """Forgets the stop request and the error, so threads can run again."""
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            self._stop_event.clear()

    def should_stop(self) -> bool:
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self) -> Iterator[None]:
        """Reports any error raised in the block (and swallows it) with `request_stop`."""
        try:
            yield
        except Exception:  # reported, and re-raised by join in the joining thread
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout: float | None = None) -> bool:
        """Waits up to `timeout` seconds (forever when None) for a stop; True if stopped."""
        return self._stop_event.wait(timeout if timeout is None else max(timeout, 0.0))

    def register_thread(self, thread: threading.Thread) -> None:
        """Adds a thread for `join` to wait for."""
        with self._lock:
            self._registered_threads.add(thread)

    def join(
        self,
        threads: Any = None,
        stop_grace_period_secs: float = 120,
        ignore_live_threads: bool = False,
    ) -> None:
        """Waits until the threads (and the registered ones) end or a stop is requested, then
        gives them `stop_grace_period_secs` to end.

        Raises:
          the first error reported with request_stop.
          RuntimeError: threads still alive after the grace period (unless
            ignore_live_threads).
        """
        with self._lock:
            threads = list(self._registered_threads.union(threads or ()))
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(1.0):
            pass
        wait, left = 0.001, stop_grace_period_secs
        while any(t.is_alive() for t in threads) and left >= 0.0:
            time.sleep(wait)
            left -= wait
            wait = max(min(2 * wait, left), 0.001)
        stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            if self._exc_info_to_raise:
                _, value, traceback = self._exc_info_to_raise
                raise value.with_traceback(traceback)
            if stragglers:
                message = "Coordinator stopped with threads still running: " + " ".join(stragglers)
                if not ignore_live_threads:
                    raise RuntimeError(message)
                _logger.info(message)

    @property
    def joined(self) -> bool:
        return self._joined

    def raise_requested_exception(self) -> None:
        """Raises the error reported with request_stop, if any."""
        with self._lock:
            if self._exc_info_to_raise:
                _, value, traceback = self._exc_info_to_raise
                raise value.with_traceback(traceback)


def _exc_info_of(ex: Any) -> tuple:
    if isinstance(ex, tuple):
        return ex
    return (type(ex), ex, ex.__traceback__)


@export("train.LooperThread")
class LooperThread(threading.Thread):
    """A daemon thread that calls `run_loop()` (or `target(*args, **kwargs)`) every
    `timer_interval_secs` seconds, the first time at once, back to back when None, until the
    coordinator stops; an error stops the coordinator.

    Raises:
      ValueError: coord is not a Coordinator, or args/kwargs without a target.
    """

    def __init__(
        self,
        coord: Coordinator,
        timer_interval_secs: float | None,
        target: Callable | None = None,
        args: Any = None,
        kwargs: Any = None,
    ):
        if not isinstance(coord, Coordinator):
            raise ValueError(f"'coord' argument must be a Coordinator: {coord}")
        super().__init__(daemon=True)
        self._coord = coord
        self._timer_interval_secs = timer_interval_secs
        self._target = target
        if target is None and (args or kwargs):
            raise ValueError("'args' and 'kwargs' argument require that you also pass 'target'")
        self._args = tuple(args or ())
        self._kwargs = dict(kwargs or {})
        coord.register_thread(self)

    @staticmethod
    def loop(
        coord: Coordinator,
        timer_interval_secs: float | None,
        target: Callable,
        args: Any = None,
        kwargs: Any = None,
    ) -> "LooperThread":
        """Starts a LooperThread calling `target`; returns it."""
        looper = LooperThread(coord, timer_interval_secs, target=target, args=args, kwargs=kwargs)
        looper.start()
        return looper

    def run(self) -> None:
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._timer_interval_secs is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                next_time = time.time()
                while not self._coord.wait_for_stop(next_time - time.time()):
                    next_time += self._timer_interval_secs
                    self.run_loop()
            self.stop_loop()

    def start_loop(self) -> None:
        """Called once in the thread before the first run_loop."""

    def stop_loop(self) -> None:
        """Called once in the thread after the last run_loop."""

    def run_loop(self) -> None:
        if self._target is not None:
            self._target(*self._args, **self._kwargs)
