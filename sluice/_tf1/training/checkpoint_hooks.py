"""Checkpoints on a schedule (TF1 `CheckpointSaverHook`), with listeners around each save.

The hook saves once when the session is created (the restored or initial state, at its global
step), then whenever the timer fires after a run, and once more at the end unless the last
save was already at the final step.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from sluice._export import export
from sluice._tf1.checkpoints.meta_graph import write_graph
from sluice._tf1.training import summary_writers
from sluice._tf1.training.global_step_read import require_global_step_read
from sluice._tf1.training.session_run_hook import SessionRunArgs, SessionRunHook
from sluice._tf1.training.timers import SecondOrStepTimer
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import GraphKeys

_logger = logging.getLogger("sluice")


@export("train.CheckpointSaverListener")
class CheckpointSaverListener:
    """Code to run around each save of a `CheckpointSaverHook`; `after_save` returning True
    requests a stop."""

    def begin(self) -> None:
        pass

    def before_save(self, session: Any, global_step_value: int) -> None:
        pass

    def after_save(self, session: Any, global_step_value: int) -> bool | None:
        pass

    def end(self, session: Any, global_step_value: int) -> None:
        pass


@export("train.CheckpointSaverHook")
class CheckpointSaverHook(SessionRunHook):
    """Saves `<checkpoint_dir>/<checkpoint_basename>-<step>` every `save_secs` seconds or every
    `save_steps` global steps (exactly one of them).

    The saver is `saver`, else `scaffold.saver`, else the one Saver of the graph's SAVERS
    collection. With save_graph_def, the graph is written to checkpoint_dir/graph.pbtxt and to
    its events file (with the TensorBoard extra), and each checkpoint gets its meta graph.

    Raises:
      ValueError: both saver and scaffold, or neither/both of save_secs and save_steps.
      RuntimeError (at `begin`): the graph has no global step; (at the first save) no Saver or
        more than one in SAVERS.
    """

    def __init__(
        self,
        checkpoint_dir: str,
        save_secs: float | None = None,
        save_steps: int | None = None,
        saver: Any = None,
        checkpoint_basename: str = "model.ckpt",
        scaffold: Any = None,
        listeners: list[CheckpointSaverListener] | None = None,
        save_graph_def: bool = True,
    ):
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._saver = saver
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = list(listeners or [])
        self._save_graph_def = save_graph_def

    def begin(self) -> None:
        self._summary_writer = summary_writers.cached_writer(self._checkpoint_dir)
        self._global_step_tensor = require_global_step_read("CheckpointSaverHook")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session: Any, coord: Any) -> None:
        step = int(session.run(self._global_step_tensor))
        if self._save_graph_def:
            # not in begin: other hooks may still add ops there; the graph is final now
            graph = graph_lib.get_default_graph()
            write_graph(graph, self._checkpoint_dir, "graph.pbtxt")
            if self._summary_writer is not None:
                summary_writers.add_graph(self._summary_writer, graph)
        self._save(session, step)
        self._timer.update_last_triggered_step(step)

    def before_run(self, run_context: Any) -> SessionRunArgs:
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        if self._timer.should_trigger_for_step(int(run_values.results) + 1):
            step = int(run_context.session.run(self._global_step_tensor))  # after the train op
            if self._timer.should_trigger_for_step(step):
                self._timer.update_last_triggered_step(step)
                if self._save(run_context.session, step):
                    run_context.request_stop()

    def end(self, session: Any) -> None:
        last_step = int(session.run(self._global_step_tensor))
        if last_step != self._timer.last_triggered_step():
            self._save(session, last_step)
        for listener in self._listeners:
            listener.end(session, last_step)

    def _save(self, session: Any, step: int) -> bool:
        """Saves at `step`; True when a listener asks to stop."""
        for listener in self._listeners:
            listener.before_save(session, step)
        _logger.info("Saving checkpoints for %d into %s.", step, self._save_path)
        self._get_saver().save(
            session, self._save_path, global_step=step, write_meta_graph=self._save_graph_def
        )
        if self._summary_writer is not None:
            summary_writers.add_checkpoint_log(self._summary_writer, self._save_path, step)
        should_stop = False
        for listener in self._listeners:
            if listener.after_save(session, step):
                _logger.info(
                    "A CheckpointSaverListener requested that training be stopped. listener: %s",
                    listener,
                )
                should_stop = True
        return should_stop

    def _get_saver(self) -> Any:
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        savers = graph_lib.get_collection(GraphKeys.SAVERS)
        if not savers:
            raise RuntimeError(
                f"No items in collection {GraphKeys.SAVERS}. Please add a saver "
                "to the collection or provide a saver or scaffold."
            )
        if len(savers) > 1:
            raise RuntimeError(
                f"More than one item in collection {GraphKeys.SAVERS}. Please "
                "indicate which one to use by passing it to the constructor."
            )
        self._saver = savers[0]
        return self._saver
