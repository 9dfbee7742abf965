"""Keras's traceback filtering: an error raised through a Keras entry point (a layer call,
`fit`, `evaluate`, `predict`) keeps the caller's frames and drops sluice's own, so the traceback
ends in the user's code. `sl.config.disable_traceback_filtering()` keeps every frame.

The exception itself (type, message, cause and context) is unchanged; only its `__traceback__`
is shortened: it keeps the outermost entry point's frame (`error_handler`, as Keras's does) and
every frame outside sluice.
"""

from __future__ import annotations

import functools
import os
import types
from collections.abc import Callable
from typing import Any, TypeVar

from sluice._keras import config

F = TypeVar("F", bound=Callable[..., Any])

# the sluice package folder: sluice/_keras/utils/traceback_utils.py -> sluice/
_SLUICE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def is_internal(filename: str) -> bool:
    """Whether a frame of `filename` is sluice's own (and so filtered out)."""
    path = os.path.abspath(filename)
    return path == _SLUICE_DIR or path.startswith(_SLUICE_DIR + os.sep)


def filtered(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The traceback `tb` without sluice's frames (None when all are)."""
    entries = []
    while tb is not None:
        entries.append((tb.tb_frame, tb.tb_lasti, tb.tb_lineno))
        tb = tb.tb_next
    kept = [e for e in entries if not is_internal(e[0].f_code.co_filename)]
    out = None
    for frame, lasti, lineno in reversed(kept):
        out = types.TracebackType(out, frame, lasti, lineno)
    return out


def filter_traceback(fn: F) -> F:
    """`fn`, whose exceptions leave with sluice's frames filtered out of their traceback while
    `sl.config.is_traceback_filtering_enabled()`."""

    @functools.wraps(fn)
    def error_handler(*args: Any, **kwargs: Any) -> Any:
        if not config.is_traceback_filtering_enabled():
            return fn(*args, **kwargs)
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            # the same exception object: its type, message, cause and context are kept
            raise e.with_traceback(filtered(e.__traceback__))  # noqa: B904

    return error_handler  # type: ignore[return-value]
