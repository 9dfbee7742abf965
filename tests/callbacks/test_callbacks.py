"""EarlyStopping, LearningRateScheduler, ModelCheckpoint, CSVLogger, TerminateOnNaN, History."""

import csv
import os

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L


@pytest.fixture
def regression():
    sl.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-1.0], [2.0]], np.float32)
    model = sl.Sequential([sl.Input((3,)), L.Dense(1)])
    model.compile(sl.optimizers.SGD(0.05), "mse", metrics=["mae"])
    return model, x, y


def test_early_stopping_stops_and_restores_the_best_weights(regression):
    model, x, y = regression
    snapshots = []
    record = sl.callbacks.LambdaCallback(
        on_epoch_end=lambda e, logs: snapshots.append((logs["loss"], model.get_weights()))
    )
    # "loss" keeps improving; a huge min_delta makes no epoch after the first count as an
    # improvement
    stop = sl.callbacks.EarlyStopping(
        monitor="loss", min_delta=1e6, patience=2, restore_best_weights=True
    )
    history = model.fit(x, y, epochs=20, verbose=0, callbacks=[record, stop])
    assert len(history.epoch) == 3 and stop.stopped_epoch == 2 and stop.best_epoch == 0
    for got, best in zip(model.get_weights(), snapshots[0][1]):
        np.testing.assert_array_equal(got, best)


def test_learning_rate_scheduler_changes_the_rate_without_recompiling(regression):
    model, x, y = regression
    versions = []
    record = sl.callbacks.LambdaCallback(
        on_epoch_end=lambda e, logs: versions.append(model.graph.version)
    )
    schedule = sl.callbacks.LearningRateScheduler(lambda epoch, lr: 0.1 * 0.5**epoch)
    history = model.fit(x, y, epochs=3, verbose=0, callbacks=[schedule, record])
    assert history.history["learning_rate"] == pytest.approx([0.1, 0.05, 0.025])
    assert len(set(versions)) == 1
    before = model.get_weights()
    model.fit(
        x, y, epochs=1, verbose=0, callbacks=[sl.callbacks.LearningRateScheduler(lambda epoch: 0.0)]
    )
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)  # a rate of 0 leaves the weights alone


def test_model_checkpoint_best_only_and_max_to_keep(regression, tmp_path):
    model, x, y = regression
    every = sl.callbacks.ModelCheckpoint(
        str(tmp_path / "all-{epoch:02d}.weights.h5"), max_to_keep=2
    )
    best = sl.callbacks.ModelCheckpoint(
        str(tmp_path / "best.weights.h5"), monitor="val_loss", save_best_only=True
    )
    model.fit(x, y, epochs=4, verbose=0, validation_data=(x, y), callbacks=[every, best])
    assert sorted(os.listdir(tmp_path)) == [
        "all-03.weights.h5",
        "all-04.weights.h5",
        "best.weights.h5",
    ]
    expected = model.get_weights()  # val_loss improves every epoch here: best == last
    model.set_weights([np.zeros_like(w) for w in expected])
    model.load_weights(str(tmp_path / "best.weights.h5"))
    for a, b in zip(model.get_weights(), expected):
        np.testing.assert_array_equal(a, b)
    batches = sl.callbacks.ModelCheckpoint(
        str(tmp_path / "b-{epoch}-{batch}.weights.h5"), save_freq=1
    )
    model.fit(x, y, epochs=1, batch_size=16, verbose=0, callbacks=[batches])
    assert {"b-1-0.weights.h5", "b-1-1.weights.h5"} <= set(os.listdir(tmp_path))


def test_csv_logger_appends_without_a_second_header_when_resuming(regression, tmp_path):
    model, x, y = regression
    path = str(tmp_path / "log.csv")
    model.fit(x, y, epochs=3, verbose=0, callbacks=[sl.callbacks.CSVLogger(path)])
    # a run resumed at epoch 2 (as BackupAndRestore or initial_epoch makes it) redoes epoch 2
    model.fit(x, y, epochs=4, initial_epoch=2, verbose=0, callbacks=[sl.callbacks.CSVLogger(path)])
    with open(path) as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["epoch", "loss", "mae"]
    assert [r[0] for r in rows[1:]] == ["0", "1", "2", "3"]
    model.fit(x, y, epochs=1, verbose=0, callbacks=[sl.callbacks.CSVLogger(path)])  # a new run
    with open(path) as fh:
        assert [r[0] for r in csv.reader(fh)] == ["epoch", "0"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_csv_logger_appending_to_a_fifo_refuses_it_naming_it_instead_of_blocking(
    regression, tmp_path
):
    import signal

    model, x, y = regression
    path = str(tmp_path / "log.csv")
    os.mkfifo(path)

    def expire(*_):
        raise AssertionError("CSVLogger blocked reading the FIFO")  # not an OSError

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, 10, 1.0)  # again each second till cancelled
    try:
        with pytest.raises(OSError, match="log.csv' is a FIFO"):
            model.fit(
                x, y, epochs=1, verbose=0, callbacks=[sl.callbacks.CSVLogger(path, append=True)]
            )
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_terminate_on_nan_and_history(regression):
    model, x, y = regression
    bad = y.copy()
    bad[0] = np.nan
    history = model.fit(
        x, bad, epochs=3, batch_size=8, verbose=0, callbacks=[sl.callbacks.TerminateOnNaN()]
    )
    assert history.epoch == [0] and np.isnan(history.history["loss"][0])
    assert model.history is history


def test_terminate_on_nan_stops_a_diverging_model_at_its_first_bad_batch(capsys):
    # SGD with a learning rate of 10 on least squares: the loss grows each step until it is inf
    sl.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(128, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-1.0], [2.0]], np.float32)
    model = sl.Sequential([sl.Input((3,)), L.Dense(1)])
    model.compile(sl.optimizers.SGD(10.0), "mse")
    seen = []
    record = sl.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: seen.append(logs["loss"])
    )
    history = model.fit(
        x, y, batch_size=4, epochs=3, shuffle=False, verbose=0,
        callbacks=[record, sl.callbacks.TerminateOnNaN()],
    )  # fmt: skip
    assert all(np.isfinite(seen[:-1])) and not np.isfinite(seen[-1])
    assert len(seen) < 128 // 4  # stopped inside the first epoch
    assert history.epoch == [0] and not np.isfinite(history.history["loss"][0])
    assert f"Batch {len(seen) - 1}: Invalid loss, terminating training" in capsys.readouterr().out


def test_reduce_lr_on_plateau_waits_reduces_cools_down_and_stops_at_min_lr(regression):
    model, x, y = regression
    model.fit(x, y, epochs=1, verbose=0)  # built, with its learning-rate Variable
    reduce = sl.callbacks.ReduceLROnPlateau(
        monitor="val_loss", factor=0.5, patience=2, cooldown=1, min_lr=0.01, min_delta=0.0
    )
    reduce.set_model(model)
    reduce.on_train_begin()
    rates = []
    # improves, then flat: reduce after 2 flat epochs, then (the cooldown epoch counting down
    # first, as in Keras) again 2 epochs later; each epoch logs the rate it trained with
    for epoch, val_loss in enumerate([1.0, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9]):
        logs = {"val_loss": val_loss}
        reduce.on_epoch_end(epoch, logs)
        rates.append(round(logs["learning_rate"], 6))
    assert rates == [0.05, 0.05, 0.05, 0.05, 0.025, 0.025, 0.0125, 0.0125, 0.01, 0.01, 0.01]
    assert model.get_learning_rate() == pytest.approx(0.01)  # never below min_lr
    with pytest.raises(ValueError, match="factor"):
        sl.callbacks.ReduceLROnPlateau(factor=1.5)


def test_reduce_lr_on_plateau_in_fit_logs_the_rate(regression):
    model, x, y = regression
    # a huge min_delta: no epoch improves on the first, so the rate drops after each patience
    reduce = sl.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.1, patience=1, min_delta=1e6)
    history = model.fit(x, y, epochs=3, verbose=0, callbacks=[reduce])
    assert history.history["learning_rate"] == pytest.approx([0.05, 0.05, 0.005])
    assert model.get_learning_rate() == pytest.approx(0.0005)


def test_hooks_get_logs_positionally_and_on_batch_end_is_the_train_batch_hook():
    # the training guide's LossHistory: `def on_train_begin(self, logs)` (no default)
    class LossHistory(sl.callbacks.Callback):
        def on_train_begin(self, logs):
            assert logs == {}  # the writing-your-own-callbacks guide lists its keys
            self.per_batch_losses = []

        def on_batch_end(self, batch, logs):
            self.per_batch_losses.append(logs.get("loss"))

    model = sl.Sequential([sl.Input((2,)), L.Dense(1)])
    model.compile("sgd", "mse")
    history = LossHistory()
    x = np.ones((6, 2), np.float32)
    model.fit(x, np.zeros((6, 1), np.float32), batch_size=2, callbacks=[history], verbose=0)
    assert len(history.per_batch_losses) == 3 and all(v > 0 for v in history.per_batch_losses)
    model.evaluate(x, np.zeros((6, 1), np.float32), callbacks=[history], verbose=0)
    assert len(history.per_batch_losses) == 3  # on_batch_end is for training batches only


def test_a_callback_sets_the_learning_rate_through_the_optimizer():
    # the writing-your-own-callbacks guide: `self.model.optimizer.learning_rate = x` each epoch
    seen = []

    class Halve(sl.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            lr = self.model.optimizer.learning_rate
            seen.append(float(np.array(lr)))
            self.model.optimizer.learning_rate = float(np.array(lr)) / 2

    model = sl.Sequential([sl.Input((2,)), L.Dense(1)])
    model.compile(sl.optimizers.SGD(0.4), "mse")
    x, y = np.ones((4, 2), np.float32), np.zeros((4, 1), np.float32)
    model.fit(x, y, epochs=3, callbacks=[Halve()], verbose=0)
    np.testing.assert_allclose(seen, [0.4, 0.2, 0.1], rtol=1e-6)  # a float32 variable
    assert model.get_learning_rate() == pytest.approx(0.05)
