"""The one place the training hooks and the Supervisor reach `sl.summary`'s event writers.

Checkpointing must work without the optional TensorBoard extra: where TF1 writes events as a
side effect (the graph, START/CHECKPOINT logs, steps per second), a missing writer library
turns them off with one log line; where the user asked for summaries, it is an ImportError
that says what to install.
"""

from __future__ import annotations

import logging
from typing import Any

from sluice import summary

_logger = logging.getLogger("sluice")
_warned_missing = False


def cached_writer(logdir: str, required: bool = False) -> Any:
    """The FileWriter of `logdir` shared by every hook of the process (TF1's
    `SummaryWriterCache.get`), or None when the writer library is missing and not `required`.
    """
    return _writer(lambda: summary.FileWriterCache.get(logdir), required)


def new_writer(logdir: str, required: bool = False) -> Any:
    """A FileWriter of its own for `logdir` (the Supervisor's), or None as `cached_writer`."""
    return _writer(lambda: summary.FileWriter(logdir), required)


def _writer(make: Any, required: bool) -> Any:
    global _warned_missing
    try:
        return make()
    except ImportError:
        if required:
            raise
        if not _warned_missing:
            _warned_missing = True
            _logger.info(
                "sluice: no TensorBoard events (graph, session logs, steps/sec) are "
                "written next to the checkpoints: `pip install sluice[tensorboard]`."
            )
        return None


def add_scalar(writer: Any, tag: str, value: float, step: int | None) -> None:
    """Writes one scalar computed in Python (steps/sec) as a Summary."""
    proto = summary.Summary(value=[summary.Summary.Value(tag=tag, simple_value=float(value))])
    writer.add_summary(proto, step)


def add_start_log(writer: Any, step: int | None) -> None:
    writer.add_session_log(summary.SessionLog(status=summary.SessionLog.START), step)


def add_stop_log(writer: Any) -> None:
    writer.add_session_log(summary.SessionLog(status=summary.SessionLog.STOP))


def add_checkpoint_log(writer: Any, save_path: str, step: int) -> None:
    log = summary.SessionLog(status=summary.SessionLog.CHECKPOINT, checkpoint_path=save_path)
    writer.add_session_log(log, step)


def add_graph(writer: Any, graph: Any) -> None:
    writer.add_graph(graph)
