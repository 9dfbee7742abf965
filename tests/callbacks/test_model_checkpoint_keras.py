"""ModelCheckpoint with `.keras` files: whole models, best only, formatted names; the weights-only
paths as before; Keras's errors for the other paths."""

import os

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L


def test_best_only_keras_file_holds_the_best_model(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-1.0], [2.0]], np.float32)
    model = sl.Sequential([sl.Input((3,)), L.Dense(1)])
    model.compile(sl.optimizers.SGD(0.05), "mse")
    best = sl.callbacks.ModelCheckpoint(str(tmp_path / "best.keras"), save_best_only=True)
    named = sl.callbacks.ModelCheckpoint(
        str(tmp_path / "m-{epoch:02d}-{val_loss:.2f}.keras"), max_to_keep=1
    )
    history = model.fit(x, y, epochs=3, verbose=0, validation_data=(x, y), callbacks=[best, named])
    last = history.history["val_loss"][-1]
    assert sorted(os.listdir(tmp_path)) == ["best.keras", f"m-03-{last:.2f}.keras"]
    loaded = sl.models.load_model(str(tmp_path / "best.keras"))  # val_loss falls each epoch
    assert loaded.compiled and loaded.optimizer.get_config()["learning_rate"] == pytest.approx(0.05)
    for a, b in zip(loaded.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert loaded.evaluate(x, y, verbose=0) == pytest.approx(last, rel=1e-5)


def test_paths_that_are_refused():
    with pytest.raises(ValueError, match="must end in `.weights.h5`"):
        sl.callbacks.ModelCheckpoint("model.keras", save_weights_only=True)
    with pytest.raises(ValueError, match="must end in `.keras`"):
        sl.callbacks.ModelCheckpoint("model.ckpt")
    sl.callbacks.ModelCheckpoint("w.weights.h5", save_weights_only=True)  # unchanged


def test_a_failed_best_only_save_is_retried_at_the_next_improvement(tmp_path, monkeypatch):
    model = sl.Sequential([sl.Input((3,)), L.Dense(1)])
    best = sl.callbacks.ModelCheckpoint(str(tmp_path / "best.keras"), "loss", save_best_only=True)
    best.set_model(model)  # the callback's steps, without the cost of a fit

    def full_disk(*args, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(model, "save", full_disk)
    with pytest.raises(OSError, match="No space"):
        best.on_epoch_end(0, {"loss": 0.5})
    assert best.best == float("inf") and not os.listdir(tmp_path)
    monkeypatch.undo()
    best.on_epoch_end(1, {"loss": 0.5})  # no better than the failed one, but never saved
    assert best.best == 0.5 and os.listdir(tmp_path) == ["best.keras"]
