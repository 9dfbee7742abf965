"""The sparse ops against NumPy, as TF1's sparse_ops_test.py, sparse_to_dense_op_py_test.py,
sparse_reorder_op_test.py, sparse_reshape_op_test.py, sparse_concat_op_test.py,
sparse_add_op_test.py and sparse_xent/softmax tests: values at 1e-6, errors, both engines, and
gradients against central differences (float64)."""

import numpy as np
import pytest

import sluice as sl
from sluice.testing import check_gradients
from tests.sparse.conftest import session


def dense_of(indices, values, shape, default=0.0):
    out = np.full(shape, default, np.asarray(values).dtype)
    for i, v in zip(np.asarray(indices), np.asarray(values)):
        out[tuple(i)] += v
    return out


# a 5x6 tensor in row-major order (TF1's _SparseTensor_5x6)
IND56 = np.array([[0, 0], [1, 0], [1, 3], [1, 4], [3, 2], [3, 3]], np.int64)
VAL56 = np.array([0, 10, 13, 14, 32, 33], np.float64)


def sp56(dtype=np.float64):
    return sl.SparseTensor(IND56, VAL56.astype(dtype), [5, 6])


# -- sparse_tensor_to_dense / sparse_to_dense ----------------------------------------------------
def test_sparse_tensor_to_dense_with_default(engine):
    with session(engine) as sess:
        out = sess.run(sl.sparse_tensor_to_dense(sp56(), default_value=-1.0))
    expected = dense_of(IND56, VAL56 + 1, [5, 6]) - 1
    np.testing.assert_allclose(out, expected, atol=1e-6)


TO_DENSE_CASES = [  # (indices, output_shape, values, expected): 0-D, 1-D and 2-D indices
    (1, [3], 7, [0, 7, 0]),
    ([0, 2], [3], [5, 6], [5, 0, 6]),
    ([[0, 1], [1, 0]], [2, 2], 4, [[0, 4], [4, 0]]),
]


def test_sparse_to_dense_index_ranks(engine):
    outs = [sl.sparse_to_dense(i, s, v, default_value=0) for i, s, v, _ in TO_DENSE_CASES]
    with session(engine) as sess:
        values = sess.run(outs)
    for value, (*_, expected) in zip(values, TO_DENSE_CASES):
        np.testing.assert_array_equal(value, expected)


def test_to_dense_validates_indices_when_run(engine):
    indices = sl.placeholder(sl.int64, [2, 2])
    dense = sl.sparse_to_dense(indices, [2, 2], [1.0, 2.0])
    with session(engine) as sess:
        for bad, message in (
            ([[1, 0], [0, 1]], "out of order"),
            ([[0, 1], [0, 1]], "repeated"),
            ([[0, 1], [2, 0]], "out of bounds"),
        ):
            with pytest.raises(sl.errors.InvalidArgumentError, match=message):
                sess.run(dense, {indices: bad})
        np.testing.assert_array_equal(
            sess.run(dense, {indices: [[0, 1], [1, 1]]}), [[0, 1], [0, 2]]
        )


def test_to_dense_without_validation_takes_unordered_indices(engine):
    st = sl.SparseTensor([[1, 0], [0, 1]], [1.0, 2.0], [2, 2])
    with session(engine) as sess:
        out = sess.run(sl.sparse_tensor_to_dense(st, validate_indices=False))
    np.testing.assert_array_equal(out, [[0, 2], [1, 0]])


def test_sparse_to_dense_construction_errors():
    with pytest.raises(ValueError, match="default_value must be a scalar"):
        sl.sparse_to_dense([0], [2], [1.0], default_value=[0.0, 1.0])
    with pytest.raises(TypeError, match="sparse_indices must be int32 or int64"):
        sl.sparse_to_dense([0.5], [2], [1.0])
    with pytest.raises(ValueError, match="hold 2 coordinates but output_shape has 3"):
        sl.sparse_to_dense([[0, 1]], [2, 2, 2], [1.0])


def test_to_dense_gradient():
    def build(values, default):
        return sl.sparse_to_dense(IND56, [5, 6], values, default_value=default)

    check_gradients(build, [VAL56 + 0.5, np.array(0.25)])


# -- sparse_reorder ----------------------------------------------------------------------------
def test_reorder(engine):
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(IND56))
    st = sl.SparseTensor(IND56[perm], VAL56[perm], [5, 6])
    with session(engine) as sess:
        out = sess.run(sl.sparse_reorder(st))
    np.testing.assert_array_equal(out.indices, IND56)
    np.testing.assert_allclose(out.values, VAL56, atol=1e-6)
    np.testing.assert_array_equal(out.dense_shape, [5, 6])


def test_reorder_fed_in_both_engines(engine):
    sp = sl.sparse_placeholder(sl.float32, shape=[5, 6])
    perm = np.array([5, 2, 0, 4, 1, 3])
    with session(engine) as sess:
        out = sess.run(sl.sparse_reorder(sp), {sp: (IND56[perm], VAL56[perm], [5, 6])})
    np.testing.assert_array_equal(out.indices, IND56)


def test_reorder_gradient():
    perm = np.array([5, 2, 0, 4, 1, 3])

    def build(values):
        return sl.sparse_reorder(sl.SparseTensor(IND56[perm], values, [5, 6])).values

    check_gradients(build, [VAL56[perm] + 1.0])


# -- sparse_reshape ----------------------------------------------------------------------------
def test_reshape(engine):
    shapes = [[3, 10], [-1, 10], [2, 3, 5], [30], [-1]]
    outs = [sl.sparse_reshape(sp56(), shape) for shape in shapes]
    with session(engine) as sess:
        values = sess.run(outs)
    for shape, out in zip(shapes, values):
        dense = dense_of(IND56, VAL56, [5, 6]).reshape(shape)
        np.testing.assert_allclose(dense_of(out.indices, out.values, out.dense_shape), dense)
        assert list(out.dense_shape) == list(dense.shape)


def test_reshape_static_shape_and_errors():
    assert sl.sparse_reshape(sp56(), [-1, 3]).shape.as_list() == [10, 3]
    with pytest.raises(ValueError, match="at most one dimension"):
        sl.sparse_reshape(sp56(), [-1, -1])
    with pytest.raises(ValueError, match="30 elements to shape \\[4, 5\\]"):
        sl.sparse_reshape(sp56(), [4, 5])


def test_reshape_fed_shape_mismatch_fails_when_run(engine):
    sp = sl.sparse_placeholder(sl.float64)
    reshaped = sl.sparse_reshape(sp, [4, 5])
    with session(engine) as sess:
        with pytest.raises(sl.errors.InvalidArgumentError, match="30 dense values"):
            sess.run(reshaped.indices, {sp: (IND56, VAL56, [5, 6])})


# -- sparse_concat -----------------------------------------------------------------------------
A_IND, A_VAL, A_SHAPE = [[0, 2], [1, 0], [1, 1]], [1.0, 2.0, 3.0], [2, 3]
B_IND, B_VAL, B_SHAPE = [[0, 1], [0, 2]], [4.0, 5.0], [2, 4]


def test_concat_along_axis_1_is_sorted(engine):
    a = sl.SparseTensor(A_IND, A_VAL, A_SHAPE)
    b = sl.SparseTensor(B_IND, B_VAL, B_SHAPE)
    out_t = sl.sparse_concat(1, [a, b])
    assert out_t.shape.as_list() == [2, 7]
    with session(engine) as sess:
        out = sess.run(out_t)
    np.testing.assert_array_equal(out.indices, [[0, 2], [0, 4], [0, 5], [1, 0], [1, 1]])
    np.testing.assert_allclose(out.values, [1, 4, 5, 2, 3], atol=1e-6)
    np.testing.assert_array_equal(out.dense_shape, [2, 7])


def test_concat_along_axis_0_matches_numpy(engine):
    a = sl.SparseTensor(A_IND, A_VAL, A_SHAPE)
    out_t = sl.sparse_concat(0, [a, a, a])
    with session(engine) as sess:
        out = sess.run(out_t)
    dense_a = dense_of(A_IND, A_VAL, A_SHAPE)
    expected = np.concatenate([dense_a] * 3, 0)
    np.testing.assert_allclose(dense_of(out.indices, out.values, out.dense_shape), expected)


def test_concat_expand_nonconcat_dim(engine):
    a = sl.SparseTensor(A_IND, A_VAL, A_SHAPE)
    b = sl.SparseTensor(B_IND, B_VAL, B_SHAPE)
    with session(engine) as sess:
        out = sess.run(sl.sparse_concat(0, [a, b], expand_nonconcat_dim=True))
    expected = np.zeros([4, 4])
    expected[:2, :3] = dense_of(A_IND, A_VAL, A_SHAPE)
    expected[2:] = dense_of(B_IND, B_VAL, B_SHAPE)
    np.testing.assert_allclose(dense_of(out.indices, out.values, out.dense_shape), expected)


def test_concat_errors(engine):
    a = sl.SparseTensor(A_IND, A_VAL, A_SHAPE)
    b = sl.SparseTensor(B_IND, B_VAL, B_SHAPE)
    with pytest.raises(ValueError, match="must agree but for dimension 0"):
        sl.sparse_concat(0, [a, b])
    with pytest.raises(ValueError, match="out of range"):
        sl.sparse_concat(2, [a, b])
    with pytest.raises(TypeError, match="must be a SparseTensor"):
        sl.sparse_concat(0, [a, sl.constant([[1.0]])])
    sp = sl.sparse_placeholder(sl.float32, shape=[None, None])
    joined = sl.sparse_concat(0, [a, sp])
    with session(engine) as sess:
        with pytest.raises(sl.errors.InvalidArgumentError, match="Input shapes must match"):
            sess.run(joined.indices, {sp: (B_IND, B_VAL, B_SHAPE)})


def test_concat_gradient():
    def build(a_values, b_values):
        a = sl.SparseTensor(A_IND, a_values, A_SHAPE)
        b = sl.SparseTensor(B_IND, b_values, B_SHAPE)
        return sl.sparse_concat(1, [a, b]).values

    check_gradients(build, [np.array(A_VAL), np.array(B_VAL)])


# -- sparse_add --------------------------------------------------------------------------------
def test_add_sparse_sparse_with_threshold(engine):
    a = sl.SparseTensor([[0, 1], [1, 0], [2, 2]], [1.0, 2.0, 3.0], [3, 3])
    b = sl.SparseTensor([[0, 0], [1, 0], [2, 2]], [5.0, -1.9, -2.9], [3, 3])
    with session(engine) as sess:
        kept = sess.run(sl.sparse_add(a, b))
        pruned = sess.run(sl.sparse_add(a, b, thresh=0.5))
    np.testing.assert_array_equal(kept.indices, [[0, 0], [0, 1], [1, 0], [2, 2]])
    np.testing.assert_allclose(kept.values, [5.0, 1.0, 0.1, 0.1], atol=1e-6)
    # only an index both hold is dropped below the threshold (TF's merge)
    np.testing.assert_array_equal(pruned.indices, [[0, 0], [0, 1]])
    np.testing.assert_allclose(pruned.values, [5.0, 1.0], atol=1e-6)


def test_add_fed_sparse_runs_in_both_engines(engine):
    a = sl.sparse_placeholder(sl.float32)
    b = sl.sparse_placeholder(sl.float32)
    total = sl.sparse_tensor_to_dense(sl.sparse_add(a, b))
    with session(engine, fallback=True) as sess:
        out = sess.run(
            total, {a: (A_IND, A_VAL, A_SHAPE), b: ([[0, 2], [1, 2]], [1.0, 1.0], A_SHAPE)}
        )
    expected = dense_of(A_IND, A_VAL, A_SHAPE) + dense_of([[0, 2], [1, 2]], [1.0, 1.0], A_SHAPE)
    np.testing.assert_allclose(out, expected, atol=1e-6)


def test_add_sparse_dense(engine):
    dense = np.arange(30.0).reshape(5, 6)
    with session(engine) as sess:
        left = sess.run(sl.sparse_add(sp56(), dense))
        right = sess.run(sl.sparse_add(dense, sp56()))
    np.testing.assert_allclose(left, dense + dense_of(IND56, VAL56, [5, 6]), atol=1e-6)
    np.testing.assert_allclose(right, left, atol=1e-6)


def test_add_errors():
    with pytest.raises(TypeError, match="At least one input should be SparseTensor"):
        sl.sparse_add(sl.constant([1.0]), sl.constant([1.0]))
    a = sl.SparseTensor(A_IND, A_VAL, A_SHAPE)
    with pytest.raises(ValueError, match="same ranks"):
        sl.sparse_add(a, sl.sparse_placeholder(sl.float32, shape=[None]))
    with pytest.raises(ValueError, match="shapes do not match"):
        sl.sparse_add(a, sl.SparseTensor(B_IND, B_VAL, B_SHAPE))
    fed = sl.sparse_placeholder(sl.float32)
    with sl.Session() as sess:
        with pytest.raises(sl.errors.InvalidArgumentError, match="shapes do not match"):
            sess.run(sl.sparse_add(a, fed).values, {fed: (B_IND, B_VAL, B_SHAPE)})


def test_add_gradients():
    def sparse_sum(a_values, b_values):
        a = sl.SparseTensor(A_IND, a_values, A_SHAPE)
        b = sl.SparseTensor([[0, 2], [1, 2]], b_values, A_SHAPE)
        return sl.sparse_add(a, b).values

    check_gradients(sparse_sum, [np.array(A_VAL), np.array([0.5, -1.0])])

    def dense_sum(a_values, dense):
        return sl.sparse_add(sl.SparseTensor(A_IND, a_values, A_SHAPE), dense)

    check_gradients(dense_sum, [np.array(A_VAL), np.ones(A_SHAPE)])


# -- sparse_reduce_sum -------------------------------------------------------------------------
def test_reduce_sum(engine):
    ind = [[0, 1, 0], [0, 2, 1], [1, 0, 1], [1, 1, 1]]
    val = [1.0, 2.0, 3.0, 4.0]
    st = sl.SparseTensor(ind, val, [2, 3, 2])
    cases = [(a, k) for a in (None, 0, 1, -1, [0, 1]) for k in (False, True)]
    outs = [sl.sparse_reduce_sum(st, axis=a, keepdims=k) for a, k in cases]
    with session(engine) as sess:
        values = sess.run(outs)
    for (axis, keepdims), out in zip(cases, values):
        expected = dense_of(ind, val, [2, 3, 2]).sum(
            axis=None if axis is None else tuple(np.atleast_1d(axis)), keepdims=keepdims
        )
        np.testing.assert_allclose(out, expected, atol=1e-6, err_msg=f"{axis}, {keepdims}")


def test_reduce_sum_errors_and_gradient():
    # TF1's kernel error (InvalidArgumentError), raised while building
    with pytest.raises(sl.errors.InvalidArgumentError, match="Invalid reduction dimension 2"):
        sl.sparse_reduce_sum(sp56(), axis=2)
    for axis, keepdims in ((1, False), (None, False), (0, True)):
        check_gradients(
            lambda v, axis=axis, keepdims=keepdims: sl.sparse_reduce_sum(
                sl.SparseTensor(IND56, v, [5, 6]), axis=axis, keepdims=keepdims
            ),
            [VAL56 + 0.5],
        )


def test_reduce_sum_sparse(engine):
    st = sl.SparseTensor([[0, 1], [0, 3], [2, 0]], [1.0, 2.0, 3.0], [3, 4])
    with session(engine) as sess:
        out = sess.run(sl.sparse_reduce_sum_sparse(st, axis=1))
    np.testing.assert_array_equal(out.indices, [[0], [2]])
    np.testing.assert_allclose(out.values, [3.0, 3.0], atol=1e-6)
    np.testing.assert_array_equal(out.dense_shape, [3])


# -- sparse_retain, sparse_fill_empty_rows -----------------------------------------------------
def test_retain(engine):
    keep = np.array([True, False, False, True, False, True])
    with session(engine) as sess:
        out = sess.run(sl.sparse_retain(sp56(), keep))
    np.testing.assert_array_equal(out.indices, IND56[keep])
    np.testing.assert_allclose(out.values, VAL56[keep], atol=1e-6)
    np.testing.assert_array_equal(out.dense_shape, [5, 6])
    with pytest.raises(ValueError, match="5 elements for 6 entries"):
        sl.sparse_retain(sp56(), keep[:5])


def test_retain_fed_and_its_gradient(engine):
    sp = sl.sparse_placeholder(sl.float32, shape=[5, 6])
    keep = sl.placeholder(sl.bool, [None])
    kept = sl.sparse_retain(sp, keep)
    with session(engine, fallback=True) as sess:
        out = sess.run(kept, {sp: (IND56, VAL56, [5, 6]), keep: [True, True] + [False] * 4})
    np.testing.assert_array_equal(out.indices, IND56[:2])
    check_gradients(
        lambda v: sl.sparse_retain(sl.SparseTensor(IND56, v, [5, 6]), [1, 0, 1, 0, 1, 0]).values,
        [VAL56 + 1.0],
    )


def test_fill_empty_rows(engine):
    with session(engine) as sess:
        filled, empty = sess.run(sl.sparse_fill_empty_rows(sp56(), -1.0))
    np.testing.assert_array_equal(
        filled.indices, [[0, 0], [1, 0], [1, 3], [1, 4], [2, 0], [3, 2], [3, 3], [4, 0]]
    )
    np.testing.assert_allclose(filled.values, [0, 10, 13, 14, -1, 32, 33, -1], atol=1e-6)
    np.testing.assert_array_equal(empty, [False, False, True, False, True])


def test_fill_empty_rows_gradient():
    check_gradients(
        lambda v, d: sl.sparse_fill_empty_rows(sl.SparseTensor(IND56, v, [5, 6]), d)[0].values,
        [VAL56 + 1.0, np.array(2.0)],
    )


# -- sparse_softmax ----------------------------------------------------------------------------
def test_softmax_matches_numpy(engine):
    rng = np.random.default_rng(1)
    dense = rng.normal(size=[2, 3, 4])
    mask = rng.random([2, 3, 4]) < 0.6
    ind = np.argwhere(mask)
    st = sl.SparseTensor(ind, dense[mask], [2, 3, 4])
    with session(engine) as sess:
        out = sess.run(sl.sparse_softmax(st))
    expected = np.zeros_like(dense)
    for b in range(2):
        for r in range(3):
            m = mask[b, r]
            if m.any():
                e = np.exp(dense[b, r, m] - dense[b, r, m].max())
                expected[b, r, m] = e / e.sum()
    np.testing.assert_array_equal(out.indices, ind)
    np.testing.assert_allclose(out.values, expected[mask], atol=1e-6)


def test_softmax_errors_and_gradient():
    with pytest.raises(ValueError, match="rank >= 2"):
        sl.sparse_softmax(sl.SparseTensor([[0], [2]], [1.0, 2.0], [3]))
    with pytest.raises(TypeError, match="must be floating"):
        sl.sparse_softmax(sl.SparseTensor([[0, 0]], [1], [3, 3]))
    check_gradients(
        lambda v: sl.sparse_softmax(sl.SparseTensor(IND56, v, [5, 6])).values,
        [np.linspace(-1.0, 1.0, 6)],
    )


def test_tf1_namespaces():
    assert sl.sparse.to_dense is sl.sparse_tensor_to_dense
    assert sl.sparse.reorder is sl.sparse_reorder and sl.sparse.add is sl.sparse_add
    assert sl.sparse.matmul is sl.sparse_tensor_dense_matmul
    assert sl.sparse.placeholder is sl.sparse_placeholder
    assert sl.compat.v1.sparse_concat is sl.sparse_concat
