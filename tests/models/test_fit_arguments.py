"""fit / evaluate / predict refuse nonsense (Keras 3): non-positive batch sizes and empty data
are ValueErrors naming the argument; fit(epochs=0) returns an empty History; predict on zero
samples returns arrays of shape (0, ...)."""

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L

X = np.random.default_rng(0).normal(size=(16, 3)).astype(np.float32)
Y = np.arange(16) % 5


@pytest.fixture(scope="module")
def model():
    # one model for the module: every refusal below happens before a step runs
    g = sl.Graph()
    with g.as_default():
        m = sl.Sequential([sl.Input((3,)), L.Dense(5)])
        m.compile("sgd", sl.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


@pytest.mark.parametrize("batch_size", [0, -4, 2.5, True])
@pytest.mark.parametrize("call", ["fit", "evaluate", "predict"])
def test_a_batch_size_that_is_not_a_positive_integer_is_refused(model, call, batch_size):
    args = (X,) if call == "predict" else (X, Y)
    expected = f"`batch_size` must be a positive integer, got {batch_size}"
    with pytest.raises(ValueError, match=expected):
        getattr(model, call)(*args, batch_size=batch_size, verbose=0)


def test_a_bad_validation_batch_size_is_refused(model):
    with pytest.raises(ValueError, match="`validation_batch_size` must be a positive integer"):
        model.fit(X, Y, validation_data=(X, Y), validation_batch_size=0, verbose=0)


@pytest.mark.parametrize("call", ["fit", "evaluate", "train_on_batch"])
def test_empty_data_is_refused(model, call):
    with pytest.raises(ValueError, match=f"{call}: expected input data to be non-empty"):
        getattr(model, call)(X[:0], Y[:0], **({} if call == "train_on_batch" else {"verbose": 0}))


def test_empty_validation_data_is_refused(model):
    with pytest.raises(ValueError, match="validation_data: expected input data to be non-empty"):
        model.fit(X, Y, validation_data=(X[:0], Y[:0]), verbose=0)


def test_fit_with_no_epoch_to_run_returns_an_empty_history():
    m = sl.Sequential([sl.Input((3,)), L.Dense(5)])
    m.compile("sgd", sl.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = m.fit(X, Y, epochs=0, verbose=0)
    assert isinstance(history, sl.callbacks.History)
    assert history.history == {} and history.epoch == [] and m.history is history
    trained = m.fit(X, Y, epochs=1, verbose=0)
    assert list(trained.history) == ["loss"]
    again = m.fit(X, Y, epochs=1, initial_epoch=1, verbose=0)  # nothing left to run
    assert again is not trained and again.history == {} and m.history is again


def test_predict_on_zero_samples_gives_arrays_of_zero_rows():
    x = sl.Input((3,))
    h = L.Dense(4)(x)
    m = sl.Model(x, [h, L.Dense(2, activation="softmax")(h)])
    first, second = m.predict(X[:0], verbose=0)
    assert first.shape == (0, 4) and second.shape == (0, 2) and second.dtype == np.float32
    assert m.predict(X, verbose=0)[1].shape == (16, 2)


def test_predict_on_zero_samples_with_a_dimension_known_only_from_the_data():
    m = sl.Sequential([sl.Input((None, 3)), L.Dense(2)])
    out = m.predict(np.zeros((0, 7, 3), np.float32), verbose=0)
    assert out.shape == (0, 7, 2)
