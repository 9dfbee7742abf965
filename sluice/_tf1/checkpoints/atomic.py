"""Crash-safe file replacement: write a temporary file beside the target, fsync, rename.

A process killed at any instant leaves either the old file or the complete new one at `path`
(`os.replace` is atomic within a directory), plus at most a temporary file. Temporary names carry
their owner's pid, a tag of its machine and PID namespace, and a random token
(`.<target>.tmp-<pid>.<machine>-<token>`), so two processes writing the same target never touch
each other's file, and a temporary file is removed by another process only when it is provably
stale: its owner, a process of the same machine and PID namespace, is dead
(`is_stale_temporary`, `remove_stale_temporaries`). A pid from another machine sharing the
directory (NFS) or another container means nothing here: such a file is never removed.

Every byte goes to the disk through `os.write` from Python, never from a C library such as
HDF5 (h5py files are built in memory first): a full disk is then an `OSError` naming the target,
not a crash inside the library (HDF5 segfaults when a write fails with ENOSPC or EFBIG).
Imports only the standard library (see `checkpoint_state`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import os
import re
import secrets
import socket
import stat
import threading
from collections.abc import Callable
from typing import BinaryIO

_MARKER = ".tmp-"
# Keeps a temporary name under NAME_MAX (255 bytes) whatever the target's name.
_MAX_BASE_CHARS = 120
# "<pid>.<machine>-<token>"; names without the machine tag were written by earlier versions.
_OWNER = re.compile(re.escape(_MARKER) + r"(\d{1,10})(?:\.([0-9a-f]{8}))?-[0-9a-f]{8,32}$")

# The temporary files this process is writing now: never stale, whatever their pid says.
_in_flight: set[str] = set()
_in_flight_lock = threading.Lock()


def _hidden_base(base: str) -> str:
    return "." + base[:_MAX_BASE_CHARS]


@functools.lru_cache(maxsize=None)
def machine_tag() -> str:
    """8 hex digits naming this machine (its host name) and PID namespace: the pids that
    `pid_alive` can judge."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    identity = f"{socket.gethostname()}\0{namespace}".encode("utf-8", "surrogateescape")
    return hashlib.sha256(identity).hexdigest()[:8]


def temporary_name(path: str) -> str:
    """A hidden, unique file name in the directory of `path`, owned by this process."""
    directory, base = os.path.split(os.path.abspath(path))
    owner = f"{os.getpid()}.{machine_tag()}"
    name = f"{_hidden_base(base)}{_MARKER}{owner}-{secrets.token_hex(8)}"
    return os.path.join(directory, name)


def is_temporary(filename: str, target_base: str = "", exact: bool = False) -> bool:
    """Whether `filename` (a base name) is a temporary file of a target whose name starts with
    `target_base` (is `target_base`, when `exact`)."""
    hidden = _hidden_base(target_base)
    if not filename.startswith(hidden):
        return False
    if exact:
        return _OWNER.fullmatch(filename[len(hidden) :]) is not None
    return _OWNER.search(filename) is not None


def temporary_owner(filename: str) -> int | None:
    """The pid in a temporary file's name, or None when it is not one."""
    match = _OWNER.search(filename)
    return int(match.group(1)) if match else None


def is_stale_temporary(directory: str, filename: str) -> bool:
    """Whether a temporary file may be removed: its owner process is dead, or it is this
    process's and no longer being written. Never one of another machine or PID namespace."""
    match = _OWNER.search(filename)
    if match is None or match.group(2) not in (None, machine_tag()):
        return False
    owner = int(match.group(1))
    if owner == os.getpid():
        with _in_flight_lock:
            return os.path.join(os.path.abspath(directory), filename) not in _in_flight
    return not pid_alive(owner)


def remove_stale_temporaries(directory: str, target_base: str, exact: bool = False) -> None:
    """Removes the stale temporary files (`is_stale_temporary`) of the targets in `directory`
    named like `target_base` (see `is_temporary`): regular files only, never a link."""
    for name in os.listdir(directory or "."):
        if is_temporary(name, target_base, exact) and is_stale_temporary(directory, name):
            path = os.path.join(directory, name)
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISREG(os.lstat(path).st_mode):
                    os.remove(path)


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this machine (a zombie counts as alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # no such process; a pid no process can have
        return False
    except PermissionError:  # another user's process
        return True
    return True


def fsync_path(path: str) -> None:
    """Flushes a file's (or a directory's) data to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: str, write: Callable[[str], None]) -> None:
    """Calls `write(temporary_path)`, flushes it to disk and renames it onto `path`.

    `write` should create the temporary file exclusively (open mode "x", h5py mode "w-"): the
    name is unique, so an existing file there was planted.
    """
    tmp = temporary_name(path)
    with _in_flight_lock:
        _in_flight.add(tmp)
    try:
        write(tmp)
        fsync_path(tmp)
        os.replace(tmp, path)
    except BaseException as err:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        if isinstance(err, OSError) and err.errno is not None:
            raise _naming(err, path) from err
        raise
    finally:
        with _in_flight_lock:
            _in_flight.discard(tmp)
    with contextlib.suppress(OSError):  # some file systems cannot fsync a directory
        fsync_path(os.path.dirname(os.path.abspath(path)))


def _naming(err: OSError, path: str) -> OSError:
    """`err` (ENOSPC from a write to the temporary file, ...) as an error naming the target; the
    same OSError subclass and errno."""
    reason = err.strerror or str(err)
    # str(): "[Errno 28] Could not write (No space left on device); ...: '<path>'"
    return OSError(
        err.errno, f"Could not write ({reason}); an earlier file there is unchanged", path
    )


class _Descriptor(io.RawIOBase):
    """A file written with `os.write` and `os.lseek`: each failure is a Python OSError."""

    def __init__(self, fd: int):
        self._fd = fd

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:
        return os.write(self._fd, data)

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return os.lseek(self._fd, offset, whence)

    def tell(self) -> int:
        return os.lseek(self._fd, 0, os.SEEK_CUR)

    def fileno(self) -> int:
        return self._fd

    def close(self) -> None:
        if not self.closed:
            super().close()
            os.close(self._fd)


def write_stream_atomically(path: str, write: Callable[[BinaryIO], None]) -> None:
    """`write_atomically`, with `write` given the temporary file open for writing (buffered,
    seekable: a `zipfile.ZipFile` can write into it)."""

    def write_file(tmp: str) -> None:
        # O_EXCL: the unique name must be new (an existing file there was planted)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        raw = _Descriptor(os.open(tmp, flags, 0o666))
        try:
            with io.BufferedWriter(raw) as fh:
                write(fh)
        finally:
            raw.close()  # also when flushing the buffer failed

    write_atomically(path, write_file)


def write_bytes_atomically(path: str, data: bytes | memoryview) -> None:
    """`write_atomically` of a file whose whole content is `data`."""
    write_stream_atomically(path, lambda fh: fh.write(data))
