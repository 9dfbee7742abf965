"""`sl.backend` (Keras 3's `keras.backend`) and the rest of `sl.config`: traceback filtering,
interactive logging, the dtype policy, the caps on epochs and steps; `sl.utils.Progbar` and
`sl.utils.normalize`."""

import logging
import os
import subprocess
import sys
import traceback
import warnings

import numpy as np
import pytest

import sluice as sl
from sluice._keras import config as config_lib


@pytest.fixture(autouse=True)
def fresh_graph():
    """Here models are built in the global default graph, as Keras scripts build them (and
    clear_session replaces it), instead of conftest's `with graph.as_default()`."""
    sl.reset_default_graph()
    yield sl.get_default_graph()
    sl.reset_default_graph()


@pytest.fixture
def settings():
    """Puts back the settings a test changes."""
    saved = dict(config_lib._settings)
    yield
    config_lib._settings.update(saved)


def _tiny_model():
    x = sl.Input((3,))
    model = sl.Model(x, sl.layers.Dense(1)(x))
    model.compile("sgd", "mse")
    return model


# -- keras.backend -----------------------------------------------------------------------------
def test_backend_has_keras_3s_names_and_shares_the_settings(settings):
    keras3 = {
        "backend", "clear_session", "epsilon", "floatx", "get_uid", "image_data_format",
        "is_float_dtype", "is_int_dtype", "is_keras_tensor", "result_type", "set_epsilon",
        "set_floatx", "set_image_data_format", "standardize_dtype",
    }  # fmt: skip
    assert keras3 <= set(sl.backend.__all__)
    sl.backend.set_epsilon(1e-4)
    assert sl.config.epsilon() == 1e-4 and sl.backend.epsilon() == 1e-4
    sl.backend.set_floatx("float64")
    assert sl.config.floatx() == "float64" and sl.layers.Dense(1).dtype == "float64"
    sl.backend.set_floatx("float32")
    assert sl.backend.backend() == "jax" and sl.backend.image_data_format() == "channels_last"
    assert sl.utils.clear_session is sl.backend.clear_session
    assert sl.utils.standardize_dtype is sl.backend.standardize_dtype


def test_standardize_dtype_and_kinds():
    sd = sl.backend.standardize_dtype
    assert [sd(d) for d in (None, "float16", np.float64, np.dtype("int8"), sl.uint8)] == [
        "float32", "float16", "float64", "int8", "uint8",
    ]  # fmt: skip
    assert [sd(d) for d in (int, float, bool, "int", np.dtype("int64"))] == [
        "int32", "float32", "bool", "int32", "int64",
    ]  # fmt: skip
    import jax.numpy as jnp

    assert sd(jnp.bfloat16) == "bfloat16" and sd(jnp.float32) == "float32"
    with pytest.raises(ValueError, match="Invalid dtype"):
        sd("float")
    assert sl.backend.is_float_dtype("bfloat16") and not sl.backend.is_float_dtype("int32")
    assert sl.backend.is_int_dtype("uint16") and not sl.backend.is_int_dtype(bool)


@pytest.mark.parametrize(
    "dtypes, expected",
    [
        (("int32", "float32"), "float32"),
        (("bfloat16", int), "bfloat16"),
        (("bfloat16", float), "bfloat16"),
        (("float16", "bfloat16"), "float32"),
        (("uint8", "int8"), "int16"),
        (("uint8", "uint16"), "uint16"),
        (("bool", int), "int32"),
        ((int,), "int32"),
        ((float,), "float32"),
        ((int, float), "float32"),
        (("int32", float), "float32"),
        (("int8", int), "int8"),
        (("float64", "float32"), "float64"),  # sluice keeps 64 bits (see the docstring)
        (("int64", "int32"), "int64"),
        (("uint64", "int64"), "float32"),  # their bound is the weak float
        (("complex64", "float32"), "complex64"),
        ((None, "int32"), "float32"),
        ((), "float32"),
    ],
)
def test_result_type_follows_keras_promotion(dtypes, expected):
    assert sl.backend.result_type(*dtypes) == expected


def test_result_type_weak_types_follow_floatx(settings):
    sl.config.set_floatx("float64")
    assert sl.backend.result_type(float) == "float64"
    assert sl.backend.result_type(int) == "int64"
    with pytest.raises(ValueError, match="float8"):
        sl.backend.result_type("float8_e4m3fn", "float32")


def test_keras_tensors_shapes_dtypes_and_casts():
    x = sl.Input((3, 4), dtype="int32")
    assert sl.backend.is_keras_tensor(x) and sl.backend.is_keras_tensor(sl.layers.Flatten()(x))
    assert not sl.backend.is_keras_tensor(np.ones(3)) and not sl.backend.is_keras_tensor(3.0)
    assert not sl.backend.is_keras_tensor(sl.constant([1.0]) * 2)  # concrete: it has a value
    assert sl.backend.int_shape(x) == (None, 3, 4) and sl.backend.int_shape(np.ones((2, 1))) == (
        2,
        1,
    )
    assert sl.backend.int_shape(sl.placeholder(sl.float32)) is None  # unknown rank
    assert sl.backend.dtype(x) == "int32" and sl.backend.dtype(np.ones(2)) == "float64"
    cast = sl.backend.cast(x, "float32")
    assert isinstance(cast, sl.Tensor) and cast.dtype == sl.float32
    np.testing.assert_array_equal(sl.backend.cast(np.array([1.7, -2.2]), "int32"), [1, -2])
    assert sl.backend.shape is sl.shape and sl.backend.name_scope is sl.name_scope
    with sl.Session() as s:
        assert list(s.run(sl.backend.shape(x), {x: np.zeros((2, 3, 4), np.int32)})) == [2, 3, 4]


def test_legacy_random_draws_follow_numpy_seed():
    np.random.seed(3)
    a = sl.backend.random_normal((2, 3), mean=1.0, stddev=0.5)
    np.random.seed(3)
    b = sl.backend.random_normal((2, 3), mean=1.0, stddev=0.5)
    u = sl.backend.random_uniform((1000,), minval=2.0, maxval=3.0, seed=1)
    assert a.dtype == sl.float32 and a.shape.as_list() == [2, 3]
    with sl.Session() as s:
        va, vb, vu = s.run([a, b, u])
    np.testing.assert_array_equal(va, vb)  # the op seed came from NumPy's seeded generator
    assert 2.0 <= vu.min() and vu.max() < 3.0 and abs(vu.mean() - 2.5) < 0.05


def test_get_uid_counts_per_prefix_and_clear_session_restarts_it():
    assert sl.backend.get_uid("test_uid") == 1 and sl.backend.get_uid("test_uid") == 2
    assert sl.backend.get_uid("other_uid") == 1
    sl.backend.clear_session(free_memory=False)
    assert sl.backend.get_uid("test_uid") == 1


def test_clear_session_restarts_names_and_leaves_existing_models_working():
    x = np.ones((4, 3), np.float32)
    y = np.ones((4, 1), np.float32)
    first = _tiny_model()
    second = _tiny_model()
    assert first.layers[1].name == "dense" and second.layers[1].name == "dense_1"
    before = first.predict(x, verbose=0)
    sl.backend.clear_session()
    third = _tiny_model()
    assert third.layers[1].name == "dense"  # named from scratch, as Keras after clear_session
    assert third.graph is not first.graph
    np.testing.assert_allclose(first.predict(x, verbose=0), before)  # the old model works on
    first.fit(x, y, epochs=1, verbose=0)
    second.fit(x, y, epochs=1, verbose=0)
    assert third.fit(x, y, epochs=2, verbose=0).history["loss"][1] >= 0


def test_clear_session_keeps_the_random_seed():
    sl.utils.set_random_seed(5)
    sl.backend.clear_session()
    assert sl.get_default_graph().seed == 5


def test_clear_session_refuses_inside_a_graph_context():
    with sl.Graph().as_default():
        with pytest.raises(AssertionError, match="as_default"):
            sl.backend.clear_session()


# -- traceback filtering -----------------------------------------------------------------------
class BrokenLayer(sl.layers.Layer):
    def call(self, x):
        raise ValueError("broken on purpose")


def _sluice_frames(error: BaseException) -> list[str]:
    sluice_dir = os.path.dirname(sl.__file__)
    return [
        f"{os.path.relpath(f.filename, sluice_dir)}:{f.name}"
        for f in traceback.extract_tb(error.__traceback__)
        if f.filename.startswith(sluice_dir + os.sep)
    ]


def test_errors_through_layer_calls_hide_sluices_frames(settings):
    assert sl.config.is_traceback_filtering_enabled()
    with pytest.raises(ValueError, match="broken on purpose") as caught:
        BrokenLayer()(sl.Input((2,)))
    frames = traceback.extract_tb(caught.value.__traceback__)
    assert frames[-1].name == "call"  # the user's code, where it was raised
    assert _sluice_frames(caught.value) == [
        os.path.join("_keras", "utils", "traceback_utils.py") + ":error_handler"
    ]
    sl.config.disable_traceback_filtering()
    assert not sl.config.is_traceback_filtering_enabled()
    with pytest.raises(ValueError, match="broken on purpose") as caught:
        BrokenLayer()(sl.Input((2,)))
    assert any("base.py" in f for f in _sluice_frames(caught.value))
    sl.config.enable_traceback_filtering()
    assert sl.config.is_traceback_filtering_enabled()


def test_errors_from_fit_keep_their_type_message_and_cause(settings):
    model = _tiny_model()
    with pytest.raises(ValueError, match="batch_size") as caught:
        model.fit(np.ones((2, 3)), np.ones((2, 1)), batch_size=0, verbose=0)
    assert _sluice_frames(caught.value) == [
        os.path.join("_keras", "utils", "traceback_utils.py") + ":error_handler"
    ]
    with pytest.raises(ValueError) as caught:
        model.predict(np.ones((2, 5)), verbose=0)
    assert "shape" in str(caught.value)


# -- interactive logging -----------------------------------------------------------------------
def test_interactive_logging_sends_progress_to_stdout_or_to_the_log(settings, capsys, caplog):
    model = _tiny_model()
    x, y = np.ones((4, 3), np.float32), np.ones((4, 1), np.float32)
    assert sl.config.is_interactive_logging_enabled()
    model.fit(x, y, epochs=2, batch_size=2, verbose=1)
    out = capsys.readouterr().out
    assert "Epoch 1/2" in out and "2/2" in out and "loss" in out
    sl.config.disable_interactive_logging()
    assert not sl.utils.is_interactive_logging_enabled()
    with caplog.at_level(logging.INFO, logger="sluice"):
        model.fit(x, y, epochs=2, batch_size=2, verbose=1)
        model.evaluate(x, y, verbose=1)
    assert capsys.readouterr().out == ""
    logged = [r.getMessage() for r in caplog.records if r.name == "sluice"]
    assert "Epoch 1/2" in logged and "Epoch 2/2" in logged
    lines = [m for m in logged if m.startswith("2/2 - ")]
    assert len(lines) == 2 and all("\x1b" not in m and "\r" not in m for m in lines)
    assert any(m.startswith("1/1 - ") for m in logged)  # evaluate's line
    sl.utils.enable_interactive_logging()
    assert sl.config.is_interactive_logging_enabled()


def test_progbar_is_public_and_adds_steps(capsys):
    import io

    out = io.StringIO()
    bar = sl.utils.Progbar(3, stream=out, dynamic=False)
    bar.add(1, [("loss", 1.0)])
    bar.add(2, [("loss", 0.5)])
    assert out.getvalue().startswith("3/3 - ") and "loss: 0.5000" in out.getvalue()


# -- dtype policies ----------------------------------------------------------------------------
def test_dtype_policy_is_floatxs_unless_one_is_set(settings):
    policy = sl.config.dtype_policy()
    assert isinstance(policy, sl.DTypePolicy) and policy.name == "float32"
    assert policy.compute_dtype == policy.variable_dtype == "float32"
    assert sl.dtype_policies.DTypePolicy is sl.DTypePolicy
    sl.config.set_floatx("float64")
    assert sl.config.dtype_policy().name == "float64"  # none set: floatx's
    sl.config.set_dtype_policy("float32")  # one set: it (Keras 3's global policy)
    sl.config.set_dtype_policy(sl.DTypePolicy("float32"))
    assert sl.config.dtype_policy() == sl.DTypePolicy("float32")
    with pytest.raises(NotImplementedError, match="quantized"):
        sl.config.set_dtype_policy("int8_from_float32")
    with pytest.raises(ValueError, match="DTypePolicy"):
        sl.config.set_dtype_policy(16)
    sl.config.set_dtype_policy("float64")
    assert sl.DTypePolicy.from_config(sl.config.dtype_policy().get_config()).name == "float64"


# -- caps for debugging runs -------------------------------------------------------------------
class _Count(sl.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.epochs, self.batches, self.test_batches = 0, 0, 0

    def on_epoch_begin(self, epoch, logs=None):
        self.epochs += 1

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1

    def on_test_batch_end(self, batch, logs=None):
        self.test_batches += 1


def test_max_epochs_and_max_steps_per_epoch_cap_fit_evaluate_predict(settings):
    model = _tiny_model()
    x, y = np.ones((10, 3), np.float32), np.ones((10, 1), np.float32)
    assert sl.config.max_epochs() is None and sl.config.max_steps_per_epoch() is None
    sl.config.set_max_epochs(2)
    sl.config.set_max_steps_per_epoch(3)
    assert sl.config.max_epochs() == 2 and sl.config.max_steps_per_epoch() == 3
    count = _Count()
    with pytest.warns(UserWarning, match="Limiting epochs to 2"):
        history = model.fit(x, y, epochs=5, batch_size=2, verbose=0, callbacks=[count])
    assert count.epochs == 2 and count.batches == 6 and len(history.history["loss"]) == 2
    with pytest.warns(UserWarning, match="Limiting steps_per_epoch to 3"):
        assert model.predict(x, batch_size=2, verbose=0).shape == (6, 1)
    count = _Count()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.evaluate(x, y, batch_size=2, verbose=0, callbacks=[count])
        assert count.test_batches == 3
        dataset = sl.data.Dataset.from_tensor_slices((x, y)).batch(2)
        count = _Count()
        model.fit(dataset, epochs=1, verbose=0, callbacks=[count])
        assert count.batches == 3
    sl.config.set_max_epochs(None)
    sl.config.set_max_steps_per_epoch(None)
    count = _Count()
    model.fit(x, y, epochs=3, batch_size=2, verbose=0, callbacks=[count])
    assert count.epochs == 3 and count.batches == 15
    with pytest.raises(ValueError, match="non-negative integer"):
        sl.config.set_max_epochs(-1)


def test_max_epochs_is_read_from_the_environment():
    code = "import sluice as sl; print(sl.config.max_epochs(), sl.config.max_steps_per_epoch())"
    env = dict(os.environ, KERAS_MAX_EPOCHS="4", KERAS_MAX_STEPS_PER_EPOCH="7")
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["4", "7"]


# -- utils.normalize ---------------------------------------------------------------------------
def test_normalize_numpy_graph_and_lists():
    x = np.array([[3.0, 4.0], [0.0, 0.0], [1.0, -1.0]])
    expected = x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-300)
    np.testing.assert_allclose(sl.utils.normalize(x), expected)
    np.testing.assert_allclose(
        sl.utils.normalize(x, axis=0), x / np.linalg.norm(x, axis=0, keepdims=True)
    )
    l1 = x / np.maximum(np.abs(x).sum(-1, keepdims=True), 1)
    np.testing.assert_allclose(sl.utils.normalize(x, order=1), l1)
    t = sl.constant(x.astype(np.float32))
    with sl.Session() as s:
        got2, got1 = s.run([sl.utils.normalize(t), sl.utils.normalize(t, order=1)])
    np.testing.assert_allclose(got2, expected, rtol=1e-6)
    np.testing.assert_allclose(got1, l1, rtol=1e-6)
    np.testing.assert_allclose(sl.utils.normalize(x.tolist()), expected, rtol=1e-6)
    with pytest.raises(ValueError, match="order"):
        sl.utils.normalize(t, order=0)


def test_config_has_every_name_of_keras_3s_config_and_the_hints(settings):
    keras3 = {
        "backend", "disable_flash_attention", "disable_interactive_logging",
        "disable_traceback_filtering", "dtype_policy", "enable_flash_attention",
        "enable_interactive_logging", "enable_traceback_filtering",
        "enable_unsafe_deserialization", "epsilon", "floatx", "image_data_format",
        "is_flash_attention_enabled", "is_interactive_logging_enabled", "is_nnx_enabled",
        "is_traceback_filtering_enabled", "max_epochs", "max_steps_per_epoch", "set_backend",
        "set_dtype_policy", "set_epsilon", "set_floatx", "set_image_data_format",
        "set_max_epochs", "set_max_steps_per_epoch",
    }  # fmt: skip
    assert keras3 <= set(sl.config.__all__), keras3 - set(sl.config.__all__)
    assert sl.config.is_flash_attention_enabled() is None  # Keras: None means allowed
    sl.config.disable_flash_attention()
    assert sl.config.is_flash_attention_enabled() is False
    sl.config.enable_flash_attention()
    assert sl.config.is_flash_attention_enabled() is None
    assert sl.config.is_nnx_enabled() is False
    sl.config.set_backend("jax")
    with pytest.raises(ValueError, match="only backend is 'jax'"):
        sl.config.set_backend("torch")
