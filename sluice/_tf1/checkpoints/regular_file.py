"""Reading a user's file only when it is a regular file.

Opening a FIFO for reading waits for a writer, forever if none comes; a device can be endless;
a symbolic link in a run directory can point anywhere. Every reader of checkpoints, state files,
meta graphs, weights and `.keras` files opens the path with `open_regular` (or checks it with
`check_regular`) before anything else touches it. The open never blocks (O_NONBLOCK) and the
check is made on the opened file (`fstat`), so a path swapped after a check is not read.
Imports only the standard library (see `checkpoint_state`).
"""

from __future__ import annotations

import os
import stat

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


class NotRegularFileError(OSError):
    """The path names a FIFO, a device, a socket, a directory, or (where refused) a symlink."""


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refusal(path: str, mode: int) -> NotRegularFileError:
    return NotRegularFileError(
        f"{path!r} is {_kind(mode)}, not a regular file; sluice reads and writes regular files "
        "(reading this one could block forever or never end)."
    )


def open_regular(path: str, follow_symlinks: bool = True) -> int:
    """A read-only, blocking file descriptor of `path`, which must be a regular file.

    Args:
      follow_symlinks: False refuses a symbolic link instead of opening what it points to.

    Raises:
      NotRegularFileError: `path` is a FIFO, device, socket or directory (or a symlink, with
        follow_symlinks False); the message names it.
      OSError: it cannot be opened (FileNotFoundError when there is none).
    """
    path = os.fspath(path)
    nofollow = 0 if follow_symlinks else getattr(os, "O_NOFOLLOW", 0)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | nofollow
    try:
        fd = os.open(path, flags)
    except OSError as err:  # ELOOP (a refused symlink), ENXIO (a socket), ...
        try:
            mode = os.stat(path, follow_symlinks=follow_symlinks).st_mode
        except OSError:
            raise err from None
        if not stat.S_ISREG(mode):
            raise _refusal(path, mode) from err
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _refusal(path, mode)
        os.set_blocking(fd, True)  # O_NONBLOCK only kept the open from waiting
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_regular(path: str, follow_symlinks: bool = True) -> None:
    """Raises as `open_regular` does unless `path` is a regular file (opened, then closed)."""
    os.close(open_regular(path, follow_symlinks))


def read_regular(path: str, limit: int, follow_symlinks: bool = True) -> bytes:
    """At most `limit` bytes from the start of the regular file `path` (see `open_regular`)."""
    with os.fdopen(open_regular(path, follow_symlinks), "rb") as fh:
        return fh.read(limit)


def same_file(fd: int, path: str) -> str:
    """A path that opens the very file `fd` holds (Linux's /proc/self/fd/N), for a library that
    opens by name (h5py, HDF5): a file swapped in at `path` after the check is never opened.
    Where the system has no such path, `path` itself."""
    proc = f"/proc/self/fd/{fd}"
    return proc if os.path.exists(proc) else path
