"""keras.constraints: Keras's formulas, get/serialize/deserialize, and the constraint applied to
the weight after every optimizer step (Dense, Conv2D, Embedding, BatchNormalization, LSTM,
add_weight), kept through get_config and a .keras file."""

import numpy as np
import pytest

import sluice as sl

C = sl.constraints
EPS = 1e-7  # keras.config.epsilon()
W = np.array([[3.0, 0.1, -2.0], [4.0, 0.2, 1.0]], np.float32)  # column norms 5, .22, 2.24


def project(constraint, w=W):
    return sl.Session().run(constraint(w))


def test_max_norm():
    norms = np.linalg.norm(W, axis=0, keepdims=True)
    np.testing.assert_allclose(project(C.MaxNorm(2.0)), W * np.minimum(norms, 2) / (EPS + norms),
                               rtol=1e-6)  # fmt: skip
    rows = np.linalg.norm(W, axis=1, keepdims=True)
    np.testing.assert_allclose(project(C.MaxNorm(1.0, axis=1)), W / (EPS + rows), rtol=1e-6)


def test_min_max_norm_with_a_rate():
    norms = np.linalg.norm(W, axis=0, keepdims=True)
    desired = 0.5 * np.clip(norms, 1.0, 3.0) + 0.5 * norms
    got = project(C.MinMaxNorm(1.0, 3.0, rate=0.5))
    np.testing.assert_allclose(got, W * desired / (EPS + norms), rtol=1e-6)


def test_unit_norm_and_non_neg():
    np.testing.assert_allclose(np.linalg.norm(project(C.UnitNorm()), axis=0), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(project(C.NonNeg()), np.maximum(W, 0))
    assert C.Constraint()(W) is W  # the base class leaves the weight as it is


def test_a_conv_kernel_over_several_axes():
    w = np.random.default_rng(0).normal(size=(3, 3, 2, 4)).astype(np.float32)
    got = project(C.MaxNorm(0.5, axis=[0, 1, 2]), w)
    np.testing.assert_allclose(np.sqrt((got**2).sum(axis=(0, 1, 2))), 0.5, rtol=1e-5)


@pytest.mark.parametrize(
    "constraint",
    [C.MaxNorm(3.0, axis=1), C.MinMaxNorm(0.5, 2.0, 0.9, [0, 1]), C.NonNeg(), C.UnitNorm(2)],
    ids=lambda c: type(c).__name__,
)
def test_config_round_trips(constraint):
    config = C.serialize(constraint)
    assert config["module"] == "keras.constraints" and config["registered_name"] is None
    again = C.deserialize(config)
    assert type(again) is type(constraint) and again.get_config() == constraint.get_config()
    assert C.get(config).get_config() == constraint.get_config()


def test_get():
    assert type(C.get("max_norm")) is C.MaxNorm and type(C.get("NonNeg")) is C.NonNeg
    assert type(C.get(C.UnitNorm)) is C.UnitNorm and C.get(None) is None
    assert C.max_norm is C.MaxNorm and C.non_neg is C.NonNeg
    with pytest.raises(ValueError, match="Could not interpret constraint identifier: maxnorm"):
        C.get("maxnorm")


# -- applied after each optimizer step ---------------------------------------------------------
def _fit(model, x, y, epochs=3):
    model.compile(sl.optimizers.SGD(0.1), "mse")
    model.fit(x, y, batch_size=8, epochs=epochs, verbose=0)


def test_dense_constraints_hold_after_fit():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(16, 4)).astype(np.float32)
    y = (x @ rng.normal(size=(4, 3)) * 5 - 10).astype(np.float32)
    dense = sl.layers.Dense(3, kernel_constraint=C.MaxNorm(0.5), bias_constraint="non_neg")
    model = sl.Sequential([sl.Input((4,)), dense])
    _fit(model, x, y)
    kernel, bias = dense.get_weights()
    assert np.linalg.norm(kernel, axis=0).max() <= 0.5 + 1e-5
    assert bias.min() >= 0 and np.abs(bias).max() == 0  # pushed below zero, projected to 0


def test_embedding_conv_and_normalization_constraints():
    rng = np.random.default_rng(2)
    tokens = rng.integers(0, 10, size=(16, 5))
    images = rng.normal(size=(16, 6, 6, 2)).astype(np.float32)
    ids = sl.Input((5,), dtype="int32")
    pixels = sl.Input((6, 6, 2))
    embedded = sl.layers.Embedding(10, 4, embeddings_constraint=C.UnitNorm(axis=1))(ids)
    conv = sl.layers.Conv2D(2, 3, kernel_constraint=C.MaxNorm(0.2, axis=[0, 1, 2]))(pixels)
    normed = sl.layers.BatchNormalization(gamma_constraint=C.NonNeg())(conv)
    flat = [sl.layers.Flatten()(t) for t in (embedded, normed)]
    model = sl.Model([ids, pixels], sl.layers.Dense(1)(sl.layers.Concatenate()(flat)))
    _fit(model, [tokens, images], rng.normal(size=(16, 1)).astype(np.float32), epochs=2)
    weights = {v.op.name: w for v, w in zip(model.weights, model.get_weights())}
    assert all(np.isfinite(w).all() for w in weights.values())
    np.testing.assert_allclose(np.linalg.norm(weights["embedding/embeddings"], axis=1), 1.0,
                               rtol=1e-4)  # fmt: skip
    kernel = weights["conv2d/kernel"]
    assert np.sqrt((kernel**2).sum(axis=(0, 1, 2))).max() <= 0.2 + 1e-5
    assert weights["batch_normalization/gamma"].min() >= 0


@pytest.mark.slow  # an LSTM's training step takes seconds to compile
def test_recurrent_constraints():
    lstm = sl.layers.LSTM(3, recurrent_constraint=C.NonNeg(), kernel_constraint=C.UnitNorm())
    model = sl.Sequential([sl.Input((4, 2)), lstm, sl.layers.Dense(1)])
    rng = np.random.default_rng(4)
    _fit(model, rng.normal(size=(16, 4, 2)).astype(np.float32), np.full((16, 1), -5.0), 2)
    kernel, recurrent = lstm.get_weights()[:2]
    assert recurrent.min() >= 0
    np.testing.assert_allclose(np.linalg.norm(kernel, axis=0), 1.0, rtol=1e-4)
    assert lstm.get_config()["recurrent_constraint"]["class_name"] == "NonNeg"


def test_add_weight_constraint_in_a_custom_layer():
    class Scale(sl.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(
                shape=(input_shape[-1],),
                initializer="ones",
                constraint=lambda w: sl.clip_by_value(w, 0.0, 1.5),
                name="w",
            )

        def call(self, x):
            return x * self.w

    layer = Scale()
    model = sl.Sequential([sl.Input((2,)), layer])
    x = np.ones((8, 2), np.float32)
    _fit(model, x, np.full((8, 2), [10.0, -10.0], np.float32))
    np.testing.assert_allclose(layer.get_weights()[0], [1.5, 0.0])


def test_a_constraint_that_changes_the_shape_is_refused():
    model = sl.Sequential([sl.Input((2,)), sl.layers.Dense(1, kernel_constraint=sl.reduce_sum)])
    with pytest.raises(ValueError, match=r"constraint .* returned float32\(\)"):
        _fit(model, np.ones((8, 2), np.float32), np.ones((8, 1), np.float32), epochs=1)


def test_constraints_survive_get_config_and_a_keras_file(tmp_path):
    layers = [
        sl.layers.Dense(3, kernel_constraint=C.MaxNorm(0.5), bias_constraint=C.NonNeg()),
        sl.layers.Dense(1, kernel_constraint=C.MinMaxNorm(0.1, 0.3, rate=0.5, axis=0)),
    ]
    config = layers[0].get_config()
    assert config["kernel_constraint"]["class_name"] == "MaxNorm"
    again = sl.layers.Dense.from_config(config)
    assert again.kernel_constraint.get_config() == {"max_value": 0.5, "axis": 0}
    model = sl.Sequential([sl.Input((4,)), *layers])
    path = str(tmp_path / "m.keras")
    model.save(path)
    loaded = sl.models.load_model(path)
    first, second = loaded.layers
    assert type(first.kernel_constraint) is C.MaxNorm and type(first.bias_constraint) is C.NonNeg
    assert second.kernel_constraint.get_config() == layers[1].kernel_constraint.get_config()
    x = np.random.default_rng(3).normal(size=(16, 4)).astype(np.float32)
    _fit(loaded, x, np.full((16, 1), 50.0, np.float32), epochs=2)
    assert np.linalg.norm(first.get_weights()[0], axis=0).max() <= 0.5 + 1e-5
