"""Where Keras's messages go: stdout while interactive logging is on (the default), the
"sluice" logger at INFO level once `sl.config.disable_interactive_logging()` was called (Keras
sends them to absl's logging)."""

from __future__ import annotations

import logging
import sys

from sluice._keras import config

LOGGER_NAME = "sluice"  # the logger of sl.logging (TF1's tf.logging), see sluice/_tf1/logging.py


def print_msg(message: str, line_break: bool = True) -> None:
    """Writes `message` to stdout (and a newline unless `line_break` is False), or logs it."""
    message = str(message)
    if config.is_interactive_logging_enabled():
        sys.stdout.write(message + "\n" if line_break else message)
        sys.stdout.flush()
    else:
        logging.getLogger(LOGGER_NAME).info(message.rstrip("\n"))
