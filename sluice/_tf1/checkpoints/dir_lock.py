"""An advisory lock per checkpoint directory, serialising savers across threads and processes.

    with dir_lock.locked("ckpt"):
        ...  # write a checkpoint, read-modify-write checkpoint.json, delete old checkpoints

The lock is `fcntl.flock` on a hidden lock file in the directory (`.checkpoint.json.lock` for the
default state file); the kernel releases it when its holder dies, even by SIGKILL. It is
reentrant within a process (a thread that holds it may take it again) and safe against the lock
file being deleted by its holder: a waiter that wakes up holding a deleted file's lock retries.
Without `fcntl` (Windows) it only serialises the threads of one process.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None


class _Holder:
    """This process's hold on one directory's lock: a reentrant thread lock, the fd and depth."""

    def __init__(self) -> None:
        self.thread_lock = threading.RLock()
        self.fd: int | None = None
        self.depth = 0


_holders: dict[str, _Holder] = {}
_holders_guard = threading.Lock()


def lock_filename(state_filename: str) -> str:
    """The lock file's name for a state file's name."""
    return f".{state_filename}.lock"


@contextlib.contextmanager
def locked(directory: str, state_filename: str = "checkpoint.json") -> Iterator[None]:
    """Holds the directory's lock (blocking until it is free) for the `with` body."""
    path = os.path.join(os.path.realpath(directory), lock_filename(state_filename))
    with _holders_guard:
        holder = _holders.setdefault(path, _Holder())
    with holder.thread_lock:
        if holder.depth == 0:
            holder.fd = _acquire(path)
        holder.depth += 1
        try:
            yield
        finally:
            holder.depth -= 1
            if holder.depth == 0:
                fd, holder.fd = holder.fd, None
                if fd is not None:
                    os.close(fd)  # closing the last descriptor releases the flock


def _acquire(path: str) -> int | None:
    if fcntl is None:  # pragma: no cover - Windows
        return None
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                current = os.stat(path, follow_symlinks=False)
            except FileNotFoundError:
                current = None
            held = os.fstat(fd)
            if current is not None and (current.st_ino, current.st_dev) == (
                held.st_ino,
                held.st_dev,
            ):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # the file was deleted (or replaced) while we waited: lock the new one
