"""fit(class_weight=...) as Keras 3: each sample weighs its class's weight, read from its target
(class ids, 0/1 labels, one-hot rows); training with class weights is training with the
equivalent sample weights; Keras 3's refusals."""

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L
from sluice._keras.models.class_weights import class_weight_to_sample_weights

RNG = np.random.default_rng(7)
X = RNG.normal(size=(24, 3)).astype(np.float32)
IDS = np.arange(24) % 3
WEIGHTS = {0: 0.5, 1: 3.0}  # class 2 is absent: it weighs 1


@pytest.mark.parametrize(
    "y, expected",
    [
        (IDS[:6], [0.5, 3.0, 1.0, 0.5, 3.0, 1.0]),
        (IDS[:6, None], [0.5, 3.0, 1.0, 0.5, 3.0, 1.0]),
        (np.eye(3)[IDS[:6]], [0.5, 3.0, 1.0, 0.5, 3.0, 1.0]),  # one-hot: argmax
        (np.array([[0.2, 0.7, 0.1]]), [3.0]),  # soft labels: argmax
        (np.array([[0.0], [1.0], [0.9]]), [0.5, 3.0, 3.0]),  # binary (n, 1), rounded
        (np.array([1.0, 0.0, 0.2]), [3.0, 0.5, 0.5]),  # binary (n,)
        (np.array([5, 0]), [1.0, 0.5]),  # a class not in the dict weighs 1
    ],
)
def test_class_weight_to_sample_weights(y, expected):
    got = class_weight_to_sample_weights(y, WEIGHTS)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, expected)


def test_keys_are_read_as_keras_reads_them():
    np.testing.assert_array_equal(
        class_weight_to_sample_weights(IDS[:3], {"1": 2.0, 2.0: 4.0}), [1.0, 2.0, 4.0]
    )
    with pytest.raises(ValueError, match="integer keys representing class indices.*'cat'"):
        class_weight_to_sample_weights(IDS, {"cat": 2.0})
    with pytest.raises(ValueError, match="must be a dict-like mapping"):
        class_weight_to_sample_weights(IDS, [1.0, 2.0])
    with pytest.raises(ValueError, match="one class per sample"):
        class_weight_to_sample_weights(np.zeros((4, 5, 3)), WEIGHTS)


def classifier(units, activation, loss):
    m = sl.Sequential(
        [sl.Input((3,)), L.Dense(4, activation="tanh"), L.Dense(units, activation=activation)]
    )
    m.compile(sl.optimizers.SGD(0.1), loss, metrics=["accuracy"])
    return m


CASES = {
    "sparse": (IDS, 3, "softmax", "sparse_categorical_crossentropy"),
    "one-hot": (np.eye(3, dtype=np.float32)[IDS], 3, "softmax", "categorical_crossentropy"),
    "binary": ((IDS == 1).astype(np.float32)[:, None], 1, "sigmoid", "binary_crossentropy"),
}


@pytest.mark.parametrize(
    "kind",
    [
        "sparse",
        pytest.param("one-hot", marks=pytest.mark.slow),
        pytest.param("binary", marks=pytest.mark.slow),
    ],
)
def test_fit_with_class_weight_is_fit_with_the_equivalent_sample_weight(kind):
    y, units, activation, loss = CASES[kind]
    weighted = classifier(units, activation, loss)
    with sl.Graph().as_default():
        reference = classifier(units, activation, loss)
    reference.set_weights(weighted.get_weights())
    sw = class_weight_to_sample_weights(y, WEIGHTS)
    args = dict(batch_size=8, epochs=2, shuffle=False, verbose=0, validation_split=0.25)
    got = weighted.fit(X, y, class_weight=WEIGHTS, **args).history
    sw_train = np.concatenate([sw[:18], np.ones(6, np.float32)])  # validation: unweighted
    want = reference.fit(X, y, sample_weight=sw_train, **args).history
    assert got.keys() == want.keys()
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-6, atol=1e-6, err_msg=key)
    unweighted = reference.evaluate(X[18:], y[18:], verbose=0, return_dict=True)
    np.testing.assert_allclose(want["val_loss"][-1], unweighted["loss"], rtol=1e-6)
    for a, b in zip(weighted.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_train_on_batch_and_a_dataset_take_class_weight():
    y = CASES["sparse"][0]
    sw = class_weight_to_sample_weights(y, WEIGHTS)
    weighted = classifier(3, "softmax", "sparse_categorical_crossentropy")
    with sl.Graph().as_default():
        reference = classifier(3, "softmax", "sparse_categorical_crossentropy")
    reference.set_weights(weighted.get_weights())
    got = weighted.train_on_batch(X, y, class_weight=WEIGHTS)
    want = reference.train_on_batch(X, y, sample_weight=sw)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    # a dataset: each batch weighed by its own targets, as Keras 3's dataset adapter does
    batches = sl.data.Dataset.from_tensor_slices((X, y)).batch(8)
    with_weights = sl.data.Dataset.from_tensor_slices((X, y, sw)).batch(8)
    got = weighted.fit(batches, epochs=2, class_weight=WEIGHTS, verbose=0).history
    want = reference.fit(with_weights, epochs=2, verbose=0).history
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-6, atol=1e-6, err_msg=key)
    with pytest.raises(ValueError, match="cannot `class_weight` and `sample_weight`"):
        weighted.fit(with_weights, class_weight=WEIGHTS, verbose=0)


def test_metrics_are_not_weighted():
    """Keras 3 passes sample (and class) weights to the loss and to `weighted_metrics` only: the
    `metrics` of compile log unweighted, in fit as in evaluate."""
    m = classifier(3, "softmax", "sparse_categorical_crossentropy")
    hits = m.predict(X, verbose=0).argmax(-1) == IDS
    sw = class_weight_to_sample_weights(IDS, WEIGHTS)
    plain = m.evaluate(X, IDS, verbose=0, return_dict=True)
    weighted = m.evaluate(X, IDS, sample_weight=sw, verbose=0, return_dict=True)
    assert weighted["loss"] != pytest.approx(plain["loss"])
    assert weighted["accuracy"] == plain["accuracy"] == pytest.approx(hits.mean())
    m.compile(sl.optimizers.SGD(0.0), "sparse_categorical_crossentropy", metrics=["accuracy"])
    logs = m.fit(X, IDS, class_weight={0: 0.0, 1: 0.0}, batch_size=24, verbose=0).history
    assert logs["accuracy"] == [pytest.approx(hits.mean())]


@pytest.fixture(scope="module")
def two_outputs():
    with sl.Graph().as_default():
        inputs = sl.Input((3,))
        m = sl.Model(inputs, [L.Dense(3)(inputs), L.Dense(1)(inputs)])
        m.compile("sgd", "mse")
    return m


def test_refusals(two_outputs):
    m = classifier(3, "softmax", "sparse_categorical_crossentropy")
    before = m.get_weights()
    with pytest.raises(ValueError, match="cannot `class_weight` and `sample_weight`"):
        m.fit(X, IDS, class_weight=WEIGHTS, sample_weight=np.ones(24), verbose=0)
    with pytest.raises(ValueError, match="cannot `class_weight` and `sample_weight`"):
        m.train_on_batch(X, IDS, class_weight=WEIGHTS, sample_weight=np.ones(24))
    with pytest.raises(ValueError, match="only supported for Models with a single output"):
        m.fit(X, {"out": IDS}, class_weight=WEIGHTS, verbose=0)
    with pytest.raises(ValueError, match="only supported for Models with a single output"):
        two_outputs.fit(X, [np.eye(3)[IDS], IDS[:, None]], class_weight=WEIGHTS, verbose=0)
    with pytest.raises(ValueError, match="integer keys representing class indices"):
        m.fit(X, IDS, class_weight={None: 1.0}, verbose=0)
    for a, b in zip(m.get_weights(), before):  # refused before any step
        np.testing.assert_array_equal(a, b)
