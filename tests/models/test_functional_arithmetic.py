"""Arithmetic on symbolic tensors inside functional models (`x + residual`, `x * 2`, slicing,
`sl.concat`, `sl.reshape`, `sl.ops.*`): each op becomes a `GraphOpLayer` node that replays in
fit, predict, on new Inputs and in a model rebuilt from its JSON config; ops that cannot be
replayed are refused with a message naming them."""

import json

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L
from sluice._keras.layers.graph_op_layer import GraphOpLayer
from sluice._keras.layers.tracking import get_mask

RNG = np.random.default_rng(0)
X = RNG.normal(size=(32, 6)).astype(np.float32)
Y = (X[:, :2] * 2.0 - X[:, 2:4]).astype(np.float32)


def _residual_model(seed=0):
    """Dense -> residual add -> * 2 -> slice -> concat -> reshape -> mean -> -x -> Dense, with
    random weights drawn by NumPy (zero initializers: nothing random to compile)."""
    with sl.Graph().as_default():
        inputs = sl.Input((6,))
        dense = {"kernel_initializer": "zeros"}
        h = L.Dense(6, activation="tanh", name="first", **dense)(inputs)
        h = h + L.Dense(6, name="residual", **dense)(h)  # the residual connection
        h = h * 2.0
        pair = sl.concat([h[:, :4], h[:, 2:]], -1)  # (None, 8)
        grid = sl.reshape(pair, (-1, 2, 4))
        pooled = -sl.ops.mean(grid, axis=1)  # (None, 4)
        outputs = L.Dense(2, name="head", **dense)(pooled)
        model = sl.Model(inputs, outputs)
    rng = np.random.default_rng(seed)
    model.set_weights([rng.normal(scale=0.5, size=w.shape) for w in model.get_weights()])
    return model


def _numpy_residual(weights, x):
    k1, b1, k2, b2, k3, b3 = weights
    h = np.tanh(x @ k1 + b1)
    h = (h + h @ k2 + b2) * 2.0
    pair = np.concatenate([h[:, :4], h[:, 2:]], -1)
    return -pair.reshape(-1, 2, 4).mean(axis=1) @ k3 + b3


@pytest.fixture(scope="module")
def model():
    return _residual_model()


def test_the_ops_become_layers_that_compute_the_formula(model):
    names = [layer.name for layer in model.layers]
    assert names[:4] == ["input_layer", "first", "residual", "add"]
    assert {"multiply", "get_item", "get_item_1", "concatenate", "reshape", "mean",
            "negative"} <= set(names)  # fmt: skip
    assert all(isinstance(layer, GraphOpLayer) for layer in model.layers
               if layer.name not in ("input_layer", "first", "residual", "head"))  # fmt: skip
    np.testing.assert_allclose(
        model.predict(X, verbose=0), _numpy_residual(model.get_weights(), X), rtol=1e-5, atol=1e-5
    )


def test_fit_trains_through_the_ops_and_both_engines_agree():
    losses = {}
    for jit in (True, False):
        model = _residual_model(seed=3)
        model.compile(sl.optimizers.SGD(0.05), "mse", jit_compile=jit)
        before = [w.copy() for w in model.get_weights()]
        losses[jit] = model.fit(X, Y, batch_size=32, epochs=3, shuffle=False, verbose=0).history[
            "loss"
        ]
        after = model.get_weights()
        # the gradient reaches the layers before the ops (the residual branch too)
        assert all(not np.allclose(b, a) for b, a in zip(before, after))
    np.testing.assert_allclose(
        model.predict(X, verbose=0), _numpy_residual(after, X), rtol=1e-4, atol=1e-5
    )
    assert losses[True][-1] < losses[True][0]
    np.testing.assert_allclose(losses[True], losses[False], rtol=1e-4)


def test_calling_the_model_on_new_inputs_replays_the_ops(model):
    with model.graph.as_default():
        new_input = sl.Input((6,))
        outer = sl.Model(new_input, model(new_input) * 0.5)
    np.testing.assert_allclose(
        outer.predict(X, verbose=0), 0.5 * model.predict(X, verbose=0), rtol=1e-5, atol=1e-6
    )


def test_a_second_model_over_the_same_tensors_reuses_the_op_layers(model):
    again = sl.Model(model.inputs[0], model.outputs[0])
    assert [id(layer) for layer in again.layers] == [id(layer) for layer in model.layers]


def test_the_config_round_trips_through_json_into_a_fresh_graph(model):
    config = json.loads(json.dumps(model.get_config()))
    entries = {layer["name"]: layer for layer in config["layers"]}
    multiply = entries["multiply"]  # one operator (`h * 2.0`): saved as Keras 3 saves it
    assert (multiply["module"], multiply["class_name"]) == ("keras.src.ops.numpy", "Multiply")
    assert multiply["inbound_nodes"][0]["args"][1] == 2.0
    get_item = entries["get_item"]["config"]  # other ops: a GraphOpLayer program
    assert entries["get_item"]["class_name"] == "GraphOpLayer"
    assert [op["type"] for op in get_item["ops"]][-1] == "StridedSlice"
    with sl.Graph().as_default():
        rebuilt = sl.Model.from_config(config)
    assert [layer.name for layer in rebuilt.layers] == [layer.name for layer in model.layers]
    rebuilt.set_weights(model.get_weights())
    np.testing.assert_allclose(
        rebuilt.predict(X, verbose=0), model.predict(X, verbose=0), rtol=1e-6
    )


def test_a_keras_file_round_trip(model, tmp_path):
    path = str(tmp_path / "arith.keras")
    model.save(path)
    loaded = sl.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(X, verbose=0), model.predict(X, verbose=0), rtol=1e-6)


def test_multi_input_ops_and_integer_tensors():
    a, b = sl.Input((3,)), sl.Input((3,), dtype="int32")
    both = sl.stack([a, sl.ops.cast(b, "float32")], axis=1)  # (None, 2, 3)
    out = sl.ops.maximum(both[:, 0], both[:, 1]) / 2.0
    model = sl.Model([a, b], out)
    xa = RNG.normal(size=(4, 3)).astype(np.float32)
    xb = RNG.integers(-2, 3, size=(4, 3)).astype(np.int32)
    np.testing.assert_allclose(
        model.predict([xa, xb], verbose=0), np.maximum(xa, xb) / 2.0, rtol=1e-6
    )


def test_masks_stop_at_the_ops_in_predict_and_in_the_replay_alike():
    # Keras 3 operators drop masks (keras-team/keras#18416); a replay must not differ from the
    # model as built, where the op was made before the model wrapped it
    zeros = {"kernel_initializer": "zeros", "recurrent_initializer": "zeros"}
    with sl.Graph().as_default():
        tokens = sl.Input((4,), dtype="int32")
        embedded = L.Embedding(10, 3, mask_zero=True, embeddings_initializer="zeros")(tokens)
        scaled = embedded * 1.0
        model = sl.Model(tokens, L.SimpleRNN(2, return_sequences=True, **zeros)(scaled))
        replay_input = sl.Input((4,), dtype="int32")
        replay = sl.Model(replay_input, model(replay_input))
    model.set_weights([RNG.normal(size=w.shape) for w in model.get_weights()])
    assert get_mask(embedded) is not None and get_mask(scaled) is None
    x = np.array([[1, 2, 0, 0]])
    np.testing.assert_allclose(replay.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)


# -- what cannot be replayed ----------------------------------------------------------------
def _refusal(make_output):
    x = sl.Input((3,))
    with pytest.raises(ValueError, match="Lambda") as info:
        sl.Model(x, make_output(x))
    return str(info.value)


def test_a_variable_made_outside_layers_is_refused():
    message = _refusal(lambda x: x * sl.Variable(np.ones(3, np.float32), name="scale"))
    assert "variable" in message and "scale" in message


def test_random_numbers_are_refused():
    message = _refusal(lambda x: x + sl.random_normal((3,)))
    assert "RandomStandardNormal" in message and "stateful" in message


def test_a_placeholder_that_is_not_a_model_input_is_refused():
    message = _refusal(lambda x: x + sl.placeholder("float32", (None, 3), name="extra"))
    assert "extra" in message and "Placeholder" in message


def test_control_flow_is_refused():
    message = _refusal(lambda x: sl.cond(sl.constant(True), lambda: x * 2.0, lambda: x))
    assert "control flow" in message


def test_another_input_is_refused():
    other = sl.Input((3,))
    with pytest.raises(ValueError, match="not one of the model's inputs"):
        sl.Model(other, other + sl.Input((3,)))


@pytest.mark.parametrize("ops, outputs, match", [
    ([{"type": "Nope", "inputs": [], "attrs": {}}], [[0, 0]], "unknown op type 'Nope'"),
    ([{"type": "VarHandleOp", "inputs": [], "attrs": {}}], [[0, 0]], "cannot be replayed"),
    ([{"type": "Neg", "inputs": [["op", 0, 0]], "attrs": {}}], [[0, 0]], "k < 0"),
    ([{"type": "Neg", "inputs": [["input", 0]], "attrs": {}}], [[1, 0]], "outputs"),
    ([{"type": "Const", "inputs": [], "attrs": {"value": {"__ndarray__": [1], "dtype": "object"}}}],
     [[0, 0]], "not a numeric dtype"),
    ([{"type": "Neg", "inputs": [["input", 0]], "attrs": {"x": {"eval": "1"}}}], [[0, 0]],
     "JSON data"),
    ([{"type": "Const", "inputs": [], "attrs": {"value": [1.0]}}], [[0, 0]], "array 'value'"),
    ([{"type": "Softmax", "inputs": [["input", 0]], "attrs": {"axis": -1, "device": "/gpu:9"}}],
     [[0, 0]], r"op 0: op type 'Softmax' has no attribute\(s\) \['device'\]"),  # else a run fails
])  # fmt: skip
def test_a_malformed_config_is_refused(ops, outputs, match):
    with pytest.raises(ValueError, match=match):
        GraphOpLayer(ops, outputs)


def test_attributes_that_do_not_fit_the_op_fail_when_called():
    mean = {"type": "Mean", "inputs": [["input", 0]], "attrs": {"axis": {"__tuple__": [7]}}}
    layer = GraphOpLayer([mean], [[0, 0]])
    with pytest.raises(ValueError, match="GraphOpLayer 'mean', op 0 \\(Mean\\)"):
        layer(sl.Input((3,)))
    with pytest.raises(ValueError, match="takes 1 inputs, got 2"):
        layer([sl.Input((3,)), sl.Input((3,))])
