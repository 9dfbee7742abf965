"""`sl.logging`: TF1's `tf.logging`, on Python's `logging` with the logger named "sluice".

sluice's own modules log to the same logger, so `set_verbosity` governs them too, as TF1's
verbosity governs TensorFlow's messages. Output as TF1 prints it: the first use adds a handler
writing `LEVEL:sluice:message` to stderr (stdout and INFO in an interactive session), unless
the program has configured the root logger itself. The default verbosity is Python's default,
WARN: `sl.logging.info` prints only after `sl.logging.set_verbosity(sl.logging.INFO)`.
"""

from __future__ import annotations

import logging as _logging
import sys as _sys
import threading as _threading
from typing import Any

from sluice._export import export

__all__ = [
    "DEBUG",
    "ERROR",
    "FATAL",
    "INFO",
    "WARN",
    "WARNING",
    "debug",
    "error",
    "fatal",
    "flush",
    "get_logger",
    "get_verbosity",
    "info",
    "log",
    "log_every_n",
    "log_first_n",
    "log_if",
    "set_verbosity",
    "vlog",
    "warn",
    "warning",
]

# TF1's levels are Python's
DEBUG = _logging.DEBUG
INFO = _logging.INFO
WARN = _logging.WARN
WARNING = _logging.WARNING
ERROR = _logging.ERROR
FATAL = _logging.FATAL
for _level in ("DEBUG", "INFO", "WARN", "WARNING", "ERROR", "FATAL"):
    export(f"logging.{_level}")(globals()[_level])

_LOGGER_NAME = "sluice"
_lock = _threading.Lock()
_configured = False
_counts: dict[tuple[str, int], int] = {}


@export("logging.get_logger")
def get_logger() -> _logging.Logger:
    """The "sluice" logger, given TF1's stderr handler on first use (see the module doc)."""
    global _configured
    logger = _logging.getLogger(_LOGGER_NAME)
    if _configured:
        return logger
    with _lock:
        if not _configured:
            if not _logging.getLogger().handlers:  # the program has not configured logging
                interactive = hasattr(_sys, "ps1") or bool(_sys.flags.interactive)
                if interactive and logger.level == _logging.NOTSET:
                    logger.setLevel(INFO)
                handler = _logging.StreamHandler(_sys.stdout if interactive else _sys.stderr)
                handler.setFormatter(_logging.Formatter(_logging.BASIC_FORMAT))
                logger.addHandler(handler)
            _configured = True
    return logger


@export("logging.log")
def log(level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
    """Logs `msg % args` at `level`."""
    kwargs.setdefault("stacklevel", 2)
    get_logger().log(level, msg, *args, **kwargs)


@export("logging.debug")
def debug(msg: Any, *args: Any, **kwargs: Any) -> None:
    kwargs.setdefault("stacklevel", 2)
    get_logger().debug(msg, *args, **kwargs)


@export("logging.info")
def info(msg: Any, *args: Any, **kwargs: Any) -> None:
    kwargs.setdefault("stacklevel", 2)
    get_logger().info(msg, *args, **kwargs)


@export("logging.warn", "logging.warning")
def warning(msg: Any, *args: Any, **kwargs: Any) -> None:
    kwargs.setdefault("stacklevel", 2)
    get_logger().warning(msg, *args, **kwargs)


warn = warning


@export("logging.error")
def error(msg: Any, *args: Any, **kwargs: Any) -> None:
    kwargs.setdefault("stacklevel", 2)
    get_logger().error(msg, *args, **kwargs)


@export("logging.fatal")
def fatal(msg: Any, *args: Any, **kwargs: Any) -> None:
    """Logs at FATAL; like TF1's, it does not end the program."""
    kwargs.setdefault("stacklevel", 2)
    get_logger().critical(msg, *args, **kwargs)


@export("logging.vlog")
def vlog(level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
    """`log` under TF1's other name."""
    kwargs.setdefault("stacklevel", 2)
    get_logger().log(level, msg, *args, **kwargs)


@export("logging.log_if")
def log_if(level: int, msg: Any, condition: Any, *args: Any) -> None:
    """Logs `msg % args` at `level` when `condition` is true."""
    if condition:
        get_logger().log(level, msg, *args, stacklevel=2)


def _next_count(depth: int) -> int:
    """How often the line `depth` frames up called before (0 the first time)."""
    frame = _sys._getframe(depth)
    key = (frame.f_code.co_filename, frame.f_lineno)
    with _lock:
        _counts[key] = _counts.get(key, -1) + 1
        return _counts[key]


@export("logging.log_every_n")
def log_every_n(level: int, msg: Any, n: int, *args: Any) -> None:
    """Logs on the 1st, (n+1)th, (2n+1)th, ... call from the same line."""
    if not (_next_count(2) % n):
        get_logger().log(level, msg, *args, stacklevel=2)


@export("logging.log_first_n")
def log_first_n(level: int, msg: Any, n: int, *args: Any) -> None:
    """Logs on the first `n` calls from the same line only."""
    if _next_count(2) < n:
        get_logger().log(level, msg, *args, stacklevel=2)


@export("logging.get_verbosity")
def get_verbosity() -> int:
    """The effective level of the "sluice" logger (WARN unless set)."""
    return get_logger().getEffectiveLevel()


@export("logging.set_verbosity")
def set_verbosity(v: int) -> None:
    """Shows messages at level `v` and above (`sl.logging.INFO`, ...)."""
    get_logger().setLevel(v)


@export("logging.flush")
def flush() -> None:
    """Flushes the handlers' streams."""
    for handler in get_logger().handlers:
        handler.flush()
