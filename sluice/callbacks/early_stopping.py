"""Callbacks that watch the logs or change the run: EarlyStopping, CSVLogger,
LearningRateScheduler, TerminateOnNaN, LambdaCallback."""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from sluice.callbacks.backup_and_restore import monitor_mode
from sluice.callbacks.callback import Callback
from sluice.checkpoints import atomic


class EarlyStopping(Callback):
    """Stops fit when `monitor` has not improved for `patience` epochs (Keras 3 rules).

    Args:
      monitor: the log to watch ("val_loss" by default).
      min_delta: the least change that counts as an improvement.
      patience: epochs without improvement before stopping.
      verbose: 1 prints a line when stopping.
      mode: "min", "max" or "auto".
      baseline: a value `monitor` must beat, else training stops after `patience` epochs.
      restore_best_weights: at the end, load the weights of the best epoch.
      start_from_epoch: epochs to wait before watching.
    """

    def __init__(
        self,
        monitor: str = "val_loss",
        min_delta: float = 0.0,
        patience: int = 0,
        verbose: int = 0,
        mode: str = "auto",
        baseline: float | None = None,
        restore_best_weights: bool = False,
        start_from_epoch: int = 0,
    ):
        super().__init__()
        self.monitor = monitor
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = start_from_epoch
        self.mode = monitor_mode(mode, monitor)
        self.min_delta = abs(min_delta) * (1 if self.mode == "max" else -1)

    def _improved(self, value: float, reference: float | None) -> bool:
        if reference is None:
            return True
        value = value - self.min_delta
        return value > reference if self.mode == "max" else value < reference

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.wait = 0
        self.stopped_epoch = 0
        self.best: float | None = None
        self.best_weights: list | None = None
        self.best_epoch = 0

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        current = (logs or {}).get(self.monitor)
        if current is None:
            print(
                f"EarlyStopping: the metric {self.monitor!r} is not in the logs {sorted(logs or {})}; skipping."
            )
            return
        if epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self._improved(float(current), self.best):
            self.best = float(current)
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._improved(float(current), self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs: dict | None = None) -> None:
        if self.stopped_epoch > 0 and self.verbose:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose:
                print(
                    f"Restoring model weights from the end of the best epoch: {self.best_epoch + 1}."
                )
            self.model.set_weights(self.best_weights)


class CSVLogger(Callback):
    """Writes one CSV row per epoch: "epoch" then the logs, sorted by name.

    When the run does not start at epoch 0 (a BackupAndRestore resume, or `initial_epoch`) and
    the file exists, or with `append=True`, rows are appended under the existing header (no
    second header); rows of the epochs this run does again are dropped first.

    Args:
      filename: the CSV file.
      separator: the field separator.
      append: always append to an existing file.
    """

    def __init__(self, filename: str, separator: str = ",", append: bool = False):
        super().__init__()
        self.filename = os.fspath(filename)
        self.sep = separator
        self.append = append
        self._keys: list[str] | None = None
        self._first_epoch: int | None = None

    def on_train_begin(self, logs: dict | None = None) -> None:
        self._keys = None
        self._first_epoch = None

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        if self._first_epoch is None:
            self._first_epoch = epoch

    def _open(self, logs: dict) -> None:
        first = self._first_epoch or 0
        continuing = (self.append or first > 0) and os.path.exists(self.filename)
        if continuing:
            with open(self.filename, newline="") as fh:
                rows = list(csv.reader(fh, delimiter=self.sep))
            if rows:
                header, body = rows[0], rows[1:]
                kept = [r for r in body if r and _epoch_of(r) is not None and _epoch_of(r) < first]
                self._keys = header[1:]
                self._write_rows([header] + kept)
                return
        self._keys = sorted(logs)
        self._write_rows([["epoch"] + self._keys])

    def _write_rows(self, rows: list[list[str]]) -> None:
        def write(tmp: str) -> None:
            with open(tmp, "w", newline="") as fh:
                csv.writer(fh, delimiter=self.sep, lineterminator="\n").writerows(rows)

        directory = os.path.dirname(os.path.abspath(self.filename))
        os.makedirs(directory, exist_ok=True)
        atomic.write_atomically(self.filename, write)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = dict(logs or {})
        if self._keys is None:
            self._open(logs)
        row = [str(epoch)] + [_csv_value(logs.get(k, "NA")) for k in self._keys]
        with open(self.filename, "a", newline="") as fh:
            csv.writer(fh, delimiter=self.sep, lineterminator="\n").writerow(row)


def _epoch_of(row: list[str]) -> int | None:
    try:
        return int(row[0])
    except (ValueError, IndexError):
        return None


def _csv_value(value: Any) -> str:
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return str(value)


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
        current = self.model._get_learning_rate()
        try:
            rate = self.schedule(epoch, current)
        except TypeError:  # a schedule of the epoch only
            rate = self.schedule(epoch)
        rate = float(rate)
        if not math.isfinite(rate):
            raise ValueError(f"The learning rate schedule returned {rate} for epoch {epoch}.")
        self.model._set_learning_rate(rate)
        if self.verbose:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to {rate}.")

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if logs is not None:
            logs["learning_rate"] = self.model._get_learning_rate()


class TerminateOnNaN(Callback):
    """Stops fit when the loss becomes NaN or infinite."""

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        loss = (logs or {}).get("loss")
        if loss is not None and not np.isfinite(loss):
            print(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True


class LambdaCallback(Callback):
    """A callback from functions: LambdaCallback(on_epoch_end=lambda epoch, logs: ...)."""

    def __init__(self, **hooks: Callable):
        super().__init__()
        for name, fn in hooks.items():
            if not name.startswith("on_") or not hasattr(Callback, name):
                raise ValueError(f"LambdaCallback: unknown hook {name!r}.")
            setattr(self, name, fn)
