"""Reading untrusted JSON: a size limit, JSON only (no NaN or Infinity tokens), bounded nesting."""

from __future__ import annotations

import json
from typing import Any

# A graph of a million nodes is well under this; a larger file was not written by sluice.
MAX_FILE_BYTES = 1 << 30


def _no_constant(name: str) -> None:
    raise ValueError(f"the non-JSON constant {name} is not allowed")


def parse_json(text: str | bytes, what: str, limit: int = MAX_FILE_BYTES) -> Any:
    """The JSON value of `text`; ValueError naming `what` for anything that is not plain JSON
    under `limit` bytes."""
    if not isinstance(text, (str, bytes, bytearray)):
        raise TypeError(f"A {what} is JSON text (str or bytes), got {type(text).__name__}.")
    if len(text) > limit:
        raise ValueError(f"The {what} is {len(text)} bytes, more than the limit of {limit}.")
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError(f"The {what} nests too deeply to be a sluice file.") from None
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"The {what} is not valid JSON: {err}") from None


def read_file(path: str, what: str, limit: int = MAX_FILE_BYTES) -> Any:
    """The JSON value of the regular file at `path`, its size checked on the opened file (a
    file swapped after a check is not read; a FIFO or device is never read: it could block or
    never end)."""
    import os
    import stat

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"The {what} {path!r} is not a regular file.")
        if info.st_size > limit:
            raise ValueError(
                f"The {what} {path!r} is {info.st_size} bytes, more than the limit of {limit}."
            )
        chunks, size = [], 0
        while size <= limit:  # the file may grow after the check
            chunk = os.read(fd, min(1 << 24, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    return parse_json(b"".join(chunks), f"{what} {path!r}", limit)  # errors name the file
