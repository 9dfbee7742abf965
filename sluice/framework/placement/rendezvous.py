"""The rendezvous of one run: where a Send leaves a value and its Recv collects it.

A key is the cut edge's (source device, destination device, tensor name) and the tag of the
value: the frame instances and iterations it lies in, from the outermost loop in, e.g.
`(("while", 0), ("while/inner", 3))` for iteration 3 of the inner loop started by iteration 0 of
the outer one. Partitions create their frames independently, but the same Enters fire in the same
order, so both ends compute the same tag, and no two iterations (in flight together under
`parallel_iterations`) share a key. Each key is sent once and received once.

A Recv never blocks its executor: `recv` leaves the receiver's token and where to deliver it,
and the value is delivered at once when it is there, else by the Send that brings it (on the
sender's thread). `abort` stops the run: later sends are dropped and nothing is delivered again.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from sluice.framework.ir import errors


class Rendezvous:
    """A per-run table of sent values and waiting receivers, shared by the partitions' threads."""

    def __init__(self):
        self._lock = threading.Lock()
        self._values: dict[tuple, tuple[Any, bool]] = {}
        self._waiting: dict[tuple, tuple[Callable[[tuple], None], tuple]] = {}
        self._aborted = False

    def send(self, key: tuple, value: Any, is_dead: bool) -> None:
        """Deposits `(value, is_dead)` under `key`, or hands it to the Recv already waiting."""
        with self._lock:
            if self._aborted:
                return
            waiter = self._waiting.pop(key, None)
            if waiter is None:
                if key in self._values:
                    raise errors.InternalError(None, None, f"Two sends of one key: {key}.")
                self._values[key] = (value, is_dead)
                return
        deliver, token = waiter
        deliver((*token, value, is_dead))

    def recv(self, key: tuple, deliver: Callable[[tuple], None], token: tuple) -> None:
        """Calls `deliver((*token, value, is_dead))` once the value under `key` has been sent
        (`deliver` is typically the receiver's queue's append: no closure per value)."""
        with self._lock:
            if self._aborted:
                return
            item = self._values.pop(key, None)
            if item is None:
                if key in self._waiting:
                    raise errors.InternalError(None, None, f"Two receives of one key: {key}.")
                self._waiting[key] = (deliver, token)
                return
        deliver((*token, *item))

    def abort(self) -> None:
        with self._lock:
            self._aborted = True
            self._values.clear()
            self._waiting.clear()

    def pending(self) -> tuple[int, int]:
        """(values sent and not received, receivers waiting): both 0 after a clean run, since a
        loop's Recvs fire in its last, dead iteration too (the control loop's Merge is live)."""
        with self._lock:
            return len(self._values), len(self._waiting)
