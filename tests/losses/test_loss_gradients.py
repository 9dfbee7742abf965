"""Gradients of every Keras 3 loss against central differences (`sluice.testing.check_gradients`),
in float64, away from the kinks (hinge margins of 0, Huber's delta, clipping bounds) where a
one-sided derivative is all there is."""

import numpy as np
import pytest

import sluice as sl
from sluice.testing import check_gradients

L = sl.losses
RNG = np.random.default_rng(7)
SHAPE = (2, 3)


def probabilities(shape=SHAPE):
    p = RNG.uniform(0.1, 1.0, size=shape)
    return p / p.sum(-1, keepdims=True)


def binary():
    return RNG.integers(0, 2, size=SHAPE).astype(np.float64)


def one_hot():
    return np.eye(SHAPE[1])[RNG.integers(0, SHAPE[1], SHAPE[0])]


def away_from(values, kinks, gap=0.05):
    """`values` moved off the points in `kinks` by at least `gap`."""
    for k in kinks:
        close = np.abs(values - k) < gap
        values = np.where(close, k + np.sign(values - k + 1e-12) * gap, values)
    return values


# name -> (function of (y_true, y_pred), y_true, y_pred, differentiate y_true too)
CASES = {
    "mean_squared_error": (L.mse, RNG.normal(size=SHAPE), RNG.normal(size=SHAPE), True),
    "mean_absolute_error": (
        L.mean_absolute_error,
        np.zeros(SHAPE),
        away_from(RNG.normal(size=SHAPE), [0.0]),
        True,
    ),
    "mean_absolute_percentage_error": (
        L.mean_absolute_percentage_error,
        RNG.uniform(1, 2, SHAPE),
        RNG.uniform(2.5, 3, SHAPE),
        True,
    ),
    "mean_squared_logarithmic_error": (
        L.mean_squared_logarithmic_error,
        RNG.uniform(0.5, 2, SHAPE),
        RNG.uniform(0.5, 2, SHAPE),
        True,
    ),
    "cosine_similarity": (
        L.cosine_similarity,
        RNG.normal(size=SHAPE),
        RNG.normal(size=SHAPE),
        True,
    ),
    "cosine_similarity axis 0": (
        lambda y, p: L.cosine_similarity(y, p, axis=0),
        RNG.normal(size=SHAPE),
        RNG.normal(size=SHAPE),
        True,
    ),
    "huber": (
        lambda y, p: L.huber(y, p, delta=0.7),
        np.zeros(SHAPE),
        away_from(RNG.normal(size=SHAPE), [-0.7, 0.7]),
        False,
    ),
    "log_cosh": (L.log_cosh, RNG.normal(size=SHAPE), RNG.normal(size=SHAPE) * 3, True),
    "hinge": (L.hinge, binary(), away_from(RNG.normal(size=SHAPE), [-1.0, 1.0]), False),
    "squared_hinge": (
        L.squared_hinge,
        binary(),
        away_from(RNG.normal(size=SHAPE), [-1.0, 1.0]),
        False,
    ),
    "categorical_hinge": (
        L.categorical_hinge,
        one_hot(),
        np.array([[0.1, 0.5, 0.2], [0.9, -0.3, 0.4]]),
        False,
    ),
    "kl_divergence": (L.kl_divergence, probabilities(), probabilities(), True),
    "poisson": (L.poisson, RNG.integers(0, 3, SHAPE) * 1.0, RNG.uniform(0.5, 2, SHAPE), True),
    "binary_crossentropy": (
        lambda y, p: L.binary_crossentropy(y, p, label_smoothing=0.1),
        binary(),
        RNG.uniform(0.1, 0.9, SHAPE),
        True,
    ),
    "binary_crossentropy logits": (
        lambda y, p: L.binary_crossentropy(y, p, from_logits=True, axis=0),
        RNG.uniform(0, 1, SHAPE),
        RNG.normal(size=SHAPE) * 3,
        True,
    ),
    "binary_focal_crossentropy": (
        lambda y, p: L.binary_focal_crossentropy(y, p, apply_class_balancing=True, gamma=1.5),
        binary(),
        RNG.uniform(0.1, 0.9, SHAPE),
        False,
    ),
    "binary_focal_crossentropy logits": (
        lambda y, p: L.binary_focal_crossentropy(y, p, from_logits=True, label_smoothing=0.2),
        binary(),
        RNG.normal(size=SHAPE),
        False,
    ),
    "categorical_crossentropy": (
        lambda y, p: L.categorical_crossentropy(y, p, label_smoothing=0.1),
        one_hot(),
        probabilities() * 2,
        True,
    ),
    "categorical_crossentropy logits": (
        lambda y, p: L.categorical_crossentropy(y, p, from_logits=True, axis=0),
        probabilities(),
        RNG.normal(size=SHAPE),
        True,
    ),
    "categorical_focal_crossentropy": (
        lambda y, p: L.categorical_focal_crossentropy(y, p, alpha=[0.2, 0.3, 0.5]),
        one_hot(),
        probabilities(),
        True,
    ),
    "categorical_focal_crossentropy logits": (
        lambda y, p: L.categorical_focal_crossentropy(y, p, from_logits=True),
        one_hot(),
        RNG.normal(size=SHAPE),
        False,
    ),
    "dice": (L.dice, binary(), RNG.uniform(0, 1, SHAPE), True),
    "dice axis 1": (lambda y, p: L.dice(y, p, axis=1), binary(), RNG.uniform(0, 1, SHAPE), True),
    "tversky": (
        lambda y, p: L.tversky(y, p, alpha=0.7, beta=0.2, axis=(1,)),
        binary(),
        RNG.uniform(0, 1, SHAPE),
        True,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_loss_function_gradient(name):
    fn, y_true, y_pred, both = CASES[name]
    if both:
        check_gradients(fn, [y_true, y_pred], rtol=1e-5, atol=1e-7)
    else:
        check_gradients(lambda p: fn(y_true, p), [y_pred], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    "name, from_logits",
    [("sparse_categorical_crossentropy", False), ("sparse_categorical_crossentropy", True)],
)
def test_sparse_and_generalized_cross_entropy_gradients(name, from_logits):
    ids = np.array([2, 0])
    p = probabilities() if not from_logits else RNG.normal(size=SHAPE)
    check_gradients(
        lambda x: L.sparse_categorical_crossentropy(ids, x, from_logits=from_logits), [p]
    )
    check_gradients(
        lambda x: L.categorical_generalized_cross_entropy(ids, x, q=0.4), [probabilities()]
    )


@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "sum", "mean_with_sample_weight"])
def test_loss_class_gradient_through_its_reduction_and_weights(reduction):
    loss = L.Huber(delta=2.0, reduction=reduction, dtype="float64")
    y_true = RNG.normal(size=SHAPE)
    check_gradients(
        lambda p, w: loss(y_true, p, sample_weight=w),
        [RNG.normal(size=SHAPE), RNG.uniform(0.5, 1.5, SHAPE[0])],
    )


def test_ctc_gradient():
    labels = np.array([[1, 2, 0], [2, 2, 1]])
    check_gradients(lambda x: L.ctc(labels, x), [RNG.normal(size=(2, 5, 3))], rtol=1e-5, atol=1e-7)


def test_ctc_second_derivative_is_refused_with_the_op_named():
    logits = sl.constant(RNG.normal(size=(1, 3, 3)))
    (first,) = sl.gradients(sl.reduce_sum(L.ctc([[1, 0]], logits)), [logits])
    with pytest.raises(NotImplementedError, match="CTCLossDense op .* second derivative"):
        sl.gradients(sl.reduce_sum(first * first), [logits])


def test_ctc_checks_ranks_as_keras():
    with pytest.raises(ValueError, match="y_true.shape"):
        L.ctc([1, 2], np.zeros((1, 2, 3), np.float32))
    with pytest.raises(ValueError, match="y_pred.shape"):
        L.ctc([[1, 2]], np.zeros((2, 3), np.float32))
