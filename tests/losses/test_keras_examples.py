"""The examples of Keras 3's loss docstrings (keras/src/losses/losses.py), with the values they
show, and the behaviour around them: reductions named by TF1's `Reduction` keys, the names
Keras and TF1 share (`sl.losses.mean_squared_error`), `get`, dtype and errors.

Keras rounds its shown values; each row gives the tolerance that rounding allows. Where Keras's
docstring number is not what its formula gives (BinaryCrossentropy's weighted example shows
0.243 for 0.24358), the row says so and checks the formula's value.
"""

import numpy as np
import pytest

import sluice as sl

L = sl.losses
INTERPRETED = sl.SessionConfig(engine="interpreted")

Y2 = [[0, 1], [0, 0]]
P2 = [[0.6, 0.4], [0.4, 0.6]]
LOGITS_Y = np.array([[0, 1], [0, 0]])
LOGITS = np.array([[-18.6, 0.51], [2.94, -12.8]])
CAT_Y = np.array([[0, 1, 0], [0, 0, 1]])
CAT_P = np.array([[0.05, 0.95, 0], [0.1, 0.8, 0.1]])
DICE_Y = [[[[1.0], [1.0]], [[0.0], [0.0]]], [[[1.0], [1.0]], [[0.0], [0.0]]]]
DICE_P = [[[[0.0], [1.0]], [[0.0], [1.0]]], [[[0.4], [0.0]], [[0.0], [0.9]]]]


def examples():
    """(label, tensor, value shown by Keras, absolute tolerance)."""
    bfce = L.BinaryFocalCrossentropy
    return [
        ("MeanSquaredError", L.MeanSquaredError()([1.0, 0.0, 1.0], [0.9, 0.1, 0.8]), 0.02, 1e-6),
        (
            "MeanAbsoluteError",
            L.MeanAbsoluteError()([1.0, 0.3, 1.0], [1.9, 0.3, 1.8]),
            0.5666667,
            1e-6,
        ),
        (
            "MeanAbsolutePercentageError",
            L.MeanAbsolutePercentageError()([100.0, 200.0, 300.0], [90.0, 210.0, 310.0]),
            6.111111,
            1e-5,
        ),
        (
            "BinaryCrossentropy logits, one sample",
            L.BinaryCrossentropy(from_logits=True)([0, 1, 0, 0], [-18.6, 0.51, 2.94, -12.8]),
            0.8654,
            1e-4,
        ),
        (
            "BinaryCrossentropy logits",
            L.BinaryCrossentropy(from_logits=True)(LOGITS_Y, LOGITS),
            0.8654,
            1e-4,
        ),  # fmt: skip
        (
            "BinaryCrossentropy weighted (Keras shows 0.243)",
            L.BinaryCrossentropy(from_logits=True)(LOGITS_Y, LOGITS, sample_weight=[0.8, 0.2]),
            0.24358,
            1e-4,
        ),
        (
            "BinaryCrossentropy sum",
            L.BinaryCrossentropy(from_logits=True, reduction="sum")(LOGITS_Y, LOGITS),
            1.730,
            1e-3,
        ),
        (
            "BinaryCrossentropy none",
            L.BinaryCrossentropy(from_logits=True, reduction=None)(LOGITS_Y, LOGITS),
            [0.235, 1.496],
            1e-3,
        ),
        (
            "binary_focal_crossentropy",
            L.binary_focal_crossentropy(Y2, P2, gamma=2),
            [0.330, 0.206],
            1e-3,
        ),  # fmt: skip
        (
            "binary_focal_crossentropy gamma default",
            L.binary_focal_crossentropy(Y2, P2),
            [0.330, 0.206],
            1e-3,
        ),  # fmt: skip
        ("binary_crossentropy", L.binary_crossentropy(Y2, P2), [0.916, 0.714], 1e-3),
        (
            "BinaryFocalCrossentropy, one sample",
            bfce(gamma=2, from_logits=True)([0, 1, 0, 0], [-18.6, 0.51, 2.94, -12.8]),
            0.691,
            1e-3,
        ),
        (
            "BinaryFocalCrossentropy balanced, one sample",
            bfce(apply_class_balancing=True, gamma=2, from_logits=True)(
                [0, 1, 0, 0], [-18.6, 0.51, 2.94, -12.8]
            ),
            0.51,
            1e-2,
        ),
        (
            "BinaryFocalCrossentropy gamma 3",
            bfce(gamma=3, from_logits=True)(LOGITS_Y, LOGITS),
            0.647,
            1e-3,
        ),  # fmt: skip
        (
            "BinaryFocalCrossentropy balanced gamma 3",
            bfce(apply_class_balancing=True, gamma=3, from_logits=True)(LOGITS_Y, LOGITS),
            0.482,
            1e-3,
        ),
        (
            "BinaryFocalCrossentropy weighted",
            bfce(gamma=3, from_logits=True)(LOGITS_Y, LOGITS, sample_weight=[0.8, 0.2]),
            0.133,
            1e-3,
        ),
        (
            "BinaryFocalCrossentropy balanced weighted",
            bfce(apply_class_balancing=True, gamma=3, from_logits=True)(
                LOGITS_Y, LOGITS, sample_weight=[0.8, 0.2]
            ),
            0.097,
            1e-3,
        ),
        (
            "BinaryFocalCrossentropy sum",
            bfce(gamma=4, from_logits=True, reduction="sum")(LOGITS_Y, LOGITS),
            1.222,
            1e-3,
        ),
        (
            "BinaryFocalCrossentropy balanced sum",
            bfce(apply_class_balancing=True, gamma=4, from_logits=True, reduction="sum")(
                LOGITS_Y, LOGITS
            ),
            0.914,
            1e-3,
        ),
        (
            "BinaryFocalCrossentropy none",
            bfce(gamma=5, from_logits=True, reduction=None)(LOGITS_Y, LOGITS),
            [0.0017, 1.1561],
            1e-4,
        ),
        (
            "BinaryFocalCrossentropy balanced none",
            bfce(apply_class_balancing=True, gamma=5, from_logits=True, reduction=None)(
                LOGITS_Y, LOGITS
            ),
            [0.0004, 0.8670],
            1e-4,
        ),
        ("CategoricalCrossentropy", L.CategoricalCrossentropy()(CAT_Y, CAT_P), 1.177, 1e-3),
        (
            "CategoricalCrossentropy weighted",
            L.CategoricalCrossentropy()(CAT_Y, CAT_P, sample_weight=np.array([0.3, 0.7])),
            0.814,
            1e-3,
        ),
        (
            "CategoricalCrossentropy sum",
            L.CategoricalCrossentropy(reduction="sum")(CAT_Y, CAT_P),
            2.354,
            1e-3,
        ),  # fmt: skip
        (
            "CategoricalCrossentropy none",
            L.CategoricalCrossentropy(reduction=None)(CAT_Y, CAT_P),
            [0.0513, 2.303],
            1e-3,
        ),  # fmt: skip
        (
            "categorical_crossentropy",
            L.categorical_crossentropy(CAT_Y, CAT_P),
            [0.0513, 2.303],
            1e-3,
        ),  # fmt: skip
        (
            "CategoricalFocalCrossentropy",
            L.CategoricalFocalCrossentropy()(CAT_Y, CAT_P),
            0.23315276,
            1e-6,
        ),  # fmt: skip
        (
            "CategoricalFocalCrossentropy weighted",
            L.CategoricalFocalCrossentropy()(CAT_Y, CAT_P, sample_weight=np.array([0.3, 0.7])),
            0.1632,
            1e-4,
        ),
        (
            "CategoricalFocalCrossentropy sum",
            L.CategoricalFocalCrossentropy(reduction="sum")(CAT_Y, CAT_P),
            0.46631,
            1e-5,
        ),
        (
            "CategoricalFocalCrossentropy none",
            L.CategoricalFocalCrossentropy(reduction=None)(CAT_Y, CAT_P),
            [3.2058331e-05, 4.6627346e-01],
            1e-6,
        ),
        (
            "categorical_focal_crossentropy",
            L.categorical_focal_crossentropy(
                [[0, 1, 0], [0, 0, 1]], [[0.05, 0.9, 0.05], [0.1, 0.85, 0.05]]
            ),
            [2.63401289e-04, 6.75912094e-01],
            1e-6,
        ),
        (
            "SparseCategoricalCrossentropy",
            L.SparseCategoricalCrossentropy()([1, 2], CAT_P),
            1.177,
            1e-3,
        ),  # fmt: skip
        (
            "SparseCategoricalCrossentropy weighted",
            L.SparseCategoricalCrossentropy()([1, 2], CAT_P, sample_weight=np.array([0.3, 0.7])),
            0.814,
            1e-3,
        ),
        (
            "SparseCategoricalCrossentropy sum",
            L.SparseCategoricalCrossentropy(reduction="sum")([1, 2], CAT_P),
            2.354,
            1e-3,
        ),
        (
            "SparseCategoricalCrossentropy none",
            L.SparseCategoricalCrossentropy(reduction=None)([1, 2], CAT_P),
            [0.0513, 2.303],
            1e-3,
        ),
        (
            "sparse_categorical_crossentropy",
            L.sparse_categorical_crossentropy([1, 2], CAT_P),
            [0.0513, 2.303],
            1e-3,
        ),  # fmt: skip
        (
            "Dice per sample",
            L.Dice(axis=(1, 2, 3), reduction=None)(DICE_Y, DICE_P),
            [0.5, 0.75757575],
            1e-6,
        ),
        ("Dice", L.Dice()(DICE_Y, DICE_P), 0.6164384, 1e-6),
        ("dice per sample", L.dice(DICE_Y, DICE_P, axis=(1, 2, 3)), [0.5, 0.75757575], 1e-6),
        ("dice", L.dice(DICE_Y, DICE_P), 0.6164384, 1e-6),
        ("Tversky 0.5, 0.5 is Dice", L.Tversky()(DICE_Y, DICE_P), 0.6164384, 1e-6),
        ("huber", sl.reduce_mean(L.huber(Y2, P2)), 0.155, 1e-3),
        (
            "log_cosh",
            sl.reduce_mean(L.log_cosh([[0.0, 1.0], [0.0, 0.0]], [[1.0, 1.0], [0.0, 0.0]])),
            0.108,
            1e-3,
        ),
        (
            "cosine_similarity",
            L.cosine_similarity(
                [[0.0, 1.0], [1.0, 1.0], [1.0, 1.0]], [[1.0, 0.0], [1.0, 1.0], [-1.0, -1.0]]
            ),
            [-0.0, -0.99999994, 0.99999994],
            1e-6,
        ),  # fmt: skip
        ("Hinge", L.Hinge()(Y2, P2), 1.3, 1e-6),  # the metric examples, as losses
        ("SquaredHinge", L.SquaredHinge()(Y2, P2), 1.86, 1e-6),
        ("CategoricalHinge", L.CategoricalHinge()(Y2, P2), 1.4, 1e-6),
        ("KLDivergence", L.KLDivergence()(Y2, P2), 0.45814306, 1e-6),
        ("Poisson", L.Poisson()([[0, 1], [0, 0]], [[1, 1], [0, 0]]), 0.49999997, 1e-6),
        ("LogCosh", L.LogCosh()([[0, 1], [0, 0]], [[1, 1], [0, 0]]), 0.10844523, 1e-6),
        (
            "MeanSquaredLogarithmicError",
            L.MeanSquaredLogarithmicError()([[0, 1], [0, 0]], [[1, 1], [0, 0]]),
            0.12011322,
            1e-6,
        ),
    ]


def test_keras_docstring_examples():
    cases = examples()
    with sl.Session(config=INTERPRETED) as s:
        got = s.run([t for _, t, _, _ in cases])
    for (label, _, shown, atol), value in zip(cases, got):
        assert np.shape(value) == np.shape(shown), label
        np.testing.assert_allclose(value, shown, atol=atol, rtol=0, err_msg=label)


# -- reductions ----------------------------------------------------------------------------------
def test_reductions_as_keras_3_and_tf1_keys_meaning_the_same():
    y, p, w = [[1.0], [2.0], [4.0]], [[2.0], [2.0], [1.0]], [0.5, 0.0, 2.0]
    values = np.array([1.0, 0.0, 9.0])
    expected = [
        ("sum_over_batch_size", (values * w).sum() / 3),
        ("mean", (values * w).sum() / 3),
        ("sum", (values * w).sum()),
        ("mean_with_sample_weight", (values * w).sum() / 2.5),
        ("none", values * w),
        (None, values * w),
        (L.Reduction.SUM, (values * w).sum()),
        (L.Reduction.SUM_OVER_BATCH_SIZE, (values * w).sum() / 3),
        (L.Reduction.MEAN, (values * w).sum() / 2.5),
        (L.Reduction.NONE, values * w),
    ]
    losses = [L.MeanSquaredError(reduction=r)(y, p, sample_weight=w) for r, _ in expected]
    with sl.Session() as s:
        got = s.run(losses)
    for (reduction, want), value in zip(expected, got):
        np.testing.assert_allclose(value, want, rtol=1e-6, err_msg=str(reduction))
    assert L.MeanSquaredError(reduction=L.Reduction.SUM).get_config()["reduction"] == "sum"


@pytest.mark.parametrize(
    "reduction, message",
    [
        ("avg", "Invalid reduction 'avg'"),
        ("auto", "tf.keras 2's name"),
        (sl.losses.Reduction.SUM_BY_NONZERO_WEIGHTS, "compute_weighted_loss"),
    ],
)
def test_unknown_reductions_are_refused_with_what_is_accepted(reduction, message):
    with pytest.raises(ValueError, match=message):
        L.Huber(reduction=reduction)


def test_a_mask_makes_the_mean_one_over_valid_steps_and_none_valid_gives_zero():
    """Keras 3's apply_mask: masked steps weigh 0, the others total / valid (0 if none)."""
    from sluice._keras.layers.tracking import set_mask

    y_pred = sl.constant([[[1.0], [2.0], [4.0]], [[8.0], [16.0], [32.0]]])
    set_mask(y_pred, sl.constant([[True, True, False], [False, False, False]]))
    nothing = sl.identity(y_pred)
    set_mask(nothing, sl.zeros([2, 3], sl.bool))
    loss = L.MeanAbsoluteError()
    with sl.Session() as s:
        got, none_valid = s.run(
            [loss(sl.zeros([2, 3, 1]), y_pred), loss(sl.zeros([2, 3, 1]), nothing)]
        )
    assert np.isclose(got, (1.0 + 2.0) / 2) and none_valid == 0.0


# -- the names Keras and TF1 share ---------------------------------------------------------------
def test_mean_squared_error_is_keras_by_keyword_and_tf1_otherwise():
    y, p = np.array([[0.0, 1.0], [0.0, 0.0]]), np.array([[1.0, 1.0], [1.0, 0.0]])
    with sl.Graph().as_default():
        keras = L.mean_squared_error(y_true=y, y_pred=p)
        tf1 = L.mean_squared_error(y, p)
        tf1_keywords = L.mean_squared_error(labels=y, predictions=p, weights=2.0)
        assert sl.losses.get_losses() == [tf1, tf1_keywords]  # TF1 collects, Keras does not
        metric_value, metric_update = sl.metrics.mean_squared_error(y, p)
        keras_metric = sl.metrics.mean_squared_error(y_true=y, y_pred=p)
        keras_mae = sl.metrics.mean_absolute_error(y_pred=p, y_true=y)
        with sl.Session() as s:
            s.run(sl.local_variables_initializer())
            s.run(metric_update)
            got = s.run([keras, tf1, tf1_keywords, metric_value, keras_metric, keras_mae])
    np.testing.assert_allclose(got[0], [0.5, 0.5])
    assert got[1] == 0.5 and got[2] == 1.0 and got[3] == 0.5
    np.testing.assert_allclose(got[4], [0.5, 0.5])
    np.testing.assert_allclose(got[5], [0.5, 0.5])


def test_what_takes_a_loss_by_object_takes_keras_s_function():
    keras_mse = L.get("mse")
    assert keras_mse is L.mse is L.MSE is sl.metrics.mse
    for shared in (L.mean_squared_error, sl.metrics.mean_squared_error):
        assert L.get(shared) is keras_mse
        assert sl.losses.deserialize(sl.losses.serialize(shared)) is keras_mse
    assert L.get(sl.metrics.mean_absolute_error) is L.mean_absolute_error
    from sluice._keras.losses.loss import LossFunctionWrapper

    wrapped = LossFunctionWrapper(L.mean_squared_error)
    assert wrapped.fn is keras_mse and wrapped.name == "mean_squared_error"
    with sl.Graph().as_default():
        value = wrapped([[0.0], [2.0]], [[1.0], [2.0]])
        assert sl.losses.get_losses() == []
        assert float(sl.Session().run(value)) == 0.5


# -- get, dtype, errors --------------------------------------------------------------------------
def test_get_as_keras_3():
    assert L.get(None) is None
    for alias, fn in [
        ("mse", L.mse), ("MSE", L.mse), ("mae", L.mae), ("MAE", L.mean_absolute_error),
        ("mape", L.mean_absolute_percentage_error), ("msle", L.mean_squared_logarithmic_error),
        ("kld", L.kl_divergence), ("KLD", L.kl_divergence), ("bce", L.binary_crossentropy),
        ("BCE", L.binary_crossentropy), ("log_cosh", L.log_cosh), ("logcosh", L.log_cosh),
        ("hinge", L.hinge), ("dice", L.dice), ("tversky", L.tversky), ("poisson", L.poisson),
    ]:  # fmt: skip
        assert L.get(alias) is fn, alias
    assert type(L.get("KLDivergence")) is L.KLDivergence
    assert type(L.get(L.Poisson)) is L.Poisson
    config = {"class_name": "CategoricalCrossentropy", "config": {"from_logits": True}}
    assert L.get(config).from_logits is True
    loss = L.Huber()
    assert L.get(loss) is loss
    with pytest.raises(ValueError, match="Unknown loss 'nope'"):
        L.get("nope")
    with pytest.raises(ValueError, match="Could not interpret loss identifier"):
        L.get(3)


def test_losses_compute_in_their_dtype():
    """As Keras 3: inputs are converted to the loss's dtype (floatx unless given)."""
    y = np.array([[1.0, 2.0]], np.float64)
    assert L.MeanSquaredError()(y, y).dtype == sl.float32
    assert L.MeanSquaredError(dtype="float64")(y, y).dtype == sl.float64
    assert L.MeanSquaredError(dtype="float64").dtype == "float64"
    assert L.BinaryCrossentropy()([[1, 0]], [[1, 0]]).dtype == sl.float32  # int inputs


def test_categorical_losses_check_their_axis_and_warn_of_one_class():
    with pytest.raises(ValueError, match="axis"):
        L.categorical_crossentropy([[1.0]], [[1.0]], axis=True)
    with pytest.warns(SyntaxWarning, match="binary_crossentropy"):
        L.categorical_crossentropy([[1.0]], [[0.5]])
    with pytest.raises(ValueError, match="q must be in"):
        L.CategoricalGeneralizedCrossEntropy(q=1.5)


def test_hinge_maps_binary_targets_only_when_all_are_binary():
    with sl.Session() as s:
        binary, other = s.run(
            [L.hinge([[0.0, 1.0]], [[0.5, 0.5]]), L.hinge([[0.0, 2.0]], [[0.5, 0.5]])]
        )
    np.testing.assert_allclose(binary, [(1.5 + 0.5) / 2])  # targets -1, 1
    np.testing.assert_allclose(other, [(1.0 + 0.0) / 2])  # targets 0, 2 as given
