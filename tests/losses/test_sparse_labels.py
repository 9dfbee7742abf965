"""Bad labels for sparse categorical losses are caught: a class id outside [0, classes) fails fit
and evaluate on the host before the batch is fed, and the loss's op fails in a bare graph (both
with TF's message); one-hot targets get a ValueError about their rank, not a broadcasting error.
The loss's values are Keras's."""

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L

RNG = np.random.default_rng(0)
X = RNG.normal(size=(16, 3)).astype(np.float32)
Y = np.arange(16) % 5


def classifier(loss="sparse_categorical_crossentropy", softmax=True, metrics=None):
    m = sl.Sequential([sl.Input((3,)), L.Dense(5, activation="softmax" if softmax else None)])
    m.compile("sgd", loss, metrics=metrics)
    return m


@pytest.mark.parametrize("softmax", [True, False])
def test_fit_refuses_labels_out_of_range_before_any_step(softmax):
    loss = sl.losses.SparseCategoricalCrossentropy(from_logits=not softmax)
    m = classifier(loss, softmax)
    m.fit(X, Y, epochs=1, verbose=0)
    weights = m.get_weights()
    bad = Y.copy()
    bad[3] = 7
    with pytest.raises(
        sl.errors.InvalidArgumentError,
        match=r"label value of 7 which is outside the valid range of \[0, 5\)",
    ):
        m.fit(X, bad, batch_size=16, shuffle=False, verbose=0)
    with pytest.raises(sl.errors.InvalidArgumentError, match=r"label value of -1 "):
        m.evaluate(X, -np.ones(16, np.int64), verbose=0)
    for got, before in zip(m.get_weights(), weights):
        np.testing.assert_array_equal(got, before)


def test_ignore_class_is_not_out_of_range():
    m = classifier(sl.losses.SparseCategoricalCrossentropy(ignore_class=-1))
    y = Y.copy()
    y[::2] = -1
    loss = m.evaluate(X, y, verbose=0)
    assert np.isfinite(loss)
    y[1] = 5
    with pytest.raises(sl.errors.InvalidArgumentError, match="label value of 5"):
        m.evaluate(X, y, verbose=0)


@pytest.mark.parametrize("engine", ["compiled", "interpreted"])
def test_the_loss_op_checks_labels_in_a_graph(engine):
    labels = sl.placeholder(sl.int32, [None])
    probs = sl.placeholder(sl.float32, [None, 5])
    loss = sl.losses.sparse_categorical_crossentropy(labels, probs)
    p = np.full((2, 5), 0.2, np.float32)
    with sl.Session(config=sl.SessionConfig(engine=engine)) as s:
        np.testing.assert_allclose(
            s.run(loss, {labels: [0, 4], probs: p}), -np.log([0.2, 0.2]), rtol=1e-6
        )
        with pytest.raises(sl.errors.InvalidArgumentError, match=r"of 5 which .* \[0, 5\)"):
            s.run(loss, {labels: [0, 5], probs: p})


def test_one_hot_targets_for_a_sparse_loss_are_a_rank_error():
    one_hot = np.eye(5, dtype=np.float32)[Y]
    with pytest.raises(
        ValueError,
        match=r"sparse_categorical_crossentropy expects integer class "
        r"ids .* rank 1 .* one-hot encoded",
    ):
        classifier(metrics=["accuracy"]).fit(X, one_hot, verbose=0)
    with pytest.raises(ValueError, match="sparse_categorical_accuracy expects integer class ids"):
        classifier("categorical_crossentropy", metrics=["sparse_categorical_accuracy"]).fit(
            X, one_hot, verbose=0
        )


def np_log_probabilities(p, axis=-1):
    p = p / p.sum(axis=axis, keepdims=True)
    return np.log(np.clip(p, 1e-7, 1 - 1e-7))


@pytest.mark.parametrize("from_logits", [True, False])
def test_sparse_categorical_crossentropy_values(from_logits):
    logits = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    y_pred = logits if from_logits else np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    ids = np.array([[0, 3, 1], [2, 2, 0]])
    if from_logits:
        log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    else:
        log_p = np_log_probabilities(y_pred)
    expected = -np.take_along_axis(log_p, ids[..., None], -1)[..., 0]
    f = sl.losses.sparse_categorical_crossentropy
    values = [
        f(ids, y_pred, from_logits=from_logits),
        f(ids[..., None], y_pred, from_logits=from_logits),  # a last axis of 1
        f(ids, np.moveaxis(y_pred, -1, 1), from_logits=from_logits, axis=1),
        f(ids, y_pred, from_logits=from_logits, ignore_class=3),
    ]
    with sl.Session() as s:
        plain, squeezed, axis1, ignored = s.run(values)
    for got in (plain, squeezed, axis1):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ignored, np.where(ids == 3, 0.0, expected), rtol=1e-5, atol=1e-6)
