"""Files as Keras 3.6 (JAX backend) writes them load into sluice and give Keras's outputs.

Cross-checked against real Keras 3.6: `keras36_files/*.config.json` are the `config.json` members
of `.keras` files that Keras wrote (`model.save`), verbatim; the weights are small literal arrays
that were set in the Keras model, written here with h5py in the layout Keras wrote them (listed
in each test); the expected outputs are what Keras's `predict` returned.
"""

import json
import pathlib
import zipfile

import h5py
import numpy as np

import sluice as sl
from sluice._keras.saving import keras_layout

FILES = pathlib.Path(__file__).parent / "keras36_files"


def _array(values, shape):
    return np.array(values, np.float32).reshape(shape)


def write_keras_archive(path, config_file, weights):
    """A `.keras` zip as Keras writes it: metadata, the given config, `weights` {path: arrays}
    under `<path>/vars/<i>` (an empty `vars` group for an object without weights)."""
    buffer = path.with_suffix(".h5")
    with h5py.File(buffer, "w") as f:
        f.create_group("vars")
        for where, arrays in weights.items():
            group = f.create_group(f"{where}/vars")
            for i, a in enumerate(arrays):
                group.create_dataset(str(i), data=a)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("metadata.json", '{"keras_version": "3.6.0", "date_saved": "2026-11-25@07:21"}')
        z.writestr("config.json", (FILES / config_file).read_text())
        z.write(buffer, "model.weights.h5")


# keras.Sequential([keras.Input((3, 2)), keras.layers.LSTM(2), keras.layers.Dense(1)]); its
# config names the LSTM's recurrent initializer "OrthogonalInitializer" and its InputLayer
# "input_layer". Keras's weights file: layers/lstm/cell/vars/0..2, layers/dense/vars/0..1.
LSTM_WEIGHTS = {
    "layers/lstm": [],
    "layers/lstm/cell": [
        _array([0.06, -0.07, 0.32, 0.05, -0.27, 0.18, 0.65, 0.47,
                -0.35, -0.63, -0.31, 0.02, -1.16, -0.11, -0.62, -0.37], (2, 8)),
        _array([-0.27, -0.16, 0.21, 0.52, -0.06, 0.68, -0.33, 0.18,
                0.45, 0.05, -0.37, -0.46, -0.23, 0.11, -0.5, -0.1], (2, 8)),
        _array([-0.08, 0.27, 0.11, 0.18, -0.33, -0.06, 0.39, 0.75], (8,)),
    ],
    "layers/dense": [_array([-0.63, 0.76], (2, 1)), _array([0.67], (1,))],
}  # fmt: skip
LSTM_INPUT = _array([0.35, 0.82, 0.33, -1.3, 0.91, 0.45, -0.54, 0.58, 0.36, 0.29, 0.03, 0.55],
                    (2, 3, 2))  # fmt: skip
LSTM_KERAS_OUTPUT = np.array([[0.8017384], [0.7440043]], np.float32)


def test_keras_sequential_archive_loads_beside_a_model_holding_its_input_name(tmp_path):
    path = tmp_path / "lstm.keras"
    write_keras_archive(path, "lstm_sequential.config.json", LSTM_WEIGHTS)
    with sl.Graph().as_default():
        sl.Input((1,), name="input_layer")  # a model built before: the name Keras used is taken
        model = sl.models.load_model(path)
        assert type(model.layers[0].cell.recurrent_initializer).__name__ == "Orthogonal"
        out = model.predict(LSTM_INPUT, verbose=0)
    np.testing.assert_allclose(out, LSTM_KERAS_OUTPUT, rtol=1e-5, atol=1e-6)


# a = keras.Input((2, 4)); b = keras.Input((3, 4))
# keras.Model([a, b], keras.layers.MultiHeadAttention(num_heads=2, key_dim=2, value_dim=3)(a, b))
# Keras saves the projections under its properties' names (query_dense, ...), each with kernel
# and bias; its config's node passes query_mask=None, value_mask=None as keywords.
MHA_WEIGHTS = {
    "layers/input_layer": [],
    "layers/input_layer_1": [],
    "layers/multi_head_attention": [],
    "layers/multi_head_attention/_dropout_layer": [],
    "layers/multi_head_attention/_softmax": [],
    "layers/multi_head_attention/query_dense": [
        _array([0.09, -0.26, -0.21, -1.22, 0.9, 0.57, -0.16, 0.39,
                0.14, -0.28, 0.49, -0.16, -0.16, -0.4, 0.23, -0.05], (4, 2, 2)),
        _array([0.27, -0.3, 0.06, -0.45], (2, 2)),
    ],
    "layers/multi_head_attention/key_dense": [
        _array([0.42, 0.09, 0.17, 0.21, -0.51, 0.39, 1.03, -0.82,
                -0.86, -0.75, 0.42, 0.06, 0.54, 0.36, 0.11, 0.14], (4, 2, 2)),
        _array([-0.08, 0.43, -0.56, -0.21], (2, 2)),
    ],
    "layers/multi_head_attention/value_dense": [
        _array([0.12, 0.9, -0.38, -0.54, -0.28, 0.48, -0.12, 0.66, -0.94, 0.56, 0.52, -0.71,
                0.08, 0.61, 0.04, 0.5, 1.19, 0.14, -0.14, -0.39, 0.32, -0.1, -0.09, -0.05],
               (4, 2, 3)),
        _array([0.32, -0.53, -0.76, -1.22, 0.6, 0.04], (2, 3)),
    ],
    "layers/multi_head_attention/output_dense": [
        _array([0.76, 0.0, -0.37, 0.24, -0.04, -0.63, -0.44, 0.88, 0.18, 0.21, -0.14, -0.34,
                0.45, -0.05, -0.38, -0.07, -0.45, 0.1, 0.56, -0.42, 0.71, -0.33, 0.08, -0.42],
               (2, 3, 4)),
        _array([-0.11, 0.02, -0.22, -0.35], (4,)),
    ],
}  # fmt: skip
MHA_QUERY = _array([2.04, -2.56, 0.42, -0.57, -0.45, -0.22, -2.02, -0.23], (1, 2, 4))
MHA_VALUE = _array([-0.87, 3.32, 0.23, -0.35, -0.28, -0.67, -1.06, -0.39, 0.48, -0.24, 0.96, -0.2],
                   (1, 3, 4))  # fmt: skip
MHA_KERAS_OUTPUT = np.array(
    [[[-2.8858106, 0.33877385, 0.5613711, 0.7388276],
      [-0.8397002, -0.57887447, 0.4799783, 0.62951005]]], np.float32)  # fmt: skip


def test_keras_multi_head_attention_archive_loads_and_saves_in_keras_layout(tmp_path):
    path = tmp_path / "mha.keras"
    write_keras_archive(path, "mha_functional.config.json", MHA_WEIGHTS)
    with sl.Graph().as_default():
        model = sl.models.load_model(path)
        out = model.predict([MHA_QUERY, MHA_VALUE], verbose=0)
        np.testing.assert_allclose(out, MHA_KERAS_OUTPUT, rtol=1e-5, atol=1e-6)
        with h5py.File(tmp_path / "again.weights.h5", "w") as f:
            keras_layout.write_model_weights(model, f)
    with h5py.File(tmp_path / "again.weights.h5", "r") as f:
        for where, arrays in MHA_WEIGHTS.items():
            for i, a in enumerate(arrays):
                np.testing.assert_array_equal(f[f"{where}/vars/{i}"][()], a)


def test_multi_head_attention_explicit_query_mask_replaces_the_tensors_own():
    a, b = sl.Input((2, 4)), sl.Input((3, 4))
    layer = sl.layers.MultiHeadAttention(num_heads=1, key_dim=2)
    hide_last = sl.constant(np.array([[True, True, False]]))
    model = sl.Model([a, b], [layer(a, b), layer(a, b, value_mask=hide_last)])
    x = np.ones((1, 2, 4), np.float32)
    v = np.array([[[1, 0, 0, 0], [0, 1, 0, 0], [5, 5, 5, 5]]], np.float32)
    full, masked = model.predict([x, v], verbose=0)
    assert not np.allclose(full, masked)
    same = sl.Model([a, b], layer(a, b[:, :2]))  # attending to the first two steps only
    np.testing.assert_allclose(masked, same.predict([x, v], verbose=0), rtol=1e-5, atol=1e-6)


def test_sparse_categorical_crossentropy_is_kerass_on_clipped_probabilities():
    # keras.losses.sparse_categorical_crossentropy (Keras 3.6): -log of the clipped probability,
    # not renormalised after clipping.
    y = np.array([0, 1, 2, 1])
    p = np.array([[1.0, 0, 0], [1e-9, 1 - 1e-9, 0], [0.2, 0.2, 0.6], [0.001, 0.999, 0.0]],
                 np.float32)  # fmt: skip
    unnormalised = np.array([[0.5, -0.2, 0.3], [-1, 2, 0.1], [0.2, 0.2, 0.1], [1, 1, -3]],
                            np.float32)  # fmt: skip
    with sl.Graph().as_default():
        values = sl.losses.sparse_categorical_crossentropy(y, p)
        mean = sl.losses.SparseCategoricalCrossentropy()(y, unnormalised)
        got_values, got_mean = sl.Session().run([values, mean])
    keras_values = [1.1920929e-07, 1.1920929e-07, 5.1082557e-01, 1.0004875e-03]
    np.testing.assert_allclose(got_values, keras_values, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got_mean, 4.4774637, rtol=1e-6)


def test_keras_config_files_are_what_keras_wrote():
    """The fixtures keep Keras's own spelling (guards against someone "tidying" them)."""
    lstm = json.loads((FILES / "lstm_sequential.config.json").read_text())
    layers = lstm["config"]["layers"]
    assert layers[0]["config"]["name"] == "input_layer"
    assert layers[1]["config"]["recurrent_initializer"]["class_name"] == "OrthogonalInitializer"
    mha = json.loads((FILES / "mha_functional.config.json").read_text())
    node = mha["config"]["layers"][2]["inbound_nodes"][0]
    assert node["kwargs"] == {"query_mask": None, "value_mask": None}


def test_legacy_h5_with_weightless_layers_loads(tmp_path):
    """`model.save("m.h5")` (Keras 3.6's legacy HDF5, as tf.keras 2 wrote it) lists a layer
    without weights with `weight_names` an empty float64 array, not an empty string list."""
    kernel, bias = _array(np.arange(6) / 10, (3, 2)), _array([0.5, -0.5], (2,))
    path = tmp_path / "m.h5"
    with h5py.File(path, "w") as f:
        f.attrs["backend"], f.attrs["keras_version"] = "jax", "3.6.0"
        weights = f.create_group("model_weights")
        weights.attrs["layer_names"] = np.array(["dropout", "dense"], dtype=object)
        weights.create_group("dropout").attrs["weight_names"] = np.array([])
        dense = weights.create_group("dense")
        dense.attrs["weight_names"] = np.array(["dense/kernel", "dense/bias"], dtype=object)
        dense.create_dataset("dense/kernel", data=kernel)
        dense.create_dataset("dense/bias", data=bias)
        weights.create_group("top_level_model_weights").attrs["weight_names"] = np.array([])
    assert h5py.File(path, "r")["model_weights/dropout"].attrs["weight_names"].dtype == np.float64
    with sl.Graph().as_default():
        model = sl.Sequential([sl.Input((3,)), sl.layers.Dropout(0.5), sl.layers.Dense(2)])
        model.load_weights(path)
        x = np.ones((1, 3), np.float32)
        np.testing.assert_allclose(model.predict(x, verbose=0), x @ kernel + bias, rtol=1e-6)


# ids = keras.Input((3,), dtype="int32", name="ids"); x = keras.Input((2,), name="x")
# r = SimpleRNN(2)(Embedding(5, 2, mask_zero=True)(ids)); h = Dense(2)(x)
# keras.Model({"ids": ids, "x": x}, Concatenate()([(h + x) * 2.0, r]))
# Keras records `h + x` and `* 2.0` as keras.ops nodes (Add, Multiply) and the embedding's mask
# as a NotEqual(ids, 0) node passed to the SimpleRNN as `mask=`; operations are not layers, so
# its weights file has no group for them.
OPS_WEIGHTS = {
    "layers/input_layer": [],
    "layers/dense": [_array([0.0, 0.15, -0.14, -0.45], (2, 2)), _array([-0.23, -0.5], (2,))],
    "layers/input_layer_1": [],
    "layers/embedding": [
        _array([0.03, 0.67, -0.25, -0.31, 0.24, 0.18, 0.05, -0.47, -0.01, 0.35], (5, 2))
    ],
    "layers/simple_rnn": [],
    "layers/simple_rnn/cell": [
        _array([-0.67, -0.23, -0.95, -0.64], (2, 2)),
        _array([-0.92, -0.12, -0.63, 0.14], (2, 2)),
        _array([0.08, -0.09], (2,)),
    ],
    "layers/concatenate": [],
}
OPS_FEED = {
    "ids": np.array([[1, 2, 0], [3, 0, 0]], np.int32),
    "x": np.array([[0.5, -1.0], [2.0, 0.25]], np.float32),
}
OPS_KERAS_OUTPUT = np.array(
    [[0.82, -1.95, -0.66976076, -0.28831246], [3.47, -0.125, 0.45659423, 0.19670247]], np.float32
)


def test_keras_ops_nodes_and_dict_inputs_load_and_save_back(tmp_path):
    path = tmp_path / "ops.keras"
    write_keras_archive(path, "ops_and_mask_functional.config.json", OPS_WEIGHTS)
    with sl.Graph().as_default():
        sl.Input((1,), name="ids")  # taken: the loaded input is renamed, the dict key stays
        model = sl.models.load_model(path)
        np.testing.assert_allclose(model.predict(OPS_FEED, verbose=0), OPS_KERAS_OUTPUT, atol=1e-6)
        layers = model.get_config()["layers"]
        ops = {c["name"]: c for c in layers if c["module"] == "keras.src.ops.numpy"}
        # the mask goes with the embedding's output in sluice (NotEqual is no longer needed)
        assert sorted(ops) == ["add", "multiply"]
        assert ops["add"]["config"] == {"name": "add"}
        multiply_args = ops["multiply"]["inbound_nodes"][0]["args"]
        assert multiply_args[1] == 2.0 and multiply_args[0]["config"]["keras_history"][0] == "add"
        model.save(tmp_path / "again.keras")
    with zipfile.ZipFile(tmp_path / "again.keras") as z, open(tmp_path / "w.h5", "wb") as f:
        f.write(z.read("model.weights.h5"))
    with h5py.File(tmp_path / "w.h5", "r") as f:  # operations have no group, as in Keras
        assert sorted(f["layers"]) == sorted({p.split("/")[1] for p in OPS_WEIGHTS})


def test_keras_ops_concatenate_has_no_name_in_its_config():
    from sluice._keras.layers.keras_operations import Concatenate

    a, b = sl.Input((2,)), sl.Input((3,))
    model = sl.Model([a, b], Concatenate(axis=-1)([a, b]))
    entry = model.get_config()["layers"][-1]
    assert (entry["module"], entry["class_name"], entry["config"]) == (
        "keras.src.ops.numpy", "Concatenate", {"axis": -1})  # fmt: skip


# i = keras.Input((2,)); inner = keras.Model(i, Dense(2)(i), name="inner")
# keras.Model([a, b], [Add()([inner(a), inner(b)]), inner(b)]) (inner called three times; the Add
# layer is "add_1"): Keras 3.6 numbers the nested model's calls from 0 in the nodes' arguments,
# from 1 in output_layers (the third call is ["inner", 3, 0] there).
NESTED_WEIGHTS = {
    "layers/input_layer": [],
    "layers/input_layer_1": [],
    "layers/functional": [],
    "layers/functional/layers/input_layer": [],
    "layers/functional/layers/dense": [
        _array([-1.26, -0.27, -0.02, 0.06], (2, 2)),
        _array([-0.77, -0.24], (2,)),
    ],
    "layers/add": [],
}


def test_keras_nested_functional_model_node_indices(tmp_path):
    path = tmp_path / "nested.keras"
    write_keras_archive(path, "nested_functional.config.json", NESTED_WEIGHTS)
    written = json.loads((FILES / "nested_functional.config.json").read_text())["config"]
    with sl.Graph().as_default():
        model = sl.models.load_model(path)
        total, second = model.predict([np.array([[1.0, 2.0]]), np.array([[-1.0, 0.5]])], verbose=0)
        config = model.get_config()
    np.testing.assert_allclose(total, [[-1.5899999, -0.32999998]], rtol=1e-6)
    np.testing.assert_allclose(second, [[0.48000002, 0.06000002]], rtol=1e-6)
    assert config["output_layers"] == written["output_layers"]
    assert written["output_layers"] == [["add_1", 0, 0], ["inner", 3, 0]]
    add = next(c for c in config["layers"] if c["name"] == "add_1")
    args = add["inbound_nodes"][0]["args"][0]
    assert [t["config"]["keras_history"] for t in args] == [["inner", 0, 0], ["inner", 1, 0]]


def test_sluice_operators_are_saved_as_keras_writes_them():
    # Keras 3.6 for `Dense(2)(h + a) * 2.0` (h = Dense(4)(a)) writes, besides the layers:
    keras_add = {"module": "keras.src.ops.numpy", "class_name": "Add", "config": {"name": "add"},
                 "registered_name": "Add", "name": "add"}  # fmt: skip
    a = sl.Input((4,))
    h = sl.layers.Dense(4)(a)
    model = sl.Model(a, 2.0 * sl.layers.Dense(2)(h + a) / 3.0)
    entries = {c["name"]: c for c in model.get_config()["layers"]}
    add = entries["add"]
    assert {k: v for k, v in add.items() if k != "inbound_nodes"} == keras_add
    histories = [t["config"]["keras_history"] for t in add["inbound_nodes"][0]["args"]]
    assert histories == [[entries["dense"]["name"], 0, 0], [entries["input_layer"]["name"], 0, 0]]
    multiply_args = entries["multiply"]["inbound_nodes"][0]["args"]
    assert multiply_args[0] == 2.0  # `2.0 * x`: Keras's __rmul__ puts the number first
    assert entries["true_divide"]["class_name"] == "TrueDivide"


def test_bilinear_upsampling_is_kerass():
    # keras.layers.UpSampling2D((2, 3), interpolation="bilinear") on arange(6) as (1, 2, 3, 1)
    third = 1.0 / 3.0
    row = np.array([0, 0, third, 2 * third, 1, 1 + third, 1 + 2 * third, 2, 2])
    keras_rows = np.stack([row, row + 0.75, row + 2.25, row + 3.0])
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 3, 1)
    with sl.Graph().as_default():
        inputs = sl.Input((2, 3, 1))
        layer = sl.layers.UpSampling2D((2, 3), interpolation="bilinear")
        model = sl.Model(inputs, layer(inputs))
        assert model.output_shape == (None, 4, 9, 1)
        np.testing.assert_allclose(model.predict(x, verbose=0)[0, :, :, 0], keras_rows, atol=1e-5)
        config = layer.get_config()
    assert config["interpolation"] == "bilinear"


def test_spatial_dropout_configs_have_only_the_keys_keras_takes():
    # Keras 3.6's SpatialDropout1D/2D.__init__ takes (rate, [data_format,] seed, name, dtype)
    # and no **kwargs: a "trainable" key makes keras.models.load_model fail
    one = sl.layers.SpatialDropout1D(0.5).get_config()
    two = sl.layers.SpatialDropout2D(0.5).get_config()
    assert set(one) == {"rate", "seed", "name", "dtype"}
    assert set(two) == {"rate", "seed", "name", "dtype", "data_format"}


def test_sluice_concat_is_saved_as_kerass_concatenate_operation():
    # Keras 3.6 for keras.ops.concatenate([a, b], axis=-1): {"module": "keras.src.ops.numpy",
    # "class_name": "Concatenate", "config": {"axis": -1}, ...}, one node with args [[a, b]]
    a, b = sl.Input((4,)), sl.Input((2,))
    model = sl.Model([a, b], sl.concat([a, b], -1))
    entry = model.get_config()["layers"][-1]
    assert (entry["module"], entry["class_name"], entry["config"]) == (
        "keras.src.ops.numpy", "Concatenate", {"axis": -1})  # fmt: skip
    (args,) = entry["inbound_nodes"][0]["args"]
    assert [t["config"]["keras_history"][0] for t in args] == [
        model.layers[0].name, model.layers[1].name]  # fmt: skip


# inner = keras.Sequential([Dense(2), ReLU()]); a = keras.Input((2,))
# keras.Model(a, Dense(1)(inner(a))): Keras writes an InputLayer and a build_config for the
# inner Sequential (built when called), which must still be built in the outer model's graph.
NESTED_SEQUENTIAL_WEIGHTS = {
    "layers/input_layer": [],
    "layers/sequential": [],
    "layers/sequential/layers/dense": [
        _array([0.5, -1.0, 1.5, 0.25], (2, 2)),
        _array([0.1, -0.2], (2,)),
    ],
    "layers/sequential/layers/re_lu": [],
    "layers/dense": [_array([2.0, -1.0], (2, 1)), _array([0.5], (1,))],
}


def test_keras_sequential_inside_a_functional_model_loads_and_saves_for_keras(tmp_path):
    path = tmp_path / "nested_sequential.keras"
    write_keras_archive(path, "sequential_in_functional.config.json", NESTED_SEQUENTIAL_WEIGHTS)
    x = np.array([[1.0, 2.0], [-1.0, 0.5]], np.float32)
    with sl.Graph().as_default():
        model = sl.models.load_model(path)
        np.testing.assert_allclose(model.predict(x, verbose=0), [[7.7], [0.275]], rtol=1e-6)
        model.save(tmp_path / "again.keras")
        again = sl.models.load_model(tmp_path / "again.keras")
        np.testing.assert_allclose(again.predict(x, verbose=0), [[7.7], [0.275]], rtol=1e-6)
