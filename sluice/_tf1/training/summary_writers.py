"""The one place the training hooks and the Supervisor reach `sl.summary`'s event writers.

Checkpointing must work without the optional TensorBoard extra: where TF1 writes events as a
side effect (the graph, START/CHECKPOINT logs, steps per second), a missing writer library
turns them off with one log line; where the user asked for summaries, it is an ImportError
that says what to install.
"""

from __future__ import annotations

import logging
from typing import Any

from sluice._tf1.summary import proto_class
from sluice._tf1.summary import writer as writer_lib

_logger = logging.getLogger("sluice")
_warned_missing = False


def cached_writer(logdir: str, required: bool = False) -> Any:
    """The FileWriter of `logdir` shared by every hook of the process (TF1's
    `SummaryWriterCache.get`), or None when the writer library is missing and not `required`.
    """
    return _writer(lambda: writer_lib.FileWriterCache.get(logdir), required)


def new_writer(logdir: str, required: bool = False) -> Any:
    """A FileWriter of its own for `logdir` (the Supervisor's), or None as `cached_writer`."""
    return _writer(lambda: writer_lib.FileWriter(logdir), required)


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
    summary_proto = proto_class("Summary")
    proto = summary_proto(value=[summary_proto.Value(tag=tag, simple_value=float(value))])
    writer.add_summary(proto, step)


def _session_log(status: str, **fields: Any) -> Any:
    """A TensorBoard SessionLog proto (`sl.summary.SessionLog`) of `status` ("START", ...)."""
    log_class = proto_class("SessionLog")
    return log_class(status=getattr(log_class, status), **fields)


def add_start_log(writer: Any, step: int | None) -> None:
    writer.add_session_log(_session_log("START"), step)


def add_stop_log(writer: Any) -> None:
    writer.add_session_log(_session_log("STOP"))


def add_checkpoint_log(writer: Any, save_path: str, step: int) -> None:
    log = _session_log("CHECKPOINT", checkpoint_path=save_path)
    writer.add_session_log(log, step)


def add_graph(writer: Any, graph: Any) -> None:
    writer.add_graph(graph)
