"""`sl.metrics` in TF1 spelling (issue 17, item 4): streaming `(value, update_op)` pairs over
several batches against NumPy, TF1's variable names and collections, resets by
`local_variables_initializer`, and the Keras metrics that share the namespace."""

import numpy as np
import pytest

import sluice as sl

ENGINES = ["compiled", "interpreted"]
RNG = np.random.default_rng(0)
BATCHES = [(RNG.integers(0, 2, 6), RNG.integers(0, 2, 6), RNG.uniform(0, 2, 6)) for _ in range(3)]


def stream(build, engine="compiled", weighted=True):
    """Feeds BATCHES through `build(labels, predictions, weights)`; returns the update results,
    the final value, and the value after a reset."""
    labels = sl.placeholder(sl.int64, [None])
    predictions = sl.placeholder(sl.int64, [None])
    weights = sl.placeholder(sl.float32, [None]) if weighted else None
    value, update = build(labels, predictions, weights)
    updates = []
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        sess.run(sl.local_variables_initializer())
        for y, p, w in BATCHES:
            feed = {labels: y, predictions: p}
            if weighted:
                feed[weights] = w
            updates.append(sess.run(update, feed))
        final = sess.run(value)
        sess.run(sl.local_variables_initializer())
        reset = sess.run(value)
    return updates, final, reset


def running(stat):
    """stat(y, p, w) of the concatenated batches seen so far, after each batch."""
    return [
        stat(*(np.concatenate(parts) for parts in zip(*BATCHES[: i + 1])))
        for i in range(len(BATCHES))
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_accuracy_streams_and_resets(engine):
    updates, final, reset = stream(sl.metrics.accuracy, engine)
    want = running(lambda y, p, w: np.sum((y == p) * w) / np.sum(w))
    np.testing.assert_allclose(updates, want, rtol=1e-6)
    np.testing.assert_allclose(final, want[-1], rtol=1e-6)
    assert reset == 0.0  # count 0: the value is 0, not NaN


def test_accuracy_variables_are_local_metric_variables_named_as_tf1():
    value, update = sl.metrics.accuracy(
        [1, 2],
        [1, 3],
        metrics_collections=["my_metrics"],
        updates_collections=[sl.GraphKeys.UPDATE_OPS],
    )
    names = [v.name for v in sl.get_collection(sl.GraphKeys.METRIC_VARIABLES)]
    assert names == ["accuracy/total:0", "accuracy/count:0"]
    assert [v.name for v in sl.local_variables()] == names
    assert sl.global_variables() == [] and sl.trainable_variables() == []
    assert (value.name, update.name) == ("accuracy/value:0", "accuracy/update_op:0")
    assert sl.get_collection("my_metrics") == [value]
    assert sl.get_collection(sl.GraphKeys.UPDATE_OPS) == [update]
    sl.metrics.accuracy([1], [1])
    assert sl.local_variables()[-1].name == "accuracy_1/count:0"


def test_mean_errors_and_rmse_stream():
    fns = {
        "mse": (sl.metrics.mean_squared_error, lambda y, p, w: np.sum((y - p) ** 2 * w) / w.sum()),
        "mae": (sl.metrics.mean_absolute_error, lambda y, p, w: np.sum(abs(y - p) * w) / w.sum()),
        "rmse": (
            sl.metrics.root_mean_squared_error,
            lambda y, p, w: np.sqrt(np.sum((y - p) ** 2 * w) / w.sum()),
        ),
        "mean": (lambda y, p, w: sl.metrics.mean(p, w), lambda y, p, w: np.sum(p * w) / w.sum()),
    }
    for key, (build, stat) in fns.items():
        updates, final, _ = stream(build)
        np.testing.assert_allclose(updates, running(stat), rtol=1e-6, err_msg=key)
    assert "root_mean_squared_error/total:0" in [v.name for v in sl.local_variables()]


def test_precision_and_recall_stream_unweighted():
    p_updates, p_final, _ = stream(lambda y, p, w: sl.metrics.precision(y, p), weighted=False)
    r_updates, r_final, _ = stream(lambda y, p, w: sl.metrics.recall(y, p), weighted=False)
    precision = running(lambda y, p, w: np.sum((y == 1) & (p == 1)) / max(np.sum(p == 1), 1))
    recall = running(lambda y, p, w: np.sum((y == 1) & (p == 1)) / max(np.sum(y == 1), 1))
    np.testing.assert_allclose(p_updates, precision, rtol=1e-6)
    np.testing.assert_allclose(r_updates, recall, rtol=1e-6)
    names = {v.name for v in sl.get_collection(sl.GraphKeys.METRIC_VARIABLES)}
    assert {
        "precision/true_positives/count:0",
        "precision/false_positives/count:0",
        "recall/false_negatives/count:0",
    } <= names


def test_squeezable_dims_and_errors():
    value, update = sl.metrics.accuracy([[1], [0], [1]], [1, 1, 1], weights=[[1.0], [1.0], [0.0]])
    with sl.Session() as sess:
        sess.run(sl.local_variables_initializer())
        assert sess.run(update) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="not compatible"):
        sl.metrics.accuracy([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="can not be broadcast"):
        sl.metrics.mean([[1.0, 2.0]], weights=[[1.0], [2.0], [3.0]])


def test_keras_metrics_keep_their_classes_and_names():
    from sluice._keras.metrics import metrics as keras_metrics

    assert (
        sl.metrics.get(
            "accuracy",
            y_true=sl.placeholder(sl.float32, [None, 3]),
            y_pred=sl.placeholder(sl.float32, [None, 3]),
        )
        is not None
    )
    assert isinstance(sl.metrics.Accuracy(), sl.metrics.Metric)
    assert sl.metrics.accuracy is not keras_metrics.accuracy


def auc_reference(y, p, w, num_thresholds, curve, summation):
    """TF1's auc: confusion counts at thresholds, then the summed area (NumPy, float64)."""
    inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    cuts = np.float32([-1e-7, *inner, 1 + 1e-7])
    above = p[:, None] > cuts[None, :]
    pos = (y == 1)[:, None]
    w = w[:, None]
    tp, fn = (w * (pos & above)).sum(0), (w * (pos & ~above)).sum(0)
    tn, fp = (w * (~pos & ~above)).sum(0), (w * (~pos & above)).sum(0)
    if curve == "PR" and summation == "careful_interpolation":
        return interpolated_pr_reference(tp, fn, fp)
    recall = (tp + 1e-6) / (tp + fn + 1e-6)
    x, h = (
        (fp / (fp + tn + 1e-6), recall)
        if curve == "ROC"
        else (recall, (tp + 1e-6) / (tp + fp + 1e-6))
    )
    pair = {
        "trapezoidal": (h[:-1] + h[1:]) / 2,
        "careful_interpolation": (h[:-1] + h[1:]) / 2,
        "minoring": np.minimum(h[:-1], h[1:]),
        "majoring": np.maximum(h[:-1], h[1:]),
    }[summation]
    return np.sum((x[:-1] - x[1:]) * pair)


def interpolated_pr_reference(tp, fn, fp):
    """The PR area with tp and p = tp + fp linear between thresholds, integrated numerically
    (precision against recall); an interval reaching p = 0 counts its rise in recall at
    precision 1 (TF's log ratio of 1 there)."""
    area, positives = 0.0, tp[0] + fn[0]
    for a in range(len(tp) - 1):
        (tp_a, tp_b), (p_a, p_b) = tp[a : a + 2], (tp + fp)[a : a + 2]
        if p_a == p_b:
            continue
        slope = (tp_a - tp_b) / (p_a - p_b)
        if p_b <= 0:
            area += slope * (tp_a - tp_b) / positives
            continue
        along = np.linspace(p_b, p_a, 2001)
        precision = (tp_b + slope * (along - p_b)) / along
        area += np.trapezoid(precision, along) * slope / positives
    return area


@pytest.mark.parametrize(
    "curve, summation",
    [
        ("ROC", "trapezoidal"),
        ("PR", "minoring"),
        ("ROC", "majoring"),
        ("PR", "careful_interpolation"),
        ("ROC", "careful_interpolation"),
    ],
)
def test_auc_streams_as_tf1(curve, summation):
    rng = np.random.default_rng(1)
    batches = [
        (rng.integers(0, 2, 8), rng.uniform(0, 1, 8).astype(np.float32), rng.uniform(0, 2, 8))
        for _ in range(2)
    ]
    labels = sl.placeholder(sl.int64, [None])
    predictions = sl.placeholder(sl.float32, [None])
    weights = sl.placeholder(sl.float32, [None])
    value, update = sl.metrics.auc(
        labels, predictions, weights, num_thresholds=20, curve=curve, summation_method=summation
    )
    with sl.Session() as sess:
        sess.run(sl.local_variables_initializer())
        for i, (y, p, w) in enumerate(batches):
            got = sess.run(update, {labels: y, predictions: p, weights: w})
            seen = [np.concatenate(parts) for parts in zip(*batches[: i + 1])]
            want = auc_reference(*seen, 20, curve, summation)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        assert sess.run(value) == pytest.approx(want, rel=1e-5)
    assert {v.name for v in sl.local_variables()} == {
        f"auc/{k}:0"
        for k in ("true_positives", "false_negatives", "true_negatives", "false_positives")
    }


def test_auc_errors():
    with pytest.raises(ValueError, match="ROC or PR"):
        sl.metrics.auc([1], [0.5], curve="XY")
    with pytest.raises(ValueError, match="summation_method"):
        sl.metrics.auc([1], [0.5], summation_method="simpson")
    with pytest.raises(sl.errors.InvalidArgumentError):  # known values: when built, as TF1
        sl.metrics.auc([1, 0], [0.5, 1.5])
    predictions = sl.placeholder(sl.float32, [2])
    _, update = sl.metrics.auc([1, 0], predictions)
    with sl.Session() as sess:
        sess.run(sl.local_variables_initializer())
        with pytest.raises(sl.errors.InvalidArgumentError, match="x <= y"):
            sess.run(update, {predictions: [0.5, 1.5]})


@pytest.mark.parametrize("engine", ENGINES)
def test_one_weight_per_example_of_2d_predictions(engine):
    # TF1's _remove_squeezable_dimensions gives [batch] weights a trailing unit dimension when
    # the predictions are [batch, d]: each weight covers its example's d predictions.
    labels = np.array([[1, 0, 1], [0, 0, 1]])
    predictions = np.array([[1, 1, 1], [0, 0, 0]])
    weights = np.array([0.5, 2.0], np.float32)
    acc, update_acc = sl.metrics.accuracy(labels, predictions, weights=weights)
    mean, update_mean = sl.metrics.mean(labels.astype(np.float32), weights=weights)
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        sess.run(sl.local_variables_initializer())
        got = sess.run([update_acc, update_mean])
    w = np.broadcast_to(weights[:, None], labels.shape)
    np.testing.assert_allclose(got[0], (w * (labels == predictions)).sum() / w.sum(), rtol=1e-6)
    np.testing.assert_allclose(got[1], (w * labels).sum() / w.sum(), rtol=1e-6)
