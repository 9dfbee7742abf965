"""save_weights / load_weights (h5 through sluice.checkpoints), get_weights / set_weights."""

import h5py
import numpy as np
import pytest

import sluice as sl
from sluice import layers as L


def _model():
    tokens = sl.Input((6,), dtype="int32")
    x = L.Embedding(12, 4, mask_zero=True)(tokens)
    x = L.LSTM(5)(x)
    x = L.BatchNormalization()(x)
    return sl.Model(tokens, L.Dense(2)(x))


def test_round_trip_gives_identical_predictions(tmp_path):
    sl.utils.set_random_seed(0)
    x = np.random.default_rng(0).integers(0, 12, size=(10, 6))
    model = _model()
    rng = np.random.default_rng(1)
    model.set_weights([rng.uniform(0.5, 1.0, size=w.shape) for w in model.get_weights()])
    expected = model.predict(x, verbose=0)
    path = str(tmp_path / "model.weights.h5")
    model.save_weights(path)
    with h5py.File(path, "r") as f:
        names = []
        f["variables"].visititems(
            lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None
        )
    assert sorted(names) == sorted(v.op.name for v in model.weights)
    assert "lstm/lstm_cell/recurrent_kernel" in names and "batch_normalization/moving_mean" in names

    sl.utils.set_random_seed(1)  # other initial weights; the same graph, so other layer names
    fresh = _model()
    assert fresh.weights[0].op.name == "embedding_1/embeddings"
    fresh.load_weights(path)
    np.testing.assert_array_equal(fresh.predict(x, verbose=0), expected)


def test_load_checks_names_and_shapes(tmp_path):
    model = sl.Sequential([sl.Input((3,)), L.Dense(4), L.Dense(1)])
    path = str(tmp_path / "a.weights.h5")
    model.save_weights(path)
    other = sl.Sequential([sl.Input((3,)), L.Dense(5), L.Dense(1)])
    with pytest.raises(
        ValueError, match=r"dense/kernel: shape \[3, 4\] in the checkpoint, \(3, 5\) in the graph"
    ):
        other.load_weights(path)
    renamed = sl.Sequential([sl.Input((3,)), L.Dense(4, name="first"), L.Dense(1)])
    with pytest.raises(
        ValueError,
        match=r"in the graph but not in the checkpoint: \['first/bias', 'first/kernel'\]",
    ):
        renamed.load_weights(path)
    with pytest.raises(FileNotFoundError):
        model.load_weights(str(tmp_path / "missing.weights.h5"))
    with pytest.raises(ValueError, match="weights.h5"):
        model.save_weights(str(tmp_path / "model.keras"))


def test_get_and_set_weights():
    model = sl.Sequential([sl.Input((2,)), L.Dense(3), L.Dense(1, use_bias=False)])
    weights = [np.full(w.shape, i, np.float32) for i, w in enumerate(model.get_weights())]
    model.set_weights(weights)
    for got, want in zip(model.get_weights(), weights):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(model.layers[1].get_weights()[0], weights[2])
    with pytest.raises(ValueError, match="expects 3 weights"):
        model.set_weights(weights[:2])
    with pytest.raises(ValueError, match="shape"):
        model.set_weights([np.zeros((3, 2))] + weights[1:])
    for owner in (model, model.layers[0]):  # the caller's arrays, to change (as in Keras)
        scaled = owner.get_weights()
        scaled[1] *= 2.0
        owner.set_weights(scaled)
    np.testing.assert_array_equal(model.get_weights()[1], weights[1] * 4.0)  # 1s, twice doubled
