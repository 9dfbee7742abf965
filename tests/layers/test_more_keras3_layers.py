"""ELU, Identity, ActivityRegularization, UnitNormalization, RMSNormalization, GroupNormalization
and EinsumDense:
`run_layer_test` over a table, forward values against NumPy formulas (np.einsum for
EinsumDense, with the kernel and bias shapes Keras 3's tests list), Keras's argument errors, and
one model of them that trains, saves and loads as a `.keras` file."""

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L
from sluice._keras.layers.core.einsum_dense import analyze_einsum
from sluice.testing import run_layer_test

RNG = np.random.default_rng(5)

LAYERS = [
    # id, class, init kwargs, input shape, output shape, weights
    ("elu", L.ELU, {"alpha": 0.5}, (2, 3), (None, 3), {}),
    ("identity", L.Identity, {}, (2, 3, 2), (None, 3, 2), {}),
    ("activity_regularization", L.ActivityRegularization, {"l1": 0.1, "l2": 0.2}, (2, 3),
     (None, 3), {}),
    ("unit_normalization", L.UnitNormalization, {}, (2, 3), (None, 3), {}),
    ("unit_normalization_axes", L.UnitNormalization, {"axis": [1, 2]}, (2, 3, 2), (None, 3, 2),
     {}),
    ("rms_normalization", L.RMSNormalization, {}, (2, 3), (None, 3), {"scale": (3,)}),
    ("rms_normalization_axes", L.RMSNormalization, {"axis": [1, 2], "epsilon": 1e-3},
     (2, 3, 2), (None, 3, 2), {"scale": (3, 2)}),
    ("group_normalization", L.GroupNormalization, {"groups": 2}, (2, 3, 4), (None, 3, 4),
     {"gamma": (4,), "beta": (4,)}),
    ("group_normalization_axis1", L.GroupNormalization, {"groups": -1, "axis": 1,
     "center": False}, (2, 3, 2), (None, 3, 2), {"gamma": (3,)}),
    ("einsum_dense", L.EinsumDense, {"equation": "ab,bc->ac", "output_shape": 4,
     "bias_axes": "c", "activation": "tanh"}, (2, 3), (None, 4), {"kernel": (3, 4),
     "bias": (4,)}),
    ("einsum_dense_partial", L.EinsumDense, {"equation": "abc,cd->abd",
     "output_shape": (None, 2), "bias_axes": "d"}, (2, 3, 4), (None, 3, 2),
     {"kernel": (4, 2), "bias": (2,)}),
    ("einsum_dense_left_ellipsis", L.EinsumDense, {"equation": "...b,bc->...c",
     "output_shape": 2}, (2, 3, 4), (None, 3, 2), {"kernel": (4, 2)}),
    ("einsum_dense_right_ellipsis", L.EinsumDense, {"equation": "bc...,cde->bde...",
     "output_shape": (2, 3), "bias_axes": "d"}, (2, 1, 2), (None, 2, 3, 2),
     {"kernel": (1, 2, 3), "bias": (2, 1, 1)}),
]  # fmt: skip


@pytest.mark.parametrize(
    "cls, kwargs, input_shape, output_shape, weights",
    [row[1:] for row in LAYERS],
    ids=[row[0] for row in LAYERS],
)
def test_layer_contract(cls, kwargs, input_shape, output_shape, weights):
    run_layer_test(cls, kwargs, input_shape, output_shape, weights)


# -- forward values -----------------------------------------------------------------------------
def np_group_norm(x, groups, axis, epsilon, gamma, beta):
    axis %= x.ndim
    c = x.shape[axis]
    g = x.reshape(x.shape[:axis] + (groups, c // groups) + x.shape[axis + 1 :])
    reduce = tuple(a for a in range(1, g.ndim) if a != axis)
    mean, var = g.mean(reduce, keepdims=True), g.var(reduce, keepdims=True)
    shape = [1] * g.ndim
    shape[axis : axis + 2] = [groups, c // groups]
    y = (g - mean) / np.sqrt(var + epsilon) * gamma.reshape(shape) + beta.reshape(shape)
    return y.reshape(x.shape)


@pytest.mark.parametrize(
    "shape, groups, axis", [((2, 3, 4), 2, -1), ((2, 6, 2, 3), 3, 1), ((3, 4), -1, -1)]
)
def test_group_normalization_matches_numpy(shape, groups, axis):
    x = RNG.normal(size=shape).astype("float32") * 3 + 1
    layer = L.GroupNormalization(groups=groups, axis=axis, epsilon=1e-3)
    layer.build(shape)
    c = shape[axis]
    gamma, beta = RNG.normal(size=c), RNG.normal(size=c)
    layer.set_weights([gamma, beta])
    expected = np_group_norm(x, c if groups == -1 else groups, axis, 1e-3, gamma, beta)
    np.testing.assert_allclose(np.asarray(layer(x)), expected, rtol=1e-4, atol=1e-5)
    if groups == -1:
        assert layer.groups == c  # -1 became the channel count, as in Keras


def test_group_normalization_with_unknown_spatial_dims():
    x = RNG.normal(size=(2, 5, 3, 4)).astype("float32")
    inputs = L.Input((None, None, 4))
    model = sl.Model(inputs, L.GroupNormalization(groups=2)(inputs))
    assert model.output_shape == (None, None, None, 4)
    expected = np_group_norm(x, 2, -1, 1e-3, np.ones(4), np.zeros(4))
    np.testing.assert_allclose(model.predict(x, verbose=0), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("axis", [-1, [1, 2], 1])
def test_unit_normalization_matches_numpy(axis):
    x = RNG.normal(size=(2, 3, 4)).astype("float32")
    x[0] = 0.0  # an all-zero example stays zero
    norm = np.sqrt(np.sum(x**2, axis=tuple(np.atleast_1d(axis)), keepdims=True))
    expected = x / np.maximum(norm, 1e-12)
    np.testing.assert_allclose(np.asarray(L.UnitNormalization(axis)(x)), expected, rtol=1e-5)


@pytest.mark.parametrize("axis", [-1, [2, 1], 1])
def test_rms_normalization_matches_numpy(axis):
    x = RNG.normal(size=(2, 3, 4)).astype("float32")
    layer = L.RMSNormalization(axis=axis)
    layer.build(x.shape)
    assert layer.axis == sorted(np.atleast_1d(axis).tolist())  # a sorted list, as Keras
    scale = RNG.normal(size=layer.scale.shape.as_list()).astype("float32")
    layer.set_weights([scale])
    shape = [1, 1, 1]
    for a, n in zip(layer.axis, scale.shape):
        shape[a] = n
    axes = tuple(layer.axis)
    expected = x / np.sqrt(np.mean(x**2, axis=axes, keepdims=True) + 1e-6) * scale.reshape(shape)
    np.testing.assert_allclose(np.asarray(layer(x)), expected, rtol=1e-5, atol=1e-6)


def test_elu_identity_and_activity_regularization_values():
    x = np.array([[-2.0, -0.5, 0.0, 1.5]], "float32")
    expected = np.where(x > 0, x, 0.3 * (np.exp(x) - 1))
    np.testing.assert_allclose(np.asarray(L.ELU(alpha=0.3)(x)), expected, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(L.Identity()(x)), x)
    inputs = L.Input((4,))
    copy = L.Dense(4, use_bias=False, kernel_initializer="identity")(inputs)
    model = sl.Model(inputs, L.ActivityRegularization(l1=0.1, l2=0.2)(copy))
    model.compile(optimizer=sl.optimizers.SGD(0.0), loss=lambda y, p: 0.0 * sl.reduce_sum(p))
    # the loss is only the activity penalty, divided by the batch size (Keras 3)
    history = model.fit(x, x, epochs=1, verbose=0).history["loss"][0]
    np.testing.assert_allclose(history, 0.1 * np.abs(x).sum() + 0.2 * (x**2).sum(), rtol=1e-5)


EINSUM_CASES = [
    # equation, bias_axes, input shape, output_shape, kernel, bias, output (Keras 3's tests)
    ("ab,b->a", None, (2, 32), (), (32,), None, (2,)),
    ("abc,cde->abde", "d", (2, 1, 2), (1, 3, 4), (2, 3, 4), (3, 1), (2, 1, 3, 4)),
    ("abc,cde->abde", "be", (2, 7, 2), (7, 3, 4), (2, 3, 4), (7, 1, 4), (2, 7, 3, 4)),
    ("BFNH,NHD->BFD", None, (2, 1, 2, 3), (1, 4), (2, 3, 4), None, (2, 1, 4)),
    ("i,d->id", None, (2,), (2,), (2,), None, (2, 2)),
    ("ibd,nd->ibn", None, (2, 2, 1), (2, 2), (2, 1), None, (2, 2, 2)),
    ("...bc,bc->...b", None, (2, 32, 64), (32,), (32, 64), None, (2, 32)),
    ("...b,bc->...c", None, (2, 3, 5), (4,), (5, 4), None, (2, 3, 4)),
    ("...c,cde->...de", "de", (2, 1, 2), (3, 4), (2, 3, 4), (3, 4), (2, 1, 3, 4)),
    ("bc...,cd->bd...", None, (2, 1, 2, 3), (4,), (1, 4), None, (2, 4, 2, 3)),
    ("bc...,cde->bde...", "de", (2, 1, 2), (3, 4), (1, 3, 4), (3, 4, 1), (2, 3, 4, 2)),
]  # fmt: skip


@pytest.mark.parametrize(
    "equation, bias_axes, input_shape, output_shape, kernel, bias, output", EINSUM_CASES
)
def test_einsum_dense_shapes_and_values(
    equation, bias_axes, input_shape, output_shape, kernel, bias, output
):
    shapes = analyze_einsum(equation, bias_axes, input_shape, output_shape)
    assert (shapes.kernel_shape, shapes.bias_shape, shapes.output_shape) == (kernel, bias, output)
    layer = L.EinsumDense(equation, output_shape, bias_axes=bias_axes)
    x = RNG.normal(size=input_shape).astype("float32")
    layer.build(input_shape)
    values = [RNG.normal(size=w.shape.as_list()).astype("float32") for w in layer.weights]
    layer.set_weights(values)
    expected = np.einsum(equation, x, values[0]) + (values[1] if bias else 0)
    np.testing.assert_allclose(np.asarray(layer(x)), expected, rtol=1e-4, atol=1e-5)


def test_einsum_dense_kernel_fans_come_from_the_equation():
    # "abc,cde->abde": He normal's fan_in is c = 400 (the axis contracted with the input),
    # not a convolution kernel's in * receptive field (400 * 4 = 1600)
    layer = L.EinsumDense("abc,cde->abde", (None, 4, 5), kernel_initializer="he_normal")
    layer.build((None, 5, 400))
    assert layer.kernel_initializer.input_axes is None  # the configured one is left as given
    np.testing.assert_allclose(np.std(layer.get_weights()[0]), np.sqrt(2 / 400), rtol=0.05)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: L.EinsumDense("ab,bc", 4)(L.Input((3,))), "Invalid einsum equation"),
        (lambda: L.EinsumDense("ab,bc->ac", 4, bias_axes="x")(L.Input((3,))), "Bias dimension"),
        (lambda: L.EinsumDense("ab,bd->ac", 4)(L.Input((3,))), "Dimension 'c'"),
        (lambda: L.EinsumDense("ab,bcx->ac", 4)(L.Input((3,))), "Weight dimension 'x'"),
        (lambda: L.EinsumDense("abc,cd->abd", (5, 4))(L.Input((3, 2))), "shared dimension 'b'"),
        (lambda: L.EinsumDense("ab,bc->ac", (4, 2))(L.Input((3,))), "must give 1 sizes"),
        (lambda: L.EinsumDense("ab,bc->ac", 4)(L.Input((3, 2))), "does not fit an input"),
        (lambda: L.EinsumDense("abc,cd->abd", (None, None))(L.Input((3, 2))), "unknown sizes"),
        (lambda: L.GroupNormalization(groups=0), "invalid value for argument `groups`"),
        (lambda: L.GroupNormalization(groups=3)(L.Input((4,))), "must be a multiple"),
        (lambda: L.GroupNormalization(groups=8)(L.Input((4,))), "cannot be more than"),
        (lambda: L.GroupNormalization(groups=2)(L.Input((None,))), "should have a defined"),
        (lambda: L.UnitNormalization(axis="x"), "Invalid value for `axis`"),
        (lambda: L.UnitNormalization(axis=3)(L.Input((4,))), "out of bounds"),
        (lambda: L.RMSNormalization(axis=2)(L.Input((4,))), "out of bounds"),
    ],
)
def test_invalid_arguments(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


@pytest.mark.slow
def test_model_of_the_new_layers_trains_saves_and_loads(tmp_path):
    x = RNG.normal(size=(16, 3, 4)).astype("float32")
    y = RNG.integers(0, 2, size=(16,))
    model = sl.Sequential(
        [
            L.Input((3, 4)),
            L.EinsumDense("abc,cd->abd", (None, 4), bias_axes="d"),
            L.GroupNormalization(groups=2),
            L.ELU(),
            L.Identity(),
            L.ActivityRegularization(l2=1e-3),
            L.UnitNormalization(axis=[1, 2]),
            L.Flatten(),
            L.Dense(2, activation="softmax"),
        ]
    )
    model.compile(optimizer=sl.optimizers.Adam(0.05), loss="sparse_categorical_crossentropy")
    losses = model.fit(x, y, batch_size=16, epochs=4, verbose=0).history["loss"]
    assert losses[-1] < losses[0]
    path = str(tmp_path / "new_layers.keras")
    model.save(path)
    loaded = sl.models.load_model(path)
    assert [type(layer).__name__ for layer in loaded.layers] == [
        type(layer).__name__ for layer in model.layers
    ]
    np.testing.assert_allclose(
        loaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-5, atol=1e-6
    )


def test_subclassed_model_uses_einsum_dense_and_group_normalization():
    class Block(sl.Model):
        def __init__(self):
            super().__init__()
            self.project = L.EinsumDense("...c,cd->...d", 4, bias_axes="d")
            self.norm = L.GroupNormalization(groups=4)

        def call(self, inputs):
            return self.norm(self.project(inputs))

    x = RNG.normal(size=(4, 3, 2)).astype("float32")
    block = Block()
    out = np.asarray(block(x))
    assert out.shape == (4, 3, 4)
    kernel, bias, gamma, beta = block.get_weights()
    expected = np_group_norm(np.einsum("...c,cd->...d", x, kernel) + bias, 4, -1, 1e-3,
                             gamma, beta)  # fmt: skip
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
