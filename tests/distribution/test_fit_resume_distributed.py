"""Keras-style fit under DataParallel (4 virtual devices) resumes exactly: a fit interrupted
mid-epoch and run again with BackupAndRestore gives the uninterrupted run's losses bit for bit,
and its backup restores into a model on one device with the same values."""

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L


class _Record(sl.callbacks.Callback):
    def __init__(self, stop_after=None):
        super().__init__()
        self.losses, self.stop_after = [], stop_after

    def on_train_batch_end(self, batch, logs=None):
        self.losses.append(logs["loss"])
        if self.stop_after is not None and len(self.losses) == self.stop_after:
            raise KeyboardInterrupt


def _fit(backup_dir, stop_after=None):
    with sl.Graph().as_default():
        return _fit_in_graph(backup_dir, stop_after)


def _fit_in_graph(backup_dir, stop_after):
    sl.utils.set_random_seed(11)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 6)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int32)
    record = _Record(stop_after)
    with sl.distribution.DataParallel().scope():
        model = sl.Sequential(
            [
                sl.Input((6,)),
                L.Dense(8, activation="relu"),
                L.BatchNormalization(),
                L.Dropout(0.3),
                L.Dense(2, activation="softmax"),
            ]
        )
        model.compile(
            sl.optimizers.Adam(0.02), "sparse_categorical_crossentropy", metrics=["accuracy"]
        )
        backup = sl.callbacks.BackupAndRestore(
            str(backup_dir), save_freq=2, delete_checkpoint=False
        )
        try:
            model.fit(x, y, batch_size=8, epochs=3, verbose=0, callbacks=[backup, record])
        except KeyboardInterrupt:
            pass
    return record.losses, model


def test_an_interrupted_data_parallel_fit_resumes_exactly(tmp_path):
    whole, whole_model = _fit(tmp_path / "whole")
    first, _ = _fit(tmp_path / "parts", stop_after=7)  # epoch 1, after its step 2
    rest, resumed_model = _fit(tmp_path / "parts")  # restarts after the backup of step 6
    assert len(whole) == 15 and len({round(v, 6) for v in whole}) == 15
    assert first == whole[:7]
    assert rest == whole[6:]
    for a, b in zip(whole_model.get_weights(), resumed_model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_a_data_parallel_backup_restores_on_one_device(tmp_path):
    _, model = _fit(tmp_path / "run")
    one = sl.Sequential(
        [
            sl.Input((6,)),
            L.Dense(8, activation="relu"),
            L.BatchNormalization(),
            L.Dropout(0.3),
            L.Dense(2, activation="softmax"),
        ]
    )
    one.compile(sl.optimizers.Adam(0.02), "sparse_categorical_crossentropy")
    one.predict(np.zeros((1, 6), np.float32), verbose=0)  # built, on one device
    path = tmp_path / "w.weights.h5"
    model.save_weights(str(path))
    one.load_weights(str(path))
    for a, b in zip(model.get_weights(), one.get_weights()):
        np.testing.assert_array_equal(a, b)
    x = np.random.default_rng(1).normal(size=(12, 6)).astype(np.float32)
    np.testing.assert_allclose(
        one.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("batch_size, samples", [(6, 40), (8, 42)])
def test_fit_names_the_numbers_when_a_batch_does_not_split(batch_size, samples):
    x = np.zeros((samples, 3), np.float32)
    y = np.zeros((samples,), np.int32)
    with sl.distribution.DataParallel().scope():
        model = sl.Sequential([sl.Input((3,)), L.Dense(2)])
        model.compile("sgd", "sparse_categorical_crossentropy")
        with pytest.raises(ValueError, match=r"cannot be split evenly over the 4 devices") as err:
            model.fit(x, y, batch_size=batch_size, verbose=0)
    assert str(batch_size) in str(err.value) and str(samples) in str(err.value)
