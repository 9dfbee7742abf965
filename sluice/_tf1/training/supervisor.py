"""`Supervisor` (TF1 `tf.train.Supervisor`): a Coordinator, a Saver and a SessionManager for
the training scripts written before MonitoredTrainingSession.

    sv = sl.train.Supervisor(logdir="runs/x")
    with sv.managed_session() as sess:       # restored from runs/x, or initialized
        while not sv.should_stop():
            sess.run(train_op)

In the `with` block, background threads save a checkpoint every save_model_secs (the first
at once), and write the summary op and global steps/sec every save_summaries_secs. Leaving the
block stops and joins them and closes the session; an error raised in the block or by a
thread is raised again then, except OutOfRangeError (the end of the input), which ends it
cleanly. As in TF1, there is no extra checkpoint on exit: save one with `sv.saver.save(sess,
path, global_step=sv.global_step)` to keep the last steps.

The session handed out is a `SerializedSession` (see `supervisor_services`): the services'
runs and the training loop's take turns, since a sluice session must not run two steps on the
same variables at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from typing import Any, Iterator

from sluice._export import export
from sluice._keras.optimizers.training_util import global_step as read_global_step
from sluice._tf1.cells.variable_collections import tables_initializer
from sluice._tf1.checkpoints.meta_graph import write_graph
from sluice._tf1.checkpoints.saver import Saver
from sluice._tf1.summary import ops as summary
from sluice._tf1.training import summary_writers
from sluice._tf1.training.coordinator import Coordinator, LooperThread
from sluice._tf1.training.session_manager import SessionManager
from sluice._tf1.training.supervisor_services import (
    SerializedSession,
    SVStepCounterThread,
    SVSummaryThread,
    SVTimerCheckpointThread,
)
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Graph, GraphKeys
from sluice.framework.ops.core import core_ops
from sluice.framework.variable_updates import report_uninitialized_variables
from sluice.framework.variables import (
    global_variables,
    global_variables_initializer,
    local_variables_initializer,
)

_logger = logging.getLogger("sluice")
QUEUE_RUNNERS = "queue_runners"  # TF1's GraphKeys.QUEUE_RUNNERS


class _UseDefault:
    def __repr__(self) -> str:
        return "Supervisor.USE_DEFAULT"


@export("train.Supervisor")
class Supervisor:
    """Initializes or restores a session, checkpoints and writes summaries on a timer, and
    stops its threads together (see the module docstring).

    Each USE_DEFAULT piece is taken from its graph collection, else built: ready_op
    (report_uninitialized_variables), init_op (global_variables_initializer), local_init_op
    (local variables and tables), saver (a Saver when there are variables), summary_op
    (sl.summary.merge_all(), None without summaries), global_step (the GLOBAL_STEP collection,
    else an integer tensor named "global_step:0"). Pass None to do without one.

    Only the chief (is_chief) initializes, checkpoints into logdir and writes summaries; other
    processes wait for a ready model. The graph is finalized here.

    >>> w = sl.Variable(1.0)
    >>> step = sl.train.get_or_create_global_step()
    >>> train_op = sl.train.GradientDescentOptimizer(0.1).minimize(sl.square(w), global_step=step)
    >>> sv = sl.train.Supervisor(logdir="sv_run", save_model_secs=0)
    >>> with sv.managed_session() as sess:
    ...     for _ in range(3):
    ...         _ = sess.run(train_op)
    ...     print(sv.saver.save(sess, sv.save_path, global_step=sv.global_step))
    sv_run/model.ckpt-3.h5

    Raises:
      ValueError: is_chief=False with a variable that has no device (replicas need them).
    """

    USE_DEFAULT = _UseDefault()

    def __init__(
        self,
        graph: Graph | None = None,
        ready_op: Any = USE_DEFAULT,
        ready_for_local_init_op: Any = USE_DEFAULT,
        is_chief: bool = True,
        init_op: Any = USE_DEFAULT,
        init_feed_dict: dict | None = None,
        local_init_op: Any = USE_DEFAULT,
        logdir: str | None = None,
        summary_op: Any = USE_DEFAULT,
        saver: Any = USE_DEFAULT,
        global_step: Any = USE_DEFAULT,
        save_summaries_secs: float = 120,
        save_model_secs: float = 600,
        recovery_wait_secs: float = 30,
        stop_grace_secs: float = 120,
        checkpoint_basename: str = "model.ckpt",
        session_manager: SessionManager | None = None,
        summary_writer: Any = USE_DEFAULT,
        init_fn: Any = None,
        local_init_run_options: Any = None,
    ):
        graph = graph if graph is not None else graph_lib.get_default_graph()
        self._graph = graph
        use_default = Supervisor.USE_DEFAULT
        with graph.as_default():
            self._ready_op = _pick(
                graph, GraphKeys.READY_OP, ready_op, use_default, report_uninitialized_variables
            )
            self._ready_for_local_init_op = _pick(  # None unless in its collection
                graph,
                GraphKeys.READY_FOR_LOCAL_INIT_OP,
                ready_for_local_init_op,
                use_default,
                lambda: None,
            )
            self._init_op = _pick(
                graph, GraphKeys.INIT_OP, init_op, use_default, global_variables_initializer
            )
            self._init_feed_dict = init_feed_dict
            self._local_init_op = _pick(
                graph,
                GraphKeys.LOCAL_INIT_OP,
                local_init_op,
                use_default,
                lambda: core_ops.group(local_variables_initializer(), tables_initializer()),
            )
            self._saver = _pick(
                graph,
                GraphKeys.SAVERS,
                saver,
                use_default,
                lambda: Saver() if global_variables() else None,
                record=False,
            )
            self._summary_op = _pick(
                graph, GraphKeys.SUMMARY_OP, summary_op, use_default, summary.merge_all
            )
            self._global_step = _pick(
                graph,
                GraphKeys.GLOBAL_STEP,
                global_step,
                use_default,
                lambda: _global_step_tensor(graph),
                record=False,
            )
        self._is_chief = is_chief
        self._coord = Coordinator()
        self._recovery_wait_secs = recovery_wait_secs
        self._stop_grace_secs = stop_grace_secs
        self._init_fn = init_fn
        self._local_init_run_options = local_init_run_options
        self._run_lock = threading.RLock()
        # only a chief checkpoints and writes events
        self._logdir = None
        self._save_summaries_secs = None
        self._save_model_secs = None
        self._save_path = None
        self._summary_writer = None
        self._graph_added_to_summary = False
        if is_chief:
            self._logdir = logdir
            self._save_summaries_secs = save_summaries_secs
            self._save_model_secs = save_model_secs
            if logdir:
                self._save_path = os.path.join(logdir, checkpoint_basename)
            if summary_writer is Supervisor.USE_DEFAULT:
                if logdir:
                    self._summary_writer = summary_writers.new_writer(logdir)
            else:
                self._summary_writer = summary_writer
        self._init_session_manager(session_manager)
        self._verify_setup()
        graph.finalize()

    # -- the pieces ----------------------------------------------------------------------------
    def _init_session_manager(self, session_manager: SessionManager | None) -> None:
        if session_manager is None:
            session_manager = SessionManager(
                local_init_op=self._local_init_op,
                ready_op=self._ready_op,
                ready_for_local_init_op=self._ready_for_local_init_op,
                graph=self._graph,
                recovery_wait_secs=self._recovery_wait_secs,
                local_init_run_options=self._local_init_run_options,
            )
        self._session_manager = session_manager

    def _verify_setup(self) -> None:
        if self._is_chief:
            return
        for op in self._graph.get_operations():  # replicas share variables by device
            if op.type == "VarHandleOp" and not op.device:
                raise ValueError(
                    f"When using replicas, all Variables must have their device set: {op.name}"
                )

    # -- properties ----------------------------------------------------------------------------
    @property
    def is_chief(self) -> bool:
        return self._is_chief

    @property
    def session_manager(self) -> SessionManager:
        return self._session_manager

    @property
    def coord(self) -> Coordinator:
        return self._coord

    @property
    def init_op(self) -> Any:
        return self._init_op

    @property
    def init_feed_dict(self) -> dict | None:
        return self._init_feed_dict

    @property
    def ready_op(self) -> Any:
        return self._ready_op

    @property
    def ready_for_local_init_op(self) -> Any:
        return self._ready_for_local_init_op

    @property
    def summary_writer(self) -> Any:
        return self._summary_writer

    @property
    def summary_op(self) -> Any:
        return self._summary_op

    @property
    def save_summaries_secs(self) -> float | None:
        return self._save_summaries_secs

    @property
    def global_step(self) -> Any:
        return self._global_step

    @property
    def saver(self) -> Any:
        return self._saver

    @property
    def save_model_secs(self) -> float | None:
        return self._save_model_secs

    @property
    def save_path(self) -> str | None:
        return self._save_path

    # -- sessions ------------------------------------------------------------------------------
    def prepare_or_wait_for_session(
        self,
        master: str = "",
        config: Any = None,
        wait_for_checkpoint: bool = False,
        max_wait_secs: float = 7200,
        start_standard_services: bool = True,
    ) -> SerializedSession:
        """The chief's session, restored from logdir's latest checkpoint or initialized (then
        the graph is written to logdir and the services start); a worker's, once ready. Queue
        runners start too (with start_standard_services)."""
        self._coord.clear_stop()
        if self._summary_writer:
            self._summary_writer.reopen()
        if self._is_chief:
            raw = self._session_manager.prepare_session(
                master,
                init_op=self.init_op,
                saver=self.saver,
                checkpoint_dir=self._logdir,
                wait_for_checkpoint=wait_for_checkpoint,
                max_wait_secs=max_wait_secs,
                config=config,
                init_feed_dict=self._init_feed_dict,
                init_fn=self._init_fn,
            )
            sess = SerializedSession(raw, self._run_lock)
            self._write_graph()
            if start_standard_services:
                _logger.info("Starting standard services.")
                self.start_standard_services(sess)
        else:
            raw = self._session_manager.wait_for_session(
                master, config=config, max_wait_secs=max_wait_secs
            )
            sess = SerializedSession(raw, self._run_lock)
        if start_standard_services:
            _logger.info("Starting queue runners.")
            self.start_queue_runners(sess)
        return sess

    def start_standard_services(self, sess: Any) -> list[LooperThread] | None:
        """Starts the checkpoint, summary and step-counter threads that the settings ask for;
        returns them (None without a logdir).

        Raises:
          RuntimeError: not the chief.
        """
        if not self._is_chief:
            raise RuntimeError(
                "Only chief supervisor can start standard services. Because "
                "only chief supervisors can write events."
            )
        if not self._logdir:
            _logger.warning("Standard services need a 'logdir' passed to the SessionManager")
            return None
        sess = self._serialized(sess)
        if self._global_step is not None and self._summary_writer:
            summary_writers.add_start_log(
                self._summary_writer, read_global_step(sess, self._global_step)
            )
        threads: list[LooperThread] = []
        if self._save_summaries_secs and self._summary_writer:
            if self._summary_op is not None:
                threads.append(SVSummaryThread(self, sess))
            if self._global_step is not None:
                threads.append(SVStepCounterThread(self, sess))
        if self.saver and self._save_model_secs:
            threads.append(SVTimerCheckpointThread(self, sess))
        for thread in threads:
            thread.start()
        return threads

    def start_queue_runners(self, sess: Any, queue_runners: list | None = None) -> list:
        """Starts the threads of the graph's queue runners (or of `queue_runners`) on the
        coordinator; returns them. They get the raw session: their runs block on queues."""
        if queue_runners is None:
            queue_runners = self._graph.get_collection(QUEUE_RUNNERS)
        raw = sess.raw_session if isinstance(sess, SerializedSession) else sess
        threads = []
        for runner in queue_runners:
            threads.extend(runner.create_threads(raw, coord=self._coord, daemon=True, start=True))
        return threads

    def loop(
        self, timer_interval_secs: float | None, target: Any, args: Any = None, kwargs: Any = None
    ) -> LooperThread:
        """Starts a thread calling `target(*args, **kwargs)` every timer_interval_secs until
        the Supervisor stops; returns it."""
        return LooperThread.loop(self._coord, timer_interval_secs, target, args, kwargs)

    def stop(
        self,
        threads: list | None = None,
        close_summary_writer: bool = True,
        ignore_live_threads: bool = False,
    ) -> None:
        """Stops and joins the threads (re-raising an error one reported), then closes the
        summary writer."""
        self._coord.request_stop()
        try:
            self._coord.join(
                threads,
                stop_grace_period_secs=self._stop_grace_secs,
                ignore_live_threads=ignore_live_threads,
            )
        finally:
            if close_summary_writer and self._summary_writer:
                summary_writers.add_stop_log(self._summary_writer)
                self._summary_writer.close()
                self._graph_added_to_summary = False

    def request_stop(self, ex: Any = None) -> None:
        self._coord.request_stop(ex=ex)

    def should_stop(self) -> bool:
        return self._coord.should_stop()

    def stop_on_exception(self) -> Any:
        return self._coord.stop_on_exception()

    def wait_for_stop(self) -> None:
        self._coord.wait_for_stop()

    def summary_computed(self, sess: Any, summary: Any, global_step: int | None = None) -> None:
        """Writes a summary the caller computed, at `global_step` (default: the current one).

        Raises:
          RuntimeError: the Supervisor has no summary writer (no logdir, or not the chief).
        """
        if not self._summary_writer:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self.global_step is not None:
            global_step = read_global_step(sess, self.global_step)
        self._summary_writer.add_summary(summary, global_step)

    @contextlib.contextmanager
    def managed_session(
        self,
        master: str = "",
        config: Any = None,
        start_standard_services: bool = True,
        close_summary_writer: bool = True,
    ) -> Iterator[SerializedSession]:
        """A restored or initialized session for the `with` block; on the way out the threads
        are stopped and joined and the session closed. An error from the block or a thread is
        raised again after that, except OutOfRangeError."""
        sess = None
        try:
            sess = self.prepare_or_wait_for_session(
                master=master, config=config, start_standard_services=start_standard_services
            )
            yield sess
        except Exception as err:  # re-raised by stop(), unless a clean end of the input
            self.request_stop(err)
        finally:
            try:
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                if sess is not None:
                    sess.close()

    def _serialized(self, sess: Any) -> SerializedSession:
        return (
            sess if isinstance(sess, SerializedSession) else SerializedSession(sess, self._run_lock)
        )

    def _write_graph(self) -> None:
        """graph.pbtxt in logdir and the graph in the events file, once per writer."""
        if not self._is_chief or not self._logdir:
            return
        write_graph(self._graph, self._logdir, "graph.pbtxt")
        if self._summary_writer and not self._graph_added_to_summary:
            self._summary_writer.add_graph(self._graph)
            self._graph_added_to_summary = True


def _pick(
    graph: Graph, key: str, given: Any, use_default: Any, build: Any, record: bool = True
) -> Any:
    """`given`, unless USE_DEFAULT: then the first item of the collection `key`, else `build()`
    (recorded in `key` when not None and `record`)."""
    if given is not use_default:
        return given
    found = graph.get_collection(key)
    if len(found) > 1:
        _logger.info("Found %d %s operations. Returning the first one.", len(found), key)
    if found:
        return found[0]
    built = build()
    if built is not None and record:
        graph.add_to_collection(key, built)
    return built


def _global_step_tensor(graph: Graph) -> Any:
    """An integer tensor named "global_step:0", else None (TF1's fallback)."""
    try:
        step = graph.get_tensor_by_name("global_step:0")
    except KeyError:
        return None
    if step.dtype in (dtypes.int32, dtypes.int64):
        return step
    _logger.warning("Found 'global_step' is not an int type: %s", step.dtype)
    return None
