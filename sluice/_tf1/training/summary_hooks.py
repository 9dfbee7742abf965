"""Summaries on a schedule (TF1 `SummarySaverHook`): the summary op is fetched with the train
op on the runs where the timer fires, and written at the global step after that run."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._tf1.training import summary_writers
from sluice._tf1.training.global_step_read import require_global_step_read
from sluice._tf1.training.session_run_hook import SessionRunArgs, SessionRunHook
from sluice._tf1.training.timers import SecondOrStepTimer


@export("train.SummarySaverHook")
class SummarySaverHook(SessionRunHook):
    """Writes `summary_op` (or `scaffold.summary_op`) every `save_steps` global steps or every
    `save_secs` seconds, through `summary_writer` or the cached FileWriter of `output_dir`.

    Raises:
      ValueError: neither or both of scaffold and summary_op; neither or both of save_steps and
        save_secs.
      RuntimeError (at `begin`): the graph has no global step.
    """

    def __init__(
        self,
        save_steps: int | None = None,
        save_secs: float | None = None,
        output_dir: str | None = None,
        summary_writer: Any = None,
        scaffold: Any = None,
        summary_op: Any = None,
    ):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op = summary_op
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self) -> None:
        if self._summary_writer is None and self._output_dir:
            # an explicit summary_op needs the writer library; a scaffold's may turn out None
            self._summary_writer = summary_writers.cached_writer(
                self._output_dir, required=self._summary_op is not None
            )
        self._next_step = None
        self._global_step_tensor = require_global_step_read("SummarySaverHook")

    def after_create_session(self, session: Any, coord: Any) -> None:
        if self._summary_writer is None and self._output_dir and self._get_summary_ops():
            summary_writers.cached_writer(self._output_dir, required=True)  # says what to install

    def before_run(self, run_context: Any) -> SessionRunArgs:
        self._request_summary = self._next_step is None or self._timer.should_trigger_for_step(
            self._next_step
        )
        requests = {"global_step": self._global_step_tensor}
        summary_ops = self._get_summary_ops()
        if self._request_summary and summary_ops:
            requests["summary"] = summary_ops
        return SessionRunArgs(requests)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        if not self._summary_writer:
            return
        step = int(run_values.results["global_step"]) + 1
        if self._next_step is None or self._request_summary:
            step = int(run_context.session.run(self._global_step_tensor))
        if self._next_step is None:
            summary_writers.add_start_log(self._summary_writer, step)
        if self._request_summary:
            self._timer.update_last_triggered_step(step)
            for summary in run_values.results.get("summary", []):
                self._summary_writer.add_summary(summary, step)
        self._next_step = step + 1

    def end(self, session: Any = None) -> None:
        if self._summary_writer:
            self._summary_writer.flush()

    def _get_summary_ops(self) -> list:
        op = self._summary_op if self._summary_op is not None else self._scaffold.summary_op
        if op is None:
            return []
        return list(op) if isinstance(op, (list, tuple)) else [op]
