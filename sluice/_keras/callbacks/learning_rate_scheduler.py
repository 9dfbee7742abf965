"""`LearningRateScheduler`: sets the optimizer's learning rate at each epoch's start."""

from __future__ import annotations

import math
from collections.abc import Callable

from sluice._export import export
from sluice._keras.callbacks.callback import Callback


@export("callbacks.LearningRateScheduler")
class LearningRateScheduler(Callback):
    """Sets the optimizer's learning rate at each epoch's start to `schedule(epoch, lr)` (or
    `schedule(epoch)`); adds "learning_rate" to the epoch logs. The rate lives in a Variable,
    so changing it never recompiles the training step.

    Args:
      schedule: a function of (epoch, current learning rate) or of epoch.
      verbose: 1 prints the new rate.
    """

    def __init__(self, schedule: Callable, verbose: int = 0):
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        current = self.model.get_learning_rate()
        try:
            rate = self.schedule(epoch, current)
        except TypeError:  # a schedule of the epoch only
            rate = self.schedule(epoch)
        rate = float(rate)
        if not math.isfinite(rate):
            raise ValueError(f"The learning rate schedule returned {rate} for epoch {epoch}.")
        self.model.set_learning_rate(rate)
        if self.verbose:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to {rate}.")

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if logs is not None:
            logs["learning_rate"] = self.model.get_learning_rate()
