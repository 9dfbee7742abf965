"""Weights files written by Keras 3 (`.weights.h5`, `.keras`) and Keras 2 (HDF5) load into sluice
models and give Keras's outputs.

No TensorFlow here: the files are written with h5py by transcribing the published layouts (Keras
3's `saving_lib`: `layers/<class_name>[_n]/vars/<i>`; tf.keras's `hdf5_format`: `layer_names`,
`weight_names`), and the outputs are checked against NumPy with Keras's equations (LSTM gates
i, f, c, o; GRU z, r, h with reset_after).
"""

import zipfile

import h5py
import numpy as np
import pytest

import sluice as sl
from sluice import layers as L
from sluice._keras.saving import keras_layout, legacy_h5, weights_file

T, VOCAB = 5, 10


def _build():
    tokens = sl.Input((T,), dtype="int32")
    image = sl.Input((4, 4, 2))
    s = L.Embedding(VOCAB, 3)(tokens)
    s = L.LSTM(4, return_sequences=True)(s)
    s = L.GRU(3, return_sequences=True)(s)
    s = L.SimpleRNN(3)(s)
    c = L.Dense(3)(L.Flatten()(L.Conv2D(2, 3)(image)))
    h = L.BatchNormalization()(L.Concatenate()([s, c]))
    return sl.Model([tokens, image], L.Dense(2)(h))


# Keras 3's path of each layer of `_build()` (functional layers by depth, then first visit: the
# Dense of the image branch is "dense", the output one "dense_1"), with its own weights.
def _keras3_entries(w):
    return {
        "layers/input_layer": [],
        "layers/embedding": [w["embeddings"]],
        "layers/input_layer_1": [],
        "layers/lstm": [],
        "layers/lstm/cell": [w["lstm_kernel"], w["lstm_recurrent"], w["lstm_bias"]],
        "layers/conv2d": [w["conv_kernel"], w["conv_bias"]],
        "layers/gru": [],
        "layers/gru/cell": [w["gru_kernel"], w["gru_recurrent"], w["gru_bias"]],
        "layers/flatten": [],
        "layers/simple_rnn": [],
        "layers/simple_rnn/cell": [w["rnn_kernel"], w["rnn_recurrent"], w["rnn_bias"]],
        "layers/dense": [w["dense_kernel"], w["dense_bias"]],
        "layers/concatenate": [],
        "layers/batch_normalization": [w["gamma"], w["beta"], w["mean"], w["variance"]],
        "layers/dense_1": [w["out_kernel"], w["out_bias"]],
    }


# tf.keras's `model.layers` for the same model, with its layer and weight names.
def _keras2_layers(w):
    return [
        ("input_1", []),
        ("embedding", [("embedding/embeddings:0", w["embeddings"])]),
        ("input_2", []),
        ("lstm", [("lstm/lstm_cell/kernel:0", w["lstm_kernel"]),
                  ("lstm/lstm_cell/recurrent_kernel:0", w["lstm_recurrent"]),
                  ("lstm/lstm_cell/bias:0", w["lstm_bias"])]),
        ("conv2d", [("conv2d/kernel:0", w["conv_kernel"]), ("conv2d/bias:0", w["conv_bias"])]),
        ("gru", [("gru/gru_cell/kernel:0", w["gru_kernel"]),
                 ("gru/gru_cell/recurrent_kernel:0", w["gru_recurrent"]),
                 ("gru/gru_cell/bias:0", w["gru_bias"])]),
        ("flatten", []),
        ("simple_rnn", [("simple_rnn/simple_rnn_cell/kernel:0", w["rnn_kernel"]),
                        ("simple_rnn/simple_rnn_cell/recurrent_kernel:0", w["rnn_recurrent"]),
                        ("simple_rnn/simple_rnn_cell/bias:0", w["rnn_bias"])]),
        ("dense", [("dense/kernel:0", w["dense_kernel"]), ("dense/bias:0", w["dense_bias"])]),
        ("concatenate", []),
        ("batch_normalization", [("batch_normalization/gamma:0", w["gamma"]),
                                 ("batch_normalization/beta:0", w["beta"]),
                                 ("batch_normalization/moving_mean:0", w["mean"]),
                                 ("batch_normalization/moving_variance:0", w["variance"])]),
        ("dense_1", [("dense_1/kernel:0", w["out_kernel"]), ("dense_1/bias:0", w["out_bias"])]),
    ]  # fmt: skip


def write_keras3_file(path, entries):
    """A `.weights.h5` file as Keras 3's `save_weights` writes it."""
    with h5py.File(path, "w") as f:
        f.create_group("vars")
        for group_path, arrays in entries.items():
            group = f.create_group(f"{group_path}/vars")
            for i, array in enumerate(arrays):
                group[str(i)] = array


def write_keras2_file(path, layers, whole_model=False):
    """An HDF5 file as tf.keras's `save_weights` (or `save`, with `whole_model`) writes it."""
    with h5py.File(path, "w") as f:
        root = f.create_group("model_weights") if whole_model else f
        if whole_model:
            f.attrs["model_config"] = b'{"class_name": "Functional"}'
        root.attrs["layer_names"] = np.array([n.encode() for n, _ in layers])
        root.attrs["backend"], root.attrs["keras_version"] = b"tensorflow", b"2.15.0"
        for name, weights in layers:
            group = root.create_group(name)
            group.attrs["weight_names"] = np.array([n.encode() for n, _ in weights], dtype="S")
            for weight_name, array in weights:
                group.create_dataset(weight_name, data=array)


def _weights(seed=0):
    rng = np.random.default_rng(seed)

    def u(*shape):
        return rng.uniform(-0.6, 0.6, size=shape).astype("float32")

    return {
        "embeddings": u(VOCAB, 3),
        "lstm_kernel": u(3, 16), "lstm_recurrent": u(4, 16), "lstm_bias": u(16),
        "gru_kernel": u(4, 9), "gru_recurrent": u(3, 9), "gru_bias": u(2, 9),
        "rnn_kernel": u(3, 3), "rnn_recurrent": u(3, 3), "rnn_bias": u(3),
        "conv_kernel": u(3, 3, 2, 2), "conv_bias": u(2),
        "dense_kernel": u(8, 3), "dense_bias": u(3),
        "gamma": u(6) + 1, "beta": u(6), "mean": u(6),
        "variance": rng.uniform(0.5, 1.5, size=6).astype("float32"),
        "out_kernel": u(6, 2), "out_bias": u(2),
    }  # fmt: skip


# -- NumPy references with Keras's equations ------------------------------------------------------
def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _lstm(x, kernel, recurrent, bias):
    h = c = np.zeros((x.shape[0], recurrent.shape[0]))
    outputs = []
    for t in range(x.shape[1]):
        i, f, g, o = np.split(x[:, t] @ kernel + h @ recurrent + bias, 4, axis=1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
        outputs.append(h)
    return np.stack(outputs, 1)


def _gru(x, kernel, recurrent, bias):
    h = np.zeros((x.shape[0], recurrent.shape[0]))
    outputs = []
    for t in range(x.shape[1]):
        x_z, x_r, x_h = np.split(x[:, t] @ kernel + bias[0], 3, axis=1)
        h_z, h_r, h_h = np.split(h @ recurrent + bias[1], 3, axis=1)
        z, r = _sigmoid(x_z + h_z), _sigmoid(x_r + h_r)
        h = z * h + (1 - z) * np.tanh(x_h + r * h_h)
        outputs.append(h)
    return np.stack(outputs, 1)


def _simple_rnn_last(x, kernel, recurrent, bias):
    h = np.zeros((x.shape[0], recurrent.shape[0]))
    for t in range(x.shape[1]):
        h = np.tanh(x[:, t] @ kernel + h @ recurrent + bias)
    return h


def _conv2d_valid(x, kernel, bias):
    kh, kw = kernel.shape[:2]
    rows, cols = x.shape[1] - kh + 1, x.shape[2] - kw + 1
    out = np.zeros((x.shape[0], rows, cols, kernel.shape[3]))
    for i in range(rows):
        for j in range(cols):
            out[:, i, j] = np.tensordot(x[:, i : i + kh, j : j + kw], kernel, axes=3)
    return out + bias


def reference(w, tokens, image):
    s = w["embeddings"][tokens]
    s = _lstm(s, w["lstm_kernel"], w["lstm_recurrent"], w["lstm_bias"])
    s = _gru(s, w["gru_kernel"], w["gru_recurrent"], w["gru_bias"])
    s = _simple_rnn_last(s, w["rnn_kernel"], w["rnn_recurrent"], w["rnn_bias"])
    c = _conv2d_valid(image, w["conv_kernel"], w["conv_bias"]).reshape(len(image), -1)
    c = c @ w["dense_kernel"] + w["dense_bias"]
    h = np.concatenate([s, c], axis=1)
    h = (h - w["mean"]) / np.sqrt(w["variance"] + 1e-3) * w["gamma"] + w["beta"]
    return h @ w["out_kernel"] + w["out_bias"]


# -- fixtures ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def model():
    with sl.Graph().as_default():
        return _build()


@pytest.fixture(scope="module")
def inputs():
    rng = np.random.default_rng(7)
    return [rng.integers(0, VOCAB, size=(3, T)).astype("int32"),
            rng.uniform(-1, 1, size=(3, 4, 4, 2)).astype("float32")]  # fmt: skip


@pytest.fixture(scope="module")
def weights():
    return _weights()


def _check_outputs(model, weights, inputs):
    got = model.predict(inputs, verbose=0)
    np.testing.assert_allclose(got, reference(weights, *inputs), rtol=1e-4, atol=1e-5)


def _scramble(model):
    rng = np.random.default_rng(99)
    model.set_weights([rng.uniform(0.1, 0.2, size=w.shape) for w in model.get_weights()])
    return model.get_weights()


def _unchanged(model, before):
    return all(np.array_equal(a, b) for a, b in zip(model.get_weights(), before))


# -- Keras 3 ------------------------------------------------------------------------------------
def test_keras3_weights_file_gives_keras_outputs(model, weights, inputs, tmp_path):
    path = tmp_path / "model.weights.h5"
    write_keras3_file(path, _keras3_entries(weights))
    _scramble(model)
    model.load_weights(str(path))
    _check_outputs(model, weights, inputs)


def test_keras3_layout_written_is_keras_layout(model, weights, tmp_path):
    """`write_model_weights` writes exactly the datasets Keras 3 writes, and they read back."""
    path = tmp_path / "written.weights.h5"
    with h5py.File(path, "w") as f:
        keras_layout.write_model_weights(model, f)
    with h5py.File(path, "r") as f:
        groups, datasets = [], {}
        f.visititems(
            lambda n, o: datasets.__setitem__(n, o.shape) if isinstance(o, h5py.Dataset)
            else groups.append(n) if n.endswith("vars") else None
        )  # fmt: skip
    entries = _keras3_entries(weights)
    want = {f"{p}/vars/{i}": a.shape for p, arrays in entries.items() for i, a in enumerate(arrays)}
    assert datasets == want
    assert sorted(groups) == sorted(["vars"] + [f"{p}/vars" for p in entries])


def test_dot_keras_archive_loads(model, weights, inputs, tmp_path):
    inner = tmp_path / "model.weights.h5"
    write_keras3_file(inner, _keras3_entries(weights))
    archive = tmp_path / "model.keras"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("metadata.json", '{"keras_version": "3.5.0"}')
        zf.writestr("config.json", "{}")
        zf.write(inner, "model.weights.h5")
    _scramble(model)
    model.load_weights(str(archive))
    _check_outputs(model, weights, inputs)


def test_keras3_file_errors_name_layer_path_and_shapes_and_change_nothing(model, weights, tmp_path):
    entries = _keras3_entries(weights)
    before = _scramble(model)
    image_dense, out_dense = [x for x in keras_layout.keras_layers(model) if isinstance(x, L.Dense)]
    image_dense_before = image_dense.get_weights()
    bad = dict(entries, **{"layers/dense": [weights["dense_kernel"][:5], weights["dense_bias"]]})
    write_keras3_file(tmp_path / "shape.weights.h5", bad)
    with pytest.raises(
        ValueError, match=r"'dense.*/layers/dense/vars/0: .*shape \(5, 3\).*\(8, 3\)"
    ):
        model.load_weights(str(tmp_path / "shape.weights.h5"))
    missing = {p: a for p, a in entries.items() if not p.startswith("layers/gru")}
    write_keras3_file(tmp_path / "missing.weights.h5", missing)
    with pytest.raises(ValueError, match=r"gru_cell.*no weights for it \(nothing at /layers/gru/"):
        model.load_weights(str(tmp_path / "missing.weights.h5"))
    extra = dict(entries, **{"layers/dense_2": [weights["out_kernel"]]})
    write_keras3_file(tmp_path / "extra.weights.h5", extra)
    with pytest.raises(ValueError, match=r"/layers/dense_2: .* the model has no such layer"):
        model.load_weights(str(tmp_path / "extra.weights.h5"))
    count = dict(entries, **{"layers/conv2d": [weights["conv_kernel"]]})
    write_keras3_file(tmp_path / "count.weights.h5", count)
    with pytest.raises(ValueError, match=r"conv2d.*/layers/conv2d/vars holds 1 weights"):
        model.load_weights(str(tmp_path / "count.weights.h5"))
    write_keras3_file(tmp_path / "text.weights.h5", entries)
    with h5py.File(tmp_path / "text.weights.h5", "a") as f:
        del f["layers/dense_1/vars/1"]
        f["layers/dense_1/vars/1"] = np.array([b"ab", b"cd"])
    with pytest.raises(ValueError, match=r"/layers/dense_1/vars/1: .*not a plain numeric type"):
        model.load_weights(str(tmp_path / "text.weights.h5"))
    assert _unchanged(model, before)

    # with skip_mismatch, the layers that match load and the others keep their values
    model.load_weights(str(tmp_path / "shape.weights.h5"), skip_mismatch=True)
    for got, want in zip(image_dense.get_weights(), image_dense_before):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(out_dense.get_weights()[0], weights["out_kernel"])


def test_keras3_file_links_out_of_the_file_are_refused(model, weights, tmp_path):
    entries = _keras3_entries(weights)
    write_keras3_file(tmp_path / "other.weights.h5", entries)
    write_keras3_file(tmp_path / "linked.weights.h5", entries)
    with h5py.File(tmp_path / "linked.weights.h5", "a") as f:
        del f["layers/embedding"]
        f["layers/embedding"] = h5py.ExternalLink(
            str(tmp_path / "other.weights.h5"), "/layers/embedding"
        )
    before = _scramble(model)
    with pytest.raises(ValueError, match=r"ExternalLink, not an object of this file"):
        model.load_weights(str(tmp_path / "linked.weights.h5"))
    assert _unchanged(model, before)


def test_values_a_cast_would_turn_into_inf_and_archives_without_hdf5_are_refused(tmp_path):
    model = sl.Sequential([sl.Input((3,)), L.Dense(2)])
    before = model.get_weights()
    path = tmp_path / "float64.weights.h5"
    with h5py.File(path, "w") as f:
        f["layers/dense/vars/0"] = np.full((3, 2), 1e300)  # float64, beyond float32's range
        f["layers/dense/vars/1"] = np.zeros(2)
    with pytest.raises(ValueError, match=r"vars/0: the dataset's float64 values do not fit"):
        model.load_weights(str(path))
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), before))
    with h5py.File(path, "a") as f:
        f["layers/dense/vars/0"][...] = 0.5  # float64 values float32 holds: cast, as Keras does
    model.load_weights(str(path))
    np.testing.assert_array_equal(model.get_weights()[0], np.full((3, 2), 0.5, np.float32))
    archive = tmp_path / "junk.keras"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("model.weights.h5", b"not HDF5 at all")
    with pytest.raises(ValueError, match="its 'model.weights.h5' is not a readable HDF5 file"):
        model.load_weights(str(archive))


def test_bidirectional_keras3_paths():
    model = sl.Sequential([sl.Input((3, 2)), L.Bidirectional(L.LSTM(2))])
    paths = [p for p, _ in keras_layout.saveable_paths(model)]
    cell = "layers/bidirectional/{}_layer/cell"
    assert cell.format("forward") in paths and cell.format("backward") in paths
    forward = dict(keras_layout.saveable_paths(model))[cell.format("forward")]
    assert forward is model.layers[0].forward_layer.cell
    # Keras 2 lists a Bidirectional's weights forward first, each kernel, recurrent, bias
    names = [v.op.name.split("/", 1)[1] for v in legacy_h5.legacy_weights(model.layers[0])]
    assert names == [f"{d}_lstm/lstm_cell/{w}" for d in ("forward", "backward")
                     for w in ("kernel", "recurrent_kernel", "bias")]  # fmt: skip


def test_subclassed_model_paths_follow_keras_attribute_walk():
    """Keras walks a subclassed model's attributes in sorted order, its `layers` property among
    them: layers held by attributes sorted after "layers" are saved under `layers/...`."""

    class Net(sl.Model):
        def __init__(self):
            super().__init__()
            self.encoder, self.head, self.tail = L.Dense(3), L.Dense(2), L.Dense(1)

        def call(self, x):
            return self.tail(self.head(self.encoder(x)))

    model = Net()
    model.build((None, 4))
    paths = {p: obj for p, obj in keras_layout.saveable_paths(model)}
    assert paths["encoder"] is model.encoder and paths["head"] is model.head
    assert paths["layers/dense_2"] is model.tail


def test_functional_layers_follow_keras_depth_order():
    """Keras lists a functional model's layers by depth from the inputs, then by first visit
    from the outputs (`map_graph`), which is not the order the layers were called in."""
    x = sl.Input((2,))
    short = L.Dense(2, name="short")(x)
    long_1 = L.Dense(2, name="long_1")(x)
    long_2 = L.Dense(2, name="long_2")(long_1)
    model = sl.Model(x, L.Concatenate(name="cat")([short, long_2]))
    names = [layer.name for layer in keras_layout.functional_layers(model)]
    assert names[1:] == ["long_1", "short", "long_2", "cat"]
    paths = {obj.name: p for p, obj in keras_layout.saveable_paths(model)}
    assert (paths["long_1"], paths["short"], paths["long_2"]) == (
        "layers/dense",
        "layers/dense_1",
        "layers/dense_2",
    )


# -- Keras 2 ------------------------------------------------------------------------------------
@pytest.mark.parametrize("whole_model", [False, True])
def test_keras2_hdf5_file_gives_keras_outputs(model, weights, inputs, tmp_path, whole_model):
    path = tmp_path / "model.h5"
    write_keras2_file(path, _keras2_layers(weights), whole_model=whole_model)
    _scramble(model)
    model.load_weights(str(path))
    _check_outputs(model, weights, inputs)


def test_keras2_by_name(model, weights, inputs, tmp_path):
    """Matched by name, the file's order does not matter; layers it lacks keep their values."""
    file_layers = _keras2_layers(weights)
    by_class = {type(layer).__name__: layer.name for layer in model.layers}
    renamed = {"dense": None, "dense_1": None, "embedding": by_class["Embedding"],
               "lstm": by_class["LSTM"], "gru": by_class["GRU"], "conv2d": by_class["Conv2D"],
               "simple_rnn": by_class["SimpleRNN"],
               "batch_normalization": by_class["BatchNormalization"]}  # fmt: skip
    dense_names = [layer.name for layer in keras_layout.keras_layers(model)
                   if isinstance(layer, L.Dense)]  # fmt: skip
    renamed["dense"], renamed["dense_1"] = dense_names
    layers = [(renamed.get(n, n), ws) for n, ws in reversed(file_layers)]
    write_keras2_file(tmp_path / "named.h5", layers)
    _scramble(model)
    weights_file.load_weights(model, str(tmp_path / "named.h5"), by_name=True)
    _check_outputs(model, weights, inputs)


def test_keras2_file_errors(model, weights, tmp_path):
    before = _scramble(model)
    layers = _keras2_layers(weights)
    write_keras2_file(tmp_path / "fewer.h5", layers[:-1])
    with pytest.raises(ValueError, match=r"file has weights for 7 layers .* the model has 8"):
        model.load_weights(str(tmp_path / "fewer.h5"))
    shape = layers[:-1] + [("dense_1", [("dense_1/kernel:0", weights["out_kernel"][:3]),
                                        ("dense_1/bias:0", weights["out_bias"])])]  # fmt: skip
    write_keras2_file(tmp_path / "shape.h5", shape)
    with pytest.raises(ValueError, match=r"'dense_1/kernel:0'.* shape \(3, 2\).* shape \(6, 2\)"):
        model.load_weights(str(tmp_path / "shape.h5"))
    write_keras2_file(tmp_path / "traversal.h5", layers)
    for bad_name in [b"../dense_1", b"dense_1/../../x", b"/dense_1", b"dense_1//kernel:0"]:
        with h5py.File(tmp_path / "traversal.h5", "a") as f:
            f["dense_1"].attrs["weight_names"] = np.array([bad_name, b"dense_1/bias:0"])
        with pytest.raises(ValueError, match=r"not a plain name"):
            model.load_weights(str(tmp_path / "traversal.h5"))
    with h5py.File(tmp_path / "traversal.h5", "a") as f:
        f.attrs["layer_names"] = np.array([n.encode() for n, _ in layers[:-1]] + [b".."])
    with pytest.raises(ValueError, match=r"not a plain name"):
        model.load_weights(str(tmp_path / "traversal.h5"))
    assert _unchanged(model, before)


def test_keras2_cudnn_lstm_weights_are_converted(tmp_path):
    """tf.keras's CuDNNLSTM keeps two biases per gate and each gate's kernels in cuDNN's order;
    loaded into LSTM they are converted as tf.keras converts them."""
    rng = np.random.default_rng(3)
    kernel, recurrent, bias = (rng.uniform(-0.5, 0.5, size=s).astype("float32")
                               for s in [(3, 8), (2, 8), (8,)])  # fmt: skip
    input_bias = rng.uniform(-0.5, 0.5, size=8).astype("float32")

    def to_cudnn_input(k):  # the inverse of tf.keras's k.T.reshape(k.shape, order="F")
        return k.reshape(k.shape[::-1], order="F").T

    cudnn_kernel = np.hstack([to_cudnn_input(k) for k in np.hsplit(kernel, 4)])
    cudnn_recurrent = np.hstack([k.T for k in np.hsplit(recurrent, 4)])
    cudnn_bias = np.concatenate([input_bias, bias - input_bias])
    model = sl.Sequential([sl.Input((4, 3)), L.LSTM(2, name="cu_dnnlstm")])
    write_keras2_file(tmp_path / "cudnn.h5", [("cu_dnnlstm", [
        ("cu_dnnlstm/kernel:0", cudnn_kernel), ("cu_dnnlstm/recurrent_kernel:0", cudnn_recurrent),
        ("cu_dnnlstm/bias:0", cudnn_bias)])])  # fmt: skip
    model.load_weights(str(tmp_path / "cudnn.h5"))
    x = rng.uniform(-1, 1, size=(2, 4, 3)).astype("float32")
    want = _lstm(x, kernel, recurrent, bias)[:, -1]
    np.testing.assert_allclose(model.predict(x, verbose=0), want, rtol=1e-4, atol=1e-5)
