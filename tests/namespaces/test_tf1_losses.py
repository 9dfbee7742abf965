"""`sl.losses` in TF1 spelling (issue 17, item 4): every loss against a NumPy reference of TF1's
formula, every Reduction with broadcast weights, the LOSSES collection, and the Keras names that
share the namespace."""

import numpy as np
import pytest

import sluice as sl

R = sl.losses.Reduction
RNG = np.random.default_rng(0)
LABELS = RNG.uniform(0, 1, (3, 4))
PREDS = RNG.uniform(0, 1, (3, 4))
WEIGHTS = np.array([[1.0], [0.0], [2.5]])  # one per row, a zero among them


def reduce(losses, weights, reduction):
    """TF1's compute_weighted_loss in NumPy."""
    weighted = losses * weights
    broadcast = np.broadcast_to(weights, losses.shape)
    if reduction == R.NONE:
        return weighted
    total = weighted.sum()
    if reduction == R.SUM:
        return total
    if reduction == R.MEAN:
        return total / broadcast.sum()
    if reduction == R.SUM_OVER_BATCH_SIZE:
        return total / losses.size
    return total / np.count_nonzero(broadcast)


@pytest.mark.parametrize("reduction", R.all())
def test_compute_weighted_loss_reductions(reduction):
    loss = sl.losses.compute_weighted_loss(PREDS, WEIGHTS, reduction=reduction)
    assert loss.dtype == sl.float64  # computed in float32, returned in the input's dtype
    got = sl.Session().run(loss)
    np.testing.assert_allclose(got, reduce(PREDS, WEIGHTS, reduction), rtol=1e-6)
    assert sl.get_collection(sl.GraphKeys.LOSSES) == [loss]


def test_all_zero_weights_give_zero_not_nan():
    loss = sl.losses.mean_squared_error(LABELS, PREDS, weights=0.0)
    assert sl.Session().run(loss) == 0.0


def references():
    y, p = LABELS, PREDS
    logits = (p - 0.5) * 6
    error = np.abs(p - y)
    quadratic = np.minimum(error, 0.3)
    smooth = y * 0.8 + 0.1  # sigmoid label smoothing 0.2
    onehot = np.eye(4)[[0, 3, 1]]
    onehot_smooth = onehot * 0.9 + 0.1 / 4
    log_softmax = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    unit_y = y / np.linalg.norm(y, axis=1, keepdims=True)
    unit_p = p / np.linalg.norm(p, axis=1, keepdims=True)
    return {
        "absolute_difference": (lambda w: sl.losses.absolute_difference(y, p, w), error),
        "mean_squared_error": (lambda w: sl.losses.mean_squared_error(y, p, w), (p - y) ** 2),
        "huber_loss": (
            lambda w: sl.losses.huber_loss(y, p, w, delta=0.3),
            0.5 * quadratic**2 + 0.3 * (error - quadratic),
        ),
        "log_loss": (
            lambda w: sl.losses.log_loss(y, p, w),
            -y * np.log(p + 1e-7) - (1 - y) * np.log(1 - p + 1e-7),
        ),
        "hinge_loss": (
            lambda w: sl.losses.hinge_loss(np.round(y), logits, w),
            np.maximum(0, 1 - (2 * np.round(y) - 1) * logits),
        ),
        "sigmoid_cross_entropy": (
            lambda w: sl.losses.sigmoid_cross_entropy(y, logits, w, label_smoothing=0.2),
            np.maximum(logits, 0) - logits * smooth + np.log1p(np.exp(-np.abs(logits))),
        ),
        "softmax_cross_entropy": (
            lambda w: sl.losses.softmax_cross_entropy(onehot, logits, w[:, 0], label_smoothing=0.1),
            -(onehot_smooth * log_softmax).sum(-1),
        ),
        "sparse_softmax_cross_entropy": (
            lambda w: sl.losses.sparse_softmax_cross_entropy([[0], [3], [1]], logits, w),
            -log_softmax[[0, 1, 2], [0, 3, 1]],
        ),
        "cosine_distance": (
            lambda w: sl.losses.cosine_distance(unit_y, unit_p, axis=1, weights=w),
            1 - (unit_y * unit_p).sum(1, keepdims=True),
        ),
    }


def test_every_loss_matches_tf1_formula_with_weights_and_default_reduction():
    cases = references()
    losses = {name: build(WEIGHTS) for name, (build, _) in cases.items()}
    got = sl.Session().run(losses)
    for name, (_, per_element) in cases.items():
        w = WEIGHTS[:, 0] if per_element.ndim == 1 else WEIGHTS
        want = reduce(per_element, w, R.SUM_BY_NONZERO_WEIGHTS)
        np.testing.assert_allclose(got[name], want, rtol=1e-6, err_msg=name)
        assert (
            losses[name].name == f"{name}/value:0"
            or name.endswith("entropy")
            or name == "cosine_distance"
        )
    assert len(sl.losses.get_losses()) == len(cases)


def test_mean_pairwise_squared_error_matches_the_pairs():
    weights = np.array([1.0, 0.0, 2.0])
    loss = sl.losses.mean_pairwise_squared_error(LABELS, PREDS, weights)
    d = PREDS - LABELS
    per_row = [
        np.mean([(d[r, i] - d[r, j]) ** 2 for i in range(4) for j in range(4) if i != j])
        for r in range(3)
    ]
    np.testing.assert_allclose(sl.Session().run(loss), np.dot(per_row, weights), rtol=1e-6)


def test_loss_gradients_match_finite_differences():
    def build(p):  # huber's maths is float32 whatever the input (TF1 casts), softmax's is not
        huber = sl.losses.huber_loss(LABELS, p, WEIGHTS, delta=0.3, loss_collection=None)
        return sl.cast(huber, sl.float64) + sl.losses.softmax_cross_entropy(
            np.eye(4)[[0, 3, 1]], p, label_smoothing=0.1, loss_collection=None
        )

    # float32 maths inside, as TF1: loose tolerances
    sl.testing.check_gradients(build, [PREDS], rtol=1e-3, atol=1e-4, delta=1e-3)


def test_total_loss_adds_regularization_losses():
    sl.losses.absolute_difference([1.0, 2.0], [1.5, 1.0])  # mean 0.75
    sl.losses.add_loss(sl.constant(2.0))
    sl.add_to_collection(sl.GraphKeys.REGULARIZATION_LOSSES, sl.constant(0.5))
    total = sl.losses.get_total_loss()
    without = sl.losses.get_total_loss(add_regularization_losses=False, name="data_loss")
    assert total.name == "total_loss:0" and without.name == "data_loss:0"
    assert sl.Session().run([total, without]) == pytest.approx([3.25, 2.75])


def test_errors_as_tf1():
    with pytest.raises(ValueError, match="Invalid Reduction Key"):
        sl.losses.compute_weighted_loss(PREDS, reduction="mean")
    with pytest.raises(ValueError, match="weights can not be broadcast"):
        sl.losses.mean_squared_error(LABELS, PREDS, weights=np.ones(4))
    with pytest.raises(ValueError, match="not compatible"):
        sl.losses.mean_squared_error(LABELS, PREDS[:, :2])
    with pytest.raises(ValueError, match="labels must not be None"):
        sl.losses.absolute_difference(None, PREDS)
    with pytest.raises(ValueError, match="axis"):
        sl.losses.cosine_distance(LABELS, PREDS)
    with pytest.raises(ValueError, match="no losses"):
        sl.losses.get_total_loss()


def test_keras_names_still_resolve_to_the_keras_functions():
    from sluice._keras.losses import losses as keras_losses

    assert sl.losses.get("mse") is keras_losses.mean_squared_error
    assert sl.losses.get("mean_squared_error") is keras_losses.mean_squared_error
    assert sl.losses.mean_squared_error is not keras_losses.mean_squared_error
    assert isinstance(sl.losses.get("MeanSquaredError"), sl.losses.MeanSquaredError)
    assert (
        sl.losses.deserialize(sl.losses.serialize(sl.losses.get("mse")))
        is keras_losses.mean_squared_error
    )
    per_sample = sl.losses.get("mse")(LABELS, PREDS)
    assert per_sample.shape.as_list() == [3]  # Keras: one loss per sample, nothing collected
    assert sl.get_collection(sl.GraphKeys.LOSSES) == []
