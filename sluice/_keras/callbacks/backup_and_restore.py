"""`BackupAndRestore`: backs up the whole training state so that an interrupted fit resumes
exactly."""

from __future__ import annotations

import contextlib
import os
from typing import Any

from sluice._export import export
from sluice._keras.callbacks.arguments import check_save_freq
from sluice._keras.callbacks.callback import Callback
from sluice._keras.layers import runtime
from sluice._tf1.checkpoints import keeper
from sluice._tf1.checkpoints.checkpoint_state import latest_checkpoint
from sluice._tf1.checkpoints.saver import Saver
from sluice.framework.placement import processes


@export("callbacks.BackupAndRestore")
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
        self.save_freq = check_save_freq(save_freq)
        self.double_checkpoint = double_checkpoint
        self.delete_checkpoint = delete_checkpoint
        self._saver: Saver | None = None
        self._saver_vars: list = []
        self._batches_since_save = 0

    def _get_saver(self) -> Saver:
        variables = self.model.state_variables()
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
        epoch, step = self.model.fit_position()
        self.model.resume_fit_at(epoch, step)

    def _backup(self) -> None:
        self._get_saver().save(
            self.model.session,
            os.path.join(self.backup_dir, "backup"),
            global_step=self.model.steps_trained(),
            write_meta_graph=False,  # the same code restores it: no graph needed beside it
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
        if not self.delete_checkpoint or not processes.is_chief():
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
