"""`FileWriter`: TF1's writer of TensorBoard event files, and `FileWriterCache`.

An event file is a TFRecord file of `Event` protocol buffers: first a version record, then
summaries, graphs and session logs, each stamped with its wall time and step. Records go
through a queue to a writer thread, as TF1's do, so `add_summary` does not wait for the disk;
`flush` waits until every queued event is written. The framing and the protos come from
tensorboardX (see `sluice._tf1.summary._protos`); the queue and the thread are ours, because
tensorboardX's `flush` does not wait for the events still queued.

    merged = sl.summary.merge_all()
    writer = sl.summary.FileWriter("logs/run1", sess.graph)
    for step in range(steps):
        summary, _ = sess.run([merged, train_op])
        writer.add_summary(summary, step)
    writer.close()
    # then: tensorboard --logdir logs
"""

from __future__ import annotations

import atexit
import os
import queue
import socket
import threading
import time
import warnings
import weakref
from typing import Any

from sluice._export import export
from sluice._tf1.summary import graph_proto
from sluice._tf1.summary._protos import protos, record_writer
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Graph


class EventFileWriter:
    """Writes `Event` protos to a new event file in `logdir`, from a queue, on a thread (TF1's
    `EventFileWriter`): `add_event` blocks only when `max_queue` events wait; the file is
    flushed every `flush_secs` while events arrive, and on `flush` and `close`."""

    def __init__(
        self,
        logdir: str,
        max_queue: int = 10,
        flush_secs: float = 120,
        filename_suffix: str | None = None,
    ):
        self._protos = protos("sl.summary.FileWriter")
        self._logdir = os.fspath(logdir)
        if os.path.exists(self._logdir) and not os.path.isdir(self._logdir):
            raise FileExistsError(
                f"sl.summary.FileWriter: the logdir {self._logdir} is a file; "
                "expected a folder (or a path where one can be made)."
            )
        os.makedirs(self._logdir, exist_ok=True)
        self._suffix = filename_suffix or ""
        self._flush_secs = flush_secs
        self._queue: queue.Queue = queue.Queue(max_queue)
        self._closed = True
        self._open()

    def _open(self) -> None:
        """A new file, named as TF1 names it, its version record, and the writer thread."""
        stamp, host = int(time.time()), socket.gethostname()
        path = os.path.join(self._logdir, f"events.out.tfevents.{stamp:010d}.{host}{self._suffix}")
        copy = 0
        while os.path.exists(path):  # a second writer in the same second: never overwrite
            copy += 1
            path = os.path.join(
                self._logdir, f"events.out.tfevents.{stamp:010d}.{host}.{copy}{self._suffix}"
            )
        self._path = path
        self._records = record_writer(path)
        first = self._protos.event.Event(wall_time=time.time(), file_version="brain.Event:2")
        self._records.write(first.SerializeToString())
        self._records.flush()
        self._error: OSError | None = None  # what the writer thread could not write
        self._thread = threading.Thread(
            target=self._write_queued, daemon=True, name="sluice-event-writer"
        )
        self._closed = False
        self._thread.start()
        _OPEN_WRITERS.add(self)

    def _write_queued(self) -> None:
        next_flush = time.time() + self._flush_secs
        while True:
            event = self._queue.get()
            try:
                if event is None:  # close() asks the thread to stop
                    return
                if self._error is None:
                    self._records.write(event.SerializeToString())
                    if time.time() > next_flush:
                        self._records.flush()
                        next_flush = time.time() + self._flush_secs
            except OSError as err:  # a full disk: kept for the caller, and the queue drained
                self._error = err
            finally:
                self._queue.task_done()

    def _raise_write_error(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise OSError(f"Writing the event file {self._path} failed: {err}") from err

    def get_logdir(self) -> str:
        return self._logdir

    @property
    def path(self) -> str:
        """The event file written now."""
        return self._path

    def add_event(self, event: Any) -> None:
        """Queues `event`. Raises OSError if an earlier event could not be written."""
        if not self._closed:
            self._raise_write_error()
            self._queue.put(event)

    def flush(self) -> None:
        """Waits until every queued event is written, then flushes the file."""
        if not self._closed:
            self._queue.join()
            self._raise_write_error()
            self._records.flush()

    def close(self) -> None:
        if not self._closed:
            self._queue.put(None)
            self._queue.join()
            self._thread.join()
            self._closed = True
            self._records.close()
            _OPEN_WRITERS.discard(self)
            self._raise_write_error()

    def reopen(self) -> None:
        """After `close`: the next events go to a new file in the same folder."""
        if self._closed:
            self._open()


# Writers still open when the interpreter exits are closed then, so that the events queued for
# the daemon writer thread reach the disk (TF1 loses them; tensorboardX closes at exit too).
_OPEN_WRITERS: "weakref.WeakSet[EventFileWriter]" = weakref.WeakSet()


@atexit.register
def _close_open_writers() -> None:
    for writer in list(_OPEN_WRITERS):
        try:
            writer.close()
        except OSError as err:  # a full disk: said, and the other writers still closed
            warnings.warn(f"sl.summary: closing {writer.path} at exit failed: {err}")


@export("summary.FileWriter")
class FileWriter:
    """Writes summaries, graphs and session logs to an event file in `logdir` for TensorBoard
    (TF1 `tf.summary.FileWriter`). Creating it makes the folder and a new event file; with
    `graph`, the graph is written first (TensorBoard's graph tab). A context manager that
    closes itself; a writer still open when Python exits is closed then, its queued events
    written (TF1 may lose them).

    Args:
      logdir: the folder of the event file.
      graph: a `sl.Graph` to write at once (e.g. `sess.graph`).
      max_queue: events held before `add_*` waits for the writer thread.
      flush_secs: how often, in seconds, the writer thread flushes the file.
      graph_def: a TensorBoard `GraphDef` proto to write (TF1's deprecated argument).
      filename_suffix: appended to the event file's name.
      session: accepted for TF1's signature; TF1 then writes from summary ops in the session,
        sluice always writes from Python, to the same kind of file.

    Raises:
      ImportError: tensorboardX is not installed (`pip install sluice[tensorboard]`).

    >>> import tempfile
    >>> with sl.summary.FileWriter(tempfile.mkdtemp()) as writer:
    ...     writer.add_summary(sl.Session().run(sl.summary.scalar("x", 1.0)), global_step=3)
    """

    def __init__(
        self,
        logdir: str,
        graph: Graph | None = None,
        max_queue: int = 10,
        flush_secs: float = 120,
        graph_def: Any = None,
        filename_suffix: str | None = None,
        session: Any = None,
    ):
        self.event_writer = EventFileWriter(logdir, max_queue, flush_secs, filename_suffix)
        self._protos = protos("sl.summary.FileWriter")
        self._closed = False
        self._seen_summary_tags: set[str] = set()
        self._session_run_tags: set[str] = set()
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    # -- what TF1's SummaryToEventTransformer adds -----------------------------------------------
    def add_summary(self, summary: bytes | Any, global_step: int | None = None) -> None:
        """Writes a `Summary` (the bytes `sess.run(summary_op)` returns, or the proto) at
        `global_step`. Only the first value of each tag keeps its metadata, as in TF1."""
        if isinstance(summary, bytes):
            summary = self._protos.summary.Summary.FromString(summary)
        elif not isinstance(summary, self._protos.summary.Summary):
            raise TypeError(
                f"add_summary takes a serialized Summary (the bytes a summary op "
                f"returns) or a Summary proto, got {type(summary).__name__}."
            )
        else:
            copy = self._protos.summary.Summary()
            copy.CopyFrom(summary)
            summary = copy
        for value in summary.value:
            if not value.HasField("metadata"):
                continue
            if value.tag in self._seen_summary_tags:
                value.ClearField("metadata")
            else:
                self._seen_summary_tags.add(value.tag)
        self._add_event(self._protos.event.Event(summary=summary), global_step)

    def add_graph(
        self, graph: Graph | Any, global_step: int | None = None, graph_def: Any = None
    ) -> None:
        """Writes a graph for TensorBoard's graph tab: a `sl.Graph` (converted with its output
        shapes, see `sluice._tf1.summary.graph_proto`) or a TensorBoard `GraphDef` proto."""
        GraphDef = self._protos.graph.GraphDef
        if isinstance(graph, Graph):
            proto = graph_proto.graph_def(graph, add_shapes=True)
        elif isinstance(graph, GraphDef):
            proto = graph
        elif graph is None and isinstance(graph_def, GraphDef):
            proto = graph_def
        else:
            raise TypeError(
                "The passed graph must be an instance of `sl.Graph` or a "
                f"TensorBoard `GraphDef` proto, got {type(graph or graph_def)}."
            )
        self._add_event(self._protos.event.Event(graph_def=proto.SerializeToString()), global_step)

    def add_session_log(self, session_log: Any, global_step: int | None = None) -> None:
        """Writes a `SessionLog` (`sl.summary.SessionLog(status=SessionLog.START)`, ...)."""
        self._add_event(self._protos.event.Event(session_log=session_log), global_step)

    def _add_event(self, event: Any, step: int | None) -> None:
        self._warn_if_closed()
        event.wall_time = time.time()
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    # -- the file ------------------------------------------------------------------------------
    def add_event(self, event: Any) -> None:
        """Writes an `Event` proto as it is."""
        self._warn_if_closed()
        self.event_writer.add_event(event)

    def get_logdir(self) -> str:
        return self.event_writer.get_logdir()

    def flush(self) -> None:
        """Writes every event added so far to the file."""
        self._warn_if_closed()
        self.event_writer.flush()

    def close(self) -> None:
        """Flushes and closes the file; later events are dropped (with a warning) until
        `reopen`."""
        self.event_writer.close()
        self._closed = True

    def reopen(self) -> None:
        """After `close`: a new event file in the same folder."""
        self.event_writer.reopen()
        self._closed = False

    def _warn_if_closed(self) -> None:
        if self._closed:
            warnings.warn(
                "Attempting to use a closed FileWriter. The operation will be a noop "
                "unless the FileWriter is explicitly reopened.",
                stacklevel=3,
            )

    def __enter__(self) -> "FileWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


@export("summary.FileWriterCache")
class FileWriterCache:
    """One `FileWriter` per folder, shared by whoever writes there (TF1's: hooks and
    `Supervisor` use it so that they do not write competing event files)."""

    _cache: dict[str, FileWriter] = {}
    _lock = threading.RLock()

    @staticmethod
    def get(logdir: str) -> FileWriter:
        """The folder's writer, made (with the default graph) on first use."""
        with FileWriterCache._lock:
            logdir = os.fspath(logdir)
            if logdir not in FileWriterCache._cache:
                FileWriterCache._cache[logdir] = FileWriter(
                    logdir, graph=graph_lib.get_default_graph()
                )
            return FileWriterCache._cache[logdir]

    @staticmethod
    def clear() -> None:
        """Closes and forgets every cached writer."""
        with FileWriterCache._lock:
            for writer in FileWriterCache._cache.values():
                writer.close()
            FileWriterCache._cache = {}
