"""`sl.ops`: each function on arrays (computed with jax.numpy) equals NumPy, and on symbolic
tensors (run in a session) equals its value on arrays."""

import numpy as np
import pytest

import sluice as sl
from sluice._keras import ops

RNG = np.random.default_rng(0)
X = RNG.normal(size=(2, 3)).astype(np.float32)
Y = RNG.normal(size=(2, 3)).astype(np.float32)
POS = np.abs(X) + 0.5
IDS = np.array([[0, 2, 1], [1, 1, 0]], np.int32)

CASES = [  # id, function, arrays, keyword arguments, NumPy reference
    ("add", ops.add, (X, Y), {}, X + Y),
    ("subtract", ops.subtract, (X, Y), {}, X - Y),
    ("multiply", ops.multiply, (X, Y), {}, X * Y),
    ("divide", ops.divide, (X, POS), {}, X / POS),
    ("negative", ops.negative, (X,), {}, -X),
    ("abs", ops.abs, (X,), {}, np.abs(X)),
    ("square", ops.square, (X,), {}, X * X),
    ("sqrt", ops.sqrt, (POS,), {}, np.sqrt(POS)),
    ("exp", ops.exp, (X,), {}, np.exp(X)),
    ("log", ops.log, (POS,), {}, np.log(POS)),
    ("tanh", ops.tanh, (X,), {}, np.tanh(X)),
    ("sigmoid", ops.sigmoid, (X,), {}, 1 / (1 + np.exp(-X))),
    ("relu", ops.relu, (X,), {}, np.maximum(X, 0)),
    ("maximum", ops.maximum, (X, Y), {}, np.maximum(X, Y)),
    ("minimum", ops.minimum, (X, Y), {}, np.minimum(X, Y)),
    ("matmul", ops.matmul, (X, Y.T), {}, X @ Y.T),
    ("where", ops.where, (X > 0, X, Y), {}, np.where(X > 0, X, Y)),
    ("cast", ops.cast, (X,), {"dtype": "int32"}, X.astype(np.int32)),
    ("clip", ops.clip, (X, -0.5, 0.5), {}, np.clip(X, -0.5, 0.5)),
    ("softmax", ops.softmax, (X,), {}, np.exp(X) / np.exp(X).sum(-1, keepdims=True)),
    (
        "log_softmax",
        ops.log_softmax,
        (X,),
        {"axis": 0},
        X - np.log(np.exp(X).sum(0, keepdims=True)),
    ),
    ("sum_all", ops.sum, (X,), {}, X.sum()),
    ("sum_keepdims", ops.sum, (X,), {"axis": 1, "keepdims": True}, X.sum(1, keepdims=True)),
    ("mean_axes", ops.mean, (X,), {"axis": (0, 1)}, X.mean()),
    ("max", ops.max, (X,), {"axis": 0}, X.max(0)),
    ("min", ops.min, (X,), {"axis": -1}, X.min(-1)),
    ("prod", ops.prod, (X,), {"axis": 1}, X.prod(1)),
    ("argmax_flat", ops.argmax, (X,), {}, np.argmax(X)),
    ("argmax_keepdims", ops.argmax, (X,), {"axis": 1, "keepdims": True}, np.argmax(X, 1)[:, None]),
    ("reshape", ops.reshape, (X,), {"newshape": (3, -1)}, X.reshape(3, -1)),
    ("transpose", ops.transpose, (X,), {}, X.T),
    ("expand_dims", ops.expand_dims, (X,), {"axis": 1}, X[:, None]),
    ("squeeze", ops.squeeze, (X[:, None],), {"axis": 1}, X),
    ("one_hot", ops.one_hot, (IDS,), {"num_classes": 3}, np.eye(3, dtype=np.float32)[IDS]),
]


@pytest.mark.parametrize(
    "fn, args, kwargs, want", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_an_op_on_arrays_computes_at_once(fn, args, kwargs, want):
    np.testing.assert_allclose(np.asarray(fn(*args, **kwargs)), want, rtol=1e-5, atol=1e-6)


def test_every_op_on_tensors_gives_its_value_on_arrays():
    fed, symbolic = {}, {}  # one graph and one run for every case: one compile
    for name, fn, args, kwargs, _ in CASES:
        tensors = []
        for a in args:  # Python numbers stay numbers
            if isinstance(a, np.ndarray):
                tensors.append(sl.placeholder(sl.as_dtype(a.dtype), a.shape))
                fed[tensors[-1]] = a
            else:
                tensors.append(a)
        symbolic[name] = fn(*tensors, **kwargs)
    with sl.Session() as sess:
        got = sess.run(symbolic, fed)
    for name, fn, args, kwargs, _ in CASES:
        eager = np.asarray(fn(*args, **kwargs))
        assert got[name].shape == eager.shape and got[name].dtype == eager.dtype, name
        np.testing.assert_allclose(got[name], eager, rtol=1e-5, atol=1e-6, err_msg=name)


def test_lists_of_tensors_join():
    a, b = sl.placeholder(sl.float32, [2, 3]), sl.constant(Y)
    with sl.Session() as sess:
        joined, stacked = sess.run([ops.concatenate([a, b], axis=1), ops.stack([a, b])], {a: X})
    np.testing.assert_array_equal(joined, np.asarray(ops.concatenate([X, Y], axis=1)))
    np.testing.assert_array_equal(stacked, np.stack([X, Y]))


def test_ops_in_a_custom_layer_train():
    class Centre(sl.layers.Layer):
        def call(self, x):
            return ops.subtract(x, ops.mean(x, axis=-1, keepdims=True))

    model = sl.Sequential([sl.Input((3,)), Centre(), sl.layers.Dense(1)])
    model.compile("sgd", "mse")
    model.fit(X, np.ones((2, 1), np.float32), verbose=0)
    np.testing.assert_allclose(model.layers[0](X), X - X.mean(-1, keepdims=True), rtol=1e-6)


def test_convert_to_numpy_reads_weights_and_refuses_symbolic_tensors():
    model = sl.Sequential([sl.Input((3,)), sl.layers.Dense(2)])
    kernel = sl.ops.convert_to_numpy(model.layers[0].kernel)
    np.testing.assert_array_equal(kernel, model.get_weights()[0])
    np.testing.assert_array_equal(sl.ops.convert_to_numpy([1, 2]), np.array([1, 2]))
    with pytest.raises(ValueError, match="symbolic tensor"):
        sl.ops.convert_to_numpy(model.output)


@pytest.mark.parametrize("fn", [ops.sum, ops.prod], ids=["sum", "prod"])
def test_integer_sums_keep_their_width_on_arrays_as_on_tensors(fn):
    # jax.numpy widens an int32 sum to its default integer, int64 inside sluice's 64-bit scope;
    # Keras keeps int32 (and sums narrower integers and bools as int32), as the graph op does
    for dtype, want in [
        (np.int32, np.int32),
        (np.int64, np.int64),
        (np.int8, np.int32),
        (np.uint8, np.uint32),
        (np.bool_, np.int32),
    ]:
        assert fn(np.ones((2, 3), dtype), axis=1).dtype == want, np.dtype(dtype).name
    x = sl.placeholder(sl.int32, [2, 3])
    with sl.Session() as sess:
        got = sess.run(fn(x, axis=1), {x: IDS})
    eager = fn(IDS, axis=1)
    assert got.dtype == eager.dtype == np.int32
    np.testing.assert_array_equal(got, eager)
    big = np.full(3, 2**40, np.int64)  # int64 stays 64-bit
    assert int(ops.sum(big)) == 3 * 2**40
