"""The hooks TF 1.15 also exports under `tf.estimator` (`tf.estimator.StopAtStepHook` is
`tf.train.StopAtStepHook`): the same classes, under a second path."""

from __future__ import annotations

from sluice._export import export
from sluice._tf1.training.basic_hooks import (
    FeedFnHook,
    FinalOpsHook,
    LoggingTensorHook,
    NanLossDuringTrainingError,
    NanTensorHook,
    StepCounterHook,
    StopAtStepHook,
)
from sluice._tf1.training.checkpoint_hooks import CheckpointSaverHook, CheckpointSaverListener
from sluice._tf1.training.session_run_hook import (
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
)
from sluice._tf1.training.summary_hooks import SummarySaverHook
from sluice._tf1.training.timers import SecondOrStepTimer

for _cls in (
    CheckpointSaverHook,
    CheckpointSaverListener,
    FeedFnHook,
    FinalOpsHook,
    LoggingTensorHook,
    NanLossDuringTrainingError,
    NanTensorHook,
    SecondOrStepTimer,
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
    StepCounterHook,
    StopAtStepHook,
    SummarySaverHook,
):
    export(f"estimator.{_cls.__name__}")(_cls)
