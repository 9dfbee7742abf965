"""TF1's training loop machinery, re-exported by `sl.train`: hooks, `Scaffold`,
`SessionManager`, `MonitoredSession`/`MonitoredTrainingSession`, `Supervisor`, `Coordinator`.
"""

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
from sluice._tf1.training.coordinator import Coordinator, LooperThread
from sluice._tf1.training.monitored_session import (
    MonitoredSession,
    MonitoredTrainingSession,
    SingularMonitoredSession,
)
from sluice._tf1.training.scaffold import Scaffold
from sluice._tf1.training.session_creators import (
    ChiefSessionCreator,
    SessionCreator,
    WorkerSessionCreator,
)
from sluice._tf1.training.session_manager import SessionManager
from sluice._tf1.training.session_run_hook import (
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
)
from sluice._tf1.training.summary_hooks import SummarySaverHook
from sluice._tf1.training.supervisor import Supervisor
from sluice._tf1.training.timers import SecondOrStepTimer

__all__ = [
    "CheckpointSaverHook",
    "CheckpointSaverListener",
    "ChiefSessionCreator",
    "Coordinator",
    "FeedFnHook",
    "FinalOpsHook",
    "LoggingTensorHook",
    "LooperThread",
    "MonitoredSession",
    "MonitoredTrainingSession",
    "NanLossDuringTrainingError",
    "NanTensorHook",
    "Scaffold",
    "SecondOrStepTimer",
    "SessionCreator",
    "SessionManager",
    "SessionRunArgs",
    "SessionRunContext",
    "SessionRunHook",
    "SessionRunValues",
    "SingularMonitoredSession",
    "StepCounterHook",
    "StopAtStepHook",
    "SummarySaverHook",
    "Supervisor",
    "WorkerSessionCreator",
]
