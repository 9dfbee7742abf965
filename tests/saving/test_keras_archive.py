"""Whole-model `.keras` files: Keras 3's zip layout, load_model for every kind of model, fit
resuming exactly, safe mode, untrusted archives, atomic writes, and every built-in layer."""

import io
import json
import os
import zipfile

import h5py
import numpy as np
import pytest

import sluice as sl
from sluice import layers as L
from sluice._keras import config as config_lib
from sluice._keras.saving import keras_archive, serialization
from sluice._tf1.cells import nest


def _sequential():
    model = sl.Sequential([sl.Input((4,)), L.Dense(5, activation="tanh"), L.Dense(1)])
    model.compile(sl.optimizers.Adam(0.01), "mse", metrics=["mae"])
    return model


def _rewrite(src, dst, change=None, drop=(), extra=()):
    """A copy of the zip `src` at `dst` with members changed ({name: bytes}), dropped or added."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            if info.filename not in drop:
                zout.writestr(info.filename, (change or {}).get(info.filename, zin.read(info)))
        for name, data in extra:
            zout.writestr(name, data)
    return dst


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A small compiled Sequential saved once: (model, path)."""
    model = _sequential()
    path = str(tmp_path_factory.mktemp("keras") / "model.keras")
    model.save(path)
    return model, path


def test_the_file_is_a_keras_3_zip(saved):
    model, path = saved
    with zipfile.ZipFile(path) as zf:
        assert sorted(zf.namelist()) == ["config.json", "metadata.json", "model.weights.h5"]
        metadata = json.loads(zf.read("metadata.json"))
        config = json.loads(zf.read("config.json"))
        weights = zf.read("model.weights.h5")
    assert metadata["keras_version"] == f"sluice {sl.__version__}" and "date_saved" in metadata
    assert {"module", "class_name", "config", "registered_name", "compile_config"} <= set(config)
    assert (config["module"], config["class_name"]) == ("keras", "Sequential")
    assert [c["class_name"] for c in config["config"]["layers"]] == ["InputLayer", "Dense", "Dense"]
    compile_config = config["compile_config"]
    assert compile_config["optimizer"]["class_name"] == "Adam"
    assert compile_config["optimizer"]["config"]["learning_rate"] == pytest.approx(0.01)
    assert (compile_config["loss"], compile_config["metrics"]) == ("mse", ["mae"])
    with h5py.File(io.BytesIO(weights), "r") as f:
        assert f["layers/dense/vars/0"].shape == (4, 5) and f["layers/dense_1/vars/1"].shape == (1,)
        assert "optimizer" not in f  # never fit: the optimizer has no state yet
    sl.saving.save_model(model, path.replace("model.keras", "again.keras"))


def test_fit_after_load_continues_exactly(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 4)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    straight = _sequential()
    start = straight.get_weights()
    straight.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0)

    first = _sequential()
    first.set_weights(start)
    first.fit(x, y, epochs=1, batch_size=8, shuffle=False, verbose=0)
    path = str(tmp_path / "half.keras")
    first.save(path)
    with zipfile.ZipFile(path) as zf, h5py.File(io.BytesIO(zf.read("model.weights.h5"))) as f:
        state = f["optimizer/vars"]
        assert [state[str(i)].attrs["name"] for i in range(2)] == ["iterations", "learning_rate"]
        assert int(state["0"][()]) == 4 and len(state) == 2 + len(first.optimizer.variables())

    loaded = sl.models.load_model(path)
    assert isinstance(loaded, sl.Sequential) and loaded.compiled
    assert isinstance(loaded.optimizer, sl.optimizers.Adam)
    assert loaded.optimizer.get_config()["learning_rate"] == pytest.approx(0.01)
    assert (loaded.loss, loaded.metrics_names[:1]) == ("mse", ["loss"])
    history = loaded.fit(x, y, epochs=1, batch_size=8, shuffle=False, verbose=0)
    assert set(history.history) == {"loss", "mae"}
    for a, b in zip(straight.get_weights(), loaded.get_weights()):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
    assert loaded.steps_trained() == 8

    uncompiled = sl.saving.load_model(path, compile=False)
    assert not uncompiled.compiled


def test_a_real_number_saved_for_a_count_of_the_optimizer_is_refused(tmp_path):
    x, y = np.ones((4, 4), np.float32), np.ones((4, 1), np.float32)
    model = _sequential()
    model.fit(x, y, batch_size=4, verbose=0)
    path = str(tmp_path / "model.keras")
    model.save(path)
    with zipfile.ZipFile(path) as zf:
        weights = io.BytesIO(zf.read("model.weights.h5"))
    with h5py.File(weights, "a") as f:  # NaN iterations would become -2**63 steps done
        del f["optimizer/vars/0"]
        f["optimizer/vars/0"] = np.float32(np.nan)
        f["optimizer/vars/0"].attrs["name"] = "iterations"
    bad = str(tmp_path / "bad.keras")
    _rewrite(path, bad, change={"model.weights.h5": weights.getvalue()})
    loaded = sl.models.load_model(bad)
    for _ in range(2):  # the saved state stays pending: never silently replaced by a fresh one
        with pytest.raises(ValueError, match="'iterations'.*holds float32 values.*is int64"):
            loaded.fit(x, y, batch_size=4, verbose=0)


def test_functional_models_with_several_inputs_outputs_shared_and_nested_layers(tmp_path):
    inner_x = sl.Input((3,), name="inner_in")
    inner = sl.Model(
        inner_x, L.Dense(3, activation="relu", name="inner_dense")(inner_x), name="inner"
    )
    stack = sl.Sequential([L.Dense(2, name="stack_dense")], name="stack")
    a, b = sl.Input((3,), name="a"), sl.Input((3,), name="b")
    seq, h, c = sl.Input((4, 3), name="seq"), sl.Input((2,), name="h"), sl.Input((2,), name="c")
    shared = L.Dense(3, name="shared")
    merged = L.Add()([shared(a), shared(b)])
    first = stack(inner(merged))
    second = L.LSTM(2, name="lstm")(seq, initial_state=[h, c])
    model = sl.Model([a, b, seq, h, c], [first, L.Concatenate()([second, first])])
    rng = np.random.default_rng(1)
    xs = [rng.normal(size=s).astype("float32") for s in [(2, 3), (2, 3), (2, 4, 3), (2, 2), (2, 2)]]
    expected = model.predict(xs, verbose=0)

    config = model.get_config()
    nodes = {c["name"]: c["inbound_nodes"] for c in config["layers"]}
    assert len(nodes["shared"]) == 2 and nodes["inner"][0]["args"][0]["config"][
        "keras_history"] == ["add", 0, 0]  # fmt: skip
    assert [h["config"]["keras_history"] for h in nodes["lstm"][0]["kwargs"]["initial_state"]] == [
        ["h", 0, 0], ["c", 0, 0]]  # fmt: skip
    assert config["input_layers"][0] == ["a", 0, 0] and len(config["output_layers"]) == 2

    path = str(tmp_path / "functional.keras")
    model.save(path)
    with sl.Graph().as_default():  # a graph of its own: the names are free there
        loaded = sl.models.load_model(path)
    assert json.dumps(loaded.get_config()) == json.dumps(config)
    for want, got in zip(expected, loaded.predict(xs, verbose=0)):
        np.testing.assert_allclose(got, want, atol=1e-6)
    assert loaded.get_layer("inner").get_layer("inner_dense").built

    # in the graph of the original (the default one): new names, and new Inputs work with it
    again = sl.models.load_model(path)
    assert again.graph is model.graph and again.get_layer(index=-1).name == "concatenate_1"
    new_h, new_c = sl.Input((2,)), sl.Input((2,))
    lstm = again.layers[[layer.name for layer in model.layers].index("lstm")]
    decoder = sl.Model([again.input[2], new_h, new_c], lstm(again.input[2], initial_state=[
        new_h, new_c]))  # fmt: skip
    np.testing.assert_allclose(decoder.predict(xs[2:], verbose=0), expected[1][:, :2], atol=1e-6)


@sl.saving.register_keras_serializable(package="test_keras_archive", name="Scaled")
class ScaledMLP(sl.Model):
    """A subclassed model with its own config."""

    def __init__(self, units=3, scale=2.0, **kwargs):
        super().__init__(**kwargs)
        self.units, self.scale = units, scale
        self.hidden = L.Dense(units, activation="relu")
        self.out = L.Dense(1)

    def call(self, inputs):
        return self.out(self.hidden(inputs)) * self.scale

    def get_config(self):
        return {**super().get_config(), "units": self.units, "scale": self.scale}


class Unregistered(ScaledMLP):
    pass


def test_subclassed_models_registered_or_passed_in_custom_objects(tmp_path):
    x = np.random.default_rng(2).normal(size=(3, 4)).astype("float32")
    for cls in (ScaledMLP, Unregistered):
        model = cls(units=4, scale=0.5)
        expected = model.predict(x, verbose=0) if cls is ScaledMLP else model.build((None, 4))
        path = str(tmp_path / f"{cls.__name__}.keras")
        model.save(path)
        with zipfile.ZipFile(path) as zf:
            config = json.loads(zf.read("config.json"))
        assert config["build_config"] == {"input_shape": [None, 4]}
        if cls is ScaledMLP:
            assert config["registered_name"] == "test_keras_archive>Scaled"
            loaded = sl.models.load_model(path)
        else:
            with pytest.raises(ValueError, match="Unregistered.*custom_objects"):
                sl.models.load_model(path)
            with sl.saving.custom_object_scope({"Unregistered": Unregistered}):
                assert type(sl.models.load_model(path)) is Unregistered
            loaded = sl.models.load_model(path, custom_objects={"Unregistered": Unregistered})
        assert type(loaded) is cls and (loaded.units, loaded.scale) == (4, 0.5)
        if cls is ScaledMLP:
            np.testing.assert_allclose(loaded.predict(x, verbose=0), expected, atol=1e-6)


@sl.saving.register_keras_serializable(package="test_keras_archive")
class CustomCompile(ScaledMLP):
    """A model whose compile takes its own arguments, as a GAN's does."""

    def compile(self, d_optimizer, loss_fn):
        super().compile(optimizer=d_optimizer, loss=loss_fn)


def test_a_model_with_its_own_compile_loads_uncompiled_with_a_warning(tmp_path):
    model = CustomCompile(units=2)
    model.compile(d_optimizer=sl.optimizers.Adam(0.01), loss_fn="mse")
    x = np.ones((4, 4), "float32")
    model.fit(x, np.zeros((4, 1), "float32"), verbose=0)
    model.save(tmp_path / "custom.keras")
    with pytest.warns(UserWarning, match=r"`compile\(\)` was not called .* is custom"):
        loaded = sl.models.load_model(tmp_path / "custom.keras")
    assert not loaded.compiled
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    loaded.compile(d_optimizer=sl.optimizers.SGD(0.1), loss_fn="mse")  # as Keras asks
    loaded.fit(x, np.zeros((4, 1), "float32"), verbose=0)


@sl.saving.register_keras_serializable(package="test_keras_archive")
class Chain(sl.Model):
    """Two models trained by its own train_step, never called itself (as Keras's GAN)."""

    def __init__(self, first, second, **kwargs):
        super().__init__(**kwargs)
        self.first, self.second = first, second

    def train_step(self, data):
        with sl.GradientTape() as tape:
            loss = sl.ops.mean(sl.ops.square(self.second(self.first(data))))
        grads = tape.gradient(loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
        return {"loss": loss}

    def get_config(self):
        return {
            **super().get_config(),
            "first": sl.saving.serialize_keras_object(self.first),
            "second": sl.saving.serialize_keras_object(self.second),
        }

    @classmethod
    def from_config(cls, config):
        for key in ("first", "second"):
            config[key] = sl.saving.deserialize_keras_object(config[key])
        return cls(**config)


class Unbuilt(Chain):
    """A Chain whose parts are rebuilt unbuilt: a file's weights have nowhere to go."""

    @classmethod
    def from_config(cls, config):
        return cls(sl.Sequential([L.Dense(4)]), sl.Sequential([L.Dense(1)]))


def test_a_model_never_called_saves_and_loads_its_parts_weights(tmp_path):
    first = sl.Sequential([sl.Input((3,)), L.Dense(4, activation="tanh")])
    second = sl.Sequential([sl.Input((4,)), L.Dense(1)])
    chain = Chain(first, second)
    chain.compile(sl.optimizers.SGD(0.1))
    x = np.random.default_rng(3).normal(size=(8, 3)).astype("float32")
    chain.fit(x, epochs=2, verbose=0)
    assert not chain.built  # as in Keras: only its parts were called
    with pytest.warns(UserWarning, match="not yet been built"):
        chain.save(tmp_path / "chain.keras")
    loaded = sl.models.load_model(tmp_path / "chain.keras")
    got = loaded.first.get_weights() + loaded.second.get_weights()
    for want, got in zip(first.get_weights() + second.get_weights(), got, strict=True):
        np.testing.assert_array_equal(want, got)
    want = second.predict(first.predict(x, verbose=0), verbose=0)
    got = loaded.second.predict(loaded.first.predict(x, verbose=0), verbose=0)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    loaded.fit(x, epochs=1, verbose=0)  # and trains on
    unbuilt = Chain(sl.Sequential([L.Dense(4)]), sl.Sequential([L.Dense(1)]))
    with pytest.warns(UserWarning, match="not yet been built"):
        unbuilt.save(tmp_path / "unbuilt.keras")  # its parts hold no weights yet
    with pytest.raises(ValueError, match="dense.*holds 2 weights.*has 0"):
        sl.models.load_model(
            tmp_path / "chain.keras", custom_objects={"test_keras_archive>Chain": Unbuilt}
        )


@sl.saving.register_keras_serializable(package="test_keras_archive")
def add_one(t):
    return t + 1.0


def _not_registered(t):
    return t - 1.0


def test_lambda_bytecode_needs_safe_mode_off_and_named_functions_need_registering(
    tmp_path, monkeypatch
):
    x = sl.Input((2,))
    model = sl.Model(x, L.Lambda(add_one)(L.Lambda(lambda t: t * 3.0)(x)))
    path = str(tmp_path / "lambda.keras")
    model.save(path)
    with pytest.raises(
        ValueError, match="`function` of this `Lambda` layer is a Python lambda.*safe_mode=False"
    ):
        sl.models.load_model(path)
    ones = np.ones((1, 2), np.float32)
    loaded = sl.models.load_model(path, safe_mode=False)
    np.testing.assert_allclose(loaded.predict(ones, verbose=0), [[4.0, 4.0]])
    monkeypatch.setitem(config_lib._settings, "unsafe_deserialization", False)
    sl.config.enable_unsafe_deserialization()
    assert sl.models.load_model(path).get_layer(index=1).function(2.0) == 6.0

    y = sl.Input((2,))
    named = sl.Model(y, L.Lambda(add_one)(y))
    named.save(path)  # a registered function: no bytecode, safe mode is fine
    monkeypatch.setitem(config_lib._settings, "unsafe_deserialization", False)
    np.testing.assert_allclose(sl.models.load_model(path).predict(ones, verbose=0), [[2.0, 2.0]])
    z = sl.Input((2,))
    sl.Model(z, L.Lambda(_not_registered)(z)).save(path)
    with pytest.raises(ValueError, match="_not_registered.*custom_objects"):
        sl.models.load_model(path)
    loaded = sl.models.load_model(path, custom_objects={"_not_registered": _not_registered})
    np.testing.assert_allclose(loaded.predict(ones, verbose=0), [[0.0, 0.0]])


@sl.saving.register_keras_serializable(package="test_keras_archive")
def halved_mse(y_true, y_pred):
    return 0.5 * sl.losses.get("mean_squared_error")(y_true, y_pred)  # Keras's, per sample


@pytest.mark.parametrize(
    "loss, metrics",
    [
        (halved_mse, [sl.metrics.MeanAbsoluteError(name="abs_err")]),
        (sl.losses.Huber(delta=2.0), ["mse", sl.losses.mean_absolute_error]),
    ],
    ids=["registered_loss", "builtin_objects"],
)
def test_compile_objects_are_saved_and_restored(tmp_path, loss, metrics):
    model = sl.Sequential([sl.Input((2,)), L.Dense(1)])
    model.compile(sl.optimizers.SGD(0.1, momentum=0.5), loss, metrics=metrics, jit_compile=False)
    path = str(tmp_path / "compiled.keras")
    model.save(path)
    loaded = sl.models.load_model(path)
    assert json.dumps(loaded.get_compile_config()) == json.dumps(model.get_compile_config())
    assert loaded.optimizer.get_config() == model.optimizer.get_config()
    if loss is halved_mse:
        assert loaded.loss is halved_mse
    else:
        assert isinstance(loaded.loss, sl.losses.Huber) and loaded.loss.get_config()["delta"] == 2
    x, y = np.ones((4, 2), np.float32), np.zeros((4, 1), np.float32)
    kernel, bias = loaded.get_weights()
    error = float((x @ kernel + bias)[0, 0])  # every sample alike
    expected = 0.5 * error**2 if loss is halved_mse else (
        0.5 * error**2 if abs(error) <= 2 else 2 * (abs(error) - 1))  # fmt: skip
    assert loaded.evaluate(x, y, verbose=0)[0] == pytest.approx(expected, rel=1e-5)


def _config_with(path, edit):
    with zipfile.ZipFile(path) as zf:
        config = json.loads(zf.read("config.json"))
    edit(config)
    return {"config.json": json.dumps(config).encode()}


def _units(config, n):
    config["config"]["layers"][1]["config"]["units"] = n


def _point_nowhere(config):
    tensor = config["config"]["layers"][1]["inbound_nodes"][0]["args"][0]
    tensor["config"]["keras_history"] = ["nowhere", 0, 0]


def _index_as_text(config):
    tensor = config["config"]["layers"][1]["inbound_nodes"][0]["args"][0]
    tensor["config"]["keras_history"] = ["x", "0", 0]


def _config_as_text(config):
    config["config"]["layers"][1]["config"] = "units=7"


def _negative_input_dim(config):
    config["config"]["layers"][0]["config"]["batch_shape"] = [None, -4]


def test_an_input_layer_config_may_hold_a_keras_dtype_policy():
    policy = {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float64"},
              "registered_name": None}  # fmt: skip
    layer = serialization.deserialize(
        {"class_name": "InputLayer", "config": {"batch_shape": [None, 3], "dtype": policy}}
    )
    assert (layer.dtype, layer.output.dtype) == ("float64", sl.float64)


def _class(config, name):
    config["config"]["layers"][1]["class_name"] = name


@pytest.mark.parametrize("case, message", [
    ("traversal", "absolute path or '..'"),
    ("absolute", "absolute path or '..'"),
    ("missing", "no model.weights.h5"),
    ("bad_json", "config.json is not valid JSON"),
    ("unknown_class", "Could not locate class 'NoSuchLayer'.*custom_objects"),
    ("weights_mismatch", "layers/dense/vars/0.*shape"),
    ("oversized", "declares [0-9]+ bytes; at most 100 bytes are read|inflates to more than 100"),
    ("not_a_zip", "accessible `.keras` zip"),
    ("duplicate", "two members of the same name"),
    ("bad_node", "unknown layer"),
    ("node_index_text", r"node and tensor indices must be ints: \['x', '0', 0\]"),
    ("config_not_dict", "config.json cannot be rebuilt.*config of a 'Dense' must be a dict"),
    ("negative_dim", r"InputLayer 'input_layer': cannot convert \[None, -4\] to a shape"),
    ("bad_crc", r"damaged or unreadable `.keras` zip \(Bad CRC-32 for file 'config.json'\)"),
    ("weights_not_hdf5", "model.weights.h5 is not an HDF5 file"),
])  # fmt: skip
def test_untrusted_archives_are_refused(saved, tmp_path, monkeypatch, case, message):
    _, path = saved
    bad = str(tmp_path / "bad.keras")
    if case == "traversal":
        _rewrite(path, bad, extra=[("../evil.txt", b"x")])
    elif case == "absolute":
        _rewrite(path, bad, extra=[("/etc/evil.txt", b"x")])
    elif case == "missing":
        _rewrite(path, bad, drop=("model.weights.h5",))
    elif case == "bad_json":
        _rewrite(path, bad, change={"config.json": b"{not json"})
    elif case == "unknown_class":
        _rewrite(path, bad, change=_config_with(path, lambda c: _class(c, "NoSuchLayer")))
    elif case == "weights_mismatch":
        _rewrite(path, bad, change=_config_with(path, lambda c: _units(c, 7)))
    elif case == "oversized":
        monkeypatch.setattr(keras_archive, "MAX_JSON_BYTES", 100)
        _rewrite(path, bad)
    elif case == "duplicate":
        with pytest.warns(UserWarning, match="Duplicate name"):
            _rewrite(path, bad, extra=[("config.json", b"{}")])
    elif case == "bad_node":
        x = sl.Input((2,), name="x")
        functional = str(tmp_path / "functional.keras")
        sl.Model(x, L.Dense(1, name="d")(x)).save(functional)
        _rewrite(functional, bad, change=_config_with(functional, _point_nowhere))
    elif case == "node_index_text":
        x = sl.Input((2,), name="x")
        functional = str(tmp_path / "functional.keras")
        sl.Model(x, L.Dense(1, name="d")(x)).save(functional)
        _rewrite(functional, bad, change=_config_with(functional, _index_as_text))
    elif case == "config_not_dict":
        _rewrite(path, bad, change=_config_with(path, _config_as_text))
    elif case == "negative_dim":
        _rewrite(path, bad, change=_config_with(path, _negative_input_dim))
    elif case == "bad_crc":  # one byte of the stored config.json changed after the zip was made
        data = open(_rewrite(path, bad), "rb").read()
        with open(bad, "wb") as f:
            f.write(data.replace(b'"Sequential"', b'"Sequentiam"', 1))
    elif case == "weights_not_hdf5":
        _rewrite(path, bad, change={"model.weights.h5": b"\x89HDF not really"})
    else:
        with open(bad, "wb") as f:
            f.write(b"PK not really")
    with pytest.raises(ValueError, match=message):
        sl.models.load_model(bad)


def test_paths_overwrite_and_atomic_writes(saved, tmp_path, monkeypatch):
    model, _ = saved
    with pytest.raises(ValueError, match="Invalid filepath extension for saving"):
        model.save(str(tmp_path / "model.tf"))
    with pytest.raises(ValueError, match="legacy HDF5"):
        model.save(str(tmp_path / "model.h5"))
    with pytest.raises(ValueError, match="File format not supported"):
        sl.models.load_model(str(tmp_path / "model.tf"))
    with pytest.raises(ValueError, match="File not found"):
        sl.models.load_model(str(tmp_path / "absent.keras"))
    path = str(tmp_path / "model.keras")
    model.save(path)
    with pytest.raises(FileExistsError):
        model.save(path, overwrite=False)
    before = open(path, "rb").read()

    def crash(self, name, data, *args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(zipfile.ZipFile, "writestr", crash)
    with pytest.raises(OSError, match="disk full"):
        model.save(path)
    assert open(path, "rb").read() == before and os.listdir(tmp_path) == ["model.keras"]


# -- every built-in layer ------------------------------------------------------------------------
# How to call the layers of the MULTI_INPUT_LAYERS lists: init kwargs, input shapes (batch
# included), and whether they take the inputs as one list or as positional arguments.
MERGE = ({}, [(2, 3), (2, 3)], "list")
ATTENTION = ({}, [(2, 4, 3), (2, 5, 3)], "list")
MULTI_INPUT_CALLS = {
    "Add": MERGE, "Subtract": MERGE, "Multiply": MERGE, "Average": MERGE, "Maximum": MERGE,
    "Minimum": MERGE, "Concatenate": MERGE, "Dot": ({"axes": 1}, [(2, 3), (2, 3)], "list"),
    "Attention": ATTENTION, "AdditiveAttention": ATTENTION,
    "MultiHeadAttention": ({"num_heads": 2, "key_dim": 2}, [(2, 4, 3), (2, 5, 3)], "args"),
}  # fmt: skip


def _layer_rows():
    """(id, class, init kwargs, input shapes, input dtype, call style) of every row of the
    LAYERS tables of tests/layers and of every class of their MULTI_INPUT_LAYERS lists (as
    test_every_layer_class_has_a_row gathers them)."""
    import importlib
    import pathlib

    folder = pathlib.Path(__file__).parents[1] / "layers"
    rows = []
    for p in sorted(folder.glob("test_*.py")):
        module = importlib.import_module(f"tests.layers.{p.stem}")
        for row in getattr(module, "LAYERS", []) + getattr(module, "SINGLE_INPUT", []):
            extra = row[7] if len(row) > 7 and isinstance(row[7], dict) else {}
            shape = [(2,) + tuple(row[3][1:])]
            rows.append((row[0], row[1], row[2], shape, extra.get("input_dtype", "float32"), None))
        for cls in getattr(module, "MULTI_INPUT_LAYERS", []):
            assert cls.__name__ in MULTI_INPUT_CALLS, f"add {cls.__name__} to MULTI_INPUT_CALLS"
            kwargs, shapes, style = MULTI_INPUT_CALLS[cls.__name__]
            rows.append((cls.__name__.lower(), cls, kwargs, shapes, "float32", style))
    return rows


ROWS = _layer_rows()


def _fresh_kwargs(kwargs):
    """The row's arguments, with a new copy of each layer argument (Bidirectional's layer)."""
    return {k: serialization.deserialize(serialization.serialize(v)) if isinstance(v, L.Layer)
            else v for k, v in kwargs.items()}  # fmt: skip


@pytest.mark.parametrize("cls, kwargs", [row[1:3] for row in ROWS], ids=[row[0] for row in ROWS])
def test_every_layer_config_round_trips_through_json(cls, kwargs):
    config = json.loads(json.dumps(serialization.serialize(cls(**_fresh_kwargs(kwargs)))))
    rebuilt = serialization.deserialize(config)
    assert type(rebuilt) is cls
    assert json.loads(json.dumps(serialization.serialize(rebuilt))) == config


def test_every_layer_round_trips_through_a_keras_file(tmp_path):
    rng = np.random.default_rng(0)
    inputs, outputs, data = [], [], []
    for row_id, cls, kwargs, shapes, dtype, style in ROWS:
        xs = [sl.Input(s[1:], dtype=dtype, name=f"{row_id}_{i}") for i, s in enumerate(shapes)]
        layer = cls(**_fresh_kwargs(kwargs))
        y = layer(xs[0]) if style is None else layer(xs) if style == "list" else layer(*xs)
        inputs += xs
        outputs += nest.flatten(y)
        data += [rng.integers(0, 5, size=s).astype(dtype) if dtype != "float32"
                 else rng.normal(size=s).astype(dtype) for s in shapes]  # fmt: skip
    model = sl.Model(inputs, outputs)
    # set every weight (no initializer to compile); variances must be positive
    model.set_weights([np.abs(rng.normal(size=w.shape.as_list())) + 0.5
                       if "variance" in w.op.name else 0.3 * rng.normal(size=w.shape.as_list())
                       for w in model.weights])  # fmt: skip
    path = str(tmp_path / "every_layer.keras")
    model.save(path)
    with sl.Graph().as_default():
        loaded = sl.models.load_model(path)
    assert json.dumps(loaded.get_config()) == json.dumps(model.get_config())
    for a, b in zip(model.get_weights(), loaded.get_weights()):
        np.testing.assert_array_equal(a, b)
    for want, got in zip(model.predict(data, verbose=0), loaded.predict(data, verbose=0)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# -- a file as Keras 3 writes it -----------------------------------------------------------------
def _keras_dense(name, units, activation, source):
    """A Dense entry of a functional config as Keras 3.6 writes it (its Keras-only keys too)."""
    init = {"module": "keras.initializers", "class_name": "Zeros", "config": {},
            "registered_name": None}  # fmt: skip
    tensor = {"class_name": "__keras_tensor__", "config": {
        "shape": [None, 3], "dtype": "float32", "keras_history": [source, 0, 0]}}  # fmt: skip
    return {
        "module": "keras.layers", "class_name": "Dense", "registered_name": None,
        "config": {
            "name": name, "trainable": True, "units": units, "activation": activation,
            "dtype": {"module": "keras", "class_name": "DTypePolicy",
                      "config": {"name": "float32"}, "registered_name": None},
            "use_bias": True, "kernel_initializer": init, "bias_initializer": init,
            "kernel_regularizer": None, "bias_regularizer": None, "kernel_constraint": None,
            "bias_constraint": None,
        },
        "build_config": {"input_shape": [None, 3]}, "name": name,
        "inbound_nodes": [{"args": [tensor], "kwargs": {}}],
    }  # fmt: skip


def test_a_file_written_by_keras_3_loads(tmp_path):
    input_layer = {
        "module": "keras.layers",
        "class_name": "InputLayer",
        "registered_name": None,
        "config": {
            "batch_shape": [None, 3],
            "dtype": "float32",
            "sparse": False,
            "name": "input_layer",
        },
        "name": "input_layer",
        "inbound_nodes": [],
    }
    adam = {
        "name": "adam",
        "learning_rate": 0.01,
        "weight_decay": None,
        "clipnorm": None,
        "global_clipnorm": None,
        "clipvalue": None,
        "use_ema": False,
        "ema_momentum": 0.99,
        "ema_overwrite_frequency": None,
        "loss_scale_factor": None,
        "gradient_accumulation_steps": None,
        "beta_1": 0.9,
        "beta_2": 0.999,
        "epsilon": 1e-07,
        "amsgrad": False,
    }
    config = {
        "module": "keras.src.models.functional", "class_name": "Functional",
        "registered_name": "Functional", "build_config": {"input_shape": None},
        "config": {"name": "functional", "trainable": True,
                   "layers": [input_layer, _keras_dense("dense", 3, "relu", "input_layer"),
                              _keras_dense("dense_1", 1, "linear", "dense")],
                   "input_layers": [["input_layer", 0, 0]],
                   "output_layers": [["dense_1", 0, 0]]},
        "compile_config": {
            "optimizer": {"module": "keras.optimizers", "class_name": "Adam", "config": adam,
                          "registered_name": None},
            "loss": "mse", "loss_weights": None, "metrics": ["mae"], "weighted_metrics": None,
            "run_eagerly": False, "steps_per_execution": 1, "jit_compile": False,
        },
    }  # fmt: skip
    rng = np.random.default_rng(0)
    weights = [rng.normal(size=s).astype("float32") for s in [(3, 3), (3,), (3, 1), (1,)]]
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as f:
        for i, name in enumerate(["dense", "dense_1"]):
            f.create_dataset(f"layers/{name}/vars/0", data=weights[2 * i])
            f.create_dataset(f"layers/{name}/vars/1", data=weights[2 * i + 1])
        f.create_group("layers/input_layer/vars")
        f.create_group("vars")
        f.create_dataset("optimizer/vars/0", data=np.int64(3))  # Keras's layout: not sluice's
        f.create_dataset("optimizer/vars/1", data=np.float32(0.01))
    path = str(tmp_path / "from_keras.keras")
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("metadata.json", json.dumps({"keras_version": "3.6.0", "date_saved": "x"}))
        zf.writestr("config.json", json.dumps(config))
        zf.writestr("model.weights.h5", buffer.getvalue())
    with pytest.warns(UserWarning, match="optimizer starts afresh"):
        model = sl.models.load_model(path)
    assert isinstance(model.optimizer, sl.optimizers.Adam) and model.loss == "mse"
    x = rng.normal(size=(2, 3)).astype("float32")
    hidden = np.maximum(x @ weights[0] + weights[1], 0.0)
    np.testing.assert_allclose(model.predict(x, verbose=0), hidden @ weights[2] + weights[3],
                               rtol=1e-5, atol=1e-6)  # fmt: skip


@sl.saving.register_keras_serializable(package="archive_test")
def _gated(x):
    return x * sl.sigmoid(x)


def test_a_registered_custom_activation_saves_by_name_and_loads(tmp_path):
    model = sl.Sequential([sl.Input((3,)), sl.layers.Dense(2, activation=_gated)])
    assert model.layers[0].get_config()["activation"] == "archive_test>_gated"
    model.save(tmp_path / "m.keras")
    restored = sl.models.load_model(tmp_path / "m.keras")
    assert restored.layers[0].activation is _gated
    x = np.linspace(-1, 1, 6, dtype="float32").reshape(2, 3)
    np.testing.assert_allclose(restored.predict(x, verbose=0), model.predict(x, verbose=0))
    with pytest.raises(ValueError, match="register"):
        sl.layers.activations.get("archive_test>unknown")
