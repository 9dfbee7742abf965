"""Checkpointing callbacks: `ModelCheckpoint` (weights files) and `BackupAndRestore` (resume an
interrupted fit exactly)."""

from __future__ import annotations

import contextlib
import math
import os
import stat
from typing import Any

from sluice.checkpoints import Saver, keeper, latest_checkpoint
from sluice.callbacks.callback import Callback
from sluice.layers import runtime


def monitor_mode(mode: str, monitor: str) -> str:
    """"min" or "max": `mode`, or for "auto" max for accuracies (and AUC, precision, recall)."""
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"mode must be 'auto', 'min' or 'max', got {mode!r}.")
    if mode != "auto":
        return mode
    name = monitor.removeprefix("val_")
    return (
        "max"
        if "acc" in name or name.startswith(("auc", "fmeasure", "precision", "recall"))
        else "min"
    )


def _save_freq(save_freq: Any) -> Any:
    if save_freq != "epoch" and not (isinstance(save_freq, int) and save_freq > 0):
        raise ValueError(f"save_freq must be 'epoch' or a positive int, got {save_freq!r}.")
    return save_freq


class ModelCheckpoint(Callback):
    """Saves the model's weights (`model.save_weights`, an h5 file written atomically) after
    every epoch or every `save_freq` batches.

    Args:
      filepath: the file to write; may hold `{epoch}` (1-based), `{batch}` and log names, as
        in "ckpt/model-{epoch:02d}-{val_loss:.2f}.weights.h5". Must end in ".h5".
      monitor: the log to compare with save_best_only.
      verbose: 1 prints a line per save.
      save_best_only: save only when `monitor` improves on the best value so far.
      save_weights_only: accepted; sluice has no whole-model format, so the file always holds
        the weights (load them with `model.load_weights`).
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
        if not self.filepath.endswith(".h5"):
            raise ValueError(
                f"ModelCheckpoint writes h5 weight files: the filepath must end in `.weights.h5`, got {filepath!r}."
            )
        if max_to_keep is not None and max_to_keep < 1:
            raise ValueError(f"max_to_keep must be None or >= 1, got {max_to_keep}.")
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        self.mode = monitor_mode(mode, monitor)
        self.save_freq = _save_freq(save_freq)
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
                    f"ModelCheckpoint: can save best model only with {self.monitor} available, skipping."
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
                    f"\nEpoch {epoch + 1}: {self.monitor} improved from {self.best:.5f} to {float(current):.5f}, saving model to {path}"
                )
            self.best = float(current)
        elif self.verbose:
            print(f"\nEpoch {epoch + 1}: saving model to {path}")
        self.model.save_weights(path)
        if path in self.kept:
            self.kept.remove(path)
        self.kept.append(path)
        while self.max_to_keep is not None and len(self.kept) > self.max_to_keep:
            _remove_own_file(self.kept.pop(0))


def _remove_own_file(path: str) -> None:
    """Deletes a file this process wrote, unless it has been replaced by something that is not
    a regular file (a symlink is never followed, nor deleted)."""
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISREG(os.lstat(path).st_mode):
            os.remove(path)


class BackupAndRestore(Callback):
    """Backs up the whole training state so that an interrupted `fit`, run again with the same
    call (in a new process), resumes where the last backup was taken and reproduces the losses
    of an uninterrupted run.

    The backup is a `sl.train.Saver` checkpoint in `backup_dir` of every Variable of the model's
    graph (weights, optimizer state, metric totals, the fit position and the shuffling seed) and
    of the session's random-number counters (dropout draws continue their sequence). On train
    begin the latest backup, if any, is restored and fit continues from its epoch and batch.
    The directory's `checkpoint.json` is untrusted: an entry that is not a plain checkpoint name
    of `backup_dir` stops fit with a `CheckpointStateError` naming it, and the cleanup at train
    end deletes only checkpoint files of `backup_dir` (never a symlink's target).

    Args:
      backup_dir: the directory of the backups.
      save_freq: "epoch" (at each epoch's end) or a number of batches (mid-epoch backups, to
        resume at the exact step).
      double_checkpoint: keep the last two backups instead of one.
      delete_checkpoint: delete the backups when fit ends normally.
    """

    def __init__(
        self,
        backup_dir: str,
        save_freq: Any = "epoch",
        double_checkpoint: bool = False,
        delete_checkpoint: bool = True,
    ):
        super().__init__()
        if not backup_dir:
            raise ValueError("BackupAndRestore needs a backup_dir.")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = _save_freq(save_freq)
        self.double_checkpoint = double_checkpoint
        self.delete_checkpoint = delete_checkpoint
        self._saver: Saver | None = None
        self._saver_vars: list = []
        self._batches_since_save = 0

    def _get_saver(self) -> Saver:
        variables = self.model._state_variables()
        if self._saver is None or variables != self._saver_vars:
            graph = self.model.graph
            with graph.as_default():
                self._saver = Saver(
                    var_list=variables,
                    max_to_keep=2 if self.double_checkpoint else 1,
                    name="backup",
                )
            self._saver_vars = variables
        return self._saver

    def on_train_begin(self, logs: dict | None = None) -> None:
        os.makedirs(self.backup_dir, exist_ok=True)
        saver = self._get_saver()
        self._batches_since_save = 0
        latest = latest_checkpoint(self.backup_dir)
        if latest is None:
            return
        saver.restore(self.model.session, latest)
        runtime.runtime_for(self.model.graph).mark_initialized(self._saver_vars)
        epoch, step = self.model._fit_position()
        self.model._resume_at(epoch, step)

    def _backup(self) -> None:
        self._get_saver().save(
            self.model.session,
            os.path.join(self.backup_dir, "backup"),
            global_step=self.model._iterations(),
        )

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if self.save_freq == "epoch":
            return
        self._batches_since_save += 1
        if self._batches_since_save >= self.save_freq:
            self._batches_since_save = 0
            self._backup()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self.save_freq == "epoch":
            self._backup()

    def on_train_end(self, logs: dict | None = None) -> None:
        if not self.delete_checkpoint:
            return
        if not os.path.isdir(self.backup_dir):
            return
        # Only checkpoints of this directory are deleted: the state file's entries that pass
        # the keeper's checks, and the backups this run wrote.
        own = self._saver.last_checkpoints if self._saver is not None else []
        keeper.delete_checkpoints(self.backup_dir, also=own)
        self._saver = None  # its keeper lists the files just deleted
        with contextlib.suppress(OSError):  # not empty: files that are not ours stay
            os.rmdir(self.backup_dir)
