"""The rendezvous of one run: where a Send leaves a value and its Recv collects it.

A key is the cut edge's (source device, destination device, tensor name) and the tag of the
value: the frame instances and iterations it lies in, from the outermost loop in, e.g.
`(("while", 0), ("while/inner", 3))` for iteration 3 of the inner loop started by iteration 0 of
the outer one. Partitions create their frames independently, but the same Enters fire in the same
order, so both ends compute the same tag, and no two iterations (in flight together under
`parallel_iterations`) share a key. Each key is sent once and received once.

The rendezvous is a `Mailbox` per receiving partition. A Send `put`s its value there: when its
Recv already waits and the sender may run the receiving partition's bookkeeping (the receiver's
lock was free: no turn of it runs; or the sender's thread holds it, `holder`; or one thread runs
every partition, no lock), the value goes to the Recv at once; else
`(key, value, is_dead)` is appended to the receiver's `inbox` (a deque: appending is safe from
any thread, and takes no lock), and the receiving partition, on its own turn (one thread at a
time runs a partition), matches what came against its Recvs: a Recv takes its value from
`values` when it is already there, else notes itself in `waiting` (the executor does both
inline, 3 times per iteration of a loop split in two), and `arrived` pairs what came since the
last turn with the Recvs that wait for it. The matching takes no thread switch. `abort` stops the
run: nothing is matched again.
"""

from __future__ import annotations

import collections
import threading
from typing import Any

from sluice.framework.ir import errors


class Mailbox:
    """One receiving partition's end of the rendezvous: `inbox` (appended by senders on any
    thread), and the values come before their Recv and the Recvs come before their value (both
    touched only by the thread running the partition's turn)."""

    __slots__ = (
        "inbox",
        "values",
        "waiting",
        "aborted",
        "receive",
        "lock",
        "driven",
        "arrive",
        "holder",
    )

    def __init__(self):
        self.inbox: collections.deque = collections.deque()
        self.values: dict[tuple, tuple[Any, bool]] = {}
        self.waiting: dict[tuple, Any] = {}
        self.aborted = False
        # How `put` hands a value to a Recv that waits for it, at once: `receive(token, value,
        # is_dead)`, under `lock` (the receiving partition's: None when one thread runs all
        # partitions). None: every value waits in the inbox for the receiver's turn.
        self.receive: Any = None
        self.lock: Any = None
        # Keys (less the tag) of values that make their iteration when they come, and of
        # end-of-frame messages (a sender-driven loop, see `partitioner.SenderDriven`): handed to
        # `arrive((node, tag), value, is_dead)`, in the order each sender sent them.
        self.driven: dict[tuple, Any] = {}
        self.arrive: Any = None
        # The thread that holds `lock` and may hand values over at once (None: none may): one
        # whose turn of one partition runs another's work, while it holds both
        # (`partitioned._Turns.help_others`).
        self.holder: int | None = None

    def put(self, edge: Any, tag: tuple, value: Any, dead: bool) -> None:
        """A Send's value, under key `(edge, tag)`: handed to its Recv at once when the Recv
        already waits and no other thread runs the receiving partition (handing it over only
        queues the Recv's consumers: no kernel runs), else left in the inbox for the receiver's
        next turn."""
        if self.receive is not None and (self.waiting or self.driven) and not self.aborted:
            lock = self.lock
            held = lock is None or self.holder == threading.get_ident()
            if held or lock.acquire(blocking=False):
                try:  # the matching inline: this runs once per value crossing devices
                    if self.driven:
                        node = self.driven.get(edge)
                        if node is not None and not self.inbox:  # after what came before it
                            self.arrive((node, tag), value, dead)  # never waited for
                            return
                    token = self.waiting.pop((edge, tag), None)
                    if token is not None:
                        self.receive(token, value, dead)
                        return
                finally:
                    if not held:
                        lock.release()
        self.inbox.append(((edge, tag), value, dead))

    def arrived(self) -> list[tuple[Any, Any, Any, bool]]:
        """What has come since the last call for Recvs that wait for it or for sender-driven
        loops: (`receive` or `arrive`, token, value, is_dead); the rest is kept for its Recv."""
        inbox, waiting, values, driven = self.inbox, self.waiting, self.values, self.driven
        ready = []
        while inbox:
            key, value, dead = inbox.popleft()
            if self.aborted:
                continue
            token = waiting.pop(key, None)
            if token is not None:
                ready.append((self.receive, token, value, dead))
            elif driven and key[0] in driven:
                ready.append((self.arrive, (driven[key[0]], key[1]), value, dead))
            elif key in values:
                raise errors.InternalError(None, None, f"Two sends of one key: {key}.")
            else:
                values[key] = (value, dead)
        return ready


class Rendezvous:
    """A run's mailboxes, one per partition (`mailbox(i)`)."""

    def __init__(self):
        self.boxes: list[Mailbox] = []

    def mailbox(self, index: int) -> Mailbox:
        """Partition `index`'s mailbox (made on first request)."""
        while len(self.boxes) <= index:
            self.boxes.append(Mailbox())
        return self.boxes[index]

    def abort(self) -> None:
        for box in self.boxes:
            box.aborted = True
            box.inbox.clear()

    def pending(self) -> tuple[int, int]:
        """(values sent and not received, receivers waiting): both 0 after a clean run, since a
        loop's Recvs fire in its last, dead iteration too (the control loop's Merge is live)."""
        sent = sum(len(box.values) + len(box.inbox) for box in self.boxes)
        return sent, sum(len(box.waiting) for box in self.boxes)
