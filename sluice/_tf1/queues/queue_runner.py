"""`QueueRunner`: threads that keep running a queue's enqueue ops (TF1 `tf.train.QueueRunner`).

Each thread calls `sess.run(enqueue_op)` in a loop, as TF1's do. When an enqueue fails with
OutOfRangeError (its input ran out: `limit_epochs`, a closed upstream queue) the last thread
closes the queue, so its consumers drain it and then get OutOfRangeError themselves. Any other
error is reported to the coordinator. With a coordinator, one more thread waits for its stop
request and cancels the queue (closing it with its pending enqueues), so no thread stays blocked
on a full queue.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from sluice._export import export
from sluice.framework.graph_def.meta_graph import register_collection_type
from sluice.framework.ir import errors
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.default_session import get_default_session
from sluice.framework.ir.graph import Operation
from sluice.framework.ops.host.host_ops import interpreter_exiting, register_host_thread

QUEUE_RUNNERS = "queue_runners"  # TF1's GraphKeys.QUEUE_RUNNERS

_logger = logging.getLogger("sluice")


@export("train.QueueRunner")
class QueueRunner:
    """Args:
    queue: the queue the enqueue ops fill (a `FIFOQueue`, ...).
    enqueue_ops: the ops to run, one thread each (the same op twice: two threads).
    close_op: run when the input ends (default `queue.close()`).
    cancel_op: run when the coordinator stops (default
      `queue.close(cancel_pending_enqueues=True)`).
    queue_closed_exception_types: errors that mean the input has ended (default
      OutOfRangeError).
    """

    def __init__(
        self,
        queue: Any = None,
        enqueue_ops: list[Operation] | None = None,
        close_op: Operation | None = None,
        cancel_op: Operation | None = None,
        queue_closed_exception_types: Any = None,
        queue_runner_def: Any = None,
        import_scope: str | None = None,
    ):
        if queue_runner_def is not None:
            raise NotImplementedError(
                "QueueRunner(queue_runner_def=...): queue runners are not "
                "saved in meta graphs; build the input pipeline again."
            )
        if queue is None or not enqueue_ops:
            raise ValueError("QueueRunner needs a queue and at least one enqueue op.")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = (
            cancel_op if cancel_op is not None else queue.close(cancel_pending_enqueues=True)
        )
        self._exception_types = tuple(queue_closed_exception_types or (errors.OutOfRangeError,))
        self._lock = threading.Lock()
        self._runs_per_session: dict[Any, int] = {}
        self._exceptions_raised: list[BaseException] = []

    @property
    def queue(self) -> Any:
        return self._queue

    @property
    def enqueue_ops(self) -> list[Operation]:
        return list(self._enqueue_ops)

    @property
    def close_op(self) -> Operation:
        return self._close_op

    @property
    def cancel_op(self) -> Operation:
        return self._cancel_op

    @property
    def queue_closed_exception_types(self) -> tuple:
        return self._exception_types

    @property
    def exceptions_raised(self) -> list[BaseException]:
        """Errors the threads hit when they ran without a coordinator."""
        return list(self._exceptions_raised)

    @property
    def name(self) -> str:
        return self._queue.name

    def _run(self, sess: Any, enqueue_op: Operation, coord: Any) -> None:
        decremented = False
        try:
            while True:
                if coord is not None and coord.should_stop():
                    break
                try:
                    sess.run(enqueue_op)
                except self._exception_types:
                    with self._lock:  # the input has ended: the last thread closes the queue
                        self._runs_per_session[sess] -= 1
                        decremented = True
                        if self._runs_per_session[sess] == 0:
                            try:
                                sess.run(self._close_op)
                            except (errors.OpError, RuntimeError) as err:
                                _logger.debug("Ignored exception closing a queue: %s", err)
                    return
        except Exception as err:  # noqa: BLE001 (reported to the coordinator, as in TF1)
            if interpreter_exiting():  # its session's queues were closed at exit: end quietly
                return
            if coord is not None:
                coord.request_stop(err)
            else:
                _logger.error("Exception in QueueRunner: %s", err)
                with self._lock:
                    self._exceptions_raised.append(err)
                raise
        finally:
            if not decremented:
                with self._lock:
                    self._runs_per_session[sess] -= 1

    def _close_on_stop(self, sess: Any, coord: Any) -> None:
        coord.wait_for_stop()
        try:
            sess.run(self._cancel_op)
        except (errors.OpError, RuntimeError) as err:  # the session may be closed already
            _logger.debug("Ignored exception cancelling a queue: %s", err)

    def create_threads(
        self, sess: Any, coord: Any = None, daemon: bool = False, start: bool = False
    ) -> list[threading.Thread]:
        """One thread per enqueue op (plus a cancelling one with a coordinator), registered with
        `coord`; started if `start`. Returns [] while threads of this runner still run in
        `sess`."""
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        threads = [
            threading.Thread(
                target=self._run,
                args=(sess, op, coord),
                daemon=daemon,
                name=f"QueueRunner:{self.name}:{i}",
            )
            for i, op in enumerate(self._enqueue_ops)
        ]
        for t in threads:  # they run steps: the interpreter's exit waits for them to leave
            register_host_thread(t)
        if coord is not None:
            threads.append(
                threading.Thread(
                    target=self._close_on_stop,
                    args=(sess, coord),
                    daemon=daemon,
                    name=f"QueueRunner:{self.name}:stop",
                )
            )
        for t in threads:
            if coord is not None:
                coord.register_thread(t)
            if start:
                t.start()
        return threads


# -- in meta graphs (TF1 keeps a QueueRunnerDef): resuming from the files restarts the runners --
def _encode(qr: QueueRunner) -> dict:
    return {
        "queue": qr.queue.name,
        "enqueue_ops": [op.name for op in qr.enqueue_ops],
        "close_op": qr.close_op.name,
        "cancel_op": qr.cancel_op.name,
        "queue_closed_exception_types": [e.__name__ for e in qr.queue_closed_exception_types],
    }


def _decode(value: Any, imported: Any) -> QueueRunner:
    if not isinstance(value, dict) or not isinstance(value.get("enqueue_ops"), list):
        raise TypeError(f"a QueueRunner record needs a list of enqueue_ops, got {value!r:.100}")
    kinds = []
    for name in value.get("queue_closed_exception_types", []):
        kind = getattr(errors, name, None) if isinstance(name, str) else None
        if not (isinstance(kind, type) and issubclass(kind, errors.OpError)):
            raise TypeError(f"{name!r} is not an sl.errors error type")
        kinds.append(kind)
    enqueue_ops = [imported.operation(n) for n in value["enqueue_ops"]]
    if not enqueue_ops:
        raise TypeError("a QueueRunner record needs at least one enqueue op")
    queue = _ImportedQueue(str(value.get("queue")))
    return QueueRunner(
        queue,
        enqueue_ops,
        imported.operation(value["close_op"]),
        imported.operation(value["cancel_op"]),
        kinds or None,
    )


class _ImportedQueue:
    """The queue of a QueueRunner read from a meta graph: its ops are in the graph already."""

    def __init__(self, name: str):
        self.name = name


register_collection_type("queue_runner", QueueRunner, _encode, _decode)


@export("train.add_queue_runner")
def add_queue_runner(qr: QueueRunner, collection: str = QUEUE_RUNNERS) -> None:
    """Adds `qr` to the graph's queue runners, which `start_queue_runners` starts."""
    graph_lib.get_default_graph().add_to_collection(collection, qr)


@export("train.start_queue_runners")
def start_queue_runners(
    sess: Any = None,
    coord: Any = None,
    daemon: bool = True,
    start: bool = True,
    collection: str = QUEUE_RUNNERS,
) -> list[threading.Thread]:
    """Starts the threads of every queue runner of `sess`'s graph; returns them.

    Raises:
      ValueError: no session given and none is the default.
    """
    if sess is None:
        sess = get_default_session()
        if sess is None:
            raise ValueError(
                "Cannot start queue runners: No default session is registered. Use "
                "`with sess.as_default()` or pass an explicit session to "
                "sl.train.start_queue_runners(sess=sess)"
            )
    threads = []
    for qr in sess.graph.get_collection(collection):
        threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
