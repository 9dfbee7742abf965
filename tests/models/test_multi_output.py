"""Models with several outputs of different shapes: targets as a list or a dict by output name,
per-output losses, loss weights and metrics, logged under Keras 3's names
(`sluice/_keras/models/compile_utils.py`): "loss", then "<output>_<metric>", then
"<output>_loss" for each output's unweighted loss."""

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L


def _model(dict_outputs=False):
    inputs = sl.Input((4,), name="x")
    hidden = L.Dense(6, activation="tanh", name="hidden")(inputs)
    out1 = L.Dense(1, name="out1")(hidden)
    out2 = L.Dense(3, activation="softmax", name="out2")(hidden)
    outputs = {"out1": out1, "out2": out2} if dict_outputs else [out1, out2]
    return sl.Model(inputs, outputs)


def _data(n=12):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    return x, rng.normal(size=(n, 1)).astype(np.float32), rng.integers(0, 3, n).astype(np.int32)


def _expected(model, x, y1, y2):
    """Each output's loss, computed in NumPy from predict's outputs."""
    p1, p2 = model.predict(x, verbose=0)
    mse = float(np.mean((p1 - y1) ** 2))
    cce = float(np.mean(-np.log(p2[np.arange(len(y2)), y2])))
    mae = float(np.mean(np.abs(p1 - y1)))
    accuracy = float(np.mean(np.argmax(p2, -1) == y2))
    return mse, cce, mae, accuracy


def test_list_targets_per_output_losses_weights_and_metrics():
    x, y1, y2 = _data()
    model = _model()
    assert model.output_names == ["out1", "out2"]
    model.compile(
        "sgd",
        loss=["mse", "sparse_categorical_crossentropy"],
        loss_weights=[1.0, 0.5],
        metrics=[["mae"], ["accuracy"]],
    )
    logs = model.evaluate(x, [y1, y2], batch_size=12, verbose=0, return_dict=True)
    assert list(logs) == ["loss", "out1_mae", "out2_accuracy", "out1_loss", "out2_loss"]
    mse, cce, mae, accuracy = _expected(model, x, y1, y2)
    assert logs["out1_loss"] == pytest.approx(mse, rel=1e-5)
    assert logs["out2_loss"] == pytest.approx(cce, rel=1e-5)
    assert logs["loss"] == pytest.approx(mse + 0.5 * cce, rel=1e-5)  # unweighted per output
    assert logs["out1_mae"] == pytest.approx(mae, rel=1e-5)
    assert logs["out2_accuracy"] == pytest.approx(accuracy)
    assert model.metrics_names == list(logs)
    history = model.fit(x, [y1, y2], batch_size=6, epochs=2, verbose=0)
    assert list(history.history) == list(logs)
    assert model.train_on_batch(x, [y1, y2], return_dict=True).keys() == logs.keys()


def test_dict_targets_losses_and_metrics_by_output_name_agree_with_lists():
    x, y1, y2 = _data()
    model = _model()
    model.compile(
        "sgd",
        loss={"out2": "sparse_categorical_crossentropy", "out1": "mse"},
        loss_weights={"out1": 1.0, "out2": 0.5},
        metrics={"out2": "accuracy"},
    )
    by_name = model.evaluate(x, {"out2": y2, "out1": y1}, verbose=0, return_dict=True)
    assert list(by_name) == ["loss", "out2_accuracy", "out1_loss", "out2_loss"]
    model.compile("sgd", loss=["mse", "sparse_categorical_crossentropy"], loss_weights=[1.0, 0.5])
    by_list = model.evaluate(x, [y1, y2], verbose=0, return_dict=True)
    for key in ("loss", "out1_loss", "out2_loss"):
        assert by_name[key] == pytest.approx(by_list[key], rel=1e-6)


def test_a_model_with_a_dict_of_outputs():
    x, y1, y2 = _data()
    model = _model(dict_outputs=True)
    model.compile("sgd", loss={"out1": "mse", "out2": "sparse_categorical_crossentropy"})
    predicted = model.predict(x, verbose=0)
    assert sorted(predicted) == ["out1", "out2"]
    assert predicted["out1"].shape == (12, 1) and predicted["out2"].shape == (12, 3)
    history = model.fit(x, {"out1": y1, "out2": y2}, batch_size=6, epochs=1, verbose=0)
    assert list(history.history) == ["loss", "out1_loss", "out2_loss"]


def test_one_loss_for_every_output_and_an_output_without_a_loss():
    x, y1, _ = _data()
    y3 = np.zeros((12, 3), np.float32)
    model = _model()
    model.compile("sgd", loss="mse", metrics=["mae", None])
    logs = model.evaluate(x, [y1, y3], verbose=0, return_dict=True)
    assert list(logs) == ["loss", "out1_mae", "out1_loss", "out2_loss"]
    assert logs["loss"] == pytest.approx(logs["out1_loss"] + logs["out2_loss"], rel=1e-5)
    model.compile("sgd", loss=["mse", None])  # one loss: no per-output tracker (Keras 3)
    logs = model.evaluate(x, {"out1": y1}, verbose=0, return_dict=True)
    assert list(logs) == ["loss"]
    assert logs["loss"] == pytest.approx(_expected(model, x, y1, np.zeros(12, int))[0], rel=1e-5)


def test_targets_losses_and_metrics_that_do_not_match_the_outputs_are_refused():
    x, y1, y2 = _data()
    model = _model()
    model.compile("sgd", loss=["mse", "sparse_categorical_crossentropy"])
    with pytest.raises(ValueError, match=r"one array, but the model has 2 outputs \['out1'"):
        model.fit(x, y1, verbose=0)
    with pytest.raises(ValueError, match=r"name outputs \['out3'\]"):
        model.evaluate(x, {"out1": y1, "out3": y2}, verbose=0)
    with pytest.raises(ValueError, match="hold 3 arrays, but the model has 2 outputs"):
        model.evaluate(x, [y1, y2, y2], verbose=0)
    model.compile("sgd", loss={"out1": "mse"})
    with pytest.raises(ValueError, match=r"Expected keys \['out1', 'out2'\] in loss dict"):
        model.evaluate(x, [y1, y2], verbose=0)
    model.compile("sgd", loss="mse", metrics=["mae"])
    with pytest.raises(ValueError, match="Invalid `metrics`"):
        model.evaluate(x, [y1, y2], verbose=0)
    with pytest.raises(ValueError, match="must match the number of losses, got 2 losses and 3"):
        model.compile("sgd", loss=["mse", "mse"], loss_weights=[1.0, 1.0, 1.0])


def test_weighted_metrics_see_the_sample_weights_and_log_as_weighted_when_named_alike():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(8, 3)).astype("float32")
    y = rng.normal(size=(8, 1)).astype("float32")
    weights = np.array([0, 1, 2, 3, 0, 1, 2, 3], "float32")
    model = sl.Sequential([sl.Input((3,)), sl.layers.Dense(1)])
    model.compile("sgd", loss="mse", metrics=["mae"], weighted_metrics=["mae", "mse"])
    logs = model.evaluate(x, y, sample_weight=weights, batch_size=8, verbose=0, return_dict=True)
    assert sorted(logs) == ["loss", "mae", "mse", "weighted_mae"]
    error = model.predict(x, verbose=0) - y
    np.testing.assert_allclose(logs["mae"], np.abs(error).mean(), rtol=1e-5)
    weighted_mae = (np.abs(error)[:, 0] * weights).sum() / weights.sum()
    np.testing.assert_allclose(logs["weighted_mae"], weighted_mae, rtol=1e-5)
    weighted_mse = (error[:, 0] ** 2 * weights).sum() / weights.sum()
    np.testing.assert_allclose(logs["mse"], weighted_mse, rtol=1e-5)
    with pytest.raises(ValueError, match="weighted_metrics"):
        model.compile("sgd", loss="mse", weighted_metrics="mae")


def test_weighted_metrics_and_steps_per_execution_round_trip_through_a_keras_file(tmp_path):
    model = sl.Sequential([sl.Input((3,)), sl.layers.Dense(1)])
    model.compile("sgd", loss="mse", weighted_metrics=["mae"], steps_per_execution=4)
    path = str(tmp_path / "m.keras")
    model.save(path)
    config = sl.models.load_model(path).get_compile_config()
    assert config["steps_per_execution"] == 4
    assert config["weighted_metrics"] == ["mae"]
