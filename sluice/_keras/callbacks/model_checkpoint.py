"""`ModelCheckpoint`: the model saved during fit, whole (a `.keras` file) or its weights (h5)."""

from __future__ import annotations

import contextlib
import math
import os
import stat
from typing import Any

from sluice._export import export
from sluice._keras.callbacks.arguments import check_save_freq, monitor_mode
from sluice._keras.callbacks.callback import Callback
from sluice.framework.placement import processes


@export("callbacks.ModelCheckpoint")
class ModelCheckpoint(Callback):
    """Saves the model after every epoch or every `save_freq` batches: the whole model
    (`model.save`, a Keras 3 `.keras` file) for a path ending in ".keras", its weights
    (`model.save_weights`) for one ending in ".h5". Either file is written atomically.

    Args:
      filepath: the file to write; may hold `{epoch}` (1-based), `{batch}` and log names, as
        in "ckpt/model-{epoch:02d}-{val_loss:.2f}.keras". Must end in ".keras" or ".h5".
      monitor: the log to compare with save_best_only.
      verbose: 1 prints a line per save.
      save_best_only: save only when `monitor` improves on the best value so far.
      save_weights_only: save only the weights; the filepath must then end in ".weights.h5"
        (or ".h5"). An ".h5" path always holds the weights (sluice writes no legacy HDF5
        model): load them with `model.load_weights`; a ".keras" one with `load_model`.
      mode: "min", "max" or "auto" (max for accuracies, else min).
      save_freq: "epoch" or a number of batches.
      initial_value_threshold: the value `monitor` must beat first.
      max_to_keep: keep only the newest this many files this callback wrote (None: keep all).
    """

    def __init__(
        self,
        filepath: str,
        monitor: str = "val_loss",
        verbose: int = 0,
        save_best_only: bool = False,
        save_weights_only: bool = False,
        mode: str = "auto",
        save_freq: Any = "epoch",
        initial_value_threshold: float | None = None,
        max_to_keep: int | None = None,
    ):
        super().__init__()
        self.filepath = os.fspath(filepath)
        if save_weights_only and not self.filepath.endswith(".h5"):
            raise ValueError(
                "When using `save_weights_only=True` in `ModelCheckpoint`, the filepath provided "
                f"must end in `.weights.h5` (Keras weights format). Received: filepath={filepath}"
            )
        if not self.filepath.endswith((".keras", ".h5")):
            raise ValueError(
                "The filepath provided must end in `.keras` (Keras model format). Received: "
                f"filepath={filepath}"
            )
        if max_to_keep is not None and max_to_keep < 1:
            raise ValueError(f"max_to_keep must be None or >= 1, got {max_to_keep}.")
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        self.mode = monitor_mode(mode, monitor)
        self.save_freq = check_save_freq(save_freq)
        self.max_to_keep = max_to_keep
        self.best = initial_value_threshold
        if self.best is None:
            self.best = math.inf if self.mode == "min" else -math.inf
        self._batches_since_save = 0
        self._current_epoch = 0
        self.kept: list[str] = []

    def _improved(self, value: float) -> bool:
        return value < self.best if self.mode == "min" else value > self.best

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._current_epoch = epoch

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if self.save_freq == "epoch":
            return
        self._batches_since_save += 1
        if self._batches_since_save >= self.save_freq:
            self._batches_since_save = 0
            self._save(self._current_epoch, batch, logs or {})

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self.save_freq == "epoch":
            self._save(epoch, None, logs or {})

    def _save(self, epoch: int, batch: int | None, logs: dict) -> None:
        try:
            path = self.filepath.format(epoch=epoch + 1, batch=batch, **logs)
        except KeyError as err:
            raise KeyError(
                f"ModelCheckpoint: the filepath {self.filepath!r} names {err}, which is not in the "
                f"logs {sorted(logs)}."
            ) from None
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None:
                print(
                    f"ModelCheckpoint: can save best model only with {self.monitor} available,"
                    " skipping."
                )
                return
            if not self._improved(float(current)):
                if self.verbose:
                    print(
                        f"\nEpoch {epoch + 1}: {self.monitor} did not improve from {self.best:.5f}"
                    )
                return
            if self.verbose:
                print(
                    f"\nEpoch {epoch + 1}: {self.monitor} improved from {self.best:.5f}"
                    f" to {float(current):.5f}, saving model to {path}"
                )
        elif self.verbose:
            print(f"\nEpoch {epoch + 1}: saving model to {path}")
        if path.endswith(".keras"):
            self.model.save(path)
        else:
            self.model.save_weights(path)
        if self.save_best_only:  # only once saved: a failed save leaves the best to beat as it was
            self.best = float(logs[self.monitor])
        if path in self.kept:
            self.kept.remove(path)
        self.kept.append(path)
        while self.max_to_keep is not None and len(self.kept) > self.max_to_keep:
            old = self.kept.pop(0)
            if processes.is_chief():  # the process that wrote it
                _remove_own_file(old)


def _remove_own_file(path: str) -> None:
    """Deletes a file this process wrote, unless it has been replaced by something that is not
    a regular file (a symlink is never followed, nor deleted)."""
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISREG(os.lstat(path).st_mode):
            os.remove(path)
