"""Dtype policies and mixed precision, as Keras 3 (`keras/src/dtype_policies`): a layer of a
"mixed_float16" / "mixed_bfloat16" policy keeps float32 weights, casts its floating inputs and
reads its weights cast to the 16-bit compute dtype, and outputs in it; the optimizer updates
the float32 weights; BatchNormalization normalizes in float32."""

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L
from sluice._keras import config as config_lib


@pytest.fixture
def settings():
    saved = dict(config_lib._settings)
    yield
    config_lib._settings.update(saved)


def test_policies_by_name_and_their_errors():
    for name, compute in (("mixed_float16", "float16"), ("mixed_bfloat16", "bfloat16")):
        policy = sl.DTypePolicy(name)
        assert (policy.name, policy.compute_dtype, policy.variable_dtype) == (
            name, compute, "float32",
        )  # fmt: skip
    assert sl.DTypePolicy("float64").compute_dtype == "float64"
    assert sl.mixed_precision.Policy is sl.DTypePolicy is sl.mixed_precision.DTypePolicy
    assert sl.dtype_policies.get({"class_name": "DTypePolicy", "config": {"name": "float16"}}) == (
        sl.DTypePolicy("float16")
    )
    with pytest.raises(TypeError, match="'name' must be a string"):
        sl.DTypePolicy(16)
    with pytest.raises(ValueError, match="Cannot convert 'mixed_float8'"):
        sl.DTypePolicy("mixed_float8")
    with pytest.raises(NotImplementedError, match="quantized"):
        sl.DTypePolicy("int8_from_mixed_bfloat16")


def test_the_global_policy_is_what_layers_take(settings):
    sl.mixed_precision.set_global_policy("mixed_float16")
    assert sl.mixed_precision.global_policy() == sl.DTypePolicy("mixed_float16")
    assert sl.config.dtype_policy().name == "mixed_float16"
    dense, plain = L.Dense(2), L.Dense(2, dtype="float32")
    assert dense.dtype_policy.name == "mixed_float16" and plain.dtype_policy.name == "float32"
    assert (dense.dtype, dense.compute_dtype, dense.variable_dtype) == (
        "float32", "float16", "float32",
    )  # fmt: skip


def test_a_mixed_layer_computes_in_float16_with_float32_weights():
    x = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    inputs = sl.Input((4,))
    dense = L.Dense(2, dtype="mixed_float16")
    hidden = dense(inputs)
    outputs = L.Dense(1, dtype="float32")(hidden)
    assert dense.kernel.dtype == sl.float32 and hidden.dtype == sl.float16
    assert outputs.dtype == sl.float32
    model = sl.Model(inputs, [hidden, outputs])
    got, _ = model.predict(x, verbose=0)
    kernel, bias = (w.astype(np.float16) for w in dense.get_weights())
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, x.astype(np.float16) @ kernel + bias, rtol=1e-3, atol=1e-3)
    config = dense.get_config()
    assert config["dtype"]["config"] == {"name": "mixed_float16"}
    assert L.Dense.from_config(config).dtype_policy == sl.DTypePolicy("mixed_float16")


def test_training_a_mixed_model_updates_float32_weights():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(16, 5, 5, 2)).astype(np.float32)
    y = rng.normal(size=(16, 1)).astype(np.float32)
    inputs = sl.Input((5, 5, 2))
    conv = L.Conv2D(3, 3, dtype="mixed_bfloat16")(inputs)
    norm_layer = L.BatchNormalization(dtype="mixed_bfloat16")
    normed = norm_layer(conv)
    assert normed.dtype == sl.bfloat16
    model = sl.Model(inputs, L.Dense(1, dtype="float32")(L.Flatten()(normed)))
    model.compile("sgd", "mse")
    before = model.get_weights()
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    after = model.get_weights()
    assert all(w.dtype == np.float32 for w in after)
    assert all(not np.array_equal(a, b) for a, b in zip(before, after))  # moving stats too
