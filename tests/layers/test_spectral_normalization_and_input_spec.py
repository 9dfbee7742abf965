"""SpectralNormalization (with Keras's `Wrapper` base) and `InputSpec`: the layer contract, the
power iteration against NumPy's largest singular value, the training-call update of `vector_u`
and the kernel (also inside `fit`), saving and loading; InputSpec's checks in `Layer.__call__`
with Keras's messages, and the specs Keras's layers set in `build`."""

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L
from sluice.testing import run_layer_test

RNG = np.random.default_rng(17)


# the classes test_layer_contract runs through the layer contract
CONTRACT_CLASSES = [L.SpectralNormalization]


@pytest.mark.parametrize(
    "inner, input_shape, output_shape, weights",
    [
        ({"class_name": "Dense", "config": {"units": 3}}, (2, 4), (None, 3),
         {"dense/kernel": (4, 3), "dense/bias": (3,), "vector_u": (1, 3)}),
        ({"class_name": "Conv2D", "config": {"filters": 2, "kernel_size": 2}}, (2, 3, 3, 1),
         (None, 2, 2, 2), {"conv2d/kernel": (2, 2, 1, 2), "conv2d/bias": (2,),
                           "vector_u": (1, 2)}),
    ],
)  # fmt: skip
def test_layer_contract(inner, input_shape, output_shape, weights):
    run_layer_test(
        L.SpectralNormalization, {"layer": inner, "power_iterations": 2}, input_shape,
        output_shape, weights, expected_num_non_trainable=1,
    )  # fmt: skip


def values(sn):
    """The wrapper's weights by their name inside it ("kernel", "bias", "vector_u")."""
    return {v.op.name.rsplit("/", 1)[-1]: a for v, a in zip(sn.weights, sn.get_weights())}


def np_spectral_step(kernel, u, iterations):
    w = kernel.reshape(-1, kernel.shape[-1])
    for _ in range(iterations):
        v = u @ w.T
        v = v / np.linalg.norm(v)
        u = v @ w
        u = u / np.linalg.norm(u)
    sigma = (v @ w @ u.T).item()
    return u, kernel / sigma


@pytest.mark.parametrize("make, shape", [
    (lambda: L.Dense(5, use_bias=False), (4, 3)),
    pytest.param(lambda: L.Conv2D(3, 2, use_bias=False), (2, 4, 4, 2), marks=pytest.mark.slow),
])  # fmt: skip
def test_training_call_normalizes_the_kernel_as_numpy(make, shape):
    x = RNG.normal(size=shape).astype("float32")
    sn = L.SpectralNormalization(make(), power_iterations=2)
    inference = np.asarray(sn(x))  # builds; inference leaves the weights alone
    kernel, u = values(sn)["kernel"], values(sn)["vector_u"]
    assert {v.op.name.rsplit("/", 1)[-1]: v.trainable for v in sn.weights} == {
        "kernel": True, "vector_u": False
    }  # fmt: skip
    np.testing.assert_array_equal(values(sn)["kernel"], kernel)
    y = np.asarray(sn(x, training=True))
    expected_u, expected_kernel = np_spectral_step(kernel.astype(np.float64), u, 2)
    new_kernel, new_u = values(sn)["kernel"], values(sn)["vector_u"]
    np.testing.assert_allclose(new_u, expected_u, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(new_kernel, expected_kernel, rtol=1e-4, atol=1e-6)
    # the training call's output uses the normalized kernel
    sn.layer.set_weights([new_kernel])
    np.testing.assert_allclose(y, np.asarray(sn.layer(x)), rtol=1e-5, atol=1e-6)
    assert not np.allclose(inference, y)


@pytest.mark.slow
def test_power_iteration_converges_to_the_largest_singular_value():
    sn = L.SpectralNormalization(L.Dense(6, use_bias=False), power_iterations=50)
    x = RNG.normal(size=(2, 4)).astype("float32")
    sn(x, training=True)
    kernel = values(sn)["kernel"]
    np.testing.assert_allclose(np.linalg.svd(kernel, compute_uv=False)[0], 1.0, rtol=1e-4)


@pytest.mark.slow
def test_all_zero_kernel_is_left_alone():
    sn = L.SpectralNormalization(L.Dense(2, kernel_initializer="zeros"))
    x = np.ones((1, 3), "float32")
    sn(x)
    u = values(sn)["vector_u"]
    np.testing.assert_array_equal(np.asarray(sn(x, training=True)), np.zeros((1, 2)))
    kernel, new_u = values(sn)["kernel"], values(sn)["vector_u"]
    assert not np.any(kernel) and np.array_equal(new_u, u)


@pytest.mark.slow
def test_embeddings_are_normalized():
    sn = L.SpectralNormalization(L.Embedding(6, 4), power_iterations=40)
    sn(np.array([[1, 2]]), training=True)
    np.testing.assert_allclose(np.linalg.svd(values(sn)["embeddings"], compute_uv=False)[0], 1.0,
                               rtol=1e-4)  # fmt: skip


def test_errors():
    with pytest.raises(ValueError, match="no attribute 'kernel' nor 'embeddings'"):
        L.SpectralNormalization(L.Flatten())(np.ones((1, 2), "float32"))
    with pytest.raises(ValueError, match="greater than zero"):
        L.SpectralNormalization(L.Dense(2), power_iterations=0)
    with pytest.raises(ValueError, match="supported layer type"):
        L.SpectralNormalization("dense")


@pytest.mark.slow
def test_fit_updates_vector_u_and_the_kernel_and_the_model_reloads(tmp_path):
    x = RNG.normal(size=(8, 4)).astype("float32")
    y = RNG.normal(size=(8, 1)).astype("float32")
    sn = L.SpectralNormalization(L.Dense(3), power_iterations=30)
    model = sl.Sequential([L.Input((4,)), sn, L.Dense(1)])
    model.compile(optimizer=sl.optimizers.SGD(0.0), loss="mse")  # no step: only the writes
    u_before = values(sn)["vector_u"]
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    kernel, u_after = values(sn)["kernel"], values(sn)["vector_u"]
    assert not np.allclose(u_after, u_before)
    np.testing.assert_allclose(np.linalg.svd(kernel, compute_uv=False)[0], 1.0, rtol=1e-3)
    model.compile(optimizer=sl.optimizers.Adam(0.05), loss="mse")
    losses = model.fit(x, y, batch_size=8, epochs=5, verbose=0).history["loss"]
    assert losses[-1] < losses[0]
    path = str(tmp_path / "sn.keras")
    model.save(path)
    loaded = sl.models.load_model(path)
    assert type(loaded.layers[0]).__name__ == "SpectralNormalization"
    for a, b in zip(loaded.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)  # fmt: skip


# -- InputSpec ----------------------------------------------------------------------------------
class Squeezable(L.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.input_spec = L.InputSpec(shape=(None, 4, 1), allow_last_axis_squeeze=True)

    def call(self, inputs):
        return inputs


@pytest.mark.parametrize(
    "spec, shape, dtype, match",
    [
        (dict(ndim=3), (4,), "float32", "expected ndim=3, found ndim=2"),
        (dict(min_ndim=3), (4,), "float32", "expected min_ndim=3, found ndim=2"),
        (dict(max_ndim=2), (4, 2), "float32", "expected max_ndim=2, found ndim=3"),
        (dict(dtype="int32"), (4,), "float32", "expected dtype=int32, found dtype=float32"),
        (dict(axes={-1: 3}), (4,), "float32", "expected axis -1 of input shape to have value 3"),
        (dict(shape=(None, 5)), (4,), "float32", r"expected shape=\(None, 5\)"),
    ],
)
def test_input_spec_is_checked_by_call(spec, shape, dtype, match):
    class Checked(L.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.input_spec = L.InputSpec(**spec)

    with pytest.raises(ValueError, match=f"Input 0 with name 'None' of layer 'checked'.*{match}"):
        Checked(name="checked")(L.Input(shape, dtype=dtype))


def test_input_spec_squeeze_count_and_config():
    assert Squeezable()(L.Input((4,))).shape.as_list() == [None, 4]
    assert Squeezable()(L.Input((4, 1))).shape.as_list() == [None, 4, 1]
    with pytest.raises(ValueError, match="expected shape"):
        Squeezable()(L.Input((5,)))
    spec = L.InputSpec(ndim=3, axes={-1: 8})
    assert repr(spec) == "InputSpec(ndim=3, axes={-1: 8})"
    assert L.InputSpec.from_config(spec.get_config()).get_config() == spec.get_config()
    assert sl.InputSpec is L.InputSpec
    with pytest.raises(ValueError, match="greater than the maximum"):
        L.InputSpec(ndim=2, axes={2: 3})
    with pytest.raises(TypeError, match="integer keys"):
        L.InputSpec(axes={"x": 3})

    class Two(L.Layer):
        def __init__(self):
            super().__init__()
            self.input_spec = [L.InputSpec(ndim=2), L.InputSpec(ndim=2)]

        def call(self, inputs):
            return inputs[0]

    with pytest.raises(ValueError, match="expects 2 input"):
        Two()([L.Input((3,))])


def test_layers_set_keras_specs_in_build():
    inputs = L.Input((3, 4))
    norm = L.GroupNormalization(groups=2)
    norm(inputs)
    with pytest.raises(ValueError, match="expected axis -1 of input shape to have value 4"):
        norm(L.Input((3, 6)))
    dense = L.EinsumDense("abc,cd->abd", (None, 2))
    dense(inputs)
    with pytest.raises(ValueError, match="expected ndim=3"):
        dense(L.Input((4,)))
    pool = L.MaxPooling3D()
    pool(L.Input((2, 2, 2, 1)))
    with pytest.raises(ValueError, match="expected ndim=5"):
        pool(L.Input((2, 2, 1)))
