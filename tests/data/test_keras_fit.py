"""Keras fit/evaluate/predict over a sl.data.Dataset, as tf.keras reads one."""

import logging

import numpy as np
import pytest

import sluice as sl

RNG = np.random.default_rng(3)
X = RNG.normal(size=(20, 3)).astype(np.float32)
Y = RNG.normal(size=(20, 1)).astype(np.float32)
SW = RNG.uniform(0.5, 2.0, size=20).astype(np.float32)


def model():
    m = sl.Sequential(
        [
            sl.layers.Dense(4, activation="tanh", kernel_initializer="ones"),
            sl.layers.Dense(1, kernel_initializer="ones"),
        ]
    )
    m.compile(optimizer=sl.optimizers.SGD(0.01), loss="mse")
    return m


def assert_same_weights(a, b):
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(wa, wb, rtol=1e-6, atol=1e-7)


def test_fit_on_a_dataset_equals_fit_on_the_arrays_unshuffled():
    on_arrays, on_dataset = model(), model()
    on_arrays.fit(X, Y, sample_weight=SW, batch_size=8, epochs=2, shuffle=False, verbose=0)
    ds = sl.data.Dataset.from_tensor_slices((X, Y, SW)).batch(8)
    pairs = sl.data.Dataset.from_tensor_slices((X, Y)).batch(20)  # one batch, as the arrays
    history = on_dataset.fit(ds, epochs=2, verbose=0, validation_data=pairs)
    assert_same_weights(on_arrays, on_dataset)
    assert len(history.history["loss"]) == 2
    evaluated = on_dataset.evaluate(pairs, verbose=0)
    np.testing.assert_allclose(evaluated, on_arrays.evaluate(X, Y, verbose=0), rtol=1e-6)
    np.testing.assert_allclose(history.history["val_loss"][-1], evaluated, rtol=1e-6)
    inputs_only = sl.data.Dataset.from_tensor_slices(X).batch(20)
    np.testing.assert_allclose(
        on_dataset.predict(inputs_only, verbose=0), on_arrays.predict(X, verbose=0), rtol=1e-6
    )
    np.testing.assert_allclose(
        on_dataset.predict(pairs, verbose=0),  # (x, y): x is used
        on_arrays.predict(X, verbose=0),
        rtol=1e-6,
    )


def test_steps_per_epoch_continues_one_pass_across_epochs(caplog):
    on_arrays, on_dataset = model(), model()
    on_arrays.fit(X, Y, batch_size=5, epochs=2, shuffle=False, verbose=0)
    ds = sl.data.Dataset.from_tensor_slices((X, Y)).batch(5).repeat()
    on_dataset.fit(ds, epochs=4, steps_per_epoch=2, verbose=0)
    assert_same_weights(on_arrays, on_dataset)
    short = model()  # a filter hides the length: the shortfall shows only when it runs out
    unknown_length = sl.data.Dataset.from_tensor_slices((X, Y)).filter(lambda x, y: True)
    with caplog.at_level(logging.WARNING, logger="sluice"):
        history = short.fit(unknown_length.batch(5), epochs=3, steps_per_epoch=3, verbose=0)
    assert "ran out of data" in caplog.text and len(history.history["loss"]) == 2


def test_step_counts_are_checked_against_the_cardinality_as_in_keras_1_15():
    m = model()
    forever = sl.data.Dataset.from_tensor_slices((X, Y)).batch(5).repeat()
    with pytest.raises(ValueError, match="must specify the `steps_per_epoch` argument"):
        m.fit(forever, epochs=1, verbose=0)
    with pytest.raises(ValueError, match="must specify the `validation_steps` argument"):
        m.fit(forever, steps_per_epoch=1, validation_data=forever, verbose=0)
    with pytest.raises(ValueError, match="must specify the `steps` argument"):
        m.evaluate(forever, verbose=0)
    with pytest.raises(ValueError, match="must specify the `steps` argument"):
        m.predict(forever, verbose=0)
    four = sl.data.Dataset.from_tensor_slices((X, Y)).batch(5)  # 4 batches
    with pytest.raises(ValueError, match=r"contains 4 batches.*suggest to set `steps_per_epoch=1`"):
        m.fit(four, epochs=3, steps_per_epoch=3, verbose=0)
    assert m.evaluate(forever, steps=2, verbose=0) == pytest.approx(
        m.evaluate(X[:10], Y[:10], verbose=0), rel=1e-6
    )


def test_backup_and_restore_resumes_mid_epoch_past_the_batches_done(tmp_path):
    class Interrupt(sl.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 1 and self.model.fit_position()[0] == 1:
                raise RuntimeError("interrupted")

    class Batches(sl.callbacks.Callback):
        seen = []

        def on_train_batch_begin(self, batch, logs=None):
            self.seen.append(batch)

    uninterrupted = model()
    uninterrupted.fit(X, Y, batch_size=5, epochs=2, shuffle=False, verbose=0)
    for steps, ds in [
        (None, sl.data.Dataset.from_tensor_slices((X, Y)).batch(5)),
        (4, sl.data.Dataset.from_tensor_slices((X, Y)).batch(5).repeat()),
    ]:
        backup = str(tmp_path / f"backup_{steps}")
        with pytest.raises(RuntimeError, match="interrupted"):
            model().fit(
                ds,
                epochs=2,
                steps_per_epoch=steps,
                verbose=0,
                callbacks=[sl.callbacks.BackupAndRestore(backup, save_freq=1), Interrupt()],
            )
        resumed, batches = model(), Batches()
        resumed.fit(
            ds,
            epochs=2,
            steps_per_epoch=steps,
            verbose=0,
            callbacks=[sl.callbacks.BackupAndRestore(backup, save_freq=1), batches],
        )
        assert batches.seen == [2, 3]  # epoch 1 goes on after its batches 0 and 1
        batches.seen.clear()
        assert_same_weights(uninterrupted, resumed)


def test_array_arguments_with_a_dataset_are_errors():
    ds = sl.data.Dataset.from_tensor_slices((X, Y)).batch(5)
    m = model()
    m.fit(ds, batch_size=64, verbose=0)  # Keras 3 ignores a batch_size (the training guide)
    m.evaluate(ds, batch_size=64, verbose=0)
    assert m.predict(ds, batch_size=64, verbose=0).shape[0] == len(X)
    with pytest.raises(ValueError, match="`y`"):
        m.fit(ds, Y, verbose=0)
    with pytest.raises(ValueError, match="validation_split"):
        m.fit(ds, validation_split=0.2, verbose=0)
    with pytest.raises(ValueError, match=r"\(x, y\)"):
        m.fit(sl.data.Dataset.from_tensor_slices(X).batch(5), verbose=0)
