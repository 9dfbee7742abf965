"""One evaluation pass over a checkpoint (TF1's `training/evaluation.py`, which
`Estimator.evaluate` runs): restore, run the metric update ops until `steps` batches are done
or the input ends, then read the metric values once.

The eval step is a local int64 variable in the EVAL_STEP collection, incremented with every
run of the update ops; `StopAfterNEvalsHook` reads it to stop after N batches.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

import numpy as np

from sluice._tf1.training.basic_hooks import FinalOpsHook
from sluice._tf1.training.monitored_session import MonitoredSession
from sluice._tf1.training.session_creators import ChiefSessionCreator
from sluice._tf1.training.session_run_hook import SessionRunArgs, SessionRunHook
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import GraphKeys, Tensor
from sluice.framework.ops.core import core_ops
from sluice.framework.variables import Variable

_logger = logging.getLogger("sluice")

EVAL_STEP = "eval_step"  # TF1's GraphKeys.EVAL_STEP


def get_or_create_eval_step() -> Variable:
    """The default graph's eval step, created on first use.

    Raises:
      ValueError: the EVAL_STEP collection holds more than one.
    """
    graph = graph_lib.get_default_graph()
    found = graph.get_collection(EVAL_STEP)
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        raise ValueError("Multiple tensors added to tf.GraphKeys.EVAL_STEP")
    with graph.name_scope(None):
        return Variable(
            np.zeros([], np.int64),
            trainable=False,
            name="eval_step",
            collections=[GraphKeys.LOCAL_VARIABLES, EVAL_STEP],
        )


class StopAfterNEvalsHook(SessionRunHook):
    """Logs `Evaluation [k/N]` and requests a stop once N evaluation batches have run (N None:
    runs until the input ends)."""

    def __init__(self, num_evals: int | None, log_progress: bool = True):
        self._num_evals = num_evals
        self._evals_completed: Tensor | None = None
        self._log_progress = log_progress
        self._log_frequency = (
            1 if num_evals is None or num_evals < 20 else math.floor(num_evals / 10.0)
        )

    def set_evals_completed_tensor(self, updated_eval_step: Tensor) -> None:
        self._evals_completed = updated_eval_step

    def before_run(self, run_context: Any) -> SessionRunArgs:
        return SessionRunArgs({"evals_completed": self._evals_completed})

    def after_run(self, run_context: Any, run_values: Any) -> None:
        done = int(run_values.results["evals_completed"])
        if self._log_progress:
            if self._num_evals is None:
                _logger.info("Evaluation [%d]", done)
            elif done % self._log_frequency == 0 or done == self._num_evals:
                _logger.info("Evaluation [%d/%d]", done, self._num_evals)
        if self._num_evals is not None and done >= self._num_evals:
            run_context.request_stop()


def evaluate_once(
    checkpoint_path: str | None,
    scaffold: Any,
    eval_ops: Any,
    final_ops: Any,
    hooks: list,
    config: Any = None,
) -> Any:
    """Restores `checkpoint_path` (or initializes, when None), runs `eval_ops` until a hook
    stops the session or the input ends, and returns the values of `final_ops` read once at
    the end."""
    eval_step = get_or_create_eval_step()
    hooks = list(hooks)
    if eval_ops is not None:
        update_eval_step = eval_step.assign_add(1)
        eval_ops = [eval_ops, update_eval_step]
        with graph_lib.control_dependencies(eval_ops):
            eval_step_value = core_ops.identity(eval_step.read_value())
        for hook in hooks:
            if isinstance(hook, StopAfterNEvalsHook):
                hook.set_evals_completed_tensor(eval_step_value)
    _logger.info("Starting evaluation at %s", time.strftime("%Y-%m-%dT%H:%M:%S"))
    start = time.time()
    creator = ChiefSessionCreator(
        scaffold=scaffold, checkpoint_filename_with_path=checkpoint_path, config=config
    )
    final_ops_hook = FinalOpsHook(final_ops)
    hooks.append(final_ops_hook)
    with MonitoredSession(session_creator=creator, hooks=hooks) as session:
        if eval_ops is not None:
            while not session.should_stop():
                session.run(eval_ops)
    _logger.info("Inference Time : %.5fs", time.time() - start)
    _logger.info("Finished evaluation at %s", time.strftime("%Y-%m-%d-%H:%M:%S"))
    return final_ops_hook.final_ops_values
