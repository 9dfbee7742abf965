"""`train_and_evaluate` (TF1 `tf.estimator.train_and_evaluate`) with its `TrainSpec` and
`EvalSpec`, as TF runs it locally (no TF_CONFIG cluster): one `Estimator.train` up to
`max_steps`, and an evaluation after each checkpoint the training saves (the one saved when the
session starts excepted), at most one per `throttle_secs`, plus one of the last checkpoint.
How often checkpoints come is the Estimator's RunConfig (save_checkpoints_steps or _secs).
"""

from __future__ import annotations

import collections
import logging
from typing import Any, Callable

from sluice._export import export
from sluice._tf1.estimator.estimator import Estimator
from sluice._tf1.training.checkpoint_hooks import CheckpointSaverListener
from sluice._tf1.training.session_run_hook import SessionRunHook
from sluice._tf1.training.timers import SecondOrStepTimer
from sluice.framework.ir.graph import GraphKeys

_logger = logging.getLogger("sluice")


def _validate_input_fn(input_fn: Any) -> None:
    if not callable(input_fn):
        raise TypeError(f"`input_fn` must be callable, given: {input_fn}")


def _validate_hooks(hooks: Any) -> tuple:
    hooks = tuple(hooks or [])
    for hook in hooks:
        if not isinstance(hook, SessionRunHook):
            raise TypeError(f"All hooks must be `SessionRunHook` instances, given: {hook}")
    return hooks


@export("estimator.TrainSpec")
class TrainSpec(collections.namedtuple("TrainSpec", ["input_fn", "max_steps", "hooks"])):
    """The training half of `train_and_evaluate`: its input_fn, the global step to train to
    (None: until the input ends) and its hooks.

    Raises:
      TypeError: input_fn not callable, a hook that is not a SessionRunHook.
      ValueError: max_steps <= 0.
    """

    def __new__(
        cls, input_fn: Callable, max_steps: int | None = None, hooks: Any = None
    ) -> "TrainSpec":
        _validate_input_fn(input_fn)
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        return super().__new__(cls, input_fn, max_steps, _validate_hooks(hooks))


@export("estimator.EvalSpec")
class EvalSpec(
    collections.namedtuple(
        "EvalSpec",
        ["input_fn", "steps", "name", "hooks", "exporters", "start_delay_secs", "throttle_secs"],
    )
):
    """The evaluation half of `train_and_evaluate`: its input_fn, batches per evaluation
    (None: the whole input), the evaluation's name, hooks, and the minimum seconds between
    two evaluations. `start_delay_secs` is validated and, as in TF's local mode, unused.
    sluice exports no SavedModel, so `exporters` must be empty.

    Raises:
      TypeError: input_fn not callable, name not a string, a hook that is not one.
      ValueError: steps <= 0, negative delays, or exporters given.
    """

    def __new__(
        cls,
        input_fn: Callable,
        steps: int | None = 100,
        name: str | None = None,
        hooks: Any = None,
        exporters: Any = None,
        start_delay_secs: float = 120,
        throttle_secs: float = 600,
    ) -> "EvalSpec":
        _validate_input_fn(input_fn)
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"`name` must be string, given: {name}")
        if exporters:
            raise ValueError(
                "EvalSpec(exporters=...): sluice's Estimator exports no SavedModel; save the "
                "model's weights from its checkpoints (Estimator.latest_checkpoint())."
            )
        if start_delay_secs < 0:
            raise ValueError(f"Must specify start_delay_secs >= 0, given: {start_delay_secs}")
        if throttle_secs < 0:
            raise ValueError(f"Must specify throttle_secs >= 0, given: {throttle_secs}")
        return super().__new__(
            cls,
            input_fn,
            steps,
            name,
            _validate_hooks(hooks),
            (),
            start_delay_secs,
            throttle_secs,
        )


class _EvaluateAfterCheckpoints(CheckpointSaverListener):
    """Evaluates each new checkpoint (TF's `_NewCheckpointListenerForEvaluate`)."""

    def __init__(self, estimator: Estimator, eval_spec: EvalSpec):
        self._estimator = estimator
        self._eval_spec = eval_spec
        self._previous_checkpoint: str | None = None
        self.eval_result: dict | None = None

    def begin(self) -> None:
        self._timer = SecondOrStepTimer(every_secs=self._eval_spec.throttle_secs)
        self._is_first_run = True

    def after_save(self, session: Any, global_step_value: int) -> None:
        if self._is_first_run:  # the checkpoint of the untrained (or restored) model
            self._is_first_run = False
            return
        if self._timer.should_trigger_for_step(global_step_value):
            self._evaluate(global_step_value)
        else:
            _logger.info(
                "Skip the current checkpoint eval due to throttle secs (%s secs).",
                self._eval_spec.throttle_secs,
            )

    def end(self, session: Any, global_step_value: int) -> None:
        if global_step_value != self._timer.last_triggered_step():
            self._evaluate(global_step_value)

    def _evaluate(self, global_step_value: int) -> None:
        self._timer.update_last_triggered_step(global_step_value)
        checkpoint = self._estimator.latest_checkpoint()
        if checkpoint is None or checkpoint == self._previous_checkpoint:
            raise RuntimeError(
                "There was no new checkpoint after the training. Eval status: "
                + ("missing checkpoint" if checkpoint is None else "no new checkpoint")
            )
        self.eval_result = self._estimator.evaluate(
            self._eval_spec.input_fn,
            steps=self._eval_spec.steps,
            hooks=self._eval_spec.hooks,
            checkpoint_path=checkpoint,
            name=self._eval_spec.name,
        )
        self._previous_checkpoint = checkpoint


@export("estimator.train_and_evaluate")
def train_and_evaluate(
    estimator: Estimator, train_spec: TrainSpec, eval_spec: EvalSpec
) -> tuple[dict | None, list]:
    """Trains `estimator` as train_spec says, evaluating each checkpoint as eval_spec says
    (see the module docstring).

    Returns:
      (the last evaluation's results, or None when none ran; the export results: []).

    Raises:
      TypeError: arguments of the wrong types.
      ValueError: the Estimator's RunConfig saves no checkpoints (nothing to evaluate).

    >>> def model_fn(features, labels, mode):
    ...     w = sl.get_variable("w", [], initializer=sl.zeros_initializer())
    ...     loss = sl.reduce_mean(sl.square(w * features - labels))
    ...     train_op = sl.train.GradientDescentOptimizer(0.1).minimize(
    ...         loss, global_step=sl.train.get_global_step())
    ...     return sl.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
    >>> x = np.ones(4, np.float32)
    >>> input_fn = sl.estimator.inputs.numpy_input_fn(x, x, num_epochs=None, shuffle=False)
    >>> config = sl.estimator.RunConfig(model_dir="m", save_checkpoints_steps=2)
    >>> metrics, _ = sl.estimator.train_and_evaluate(
    ...     sl.estimator.Estimator(model_fn, config=config),
    ...     sl.estimator.TrainSpec(input_fn, max_steps=2),
    ...     sl.estimator.EvalSpec(input_fn, steps=1, throttle_secs=0))
    >>> int(metrics["global_step"])
    2
    """
    if not isinstance(eval_spec, EvalSpec):
        raise TypeError(
            f"`eval_spec` must have type `tf.estimator.EvalSpec`. Got: {type(eval_spec)}"
        )
    if not isinstance(estimator, Estimator):
        raise TypeError(
            f"`estimator` must have type `tf.estimator.Estimator`. Got: {type(estimator)}"
        )
    if not isinstance(train_spec, TrainSpec):
        raise TypeError(
            f"`train_spec` must have type `tf.estimator.TrainSpec`. Got: {type(train_spec)}"
        )
    config = estimator.config
    _logger.info("Running training and evaluation locally (non-distributed).")
    _logger.info(
        "Start train and evaluate loop. The evaluate will happen after every checkpoint. "
        "Checkpoint frequency is determined based on RunConfig arguments: "
        "save_checkpoints_steps %s or save_checkpoints_secs %s.",
        config.save_checkpoints_steps,
        config.save_checkpoints_secs,
    )
    listener = _EvaluateAfterCheckpoints(estimator, eval_spec)
    estimator.train(
        train_spec.input_fn,
        hooks=list(train_spec.hooks),
        max_steps=train_spec.max_steps,
        saving_listeners=[listener],
    )
    result = listener.eval_result
    if result is not None:
        assert GraphKeys.GLOBAL_STEP in result
    return result, []
