"""The everyday hooks of TF1's `basic_session_run_hooks`: stop at a step, log tensors, fail on
NaN, count steps per second, run ops at the end, feed each run.

Checkpoints and summaries have hooks of their own (`checkpoint_hooks`, `summary_hooks`).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import numpy as np

from sluice._export import export
from sluice._keras.optimizers.training_util import get_global_step
from sluice._tf1.training import summary_writers
from sluice._tf1.training.global_step_read import require_global_step_read
from sluice._tf1.training.session_run_hook import SessionRunArgs, SessionRunHook
from sluice._tf1.training.timers import NeverTriggerTimer, SecondOrStepTimer
from sluice.framework.ir import errors
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Operation, Tensor

_logger = logging.getLogger("sluice")


@export("train.NanLossDuringTrainingError")
class NanLossDuringTrainingError(RuntimeError):
    """Raised by `NanTensorHook` when the loss is NaN."""

    def __str__(self) -> str:
        return "NaN loss during training."


@export("train.StopAtStepHook")
class StopAtStepHook(SessionRunHook):
    """Requests a stop once the global step reaches `last_step`, or `num_steps` past the step
    the session started at (a restored run continues counting from its checkpoint).

    Raises:
      ValueError: neither or both of num_steps and last_step.
      RuntimeError (at `begin`): the graph has no global step.
    """

    def __init__(self, num_steps: int | None = None, last_step: int | None = None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self) -> None:
        self._global_step_tensor = require_global_step_read("StopAtStepHook")

    def after_create_session(self, session: Any, coord: Any) -> None:
        if self._last_step is None:
            self._last_step = int(session.run(self._global_step_tensor)) + self._num_steps

    def before_run(self, run_context: Any) -> SessionRunArgs:
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        # the fetched step may predate this run's increment: confirm with a fresh read
        if run_values.results + 1 >= self._last_step:
            if run_context.session.run(self._global_step_tensor) >= self._last_step:
                run_context.request_stop()


def _as_graph_element(obj: Any) -> Tensor | Operation:
    """A tensor of the default graph from a Tensor or a name ("x" means "x:0" when x has one
    output)."""
    graph = graph_lib.get_default_graph()
    if not isinstance(obj, str):
        if getattr(obj, "graph", None) is not graph:
            raise ValueError(
                f"Passed {obj!r} should have graph attribute that is equal to "
                f"current graph {graph!r}."
            )
        return obj
    if ":" in obj:
        return graph.as_graph_element(obj)
    op = graph.get_operation_by_name(obj)
    if len(op.outputs) > 1:
        raise ValueError(
            f"Name {obj} is ambiguous, as this `Operation` has multiple outputs (at least 2)."
        )
    return graph.as_graph_element(obj + ":0")


@export("train.LoggingTensorHook")
class LoggingTensorHook(SessionRunHook):
    """Logs tensor values every N local steps, every N seconds, and/or at the end.

    Args:
      tensors: a dict {tag: tensor or name}, or a list of tensors or names (logged in that order).
      every_n_iter: log every this many `run` calls (counted by this hook, not the global step).
      every_n_secs: log when this many seconds have passed since the last log.
      at_end: also log (with a run of its own) when the session ends.
      formatter: values dict -> str; default "tag = value, ..." plus the seconds since the last.

    Raises:
      ValueError: neither or both of every_n_iter and every_n_secs (unless only at_end), or
        every_n_iter <= 0.
    """

    def __init__(
        self,
        tensors: Any,
        every_n_iter: int | None = None,
        every_n_secs: float | None = None,
        at_end: bool = False,
        formatter: Callable[[dict], str] | None = None,
    ):
        only_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError(
                "either at_end and/or exactly one of every_n_iter and every_n_secs "
                "must be provided."
            )
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if isinstance(tensors, dict):
            self._tag_order = sorted(tensors)
        else:
            self._tag_order = list(tensors)
            tensors = {item: item for item in tensors}
        self._tensors = tensors
        self._formatter = formatter
        self._timer = (
            NeverTriggerTimer()
            if only_at_end
            else SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter)
        )
        self._log_at_end = at_end

    def begin(self) -> None:
        self._timer.reset()
        self._iter_count = 0
        self._current_tensors = {tag: _as_graph_element(t) for tag, t in self._tensors.items()}

    def before_run(self, run_context: Any) -> SessionRunArgs | None:
        self._should_trigger = self._timer.should_trigger_for_step(self._iter_count)
        return SessionRunArgs(self._current_tensors) if self._should_trigger else None

    def after_run(self, run_context: Any, run_values: Any) -> None:
        if self._should_trigger:
            self._log_tensors(run_values.results)
        self._iter_count += 1

    def end(self, session: Any) -> None:
        if self._log_at_end:
            self._log_tensors(session.run(self._current_tensors))

    def _log_tensors(self, values: dict) -> None:
        elapsed_secs, _ = self._timer.update_last_triggered_step(self._iter_count)
        with np.printoptions(suppress=True):
            if self._formatter is not None:
                _logger.info(self._formatter(values))
                return
            stats = ", ".join(f"{tag} = {values[tag]}" for tag in self._tag_order)
            if elapsed_secs is None:
                _logger.info("%s", stats)
            else:
                _logger.info("%s (%.3f sec)", stats, elapsed_secs)


@export("train.NanTensorHook")
class NanTensorHook(SessionRunHook):
    """Fetches `loss_tensor` with every run; a NaN raises `NanLossDuringTrainingError` or, with
    fail_on_nan_loss=False, logs a warning and requests a stop."""

    def __init__(self, loss_tensor: Any, fail_on_nan_loss: bool = True):
        self._loss_tensor = loss_tensor
        self._fail_on_nan_loss = fail_on_nan_loss

    def before_run(self, run_context: Any) -> SessionRunArgs:
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        if np.isnan(run_values.results):
            message = "Model diverged with loss = NaN."
            if self._fail_on_nan_loss:
                _logger.error(message)
                raise NanLossDuringTrainingError
            _logger.warning(message)
            run_context.request_stop()


@export("train.StepCounterHook")
class StepCounterHook(SessionRunHook):
    """Logs global steps per second (and writes them as the summary `global_step/sec` when it
    has a writer or an output_dir), every N steps or N seconds.

    Raises:
      ValueError: neither or both of every_n_steps and every_n_secs.
      RuntimeError (at `begin`): the graph has no global step.
    """

    def __init__(
        self,
        every_n_steps: int | None = 100,
        every_n_secs: float | None = None,
        output_dir: str | None = None,
        summary_writer: Any = None,
    ):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._last_global_step = None
        self._warnings_left = 5

    def begin(self) -> None:
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = summary_writers.cached_writer(self._output_dir)
        self._global_step_tensor = require_global_step_read("StepCounterHook")
        self._summary_tag = get_global_step().op.name + "/sec"

    def before_run(self, run_context: Any) -> SessionRunArgs:
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        stale_step = int(run_values.results)
        if self._timer.should_trigger_for_step(stale_step + 1):
            step = int(run_context.session.run(self._global_step_tensor))
            if self._timer.should_trigger_for_step(step):
                elapsed_secs, elapsed_steps = self._timer.update_last_triggered_step(step)
                if elapsed_secs is not None:
                    self._log_and_record(elapsed_steps, elapsed_secs, step)
        if stale_step == self._last_global_step and self._warnings_left > 0:
            self._warnings_left -= 1
            _logger.warning(
                "It seems that global step (sl.train.get_global_step) has not been increased. "
                "Current value (could be stable): %s vs previous value: %s. You could increase "
                "the global step by passing sl.train.get_global_step() to "
                "Optimizer.apply_gradients or Optimizer.minimize.",
                stale_step,
                self._last_global_step,
            )
        self._last_global_step = stale_step

    def _log_and_record(self, elapsed_steps: int, elapsed_secs: float, step: int) -> None:
        steps_per_sec = elapsed_steps / elapsed_secs if elapsed_secs > 0 else float("inf")
        if self._summary_writer is not None:
            summary_writers.add_scalar(self._summary_writer, self._summary_tag, steps_per_sec, step)
        _logger.info("%s: %g", self._summary_tag, steps_per_sec)


@export("train.FinalOpsHook")
class FinalOpsHook(SessionRunHook):
    """Runs `final_ops` (any fetch structure) when the session ends; their values are in
    `final_ops_values` afterwards."""

    def __init__(self, final_ops: Any, final_ops_feed_dict: dict | None = None):
        self._final_ops = final_ops
        self._final_ops_feed_dict = final_ops_feed_dict
        self._final_ops_values = None

    @property
    def final_ops_values(self) -> Any:
        return self._final_ops_values

    def end(self, session: Any) -> None:
        if self._final_ops is None:
            return
        try:
            self._final_ops_values = session.run(
                self._final_ops, feed_dict=self._final_ops_feed_dict
            )
        except (errors.OutOfRangeError, StopIteration) as err:
            _logger.warning(
                "FinalOpsHook: the final ops raised %s: they should only read "
                "variables, not pull another batch from the exhausted input.",
                type(err).__name__,
            )
            raise err


@export("train.FeedFnHook")
class FeedFnHook(SessionRunHook):
    """Feeds `feed_fn()` (a dict {tensor: value}) into every run."""

    def __init__(self, feed_fn: Callable[[], dict]):
        self.feed_fn = feed_fn

    def before_run(self, run_context: Any) -> SessionRunArgs:
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())
