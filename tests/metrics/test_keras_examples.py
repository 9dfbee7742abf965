"""The examples of Keras 3's metric docstrings (keras/src/metrics/*.py), run as Keras 3 runs them:
standalone, on Python lists and NumPy arrays, `update_state` then `result()` at once, then
`reset_state()` and a weighted update. Keras rounds what it shows; each value is checked to the
digits shown."""

import numpy as np
import pytest

import sluice as sl

M = sl.metrics

Y2, P2 = [[0, 1], [0, 0]], [[0.6, 0.4], [0.4, 0.6]]
R2, Q2 = [[0, 1], [0, 0]], [[1, 1], [0, 0]]
CAT_Y, CAT_P = [[0, 0, 1], [0, 1, 0]], [[0.1, 0.9, 0.8], [0.05, 0.95, 0]]
XENT_Y, XENT_P = [[0, 1, 0], [0, 0, 1]], [[0.05, 0.95, 0], [0.1, 0.8, 0.1]]
ONE_HOT_Y = np.array([[0, 0, 1], [1, 0, 0], [0, 1, 0], [1, 0, 0]])
ONE_HOT_P = np.array([[0.2, 0.3, 0.5], [0.1, 0.2, 0.7], [0.5, 0.3, 0.1], [0.1, 0.4, 0.5]])
F_Y = np.array([[1, 1, 1], [1, 0, 0], [1, 1, 0]], np.int32)
F_P = np.array([[0.2, 0.6, 0.7], [0.2, 0.6, 0.6], [0.6, 0.8, 0.0]], np.float32)

# (metric, args, shown, weighted update's kwargs or None, shown after it)
EXAMPLES = [
    (lambda: M.Mean(), ([1, 3, 5, 7],), 4.0, {"sample_weight": [1, 1, 0, 0]}, 2.0),
    (lambda: M.Sum(), ([1, 3, 5, 7],), 16.0, {"sample_weight": [1, 1, 0, 0]}, 4.0),
    (
        lambda: M.Accuracy(),
        ([[1], [2], [3], [4]], [[0], [2], [3], [4]]),
        0.75,
        {"sample_weight": [1, 1, 0, 0]},
        0.5,
    ),
    (
        lambda: M.BinaryAccuracy(),
        ([[1], [1], [0], [0]], [[0.98], [1], [0], [0.6]]),
        0.75,
        {"sample_weight": [1, 0, 0, 1]},
        0.5,
    ),
    (lambda: M.CategoricalAccuracy(), (CAT_Y, CAT_P), 0.5, {"sample_weight": [0.7, 0.3]}, 0.3),
    (
        lambda: M.SparseCategoricalAccuracy(),
        ([[2], [1]], [[0.1, 0.6, 0.3], [0.05, 0.95, 0]]),
        0.5,
        {"sample_weight": [0.7, 0.3]},
        0.3,
    ),
    (
        lambda: M.TopKCategoricalAccuracy(k=1),
        (CAT_Y, CAT_P),
        0.5,
        {"sample_weight": [0.7, 0.3]},
        0.3,
    ),
    (
        lambda: M.SparseTopKCategoricalAccuracy(k=1),
        ([2, 1], CAT_P),
        0.5,
        {"sample_weight": [0.7, 0.3]},
        0.3,
    ),
    (
        lambda: M.SparseTopKCategoricalAccuracy(k=1, from_sorted_ids=True),
        ([2, 1], [[1, 0, 3], [1, 2, 3]]),
        0.5,
        None,
        None,
    ),
    (
        lambda: M.AUC(num_thresholds=3),
        ([0, 0, 1, 1], [0, 0.5, 0.3, 0.9]),
        0.75,
        {"sample_weight": [1, 0, 0, 1]},
        1.0,
    ),  # fmt: skip
    (
        lambda: M.FalsePositives(),
        ([0, 1, 0, 0], [0, 0, 1, 1]),
        2.0,
        {"sample_weight": [0, 0, 1, 0]},
        1.0,
    ),  # fmt: skip
    (
        lambda: M.FalseNegatives(),
        ([0, 1, 1, 1], [0, 1, 0, 0]),
        2.0,
        {"sample_weight": [0, 0, 1, 0]},
        1.0,
    ),  # fmt: skip
    (
        lambda: M.TrueNegatives(),
        ([0, 1, 0, 0], [1, 1, 0, 0]),
        2.0,
        {"sample_weight": [0, 0, 1, 0]},
        1.0,
    ),  # fmt: skip
    (
        lambda: M.TruePositives(),
        ([0, 1, 1, 1], [1, 0, 1, 1]),
        2.0,
        {"sample_weight": [0, 0, 1, 0]},
        1.0,
    ),  # fmt: skip
    (
        lambda: M.Precision(),
        ([0, 1, 1, 1], [1, 0, 1, 1]),
        0.6666667,
        {"sample_weight": [0, 0, 1, 0]},
        1.0,
    ),  # fmt: skip
    (lambda: M.Precision(top_k=2), ([0, 0, 1, 1], [1, 1, 1, 1]), 0.0, None, None),
    (lambda: M.Precision(top_k=4), ([0, 0, 1, 1], [1, 1, 1, 1]), 0.5, None, None),
    (
        lambda: M.Recall(),
        ([0, 1, 1, 1], [1, 0, 1, 1]),
        0.6666667,
        {"sample_weight": [0, 0, 1, 0]},
        1.0,
    ),  # fmt: skip
    (
        lambda: M.SensitivityAtSpecificity(0.5),
        ([0, 0, 0, 1, 1], [0, 0.3, 0.8, 0.3, 0.8]),
        0.5,
        {"sample_weight": [1, 1, 2, 2, 1]},
        0.333333,
    ),  # fmt: skip
    (
        lambda: M.SpecificityAtSensitivity(0.5),
        ([0, 0, 0, 1, 1], [0, 0.3, 0.8, 0.3, 0.8]),
        0.66666667,
        {"sample_weight": [1, 1, 2, 2, 2]},
        0.5,
    ),  # fmt: skip
    (
        lambda: M.PrecisionAtRecall(0.5),
        ([0, 0, 0, 1, 1], [0, 0.3, 0.8, 0.3, 0.8]),
        0.5,
        {"sample_weight": [2, 2, 2, 1, 1]},
        0.33333333,
    ),  # fmt: skip
    (
        lambda: M.RecallAtPrecision(0.8),
        ([0, 0, 1, 1], [0, 0.5, 0.3, 0.9]),
        0.5,
        {"sample_weight": [1, 0, 0, 1]},
        1.0,
    ),  # fmt: skip
    (lambda: M.MeanSquaredError(), (R2, Q2), 0.25, None, None),
    (lambda: M.MeanAbsoluteError(), (R2, Q2), 0.25, {"sample_weight": [1, 0]}, 0.5),
    (
        lambda: M.MeanAbsolutePercentageError(),
        (R2, Q2),
        250000000.0,
        {"sample_weight": [1, 0]},
        500000000.0,
    ),  # fmt: skip
    (
        lambda: M.MeanSquaredLogarithmicError(),
        (R2, Q2),
        0.12011322,
        {"sample_weight": [1, 0]},
        0.24022643,
    ),  # fmt: skip
    (lambda: M.RootMeanSquaredError(), (R2, Q2), 0.5, {"sample_weight": [1, 0]}, 0.70710677),
    (
        lambda: M.CosineSimilarity(axis=1),
        ([[0.0, 1.0], [1.0, 1.0]], [[1.0, 0.0], [1.0, 1.0]]),
        0.49999997,
        {"sample_weight": [0.3, 0.7]},
        0.6999999,
    ),  # fmt: skip
    (lambda: M.LogCoshError(), (R2, Q2), 0.10844523, {"sample_weight": [1, 0]}, 0.21689045),
    (
        lambda: M.R2Score(),
        (np.array([[1], [4], [3]], np.float32), np.array([[2], [4], [4]], np.float32)),
        0.57142854,
        None,
        None,
    ),
    (lambda: M.KLDivergence(), (Y2, P2), 0.45814306, {"sample_weight": [1, 0]}, 0.9162892),
    (lambda: M.Poisson(), (R2, Q2), 0.49999997, {"sample_weight": [1, 0]}, 0.99999994),
    (
        lambda: M.BinaryCrossentropy(),
        (Y2, P2),
        0.81492424,
        {"sample_weight": [1, 0]},
        0.9162905,
    ),  # fmt: skip
    (
        lambda: M.CategoricalCrossentropy(),
        (XENT_Y, XENT_P),
        1.1769392,
        {"sample_weight": np.array([0.3, 0.7])},
        1.6271976,
    ),  # fmt: skip
    (
        lambda: M.SparseCategoricalCrossentropy(),
        ([1, 2], XENT_P),
        1.1769392,
        {"sample_weight": np.array([0.3, 0.7])},
        1.6271976,
    ),  # fmt: skip
    (lambda: M.Hinge(), (Y2, P2), 1.3, {"sample_weight": [1, 0]}, 1.1),
    (lambda: M.SquaredHinge(), (Y2, P2), 1.86, {"sample_weight": [1, 0]}, 1.46),
    (lambda: M.CategoricalHinge(), (Y2, P2), 1.4000001, {"sample_weight": [1, 0]}, 1.2),
    (
        lambda: M.IoU(num_classes=2, target_class_ids=[0]),
        ([0, 0, 1, 1], [0, 1, 0, 1]),
        0.33333334,
        {"sample_weight": [0.3, 0.3, 0.3, 0.1]},
        0.33333334,
    ),  # fmt: skip
    (
        lambda: M.BinaryIoU(target_class_ids=[0, 1], threshold=0.3),
        ([0, 1, 0, 1], [0.1, 0.2, 0.4, 0.7]),
        0.33333334,
        {"sample_weight": [0.2, 0.3, 0.4, 0.1]},
        0.17361112,
    ),  # fmt: skip
    (
        lambda: M.MeanIoU(num_classes=2),
        ([0, 0, 1, 1], [0, 1, 0, 1]),
        0.33333334,
        {"sample_weight": [0.3, 0.3, 0.3, 0.1]},
        0.23809525,
    ),  # fmt: skip
    (  # unweighted (Keras shows the weighted one, below): cm[0, 2] = 2, cm[1, 0] = cm[2, 2] = 1
        lambda: M.OneHotIoU(num_classes=3, target_class_ids=[0, 2]),
        (ONE_HOT_Y, ONE_HOT_P),
        (0.0 + 1 / 3) / 2,
        None,
        None,
    ),
    (
        lambda: M.FBetaScore(beta=2.0, threshold=0.5),
        (F_Y, F_P),
        [0.3846154, 0.90909094, 0.8333334],
        None,
        None,
    ),  # fmt: skip
    (lambda: M.F1Score(threshold=0.5), (F_Y, F_P), [0.5, 0.8, 0.6666667], None, None),
]


@pytest.mark.parametrize("index", range(len(EXAMPLES)))
def test_keras_metric_docstring_example(index):
    make, args, shown, weighted, shown_weighted = EXAMPLES[index]
    m = make()
    assert m.update_state(*args) is None
    np.testing.assert_allclose(m.result(), shown, rtol=1e-6, atol=1e-7)
    if weighted is not None:
        m.reset_state()
        m.update_state(*args, **weighted)
        np.testing.assert_allclose(m.result(), shown_weighted, rtol=1e-6, atol=1e-7)


def test_one_hot_iou_weighted_examples():
    """Keras's OneHotIoU and OneHotMeanIoU examples, with their weights (0.071 and 0.048)."""
    weights = [0.1, 0.2, 0.3, 0.4]
    iou = M.OneHotIoU(num_classes=3, target_class_ids=[0, 2])
    iou.update_state(y_true=ONE_HOT_Y, y_pred=ONE_HOT_P, sample_weight=weights)
    mean_iou = M.OneHotMeanIoU(num_classes=3)
    mean_iou.update_state(y_true=ONE_HOT_Y, y_pred=ONE_HOT_P, sample_weight=weights)
    np.testing.assert_allclose(iou.result(), (0 / 0.9 + 0.1 / 0.7) / 2, rtol=1e-5)
    np.testing.assert_allclose(mean_iou.result(), (0.1 / 0.7) / 3, rtol=1e-5)
    assert round(float(iou.result()), 3) == 0.071 and round(float(mean_iou.result()), 3) == 0.048


def test_values_and_tensors_each_have_their_mode():
    """A metric updated on arrays gives values; updated on tensors, ops and Tensors; a fresh
    metric's result() is its zero state's; lists, NumPy and JAX arrays count as values."""
    import jax.numpy as jnp

    m = M.Mean()
    assert m.result() == 0.0
    m.update_state(jnp.array([2.0, 4.0]))
    m.update_state(np.float32(6.0))
    assert m.result() == 4.0
    with sl.Graph().as_default():
        t = M.Precision()
        update = t.update_state(sl.constant([0.0, 1.0]), sl.constant([0.7, 0.9]))
        result = t.result()
        assert isinstance(result, sl.Tensor)
        with sl.Session() as s:
            s.run(sl.global_variables_initializer())
            s.run(update)
            assert s.run(result) == 0.5


def test_a_metric_on_arrays_after_a_model_used_it():
    """A metric compiled into a model (state in the model's graph) still runs on arrays."""
    model = sl.Sequential([sl.Input((2,)), sl.layers.Dense(1, activation="sigmoid")])
    auc = M.AUC(name="auc")
    model.compile("sgd", "binary_crossentropy", metrics=[auc])
    x, y = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]), np.array([0.0, 1.0, 1.0])
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    auc.reset_state()
    auc.update_state(y, model.predict(x, verbose=0)[:, 0])
    np.testing.assert_allclose(auc.result(), logs["auc"], rtol=1e-6)


def test_errors_name_the_metric_and_shapes():
    with pytest.raises(ValueError, match="'precision'.*same shape"):
        M.Precision().update_state([1, 0], [[0.2, 0.8], [0.6, 0.4], [0.1, 0.9]])
    with pytest.raises(ValueError, match="class_id is provided"):
        M.Recall(class_id=1).update_state([1.0, 0.0], [0.4, 0.6])
    with pytest.raises(ValueError, match="Threshold values must be in"):
        M.Precision(thresholds=[0.5, 1.5])
    with pytest.raises(ValueError, match="num_thresholds"):
        M.AUC(num_thresholds=1)
    with pytest.raises(ValueError, match="Invalid AUC curve"):
        M.AUC(curve="XY")
    with pytest.raises(ValueError, match="Target class id 3 is out of range"):
        M.IoU(num_classes=3, target_class_ids=[3])
    with pytest.raises(ValueError, match="R2Score expects 2D inputs"):
        M.R2Score().update_state([1.0, 2.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="beta"):
        M.FBetaScore(beta=2)
    with pytest.raises(ValueError, match="multi_label=True"):
        M.AUC(multi_label=True).update_state([1.0, 0.0], [0.2, 0.9])


def test_a_metric_used_on_arrays_then_compiled_is_reset_by_evaluate():
    """Its state is its own (it would go on in the model's step), and evaluate resets it at
    its start, as Keras's does."""
    auc = M.AUC(name="auc")
    auc.update_state([0, 1, 1], [0.2, 0.6, 0.4])
    assert auc.result() == 1.0
    model = sl.Sequential([sl.Input((2,)), sl.layers.Dense(1, activation="sigmoid")])
    model.compile("sgd", "binary_crossentropy", metrics=[auc])
    x, y = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]), np.array([0.0, 1.0, 1.0])
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    expected = M.AUC()
    expected.update_state(y, model.predict(x, verbose=0)[:, 0])
    np.testing.assert_allclose(logs["auc"], expected.result(), rtol=1e-6)


def test_inside_a_trace_arrays_are_graph_constants():
    from sluice.framework.ir import tracing

    m = M.Mean()
    with sl.Graph().as_default(), tracing.tracing():
        update = m.update_state(np.array([1.0, 3.0]))
        result = m.result()
        assert update is not None and isinstance(result, sl.Tensor)
        with sl.Session() as s:
            s.run(sl.global_variables_initializer())
            s.run(update)
            s.run(update)
            assert s.run(result) == 2.0


def test_a_copied_metric_keeps_its_own_state():
    """A copy of a metric not used yet (its state in no graph, as Keras copies metrics before
    use) updates itself, not the original."""
    import copy

    m = M.Mean()
    twin = copy.deepcopy(m)
    twin.update_state([8.0])
    m.update_state([1.0, 3.0])
    assert m.result() == 2.0 and twin.result() == 8.0
    fresh = copy.deepcopy(M.Recall())
    fresh.update_state([1, 1], [0.9, 0.2])
    assert fresh.result() == 0.5
