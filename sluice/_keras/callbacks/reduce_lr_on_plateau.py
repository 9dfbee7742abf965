"""`ReduceLROnPlateau`: lowers the learning rate when a monitored log stops improving."""

from __future__ import annotations

import math

import numpy as np

from sluice._export import export
from sluice._keras.callbacks.arguments import monitor_mode
from sluice._keras.callbacks.callback import Callback


@export("callbacks.ReduceLROnPlateau")
class ReduceLROnPlateau(Callback):
    """Multiplies the optimizer's learning rate by `factor` once `monitor` has not improved by
    more than `min_delta` for `patience` epochs, then waits `cooldown` epochs before counting
    again; never below `min_lr`. Adds the epoch's learning rate (before any reduction, as Keras)
    to its logs as "learning_rate". The rate lives in a Variable, so changing it never
    recompiles the training step.

    Args:
      monitor: the log to watch ("val_loss", "loss", "val_accuracy", ...).
      factor: the multiplier, in [0, 1).
      patience: epochs without improvement before a reduction.
      verbose: 1 prints each reduction.
      mode: "min", "max" or "auto" (max for accuracies, else min).
      min_delta: how much `monitor` must change to count as an improvement.
      cooldown: epochs after a reduction before epochs without improvement count again.
      min_lr: the lowest rate.

    Raises:
      ValueError: a factor outside [0, 1), or a bad mode.
    """

    def __init__(
        self,
        monitor: str = "val_loss",
        factor: float = 0.1,
        patience: int = 10,
        verbose: int = 0,
        mode: str = "auto",
        min_delta: float = 1e-4,
        cooldown: int = 0,
        min_lr: float = 0.0,
        **kwargs,
    ):
        super().__init__()
        if not 0.0 <= factor < 1.0:
            raise ValueError(
                "ReduceLROnPlateau does not support a factor >= 1.0 or < 0. "
                f"Received factor={factor}"
            )
        self.monitor, self.factor, self.patience = monitor, float(factor), int(patience)
        self.verbose, self.min_delta = verbose, abs(float(min_delta))
        self.cooldown, self.min_lr = int(cooldown), float(min_lr)
        self.mode = monitor_mode(mode, monitor)
        self._reset()

    def _reset(self) -> None:
        self.best = math.inf if self.mode == "min" else -math.inf
        self.wait = 0
        self.cooldown_counter = 0

    def _improved(self, current: float) -> bool:
        if self.mode == "min":
            return current < self.best - self.min_delta
        return current > self.best + self.min_delta

    def on_train_begin(self, logs: dict | None = None) -> None:
        self._reset()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = logs if logs is not None else {}
        rate = self.model.get_learning_rate()
        logs["learning_rate"] = rate
        current = logs.get(self.monitor)
        if current is None:
            print(
                f"ReduceLROnPlateau: learning rate reduction needs {self.monitor!r}, which is "
                f"not in the logs {sorted(logs)}; skipping."
            )
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self._improved(float(current)):
            self.best, self.wait = float(current), 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience and rate > np.float32(self.min_lr):
                new_rate = max(rate * self.factor, self.min_lr)
                self.model.set_learning_rate(new_rate)
                if self.verbose:
                    print(
                        f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to "
                        f"{new_rate}."
                    )
                self.cooldown_counter, self.wait = self.cooldown, 0
