"""compile / fit / evaluate / predict: learning, the compiled engine, progress output, data
order, randomness, BatchNormalization statistics, functional models."""

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L


def _blobs(n=96, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5, 1.0]) > 0).astype(np.int32)
    return x, y


def _classifier(**dropout):
    return sl.Sequential([
        sl.Input((4,)), L.Dense(16, activation="relu"), L.Dropout(0.2, **dropout),
        L.Dense(2, activation="softmax"),
    ])  # fmt: skip


def test_fit_learns_in_compiled_steps_without_growing_the_graph():
    sl.utils.set_random_seed(0)
    x, y = _blobs()
    model = _classifier()
    model.compile(sl.optimizers.Adam(0.05), "sparse_categorical_crossentropy", metrics=["accuracy"])
    versions, engines = [], []
    record = sl.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: (
            versions.append(model.graph.version),
            engines.append(model.run_metadata.engine),
        )
    )
    history = model.fit(x, y, batch_size=16, epochs=6, verbose=0, callbacks=[record])
    losses = history.history["loss"]
    assert losses[-1] < 0.5 * losses[0]
    assert history.history["accuracy"][-1] > 0.9
    assert set(engines) == {"compiled"}
    assert len(set(versions)) == 1  # no op added after the first step: one compiled train step
    loss, accuracy = model.evaluate(x, y, verbose=0)
    assert accuracy > 0.9 and loss == pytest.approx(
        model.evaluate(x, y, verbose=0, return_dict=True)["loss"]
    )
    probabilities = model.predict(x[:5], verbose=0)
    assert probabilities.shape == (5, 2)
    np.testing.assert_allclose(probabilities.sum(1), 1, rtol=1e-5)


def test_progress_is_one_line_per_epoch_off_a_terminal(capsys):
    x, y = _blobs(40)
    model = _classifier()
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x, y, batch_size=16, epochs=2, validation_split=0.2)
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "Epoch 1/2" and lines[2] == "Epoch 2/2" and len(lines) == 4
    for line in lines[1::2]:
        assert (
            line.startswith("2/2 - ") and "/step - loss: " in line and " - val_accuracy: " in line
        )


def test_same_seed_same_training():
    x, y = _blobs(32)

    def run(seed, epochs=2):
        sl.utils.set_random_seed(seed)
        model = _classifier()
        model.compile("adam", "sparse_categorical_crossentropy")
        initial = model.get_weights()
        history = model.fit(x, y, batch_size=8, epochs=epochs, verbose=0, shuffle=True)
        return initial, history.history["loss"], model.get_weights()

    initial_a, loss_a, weights_a = run(7)
    initial_b, loss_b, weights_b = run(7)
    assert loss_a == loss_b
    for a, b in zip(initial_a + weights_a, initial_b + weights_b):
        np.testing.assert_array_equal(a, b)
    sl.utils.set_random_seed(8)
    other = _classifier()
    assert not np.array_equal(other.get_weights()[0], initial_a[0])


def test_dropout_masks_change_every_step_and_not_in_predict():
    sl.utils.set_random_seed(1)
    model = sl.Sequential([sl.Input((50,)), L.Dropout(0.5, seed=3), L.Dense(1, use_bias=False)])
    model.compile(sl.optimizers.SGD(0.0), "mse")  # frozen weights: losses differ by the masks only
    ones = np.ones((2, 50), np.float32)
    losses = []
    record = sl.callbacks.LambdaCallback(
        on_train_batch_end=lambda b, logs: losses.append(logs["loss"])
    )
    model.fit(ones, np.zeros((2, 1)), batch_size=2, epochs=3, verbose=0, callbacks=[record])
    assert len(set(losses)) == 3
    first, second = model.predict(ones, verbose=0), model.predict(ones, verbose=0)
    np.testing.assert_array_equal(first, second)


def test_batch_norm_updates_moving_statistics_only_in_training():
    sl.utils.set_random_seed(2)
    model = sl.Sequential([sl.Input((3,)), L.BatchNormalization(momentum=0.5), L.Dense(1)])
    model.compile("sgd", "mse")
    bn = model.layers[0]
    x = (np.random.default_rng(0).normal(size=(64, 3)) * 2 + 5).astype(np.float32)
    y = np.zeros((64, 1), np.float32)
    before = bn.get_weights()
    model.evaluate(x, y, verbose=0)
    model.predict(x, verbose=0)
    for a, b in zip(before, bn.get_weights()):
        np.testing.assert_array_equal(a, b)
    model.fit(x, y, batch_size=64, epochs=4, verbose=0, shuffle=False)
    moving_mean = bn.get_weights()[2]
    np.testing.assert_allclose(moving_mean, x.mean(0) * (1 - 0.5**4), rtol=1e-5)
    # inference uses the moving statistics: output = (x - mean) / sqrt(var + eps) * gamma + beta
    gamma, beta, mean, var = bn.get_weights()
    probe = sl.Model(model.inputs[0], bn.output)
    probe.compile("sgd", "mse")
    np.testing.assert_allclose(
        probe.predict(x[:4], verbose=0),
        (x[:4] - mean) / np.sqrt(var + 1e-3) * gamma + beta,
        rtol=1e-5,
    )


def test_functional_model_with_two_inputs_and_a_lambda():
    sl.utils.set_random_seed(3)
    a, b = sl.Input((3,), name="a"), sl.Input((2,), name="b")
    joined = L.Lambda(lambda ts: sl.concat(ts, axis=1))([a, b])
    out = L.Dense(1)(L.Dense(8, activation="tanh")(joined))
    model = sl.Model([a, b], out)
    assert [layer.name for layer in model.layers] == ["a", "b", "lambda", "dense", "dense_1"]
    rng = np.random.default_rng(0)
    xa, xb = rng.normal(size=(64, 3)), rng.normal(size=(64, 2))
    y = xa.sum(1, keepdims=True) - xb[:, :1]
    model.compile(sl.optimizers.Adam(0.03), "mse", metrics=["mae"])
    history = model.fit({"a": xa, "b": xb}, y, batch_size=16, epochs=8, verbose=0)
    assert history.history["loss"][-1] < 0.2 * history.history["loss"][0]
    np.testing.assert_allclose(
        model.predict([xa, xb], verbose=0), model.predict({"a": xa, "b": xb}, verbose=0)
    )


def test_functional_model_replays_arithmetic_but_rejects_random_ops_outside_layers():
    x = sl.Input((3,))
    model = sl.Model(x, L.Dense(1, kernel_initializer="ones")(x * 2.0))
    np.testing.assert_allclose(model.predict(np.ones((1, 3)), verbose=0), [[6.0]])
    with pytest.raises(ValueError, match="Lambda"):
        sl.Model(x, L.Dense(1)(x * sl.random_uniform(sl.shape(x))))


def test_sequential_builds_from_the_first_data_and_names_layers_per_graph():
    first = sl.Sequential([L.Dense(4, activation="relu"), L.Dense(1)])
    second = sl.Sequential([L.Dense(4, activation="relu"), L.Dense(1)])
    for model in (first, second):
        model.compile("sgd", "mse")
        model.fit(np.ones((8, 5)), np.ones((8, 1)), verbose=0)
        assert [v.op.name for v in model.weights] == [
            "dense/kernel",
            "dense/bias",
            "dense_1/kernel",
            "dense_1/bias",
        ]
    assert first.input_shape == (None, 5) and first.output_shape == (None, 1)
    assert first.count_params() == 5 * 4 + 4 + 4 + 1


def test_last_smaller_batch_and_sample_weights():
    x, y = _blobs(20)
    model = _classifier()
    model.compile("sgd", "sparse_categorical_crossentropy")
    logs = model.fit(x, y, batch_size=8, epochs=1, verbose=0).history
    assert np.isfinite(logs["loss"][0])
    weights = np.zeros(20, np.float32)
    weights[:10] = 2.0
    full = model.evaluate(x[:10], y[:10], verbose=0, batch_size=20)
    weighted = model.evaluate(x, y, sample_weight=weights, batch_size=20, verbose=0)
    assert weighted == pytest.approx(full, rel=1e-5)  # mean over 20 of 2 * loss on the first 10


def test_loss_weights_scale_the_compiled_loss_as_in_keras_3():
    """One output: `loss_weights` (a float, or a list or dict of one) multiplies the compiled
    loss; the logged loss is the weighted one, the layers' regularization losses are not
    scaled, and the metrics are unchanged. Keras 3 refuses an int."""
    x, y = _blobs(16)
    model = sl.Sequential(
        [
            sl.Input((4,)),
            L.Dense(2, activation="softmax", kernel_regularizer=L.regularizers.L2(0.1)),
        ]
    )
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    plain = model.evaluate(x, y, verbose=0, return_dict=True)
    penalty = 0.1 * float(np.sum(model.get_weights()[0] ** 2))
    for weights in (0.25, [0.25], {"out": 0.25}):
        model.compile(
            "sgd", "sparse_categorical_crossentropy", loss_weights=weights, metrics=["accuracy"]
        )
        assert model.get_compile_config()["loss_weights"] == weights
        got = model.evaluate(x, y, verbose=0, return_dict=True)
        assert got["loss"] == pytest.approx(0.25 * (plain["loss"] - penalty) + penalty, rel=1e-5)
        assert got["accuracy"] == plain["accuracy"]
    with pytest.raises(ValueError, match="Expected `loss_weights` argument to be a float"):
        model.compile("sgd", "mse", loss_weights=2)
    with pytest.raises(ValueError, match="must match the number of losses"):
        model.compile("sgd", "mse", loss_weights=[1.0, 2.0])


def test_compile_and_input_errors_are_clear():
    model = _classifier()
    with pytest.raises(RuntimeError, match="compile"):
        model.fit(np.ones((4, 4)), np.ones(4))
    model.compile("adam", "sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match="1 inputs"):
        model.fit([np.ones((4, 4)), np.ones((4, 4))], np.ones(4))
    with pytest.raises(ValueError, match="same number of samples"):
        model.fit(np.ones((4, 4)), np.ones(5))
    with pytest.raises(ValueError, match="Unknown loss"):
        model.compile("adam", "nope")


def test_summary_and_sequential_config_round_trip(capsys):
    model = sl.Sequential(
        [sl.Input((6,)), L.Dense(4, activation="relu"), L.Dropout(0.5), L.Dense(2)]
    )
    model.summary()
    out = capsys.readouterr().out
    assert 'Model: "sequential"' in out and "dense_1 (Dense)" in out and "(None, 4)" in out
    assert "Total params: 38" in out and "Trainable params: 38" in out
    clone = sl.Sequential.from_config(model.get_config())
    assert [type(layer) for layer in clone.layers] == [L.Dense, L.Dropout, L.Dense]
    assert clone.get_config()["layers"] == model.get_config()["layers"]
    assert clone.input_shape == (None, 6)


def test_model_input_and_output_keep_the_structure_they_were_built_with():
    a, b = sl.Input((3,)), sl.Input((2,))
    y = sl.layers.Dense(2)(a)
    two = sl.Model([a, b], {"y": y})
    assert two.input == [a, b] and two.output == {"y": y}
    one = sl.Sequential([sl.Input((4,)), sl.layers.Dense(1)])
    assert one.input is one.inputs[0] and one.output is one.outputs[0]
    probe = sl.Model(one.input, one.layers[0].output)  # Keras's feature-extractor idiom
    assert probe.predict(np.ones((2, 4), np.float32), verbose=0).shape == (2, 1)
    with pytest.raises(AttributeError, match="never been called"):
        sl.Sequential([sl.layers.Dense(1)]).input


def test_a_sequential_with_its_own_input_is_called_on_a_new_input_sharing_its_weights():
    built = sl.Sequential([sl.Input((4,)), L.Dense(3, kernel_initializer="ones")])
    x = sl.Input((4,))
    outer = sl.Model(x, built(x))
    np.testing.assert_allclose(outer.predict(np.ones((2, 4)), verbose=0), np.full((2, 3), 4.0))
    built.set_weights([np.full((4, 3), 2.0), np.ones(3)])  # one set of weights for both
    np.testing.assert_allclose(outer.predict(np.ones((2, 4)), verbose=0), np.full((2, 3), 9.0))
    inner = sl.Sequential([L.Dense(3, kernel_initializer="ones")])  # built by the outer model
    x = sl.Input((4,))
    model = sl.Model(x, L.Dense(1, kernel_initializer="ones")(inner(x)))
    np.testing.assert_allclose(model.predict(np.ones((2, 4)), verbose=0), [[12.0], [12.0]])
