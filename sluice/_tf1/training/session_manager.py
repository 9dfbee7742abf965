"""`SessionManager` (TF1 `tf.train.SessionManager`): a session whose variables are restored
from the latest checkpoint, or initialized, and checked ready.

    prepare_session   restore if a checkpoint exists, else init_op + init_fn; then local init;
                      then require ready_op to report nothing
    recover_session   restore only; (session, False) when there is nothing to restore
    wait_for_session  a fresh session, retried until ready_op reports nothing (a worker
                      waiting on its chief)
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from sluice._export import export
from sluice._tf1.checkpoints.checkpoint_state import get_checkpoint_state
from sluice.framework.ir import errors
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Graph
from sluice.framework.session import Session

_logger = logging.getLogger("sluice")


@export("train.SessionManager")
class SessionManager:
    """Creates sessions that are ready to train.

    Args:
      local_init_op: run in every new session once ready_for_local_init_op reports nothing.
      ready_op: a 1-D tensor of the names of uninitialized variables (None: always ready).
      ready_for_local_init_op: the same, checked before local_init_op.
      graph: the graph of the sessions (default: the default graph).
      recovery_wait_secs: seconds between checks while waiting for a checkpoint or readiness.
      local_init_run_options, local_init_feed_dict: for the local_init_op run.

    Raises:
      ValueError: ready_for_local_init_op without a ready_op.
    """

    def __init__(
        self,
        local_init_op: Any = None,
        ready_op: Any = None,
        ready_for_local_init_op: Any = None,
        graph: Graph | None = None,
        recovery_wait_secs: float = 30,
        local_init_run_options: Any = None,
        local_init_feed_dict: dict | None = None,
    ):
        if ready_op is None and ready_for_local_init_op is not None:
            raise ValueError("If you pass a ready_for_local_init_op you must also pass a ready_op")
        self._local_init_op = local_init_op
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph if graph is not None else graph_lib.get_default_graph()
        self._recovery_wait_secs = recovery_wait_secs
        self._local_init_run_options = local_init_run_options
        self._local_init_feed_dict = local_init_feed_dict

    def prepare_session(
        self,
        master: str = "",
        init_op: Any = None,
        saver: Any = None,
        checkpoint_dir: str | None = None,
        checkpoint_filename_with_path: str | None = None,
        wait_for_checkpoint: bool = False,
        max_wait_secs: float = 7200,
        config: Any = None,
        init_feed_dict: dict | None = None,
        init_fn: Any = None,
    ) -> Session:
        """A session restored from `checkpoint_filename_with_path` or the latest checkpoint of
        `checkpoint_dir` when there is one, else initialized by init_op and init_fn.

        Raises:
          ValueError: both checkpoint_dir and checkpoint_filename_with_path.
          RuntimeError: nothing to initialize with, or the model is still not ready after
            initialization (the message lists the uninitialized variables).
        """
        sess, restored = self._restore_checkpoint(
            master,
            saver,
            checkpoint_dir,
            checkpoint_filename_with_path,
            wait_for_checkpoint,
            max_wait_secs,
            config,
        )
        if not restored:
            if init_op is None and not init_fn and self._local_init_op is None:
                raise RuntimeError(
                    "Model is not initialized and no init_op or init_fn or local_init_op was given"
                )
            if init_op is not None:
                sess.run(init_op, feed_dict=init_feed_dict)
            if init_fn:
                init_fn(sess)
        ok, message = self._try_run_local_init_op(sess)
        if not ok:
            raise RuntimeError(
                "Init operations did not make model ready for local_init.  "
                f"Init op: {_name_of(init_op)}, init fn: {init_fn}, error: "
                f"{message}"
            )
        ready, message = self._model_ready(sess)
        if not ready:
            raise RuntimeError(
                "Init operations did not make model ready.  Init op: "
                f"{_name_of(init_op)}, init fn: {init_fn}, local_init_op: "
                f"{_name_of(self._local_init_op)}, error: {message}"
            )
        return sess

    def recover_session(
        self,
        master: str = "",
        saver: Any = None,
        checkpoint_dir: str | None = None,
        checkpoint_filename_with_path: str | None = None,
        wait_for_checkpoint: bool = False,
        max_wait_secs: float = 7200,
        config: Any = None,
    ) -> tuple[Session, bool]:
        """(session, True) when restored from a checkpoint and ready; (session, False) when
        there was nothing to restore or it is not ready (the caller initializes it)."""
        sess, restored = self._restore_checkpoint(
            master,
            saver,
            checkpoint_dir,
            checkpoint_filename_with_path,
            wait_for_checkpoint,
            max_wait_secs,
            config,
        )
        local_ok, message = self._try_run_local_init_op(sess)  # always, restored or not
        if not restored:
            return sess, False
        source = checkpoint_dir or checkpoint_filename_with_path
        if not local_ok:
            _logger.info(
                "Restoring model from %s did not make model ready for local init: %s",
                source,
                message,
            )
            return sess, False
        ready, message = self._model_ready(sess)
        if not ready:
            _logger.info("Restoring model from %s did not make model ready: %s", source, message)
            return sess, False
        _logger.info("Restored model from %s", source)
        return sess, True

    def wait_for_session(
        self, master: str = "", config: Any = None, max_wait_secs: float | None = float("inf")
    ) -> Session:
        """A new session, retried every recovery_wait_secs until local init runs and the model
        is ready.

        Raises:
          sl.errors.DeadlineExceededError: still not ready after max_wait_secs.
        """
        max_wait_secs = float("inf") if max_wait_secs is None else max_wait_secs
        deadline = time.time() + max_wait_secs
        while True:
            sess = Session(master, graph=self._graph, config=config)
            not_ready_message = None
            local_ok, not_ready_local_message = self._try_run_local_init_op(sess)
            if local_ok:
                ready, not_ready_message = self._model_ready(sess)
                if ready:
                    return sess
            sess.close()
            if deadline - time.time() - self._recovery_wait_secs < 0:
                raise errors.DeadlineExceededError(
                    None, None, f"Session was not ready after waiting {max_wait_secs} secs."
                )
            _logger.info(
                "Waiting for model to be ready.  Ready_for_local_init_op:  %s, ready: %s",
                not_ready_local_message,
                not_ready_message,
            )
            time.sleep(self._recovery_wait_secs)

    # -- parts ---------------------------------------------------------------------------------
    def _restore_checkpoint(
        self,
        master: str,
        saver: Any,
        checkpoint_dir: str | None,
        checkpoint_filename_with_path: str | None,
        wait_for_checkpoint: bool,
        max_wait_secs: float,
        config: Any,
    ) -> tuple[Session, bool]:
        if checkpoint_dir and checkpoint_filename_with_path:
            raise ValueError(
                "Can not provide both checkpoint_dir and checkpoint_filename_with_path."
            )
        sess = Session(master, graph=self._graph, config=config)
        if not saver or not (checkpoint_dir or checkpoint_filename_with_path):
            return sess, False
        if checkpoint_filename_with_path:
            saver.restore(sess, checkpoint_filename_with_path)
            return sess, True
        waited = 0.0
        state = get_checkpoint_state(checkpoint_dir)
        while not state or not state.model_checkpoint_path:
            if not wait_for_checkpoint or waited >= max_wait_secs:
                return sess, False
            _logger.info("Waiting for checkpoint to be available.")
            time.sleep(self._recovery_wait_secs)
            waited += self._recovery_wait_secs
            state = get_checkpoint_state(checkpoint_dir)
        saver.restore(sess, state.model_checkpoint_path)
        return sess, True

    def _try_run_local_init_op(self, sess: Session) -> tuple[bool, str | None]:
        if self._local_init_op is None:
            return True, None
        ready, message = _ready(
            self._ready_for_local_init_op, sess, "Model not ready for local init"
        )
        if not ready:
            return False, message
        _logger.info("Running local_init_op.")
        sess.run(
            self._local_init_op,
            feed_dict=self._local_init_feed_dict,
            options=self._local_init_run_options,
        )
        return True, None

    def _model_ready(self, sess: Session) -> tuple[bool, str | None]:
        return _ready(self._ready_op, sess, "Model not ready")


def _ready(op: Any, sess: Session, what: str) -> tuple[bool, str | None]:
    """(True, None) when `op` reports no uninitialized variable, else (False, why)."""
    if op is None:
        return True, None
    try:
        value = sess.run(op)
    except errors.FailedPreconditionError as err:
        if "uninitialized" not in str(err).lower():
            raise
        return False, f"{what}: {err}"
    value = np.asarray(value) if value is not None else None
    if value is None or value.size == 0:
        return True, None
    names = ", ".join(v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in value)
    return False, f"Variables not initialized: {names}"


def _name_of(op: Any) -> str | None:
    return None if op is None else getattr(op, "name", repr(op))
