"""Merging layers, activation layers and LayerNormalization: the layer contract (single-input
layers), values against NumPy, gradients of the multi-input layers against central
differences, shape errors, and the merges inside a functional model."""

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L
from sluice._keras.layers.activations.leaky_relu import LeakyReLU
from sluice._keras.layers.activations.prelu import PReLU
from sluice._keras.layers.activations.relu import ReLU
from sluice._keras.layers.activations.softmax import Softmax
from sluice._keras.layers.merging.add import Add
from sluice._keras.layers.merging.average import Average
from sluice._keras.layers.merging.concatenate import Concatenate
from sluice._keras.layers.merging.dot import Dot
from sluice._keras.layers.merging.maximum import Maximum
from sluice._keras.layers.merging.minimum import Minimum
from sluice._keras.layers.merging.multiply import Multiply
from sluice._keras.layers.merging.subtract import Subtract
from sluice._keras.layers.normalization.layer_normalization import LayerNormalization
from sluice._keras.layers.tracking import get_mask
from sluice.testing import check_gradients, run_layer_test

# the multi-input layers' own tests below (run_layer_test takes one input)
MULTI_INPUT_LAYERS = [Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate, Dot]
SINGLE_INPUT = [
    # id, class, init kwargs, input shape, output shape, weights
    ("relu", ReLU, {}, (2, 5), (None, 5), {}),
    ("relu_all_args", ReLU, {"max_value": 1.0, "negative_slope": 0.1, "threshold": 0.2},
     (2, 5), (None, 5), {}),
    ("leaky_relu", LeakyReLU, {"negative_slope": 0.2}, (2, 3, 2), (None, 3, 2), {}),
    ("prelu", PReLU, {}, (2, 3, 4), (None, 3, 4), {"alpha": (3, 4)}),
    ("prelu_shared", PReLU, {"shared_axes": [1, 2], "alpha_initializer": "ones"},
     (2, 3, 3, 2), (None, 3, 3, 2), {"alpha": (1, 1, 2)}),
    ("softmax", Softmax, {}, (2, 4), (None, 4), {}),
    ("softmax_two_axes", Softmax, {"axis": (1, 2)}, (2, 3, 2), (None, 3, 2), {}),
    ("layer_norm", LayerNormalization, {}, (3, 4), (None, 4), {"gamma": (4,), "beta": (4,)}),
    ("layer_norm_axes", LayerNormalization, {"axis": [1, 2], "epsilon": 1e-5}, (2, 3, 2, 2),
     (None, 3, 2, 2), {"gamma": (3, 2), "beta": (3, 2)}),
    ("layer_norm_axis1", LayerNormalization, {"axis": 1, "center": False}, (2, 3, 2),
     (None, 3, 2), {"gamma": (3,)}),
    ("layer_norm_rms", LayerNormalization, {"rms_scaling": True}, (2, 3, 4), (None, 3, 4),
     {"gamma": (4,)}),
]  # fmt: skip


@pytest.mark.parametrize(
    "cls, kwargs, input_shape, output_shape, weights",
    [row[1:] for row in SINGLE_INPUT],
    ids=[row[0] for row in SINGLE_INPUT],
)
def test_layer_contract(cls, kwargs, input_shape, output_shape, weights):
    run_layer_test(cls, kwargs, input_shape, output_shape, weights)


def _run_all(cases):
    """The outputs of several layers, each on constant inputs (a list of them when there are
    several; array call arguments, such as a mask, become constants too), from one graph and
    one `Session.run` (so one compilation). `cases`: (layer, arrays, call kwargs)."""
    with sl.Graph().as_default():
        outputs = []
        for layer, arrays, call_kwargs in cases:
            tensors = [sl.constant(a) for a in arrays]
            call_kwargs = {k: sl.constant(v) for k, v in call_kwargs.items()}
            outputs.append(layer(tensors if len(tensors) > 1 else tensors[0], **call_kwargs))
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            return sess.run(outputs)


def _run(layer, *arrays, **call_kwargs):
    return _run_all([(layer, arrays, call_kwargs)])[0]


RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 5)).astype("float32")


def _np_relu(x, max_value=None, negative_slope=0.0, threshold=0.0):
    y = np.where(x > threshold, x, negative_slope * (x - threshold))
    return y if max_value is None else np.minimum(y, max_value)


RELU_KWARGS = [
    {}, {"max_value": 6.0}, {"max_value": 0.5, "negative_slope": 0.1},
    {"threshold": 0.3, "negative_slope": 0.2}, {"threshold": 0.3, "max_value": 1.0},
]  # fmt: skip


def test_relu_values():
    outputs = _run_all([(ReLU(**kwargs), (X,), {}) for kwargs in RELU_KWARGS])
    for kwargs, y in zip(RELU_KWARGS, outputs):
        np.testing.assert_allclose(y, _np_relu(X, **kwargs), rtol=1e-6, err_msg=str(kwargs))


def test_relu_rejects_negative_arguments():
    for kwargs in ({"max_value": -1.0}, {"negative_slope": -0.1}, {"threshold": -1.0}):
        with pytest.raises(ValueError, match="cannot be a negative value"):
            ReLU(**kwargs)


def test_leaky_relu_values_default_and_legacy_alpha():
    assert LeakyReLU().negative_slope == 0.3
    np.testing.assert_allclose(_run(LeakyReLU(), X), np.where(X > 0, X, 0.3 * X), rtol=1e-6)
    with pytest.warns(DeprecationWarning, match="alpha"):
        layer = LeakyReLU(alpha=0.1)
    assert layer.get_config()["negative_slope"] == 0.1
    with pytest.raises(ValueError, match="negative_slope"):
        LeakyReLU(negative_slope=-1.0)


def test_prelu_values_and_config():
    layer = PReLU(alpha_initializer=sl.layers.initializers.Constant(0.25), shared_axes=1)
    assert layer.get_config()["shared_axes"] == [1]
    assert PReLU().get_config()["alpha_initializer"]["class_name"] == "Zeros"
    x = RNG.normal(size=(2, 3, 2)).astype("float32")
    np.testing.assert_allclose(_run(layer, x), np.where(x > 0, x, 0.25 * x), rtol=1e-6)
    assert PReLU(alpha_constraint="non_neg").get_config()["alpha_constraint"]["class_name"] == (
        "NonNeg"
    )


def _np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_softmax_values_and_mask():
    x = RNG.normal(size=(2, 3, 4)).astype("float32")
    mask = np.array([[True, True, False, True], [False, True, True, True]])
    by_axis, by_axes, masked = _run_all(
        [(Softmax(axis=1), (x,), {}), (Softmax(axis=(1, 2)), (x,), {}),
         (Softmax(), (x[:, 0],), {"mask": mask})]
    )  # fmt: skip
    np.testing.assert_allclose(by_axis, _np_softmax(x, 1), rtol=1e-5)
    np.testing.assert_allclose(by_axes, _np_softmax(x, (1, 2)), rtol=1e-5)
    expected = np.where(mask, _np_softmax(np.where(mask, x[:, 0], -np.inf), -1), 0.0)
    np.testing.assert_allclose(masked, expected, rtol=1e-5, atol=1e-7)


def _np_layer_norm(x, axes, epsilon, gamma, beta):
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + epsilon) * gamma + beta


def test_layer_norm_values():
    x = RNG.normal(loc=2.0, scale=3.0, size=(2, 3, 4)).astype("float32")
    gamma = RNG.normal(size=(4,)).astype("float32")
    beta = RNG.normal(size=(4,)).astype("float32")
    layer = LayerNormalization(
        gamma_initializer=sl.layers.initializers.Constant(gamma.tolist()),
        beta_initializer=sl.layers.initializers.Constant(beta.tolist()),
    )
    last, two_axes, axis1, rms = _run_all(
        [(layer, (x,), {}), (LayerNormalization(axis=[1, 2], epsilon=1e-5), (x,), {}),
         (LayerNormalization(axis=1), (x,), {}), (LayerNormalization(rms_scaling=True), (x,), {})]
    )  # fmt: skip
    np.testing.assert_allclose(last, _np_layer_norm(x, -1, 1e-3, gamma, beta), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(two_axes, _np_layer_norm(x, (1, 2), 1e-5, 1.0, 0.0), atol=1e-5)
    # gamma and beta of shape (3,), broadcast along axis 1
    np.testing.assert_allclose(axis1, _np_layer_norm(x, 1, 1e-3, 1.0, 0.0), atol=1e-5)
    np.testing.assert_allclose(
        rms, x / np.sqrt((x**2).mean(-1, keepdims=True) + 1e-3), rtol=1e-5, atol=1e-6
    )


# -- merging layers ---------------------------------------------------------------------------

A = RNG.normal(size=(2, 3)).astype("float64")
B = RNG.normal(size=(2, 3)).astype("float64")
C = RNG.normal(size=(2, 3)).astype("float64")

ELEMENTWISE = [
    (Add, lambda *xs: sum(xs)),
    (Subtract, lambda a, b: a - b),
    (Multiply, lambda *xs: np.prod(xs, axis=0)),
    (Average, lambda *xs: np.mean(xs, axis=0)),
    (Maximum, lambda *xs: np.max(xs, axis=0)),
    (Minimum, lambda *xs: np.min(xs, axis=0)),
]


@pytest.mark.parametrize("cls, reference", ELEMENTWISE, ids=[c.__name__ for c, _ in ELEMENTWISE])
def test_elementwise_merge(cls, reference):
    arrays = [A, B] if cls is Subtract else [A, B, C]
    config = cls(name="merge").get_config()
    assert cls.from_config(config).get_config() == config
    np.testing.assert_allclose(_run(cls(dtype="float64"), *arrays), reference(*arrays), rtol=1e-12)
    check_gradients(lambda *xs: cls(dtype="float64")(list(xs)), arrays)
    with sl.Graph().as_default():
        inputs = [L.Input((4, 3)) for _ in arrays]
        y = cls()(inputs)
        assert tuple(y.shape.as_list()) == (None, 4, 3)
    assert cls().compute_output_shape([(None, 4, 3)] * len(arrays)) == (None, 4, 3)
    assert cls().compute_output_shape([(None, 1, 3), (None, 4, 1)]) == (None, 4, 3)


@pytest.mark.parametrize("cls", [c for c, _ in ELEMENTWISE])
def test_elementwise_merge_shape_errors(cls):
    with pytest.raises(ValueError, match=r"incompatible shapes.*\(None, 4\).*\(None, 5\)"):
        cls().compute_output_shape([(None, 4), (None, 5)])
    with sl.Graph().as_default(), pytest.raises(ValueError, match=r"\(None, 4\).*\(None, 5\)"):
        cls()([L.Input((4,)), L.Input((5,))])
    with pytest.raises(ValueError, match="different batch sizes"):
        cls().compute_output_shape([(2, 4), (3, 4)])
    with pytest.raises(ValueError, match="list"):
        cls().compute_output_shape((None, 4))


def test_subtract_needs_exactly_two_inputs():
    with pytest.raises(ValueError, match="exactly 2 inputs"):
        Subtract().compute_output_shape([(None, 3)] * 3)


def test_merge_mask_is_the_and_of_the_masks():
    with sl.Graph().as_default():
        ids = L.Input((4,), dtype="int32")
        embedded = L.Embedding(5, 3, mask_zero=True)(ids)
        other = L.Input((4, 3))
        y = Add()([embedded, other])
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            mask = sess.run(get_mask(y), {ids: [[1, 0, 2, 0]]})
    np.testing.assert_array_equal(mask, [[True, False, True, False]])


def test_concatenate():
    a, b = A.reshape(2, 3, 1), RNG.normal(size=(2, 3, 2))
    np.testing.assert_allclose(_run(Concatenate(dtype="float64"), a, b), np.concatenate([a, b], -1))
    np.testing.assert_allclose(
        _run(Concatenate(axis=1, dtype="float64"), A, B), np.concatenate([A, B], 1)
    )
    check_gradients(lambda x, y: Concatenate(axis=1, dtype="float64")([x, y]), [A, B])
    config = Concatenate(axis=1).get_config()
    assert Concatenate.from_config(config).get_config() == config
    with sl.Graph().as_default():
        y = Concatenate(axis=1)([L.Input((2, 3)), L.Input((4, 3))])
        assert tuple(y.shape.as_list()) == (None, 6, 3)
    assert Concatenate().compute_output_shape([(None, 2, 3), (None, 2, None)]) == (None, 2, None)
    with pytest.raises(ValueError, match=r"matching shapes.*\(None, 2, 3\).*\(None, 4, 3\)"):
        Concatenate().compute_output_shape([(None, 2, 3), (None, 4, 3)])
    with sl.Graph().as_default(), pytest.raises(ValueError, match="matching shapes"):
        Concatenate()([L.Input((2, 3)), L.Input((2,))])


DOT_CASES = [
    # id, axes, shape of x, shape of y, einsum for the reference, output shape
    ("2d", 1, (2, 3), (2, 3), "bi,bi->b", (None, 1)),
    ("3d_last", 2, (2, 3, 4), (2, 5, 4), "bik,bjk->bij", (None, 3, 5)),
    ("3d_first", 1, (2, 3, 4), (2, 3, 5), "bki,bkj->bij", (None, 4, 5)),
    ("3d_pair", (2, 1), (2, 3, 4), (2, 4, 5), "bik,bkj->bij", (None, 3, 5)),
    ("3d_pair_neg", (-2, -1), (2, 4, 3), (2, 5, 4), "bki,bjk->bij", (None, 3, 5)),
    ("2d_3d", (1, 2), (2, 4), (2, 3, 4), "bk,bjk->bj", (None, 3)),
    ("3d_2d", (1, 1), (2, 4, 3), (2, 4), "bki,bk->bi", (None, 3)),
]  # fmt: skip


@pytest.mark.parametrize(
    "axes, shape_x, shape_y, spec, output_shape",
    [row[1:] for row in DOT_CASES],
    ids=[row[0] for row in DOT_CASES],
)
def test_dot(axes, shape_x, shape_y, spec, output_shape):
    x, y = RNG.normal(size=shape_x), RNG.normal(size=shape_y)
    expected = np.einsum(spec, x, y)
    expected = expected.reshape(2, 1) if expected.ndim == 1 else expected
    np.testing.assert_allclose(_run(Dot(axes, dtype="float64"), x, y), expected, rtol=1e-12)
    check_gradients(lambda a, b: Dot(axes, dtype="float64")([a, b]), [x, y])
    assert Dot(axes).compute_output_shape([(None,) + shape_x[1:], (None,) + shape_y[1:]]) == (
        output_shape
    )
    with sl.Graph().as_default():
        out = Dot(axes)([L.Input(shape_x[1:]), L.Input(shape_y[1:])])
        assert tuple(out.shape.as_list()) == output_shape


def test_dot_normalize_and_config():
    x, y = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 5, 4))
    unit = lambda v: v / np.linalg.norm(v, axis=-1, keepdims=True)  # noqa: E731
    np.testing.assert_allclose(
        _run(Dot(2, normalize=True, dtype="float64"), x, y),
        np.einsum("bik,bjk->bij", unit(x), unit(y)),
        rtol=1e-12,
    )
    check_gradients(lambda a, b: Dot(-1, normalize=True, dtype="float64")([a, b]), [A, B])
    config = Dot((1, 2), normalize=True).get_config()
    assert config["axes"] == [1, 2] and config["normalize"] is True
    assert Dot.from_config(config).get_config() == config
    with pytest.raises(ValueError, match=r"axis values 3 \(at axis 1\) != 4"):
        Dot(1).compute_output_shape([(None, 3), (None, 4)])
    with pytest.raises(ValueError, match="two elements"):
        Dot((1, 2, 3))


def test_merges_in_a_functional_model_fit_and_predict():
    a, b = L.Input((3,)), L.Input((3,))
    merged = Concatenate()(
        [Add()([a, b]), Subtract()([a, b]), Multiply()([a, b]), Average()([a, b]),
         Maximum()([a, b]), Minimum()([a, b]), Dot(1)([a, b])]
    )  # fmt: skip
    model = sl.Model(inputs=[a, b], outputs=L.Dense(1)(merged))
    model.compile(optimizer="sgd", loss="mse")
    xa, xb = RNG.normal(size=(8, 3)), RNG.normal(size=(8, 3))
    history = model.fit([xa, xb], RNG.normal(size=(8, 1)), epochs=2, batch_size=4, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert model.predict([xa, xb], verbose=0).shape == (8, 1)
    add_only = sl.Model(inputs=[a, b], outputs=Add()([a, b]))
    np.testing.assert_allclose(add_only.predict([xa, xb], verbose=0), xa + xb, rtol=1e-6)


def test_functional_forms_build_the_layers():
    a, b = sl.Input((2, 3)), sl.Input((2, 3))
    forms = {
        "add": (L.add, Add, np.add), "subtract": (L.subtract, Subtract, np.subtract),
        "multiply": (L.multiply, Multiply, np.multiply),
        "average": (L.average, Average, lambda x, y: (x + y) / 2),
        "maximum": (L.maximum, Maximum, np.maximum), "minimum": (L.minimum, Minimum, np.minimum),
        "concatenate": (L.concatenate, Concatenate, lambda x, y: np.concatenate([x, y], -1)),
    }  # fmt: skip
    outputs = {key: form([a, b], name=key) for key, (form, _, _) in forms.items()}
    outputs["dot"] = L.dot([a, b], axes=2, name="dot")
    model = sl.Model([a, b], outputs)
    for key, (_, cls, _) in forms.items():
        assert type(model.get_layer(key)) is cls
    assert model.get_layer("dot").axes == 2
    x, y = np.random.default_rng(0).normal(size=(2, 1, 2, 3)).astype("float32")
    got = model.predict([x, y], verbose=0)
    for key, (_, _, reference) in forms.items():
        np.testing.assert_allclose(got[key], reference(x, y), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got["dot"], x @ y.transpose(0, 2, 1), rtol=1e-5, atol=1e-6)
    assert L.concatenate([a, b], axis=1).shape.as_list() == [None, 4, 3]
