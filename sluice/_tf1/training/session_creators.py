"""Factories of ready sessions for `MonitoredSession` (TF1 `ChiefSessionCreator`,
`WorkerSessionCreator`): finalize the scaffold, then restore-or-initialize (the chief) or wait
for readiness (a worker), through a `SessionManager`."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._tf1.training.scaffold import Scaffold
from sluice._tf1.training.session_manager import SessionManager
from sluice.framework.ir import graph as graph_lib


@export("train.SessionCreator")
class SessionCreator:
    """Makes the raw session a monitored session wraps."""

    def create_session(self) -> Any:
        raise NotImplementedError(f"create_session is not implemented for {self}.")


class _ScaffoldedCreator(SessionCreator):
    def __init__(self, scaffold: Scaffold | None, master: str, config: Any):
        self._scaffold = scaffold or Scaffold()
        self._master = master
        self._config = config
        self._session_manager: SessionManager | None = None

    def _get_session_manager(self) -> SessionManager:
        if self._session_manager is None:
            self._session_manager = SessionManager(
                local_init_op=self._scaffold.local_init_op,
                ready_op=self._scaffold.ready_op,
                ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
                graph=graph_lib.get_default_graph(),
            )
        return self._session_manager


@export("train.ChiefSessionCreator")
class ChiefSessionCreator(_ScaffoldedCreator):
    """Restores the latest checkpoint of `checkpoint_dir` (or `checkpoint_filename_with_path`)
    when there is one, else runs the scaffold's init_op and init_fn."""

    def __init__(
        self,
        scaffold: Scaffold | None = None,
        master: str = "",
        config: Any = None,
        checkpoint_dir: str | None = None,
        checkpoint_filename_with_path: str | None = None,
    ):
        super().__init__(scaffold, master, config)
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path

    def create_session(self) -> Any:
        self._scaffold.finalize()
        return self._get_session_manager().prepare_session(
            self._master,
            saver=self._scaffold.saver,
            checkpoint_dir=self._checkpoint_dir,
            checkpoint_filename_with_path=self._checkpoint_filename_with_path,
            config=self._config,
            init_op=self._scaffold.init_op,
            init_feed_dict=self._scaffold.init_feed_dict,
            init_fn=self._scaffold.init_fn,
        )


@export("train.WorkerSessionCreator")
class WorkerSessionCreator(_ScaffoldedCreator):
    """Waits up to `max_wait_secs` for a session whose model is ready (the chief initializes
    it). sluice sessions of one process do not share variables, so a worker session is ready
    only when the model has no global state to wait for."""

    def __init__(
        self,
        scaffold: Scaffold | None = None,
        master: str = "",
        config: Any = None,
        max_wait_secs: float = 30 * 60,
    ):
        super().__init__(scaffold, master, config)
        self._max_wait_secs = max_wait_secs

    def create_session(self) -> Any:
        self._scaffold.finalize()
        return self._get_session_manager().wait_for_session(
            self._master, config=self._config, max_wait_secs=self._max_wait_secs
        )
