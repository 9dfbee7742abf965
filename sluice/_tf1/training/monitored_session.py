"""`MonitoredSession`, `SingularMonitoredSession` and `MonitoredTrainingSession` (TF1).

    with sl.train.MonitoredTrainingSession(checkpoint_dir="runs/x",
                                           save_checkpoint_steps=100,
                                           hooks=[sl.train.StopAtStepHook(1000)]) as sess:
        while not sess.should_stop():
            sess.run(train_op)

Creating one: each hook's `begin()`; the scaffold's ops are picked or built and the graph is
finalized; a session restored from the latest checkpoint (or initialized); queue runners
started; each hook's `after_create_session()`. A `run` calls the hooks around one session run
(`session_run_hook`). Closing it: each hook's `end()` (skipped after an error; the end of the
input, OutOfRangeError, is no error), then the threads are joined and the session closed; the
graph is opened again if the monitored session finalized it. Run a second time on the same
checkpoint_dir, it resumes from the checkpoint the first one saved.
"""

from __future__ import annotations

import inspect
from typing import Any

from sluice._export import export
from sluice._tf1.training.basic_hooks import StepCounterHook
from sluice._tf1.training.checkpoint_hooks import CheckpointSaverHook
from sluice._tf1.training.coordinator import Coordinator
from sluice._tf1.training.scaffold import Scaffold
from sluice._tf1.training.session_creators import (
    ChiefSessionCreator,
    SessionCreator,
    WorkerSessionCreator,
)
from sluice._tf1.training.summary_hooks import SummarySaverHook
from sluice._tf1.training.wrapped_sessions import (
    CoordinatedSession,
    HookedSession,
    RecoverableSession,
    StepContext,
)
from sluice.framework.ir import errors
from sluice.framework.ir import graph as graph_lib

QUEUE_RUNNERS = "queue_runners"  # TF1's GraphKeys.QUEUE_RUNNERS


class _CoordinatedSessionCreator(SessionCreator):
    """Creates the raw session, starts the queue runners under a new coordinator, tells the
    hooks, and wraps it: CoordinatedSession(HookedSession(session))."""

    def __init__(self, session_creator: SessionCreator, hooks: list, stop_grace_period_secs: float):
        self._session_creator = session_creator
        self._hooks = hooks
        self._stop_grace_period_secs = stop_grace_period_secs
        self.coord: Coordinator | None = None
        self.tf_sess: Any = None

    def create_session(self) -> CoordinatedSession:
        self.tf_sess = self._session_creator.create_session()
        self.coord = Coordinator(clean_stop_exception_types=[])  # every error reaches the user
        for runner in self.tf_sess.graph.get_collection(QUEUE_RUNNERS):
            runner.create_threads(self.tf_sess, coord=self.coord, daemon=True, start=True)
        for hook in self._hooks:
            hook.after_create_session(self.tf_sess, self.coord)
        return CoordinatedSession(
            HookedSession(self.tf_sess, self._hooks), self.coord, self._stop_grace_period_secs
        )


class _MonitoredSession:
    """See `MonitoredSession` and `SingularMonitoredSession`."""

    StepContext = StepContext

    def __init__(
        self,
        session_creator: SessionCreator | None,
        hooks: list | None,
        should_recover: bool,
        stop_grace_period_secs: float = 120,
    ):
        self._graph = graph_lib.get_default_graph()
        self._graph_was_finalized = self._graph.finalized
        self._hooks = list(hooks or [])
        for hook in self._hooks:
            hook.begin()
        self._coordinated_creator = _CoordinatedSessionCreator(
            session_creator or ChiefSessionCreator(), self._hooks, stop_grace_period_secs
        )
        if should_recover:
            self._sess: Any = RecoverableSession(self._coordinated_creator)
        else:
            self._sess = self._coordinated_creator.create_session()

    @property
    def graph(self) -> Any:
        """The graph the session runs (None once closed)."""
        sess = self._tf_sess()
        return None if sess is None else sess.graph

    def run(
        self,
        fetches: Any,
        feed_dict: dict | None = None,
        options: Any = None,
        run_metadata: Any = None,
    ) -> Any:
        """`Session.run` with the hooks called around it.

        Raises:
          RuntimeError: the session should already stop, or two feeds of one tensor.
        """
        return self._sess.run(
            fetches, feed_dict=feed_dict, options=options, run_metadata=run_metadata
        )

    def run_step_fn(self, step_fn: Any) -> Any:
        """Calls `step_fn(step_context)` (a `StepContext`: `.session` runs without hooks,
        `.run_with_hooks(...)` with them, `.request_stop()` ends training); returns its value.

        Raises:
          ValueError: step_fn does not take exactly one `step_context` argument (after self).
          StopIteration: step_fn requested a stop (a `with` block takes it as the end).
        """
        names = tuple(inspect.signature(step_fn).parameters)
        if names not in (("step_context",), ("self", "step_context")):
            raise ValueError(
                "`step_fn` may either have one `step_context` argument, or `self` "
                "and `step_context` arguments if it's an instance method. Got "
                f"{names} instead."
            )
        return self._sess.run_step_fn(step_fn, self._tf_sess(), run_with_hooks=None)

    def should_stop(self) -> bool:
        """True once a hook or the coordinator asked to stop, or once closed; re-raises an
        error a coordinated thread reported."""
        return self._sess is None or self._sess.should_stop()

    def close(self) -> None:
        self._close_internal()

    def __enter__(self) -> "_MonitoredSession":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        if exc_type in (errors.OutOfRangeError, StopIteration):
            exc_type = None  # the end of the input, or a step_fn's stop: a clean end
        self._close_internal(exc_type)
        return exc_type is None

    def _close_internal(self, exc_type: Any = None) -> None:
        try:
            if not exc_type:
                for hook in self._hooks:
                    hook.end(self._coordinated_creator.tf_sess)
        finally:
            try:
                if self._sess is None:
                    raise RuntimeError("Session is already closed.")
                self._sess.close()
            finally:
                self._sess = None
                self._coordinated_creator.tf_sess = None
                self._coordinated_creator.coord = None
                if not self._graph_was_finalized:
                    self._graph.unsafe_unfinalize()

    def _is_closed(self) -> bool:
        return self._coordinated_creator.tf_sess is None

    def _tf_sess(self) -> Any:
        return self._coordinated_creator.tf_sess


@export("train.MonitoredSession")
class MonitoredSession(_MonitoredSession):
    """A session-like object that initializes or restores, runs hooks around each `run`, and
    recreates its session after an AbortedError or UnavailableError (see the module docstring).

    It is not a `Session`: it cannot be the default session, nor be given to `Saver.save`;
    hooks get the raw session.

    Args:
      session_creator: a `ChiefSessionCreator` (default) or `WorkerSessionCreator`.
      hooks: `SessionRunHook`s, called in this order.
      stop_grace_period_secs: how long `close()` waits for coordinated threads.
    """

    def __init__(
        self,
        session_creator: SessionCreator | None = None,
        hooks: list | None = None,
        stop_grace_period_secs: float = 120,
    ):
        super().__init__(
            session_creator,
            hooks,
            should_recover=True,
            stop_grace_period_secs=stop_grace_period_secs,
        )


@export("train.SingularMonitoredSession")
class SingularMonitoredSession(_MonitoredSession):
    """A `MonitoredSession` for one process, always the chief, without recovery, whose raw
    session is reachable with `raw_session()` (to run without hooks, or to save)."""

    def __init__(
        self,
        hooks: list | None = None,
        scaffold: Scaffold | None = None,
        master: str = "",
        config: Any = None,
        checkpoint_dir: str | None = None,
        stop_grace_period_secs: float = 120,
        checkpoint_filename_with_path: str | None = None,
    ):
        creator = ChiefSessionCreator(
            scaffold=scaffold,
            master=master,
            config=config,
            checkpoint_dir=checkpoint_dir,
            checkpoint_filename_with_path=checkpoint_filename_with_path,
        )
        super().__init__(
            creator, hooks, should_recover=False, stop_grace_period_secs=stop_grace_period_secs
        )

    def raw_session(self) -> Any:
        return self._tf_sess()


class _UseDefault:
    def __repr__(self) -> str:
        return "USE_DEFAULT"


USE_DEFAULT = _UseDefault()


@export("train.MonitoredTrainingSession")
def MonitoredTrainingSession(  # noqa: N802 - TF1's name for a function
    master: str = "",
    is_chief: bool = True,
    checkpoint_dir: str | None = None,
    scaffold: Scaffold | None = None,
    hooks: list | None = None,
    chief_only_hooks: list | None = None,
    save_checkpoint_secs: Any = USE_DEFAULT,
    save_summaries_steps: Any = USE_DEFAULT,
    save_summaries_secs: Any = USE_DEFAULT,
    config: Any = None,
    stop_grace_period_secs: float = 120,
    log_step_count_steps: int | None = 100,
    max_wait_secs: float = 7200,
    save_checkpoint_steps: Any = USE_DEFAULT,
    summary_dir: str | None = None,
) -> MonitoredSession:
    """A `MonitoredSession` for training: the chief restores from or initializes into
    `checkpoint_dir` and gets the standard hooks; a worker waits for a ready model.

    The chief's hooks, in order: chief_only_hooks; with a summary_dir (default
    checkpoint_dir) a `StepCounterHook` every log_step_count_steps and a `SummarySaverHook`
    every save_summaries_steps (default 100) or save_summaries_secs; with a checkpoint_dir a
    `CheckpointSaverHook` every save_checkpoint_secs (default 600, when neither is given) or
    save_checkpoint_steps; then hooks. None (or 0) turns one off.

    >>> w = sl.Variable(1.0)
    >>> step = sl.train.get_or_create_global_step()
    >>> train_op = sl.train.GradientDescentOptimizer(0.1).minimize(sl.square(w), global_step=step)
    >>> hooks = [sl.train.StopAtStepHook(num_steps=3)]
    >>> with sl.train.MonitoredTrainingSession(checkpoint_dir="run", hooks=hooks) as sess:
    ...     while not sess.should_stop():
    ...         _ = sess.run(train_op)
    >>> sl.train.latest_checkpoint("run")    # saved when the session closed
    'run/model.ckpt-3.h5'

    Raises:
      RuntimeError: (chief with a checkpoint_dir or summary_dir) the graph has no global step:
        create one with `sl.train.get_or_create_global_step()`.
      ValueError: both save_checkpoint_secs and save_checkpoint_steps (or both summary
        schedules) are given.
    """
    if save_summaries_steps is USE_DEFAULT and save_summaries_secs is USE_DEFAULT:
        save_summaries_steps, save_summaries_secs = 100, None
    elif save_summaries_secs is USE_DEFAULT:
        save_summaries_secs = None
    elif save_summaries_steps is USE_DEFAULT:
        save_summaries_steps = None
    if save_checkpoint_steps is USE_DEFAULT and save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_steps, save_checkpoint_secs = None, 600
    elif save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_secs = None
    elif save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_steps = None

    scaffold = scaffold or Scaffold()
    if not is_chief:
        creator = WorkerSessionCreator(
            scaffold=scaffold, master=master, config=config, max_wait_secs=max_wait_secs
        )
        return MonitoredSession(
            session_creator=creator,
            hooks=hooks or [],
            stop_grace_period_secs=stop_grace_period_secs,
        )

    all_hooks = list(chief_only_hooks or [])
    creator = ChiefSessionCreator(
        scaffold=scaffold, checkpoint_dir=checkpoint_dir, master=master, config=config
    )
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(
                StepCounterHook(output_dir=summary_dir, every_n_steps=log_step_count_steps)
            )
        if (save_summaries_steps and save_summaries_steps > 0) or (
            save_summaries_secs and save_summaries_secs > 0
        ):
            all_hooks.append(
                SummarySaverHook(
                    scaffold=scaffold,
                    save_steps=save_summaries_steps,
                    save_secs=save_summaries_secs,
                    output_dir=summary_dir,
                )
            )
    if checkpoint_dir:
        if (save_checkpoint_secs and save_checkpoint_secs > 0) or (
            save_checkpoint_steps and save_checkpoint_steps > 0
        ):
            all_hooks.append(
                CheckpointSaverHook(
                    checkpoint_dir,
                    save_steps=save_checkpoint_steps,
                    save_secs=save_checkpoint_secs,
                    scaffold=scaffold,
                )
            )
    all_hooks.extend(hooks or [])
    return MonitoredSession(
        session_creator=creator, hooks=all_hooks, stop_grace_period_secs=stop_grace_period_secs
    )
