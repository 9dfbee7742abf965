"""Faults the file tests inject: a full disk for one target's writes, and a deadline that fails a
test whose read would block forever (a FIFO)."""

import contextlib
import errno
import os
import signal


def fail_writes_to(monkeypatch, target: str) -> None:
    """Makes every os.write to a temporary file of `target` (a base name) fail with ENOSPC, as a
    full disk does; writes to other files go through."""
    real_write = os.write

    def write(fd, data):
        name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
        if name.startswith(f".{target}.tmp-"):  # atomic.temporary_name's form
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)


class Blocked(Exception):  # not an OSError: readers that catch those must not swallow it
    pass


@contextlib.contextmanager
def deadline(seconds: int = 10):
    """Fails the test instead of hanging it when a read blocks."""

    def expire(*_):
        raise Blocked(f"blocked for {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)  # again each second till cancelled
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
