"""TF1's `sparse_ops_test.py` and `sparse_tensor_dense_matmul_op_test.py` in graph mode, the
behaviours they test beyond tests/sparse: a sparse tensor times / over a dense one (`sp * d`,
`d * sp`, `sp / d`, `sparse_dense_cwise_add`) and their gradients, `sparse_reduce_max`
(dense and sparse), the raw `gen_sparse_ops` functions and their errors, `sparse_transpose`,
`sparse_merge`'s static last dimension, SparseToDense of no entries, and the errors and float16
sums of `sparse_tensor_dense_matmul`. Both engines; values at 1e-6, gradients against central
differences."""

import numpy as np
import pytest

import sluice as sl
from sluice.python.ops import gen_sparse_ops, sparse_ops


@pytest.fixture(params=["interpreted", "compiled"])
def engine(request):
    return request.param


def _session(engine):
    return sl.Session(config=sl.SessionConfig(engine=engine))


def _sparsify(x, thresh):
    x = x.copy()
    x[x < thresh] = 0
    ind = np.vstack(np.where(x)).astype(np.int64).T
    return x, sl.SparseTensor(ind, x[np.where(x)], x.shape)


# -- sparse with dense ----------------------------------------------------------------------------
def test_cwise_mul_div_add_values(engine):
    rng = np.random.RandomState(1618)
    cases, outs = [], []
    for sp_shape, dense_shape in [((3, 4, 2), (3, 4, 1)), ((5,), (1,)), ((2, 3, 4), (1, 4))]:
        x, sp = _sparsify(rng.rand(*sp_shape) + 1, 1.5)
        d = rng.rand(*dense_shape) + 1
        dt = sl.constant(d)
        outs.append([sp * dt, dt * sp, sp / dt, sparse_ops.sparse_dense_cwise_add(sp, dt)])
        full = np.broadcast_to(d, sp_shape)
        cases.append((x, [x * full, x * full, x / full, x + full]))
    with _session(engine) as sess:
        got = sess.run(outs)
    for (x, wants), values in zip(cases, got):
        at = np.where(x)
        for value, want in zip(values, wants):
            np.testing.assert_array_equal(value.indices, np.vstack(at).T)
            np.testing.assert_array_equal(value.dense_shape, x.shape)
            np.testing.assert_allclose(value.values, want[at], rtol=1e-6)


def test_integer_truediv_gives_float64(engine):
    sp = sl.SparseTensor([[0, 0], [1, 2]], [3, 5], [2, 3])
    out = sp / sl.constant([[2], [4]])
    assert out.dtype == sl.float64 and out.shape.as_list() == [2, 3]
    with _session(engine) as sess:
        np.testing.assert_array_equal(sess.run(out.values), [1.5, 1.25])


def test_cwise_dense_that_does_not_broadcast_to_sparse_fails_when_run(engine):
    a = sl.ones([3, 4, 1], dtype=sl.int32)
    b = sl.SparseTensor([[0, 0, 1, 0], [0, 0, 3, 0]], [10, 20], [1, 1, 4, 2])
    c = a * b
    with _session(engine) as sess:
        with pytest.raises(sl.errors.InvalidArgumentError, match="broadcasts dense to sparse"):
            sess.run(c.values)


def test_cwise_dense_of_higher_rank_fails_while_building():
    sp = sl.SparseTensor([[0]], [1.0], [2])
    with pytest.raises(ValueError, match="broadcasts dense to sparse only"):
        sp * sl.ones([2, 2])


def test_cwise_mul_div_gradients_match_central_differences():
    rng = np.random.RandomState(3)
    x, _ = _sparsify(rng.rand(3, 4) + 1, 1.4)
    ind = np.vstack(np.where(x)).astype(np.int64).T
    vals0, d0 = x[np.where(x)], rng.rand(1, 4) + 1
    v = sl.placeholder(sl.float64, [len(vals0)])
    d = sl.placeholder(sl.float64, [1, 4])
    sp = sl.SparseTensor(ind, v, [3, 4])
    weights = rng.rand(len(vals0))
    y = sl.reduce_sum((sp * d).values * weights) + sl.reduce_sum((sp / d).values * weights**2)
    grads = sl.gradients(y, [v, d])

    def f(vals, dense):
        full = np.broadcast_to(dense, (3, 4))[np.where(x)]
        return np.sum(vals * full * weights) + np.sum(vals / full * weights**2)

    with _session("compiled") as sess:
        gv, gd = sess.run(grads, {v: vals0, d: d0})
    eps = 1e-6
    num_v = np.array(
        [(f(vals0 + eps * e, d0) - f(vals0 - eps * e, d0)) / (2 * eps) for e in np.eye(len(vals0))]
    )
    num_d = np.array(
        [
            (f(vals0, d0 + eps * e.reshape(1, 4)) - f(vals0, d0 - eps * e.reshape(1, 4)))
            / (2 * eps)
            for e in np.eye(4)
        ]
    ).reshape(1, 4)
    np.testing.assert_allclose(gv, num_v, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gd, num_d, rtol=1e-6, atol=1e-8)


# -- sparse_reduce_max ----------------------------------------------------------------------------
def test_reduce_max_counts_stored_values_only(engine):
    st = sl.SparseTensor([[0, 0], [0, 2], [1, 1]], [-1.0, -2.0, 3.0], [2, 3])
    outs = [
        sl.sparse_reduce_max(st, axis=1),
        sl.sparse_reduce_max(st, axis=0, keepdims=True),
        sl.sparse_reduce_max(st),
        sl.sparse_reduce_max(sl.SparseTensor([[1, 0]], [-4], [3, 2]), axis=1),
    ]
    with _session(engine) as sess:
        rows, cols, total, empty_rows = sess.run(outs)
        sparse = sess.run(sl.sparse_reduce_max_sparse(st, axis=0))
    np.testing.assert_array_equal(rows, [-1.0, 3.0])
    np.testing.assert_array_equal(cols, [[-1.0, 3.0, -2.0]])
    assert total == 3.0
    np.testing.assert_array_equal(empty_rows, [0, -4, 0])  # no stored value: 0, as TF1
    np.testing.assert_array_equal(sparse.indices, [[0], [1], [2]])
    np.testing.assert_array_equal(sparse.values, [-1.0, 3.0, -2.0])
    np.testing.assert_array_equal(sparse.dense_shape, [3])


def test_reduce_invalid_axes_raise_tf1s_error():
    st = sl.SparseTensor([[0, 0], [1, 1]], [1, 1], [2, 3])
    for fn in (sl.sparse_reduce_sum, sl.sparse_reduce_max):
        for axis in (-3, 2):
            with pytest.raises(sl.errors.InvalidArgumentError, match=f"dimension {axis}"):
                fn(st, axis)


_BAD_SHAPES = pytest.mark.parametrize(
    "build",
    [
        lambda: gen_sparse_ops.sparse_reduce_max([[1, 2], [3, 4]], [1, 3], [2**32, 2**31], [0]),
        lambda: sparse_ops.gen_sparse_ops.sparse_reduce_sum(
            [[1, 2], [3, 4]], [1, 3], [2**32, 2**31], [0]
        ),
        lambda: (
            gen_sparse_ops.sparse_reduce_max_sparse(
                [[1, 2], [3, 4]], [1, 3], [2**32, 2**31], [0]
            ).output_values
        ),
        lambda: gen_sparse_ops.sparse_softmax([[1, 1]], [2.0], [2**32, 2**31]),
        lambda: gen_sparse_ops.sparse_softmax([[1, 1]], [2.0], [-1, 1]),
    ],
)


def _bad_shape_fails(engine, build):
    with _session(engine) as sess:
        with pytest.raises(sl.errors.InvalidArgumentError, match="dense shape"):
            sess.run(build())


@_BAD_SHAPES
def test_dense_shapes_that_overflow_or_are_negative_fail_when_run(build):
    _bad_shape_fails("interpreted", build)


@pytest.mark.slow
@_BAD_SHAPES
def test_dense_shapes_that_overflow_or_are_negative_fail_when_run_compiled(build):
    _bad_shape_fails("compiled", build)


@pytest.mark.slow
def test_gen_sparse_ops_compute_what_the_sparse_functions_do(engine):
    ind, vals, shape = [[0, 0], [0, 2], [1, 1]], [1.0, 2.0, 5.0], [2, 3]
    st = sl.SparseTensor(ind, vals, shape)
    with _session(engine) as sess:
        raw, own = sess.run(
            [
                [
                    gen_sparse_ops.sparse_reduce_sum(ind, vals, shape, [1]),
                    gen_sparse_ops.sparse_softmax(ind, vals, shape),
                    gen_sparse_ops.sparse_dense_cwise_mul(ind, vals, shape, [[2.0], [3.0]]),
                ],
                [
                    sl.sparse_reduce_sum(st, 1),
                    sl.sparse_softmax(st).values,
                    (st * sl.constant([[2.0], [3.0]])).values,
                ],
            ]
        )
    for a, b in zip(raw, own):
        np.testing.assert_allclose(a, b, rtol=1e-6)


# -- shapes -------------------------------------------------------------------------------------
def test_sparse_transpose(engine):
    rng = np.random.RandomState(7)
    x, sp = _sparsify(rng.randn(3, 2, 4), 0.3)
    perms = [None, [1, 0, 2], [2, 0, 1]]
    outs = [sl.sparse_transpose(sp, perm) for perm in perms]
    for out, perm in zip(outs, perms):
        assert out.shape.as_list() == list(np.transpose(x, perm).shape)
    with _session(engine) as sess:
        got = sess.run([sl.sparse_tensor_to_dense(out) for out in outs])
    for value, perm in zip(got, perms):
        np.testing.assert_array_equal(value, np.transpose(x, perm))


def test_sparse_merge_knows_the_vocabulary_size_while_building():
    shape = sl.placeholder_with_default(sl.constant([2, 2], dtype=sl.int64), shape=[2])
    ids = sl.SparseTensor([[0, 0], [0, 1]], [1, 3], shape)
    values = sl.SparseTensor([[0, 0], [0, 1]], [0.4, 0.7], shape)
    assert sl.sparse_merge(ids, values, vocab_size=5).shape.as_list() == [None, 5]


def test_sparse_to_dense_of_no_entries(engine):
    st = sl.SparseTensor(np.zeros((0, 1), np.int64), np.zeros(0, np.int32), [4])
    with _session(engine) as sess:
        np.testing.assert_array_equal(sess.run(sl.sparse_tensor_to_dense(st)), [0, 0, 0, 0])


# -- sparse_tensor_dense_matmul -----------------------------------------------------------------
def test_matmul_float16_sums_in_float32(engine):
    rng = np.random.RandomState(127)
    x = rng.rand(10, 10).astype(np.float16)
    x[x < 0.5] = 0
    y = rng.randn(10, 20).astype(np.float16)
    ind = np.vstack(np.where(x)).astype(np.int64).T
    out = sl.sparse_tensor_dense_matmul(sl.SparseTensorValue(ind, x[np.where(x)], x.shape), y)
    with _session(engine) as sess:
        got = sess.run(out)
    assert got.dtype == np.float16
    want = (x.astype(np.float32) @ y.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(got, want)


def test_matmul_inner_dimensions_that_differ_fail_while_building():
    st = sl.SparseTensor([[0, 0]], [1.0], [10, 15])
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 15 and 10"):
        sl.sparse_tensor_dense_matmul(st, np.ones((10, 20), np.float32))


@pytest.mark.parametrize(
    "adjoint_a, rows, message",
    [(False, 2, r"k \(10\) from index\[0,1\] out of bounds \(>=2\)"),
     (True, 3, r"m \(10\) from index\[0,1\] out of bounds \(>=2\)")],
)  # fmt: skip
def test_matmul_index_out_of_bounds_says_which_as_tf1(engine, adjoint_a, rows, message):
    st = sl.SparseTensor([[1, 10]], np.array([10.0], np.float32), [3, 2])
    out = sl.sparse_tensor_dense_matmul(st, np.ones((rows, 5), np.float32), adjoint_a=adjoint_a)
    with _session(engine) as sess:
        with pytest.raises(sl.errors.InvalidArgumentError, match=message):
            sess.run(out)
