"""BackupAndRestore and ModelCheckpoint never delete a file they did not write: names read from
the backup directory's state file are checked like the Saver checks them, and a symlink is never
followed to delete its target."""

import json
import os

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L
from sluice.checkpoints import CheckpointStateError


@pytest.fixture
def fit_data():
    sl.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 3)).astype(np.float32)
    return x, x.sum(axis=1, keepdims=True)


def _model():
    model = sl.Sequential([sl.Input((3,)), L.Dense(1)])
    model.compile(sl.optimizers.SGD(0.05), "mse")
    return model


def _write_state(directory, paths):
    state = {
        "format": "sluice.checkpoint_state",
        "version": 1,
        "model_checkpoint_path": paths[-1],
        "all_model_checkpoint_paths": paths,
    }
    with open(os.path.join(directory, "checkpoint.json"), "w") as fh:
        json.dump(state, fh)


def test_a_hostile_backup_state_file_stops_fit_with_a_clear_error(fit_data, tmp_path):
    x, y = fit_data
    backup = tmp_path / "backup"
    backup.mkdir()
    (tmp_path / "victim.txt").write_text("precious")
    _write_state(backup, ["../victim.txt"])
    callback = sl.callbacks.BackupAndRestore(str(backup))
    with pytest.raises(CheckpointStateError, match=r"checkpoint\.json.*'\.\./victim\.txt'"):
        _model().fit(x, y, epochs=1, verbose=0, callbacks=[callback])
    assert (tmp_path / "victim.txt").read_text() == "precious"


class _Tamper(sl.callbacks.Callback):
    """Rewrites the backup state file just before BackupAndRestore cleans up at train end."""

    def __init__(self, backup, extra):
        super().__init__()
        self.backup, self.extra = backup, extra

    def on_train_end(self, logs=None):
        path = os.path.join(self.backup, "checkpoint.json")
        with open(path) as fh:
            state = json.load(fh)
        state["all_model_checkpoint_paths"] = self.extra + state["all_model_checkpoint_paths"]
        with open(path, "w") as fh:
            json.dump(state, fh)


def test_train_end_cleanup_deletes_only_its_own_backups(fit_data, tmp_path):
    """Before, every listed path was deleted: here ../victim.txt, an absolute path, the user's
    notes and the target of a symlink."""
    x, y = fit_data
    backup = tmp_path / "backup"
    backup.mkdir()
    victims = [tmp_path / "victim.txt", tmp_path / "abs.h5", backup / "notes.h5"]
    for victim in victims:
        victim.write_text("precious")
    os.symlink(tmp_path / "victim.txt", backup / "backup-0.h5")
    extra = ["../victim.txt", str(tmp_path / "abs.h5"), "notes.h5", "backup-0.h5"]
    callbacks = [_Tamper(str(backup), extra), sl.callbacks.BackupAndRestore(str(backup))]
    with pytest.warns(UserWarning, match="ignores"):
        _model().fit(x, y, epochs=2, verbose=0, callbacks=callbacks)
    for victim in victims:
        assert victim.read_text() == "precious"
    assert sorted(os.listdir(backup)) == ["backup-0.h5", "notes.h5"]  # not ours: left alone


def test_a_normal_fit_still_removes_its_backup_directory(fit_data, tmp_path):
    x, y = fit_data
    backup = tmp_path / "backup"
    _model().fit(x, y, epochs=2, verbose=0, callbacks=[sl.callbacks.BackupAndRestore(str(backup))])
    assert not backup.exists()


def test_model_checkpoint_never_deletes_through_a_symlink(fit_data, tmp_path):
    x, y = fit_data
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")

    class _Swap(sl.callbacks.Callback):
        """Replaces the first weights file with a symlink to the victim once it is written."""

        def on_epoch_end(self, epoch, logs=None):
            first = tmp_path / "w-01.weights.h5"
            if epoch == 0:
                first.unlink()
                os.symlink(victim, first)

    every = sl.callbacks.ModelCheckpoint(str(tmp_path / "w-{epoch:02d}.weights.h5"), max_to_keep=1)
    _model().fit(x, y, epochs=3, verbose=0, callbacks=[every, _Swap()])
    assert victim.read_text() == "precious"
    assert os.path.islink(tmp_path / "w-01.weights.h5")
    assert not (tmp_path / "w-02.weights.h5").exists()
    assert (tmp_path / "w-03.weights.h5").exists()
