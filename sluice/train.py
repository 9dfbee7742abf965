"""`sl.train`: TF1's `tf.train` namespace: optimizers, the global step, schedules, Saver.

Re-exports only. The optimizers are the same `Optimizer` as `sl.optimizers` (Keras spelling).
"""

from sluice.checkpoints.checkpoint_state import (
    CheckpointState,
    checkpoint_exists,
    get_checkpoint_state,
    latest_checkpoint,
)
from sluice.checkpoints.reader import list_variables, load_checkpoint, load_variable
from sluice.checkpoints.saver import Saver
from sluice.optimizers.moving_averages import ExponentialMovingAverage
from sluice.optimizers.optimizer import Optimizer
from sluice.optimizers.schedules import (
    cosine_decay,
    exponential_decay,
    piecewise_constant,
    polynomial_decay,
    schedule_value,
)
from sluice.optimizers.tf1 import (
    AdadeltaOptimizer,
    AdagradOptimizer,
    AdamOptimizer,
    FtrlOptimizer,
    GradientDescentOptimizer,
    MomentumOptimizer,
    ProximalAdagradOptimizer,
    ProximalGradientDescentOptimizer,
    RMSPropOptimizer,
)
from sluice.optimizers.training_util import (
    clip_by_global_norm,
    create_global_step,
    get_global_step,
    get_or_create_global_step,
    global_norm,
    global_step,
)

__all__ = [
    "AdadeltaOptimizer",
    "AdagradOptimizer",
    "AdamOptimizer",
    "CheckpointState",
    "ExponentialMovingAverage",
    "FtrlOptimizer",
    "GradientDescentOptimizer",
    "MomentumOptimizer",
    "Optimizer",
    "ProximalAdagradOptimizer",
    "ProximalGradientDescentOptimizer",
    "RMSPropOptimizer",
    "Saver",
    "checkpoint_exists",
    "clip_by_global_norm",
    "cosine_decay",
    "create_global_step",
    "exponential_decay",
    "get_checkpoint_state",
    "get_global_step",
    "get_or_create_global_step",
    "global_norm",
    "global_step",
    "latest_checkpoint",
    "list_variables",
    "load_checkpoint",
    "load_variable",
    "piecewise_constant",
    "polynomial_decay",
    "schedule_value",
]
