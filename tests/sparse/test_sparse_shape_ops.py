"""sparse_reset_shape, sparse_merge, sparse_to_indicator, sparse_maximum and sparse_minimum, as
TF1's sparse_ops_test.py (SparseResetShapeTest, SparseMergeTest, SparseMergeHighDimTest,
SparseToIndicatorTest, SparseMinimumMaximumTest): exact values, errors, both engines."""

import numpy as np
import pytest

import sluice as sl
from tests.sparse.conftest import session

# -- sparse_reset_shape (TF1's _IND_2_5_6 input) --------------------------------------------------
IND256 = np.array([[0, 0, 0], [0, 1, 0], [0, 1, 3], [1, 1, 4], [1, 3, 2], [1, 3, 3]], np.int64)
VAL256 = np.array([0, 10, 13, 14, 32, 33], np.int32)
SHP256 = np.array([2, 5, 6], np.int64)


def sp256():
    return sl.SparseTensor(IND256, VAL256, SHP256)


def sp256_placeholders():
    return sl.SparseTensor(
        sl.placeholder(sl.int64, name="ind"),
        sl.placeholder(sl.int32, name="val"),
        sl.placeholder(sl.int64, name="shp"),
    )


def feed256(sp):
    return {sp.indices: IND256, sp.values: VAL256, sp.dense_shape: SHP256}


def test_reset_shape_basic(engine):
    out = sl.sparse_reset_shape(sp256(), [3, 6, 7])
    assert out.shape.as_list() == [3, 6, 7]
    with session(engine) as sess:
        value = sess.run(out)
    np.testing.assert_array_equal(value.indices, IND256)
    np.testing.assert_array_equal(value.values, VAL256)
    np.testing.assert_array_equal(value.dense_shape, [3, 6, 7])


def test_reset_shape_input_unknown_when_built(engine):
    sp = sp256_placeholders()
    out = sl.sparse_reset_shape(sp, [3, 6, 7])
    assert out.shape.as_list() == [3, 6, 7]  # the static shape comes from the constant new_shape
    fed = sl.sparse_placeholder(sl.int32)
    out_fed = sl.sparse_reset_shape(fed, sl.constant([3, 6, 7], sl.int64))
    with session(engine) as sess:
        value = sess.run(out, feed256(sp))
        value_fed = sess.run(out_fed, {fed: (IND256, VAL256, SHP256)})
    for v in (value, value_fed):
        np.testing.assert_array_equal(v.indices, IND256)
        np.testing.assert_array_equal(v.values, VAL256)
        np.testing.assert_array_equal(v.dense_shape, [3, 6, 7])


def test_reset_shape_tight_bounding_box(engine):
    out = sl.sparse_reset_shape(sp256())
    assert out.shape.as_list() == [None, None, None]
    empty = sl.sparse_placeholder(sl.float32, shape=[None, None])
    out_empty = sl.sparse_reset_shape(empty)
    with session(engine) as sess:
        value = sess.run(out)
        value_empty = sess.run(out_empty, {empty: (np.zeros((0, 2)), np.zeros(0), [4, 5])})
    np.testing.assert_array_equal(value.indices, IND256)
    np.testing.assert_array_equal(value.values, VAL256)
    np.testing.assert_array_equal(value.dense_shape, [2, 4, 5])
    np.testing.assert_array_equal(value_empty.dense_shape, [0, 0])


def test_reset_shape_static_errors():
    with pytest.raises(ValueError, match="not compatible"):
        sl.sparse_reset_shape(sp256(), [3, 7])
    with pytest.raises(ValueError, match="should have dimension sizes"):
        sl.sparse_reset_shape(sp256(), [3, 7, 5])
    with pytest.raises(ValueError, match="must be a vector"):
        sl.sparse_reset_shape(sp256(), [[3, 7, 5]])
    with pytest.raises(TypeError, match="must be a SparseTensor"):
        sl.sparse_reset_shape(np.zeros((2, 2)), [3, 3])


def test_reset_shape_errors_when_run(engine):
    new_shape = sl.placeholder(sl.int64)
    rank_out = sl.sparse_reset_shape(sp256(), new_shape)
    sp = sp256_placeholders()
    small_out = sl.sparse_reset_shape(sp, [3, 7, 5])
    fed = sl.sparse_placeholder(sl.int32)
    fed_out = sl.sparse_reset_shape(fed, [3, 7, 5])
    with session(engine) as sess:
        with pytest.raises(sl.errors.InvalidArgumentError, match="x == y did not hold"):
            sess.run(rank_out, {new_shape: [3, 7]})
        with pytest.raises(sl.errors.InvalidArgumentError, match="x <= y did not hold"):
            sess.run(small_out, feed256(sp))
        with pytest.raises(sl.errors.InvalidArgumentError, match=r"new_shape\[2\] is smaller"):
            sess.run(fed_out, {fed: (IND256, VAL256, SHP256)})
        np.testing.assert_array_equal(
            sess.run(rank_out, {new_shape: [2, 5, 9]}).dense_shape, [2, 5, 9]
        )


def test_reset_shape_values_gradient():
    values = sl.constant([1.0, 2.0, 3.0])
    sp = sl.SparseTensor([[0, 0], [1, 1], [2, 0]], values, [3, 2])
    out = sl.sparse_reset_shape(sp, [4, 4])
    (grad,) = sl.gradients(sl.reduce_sum(out.values * [1.0, 2.0, 3.0]), [values])
    with sl.Session() as sess:
        np.testing.assert_array_equal(sess.run(grad), [1.0, 2.0, 3.0])


# -- sparse_merge (TF1's intentionally unsorted 3x50 input) ---------------------------------------
IND33 = np.array([[0, 0], [1, 0], [1, 2], [2, 0], [2, 1], [1, 1]], np.int64)
IDS0 = np.array([0, 13, 10, 33, 32, 14])
IDS1 = np.array([12, 4, 0, 0, 1, 30])
VALS = np.array([-3, 4, 1, 9, 5, 1])


def merge_inputs(ids_dtype, values_dtype, ids=IDS0):
    return (
        sl.SparseTensorValue(IND33, ids.astype(ids_dtype), np.array([3, 3], np.int64)),
        sl.SparseTensorValue(IND33, VALS.astype(values_dtype), np.array([3, 3], np.int64)),
    )


@pytest.mark.parametrize("ids_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("values_dtype", [np.float32, np.float64])
def test_merge_sorted(engine, ids_dtype, values_dtype):
    ids, vals = merge_inputs(ids_dtype, values_dtype)
    outs = [sl.sparse_merge(ids, vals, 50), sl.sparse_merge(ids, vals, sl.constant(50))]
    with session(engine) as sess:
        values = sess.run(outs)
    for value in values:
        np.testing.assert_array_equal(
            value.indices, [[0, 0], [1, 10], [1, 13], [1, 14], [2, 32], [2, 33]]
        )
        np.testing.assert_array_equal(value.values, [-3, 1, 4, 1, 5, 9])
        assert value.values.dtype == values_dtype
        np.testing.assert_array_equal(value.dense_shape, [3, 50])


def test_merge_already_sorted_keeps_order(engine):
    ids, vals = merge_inputs(np.int64, np.float32)
    out = sl.sparse_merge(ids, vals, 50, already_sorted=True)
    with session(engine) as sess:
        value = sess.run(out)
    np.testing.assert_array_equal(
        value.indices, [[0, 0], [1, 13], [1, 10], [2, 33], [2, 32], [1, 14]]
    )
    np.testing.assert_array_equal(value.values, VALS)
    np.testing.assert_array_equal(value.dense_shape, [3, 50])


@pytest.mark.parametrize("already_sorted", [False, True])
def test_merge_high_dim(engine, already_sorted):
    ids0, vals = merge_inputs(np.int64, np.float32)
    ids1, _ = merge_inputs(np.int32, np.float32, ids=IDS1)
    vocab = [50, sl.constant(31, sl.int64)]
    out = sl.sparse_merge([ids0, ids1], vals, vocab, already_sorted=already_sorted)
    with session(engine) as sess:
        value = sess.run(out)
    if already_sorted:
        expected_ind = np.concatenate([IND33[:, :1], IDS0[:, None], IDS1[:, None]], axis=1)
        expected_val = VALS
    else:
        expected_ind = [[0, 0, 12], [1, 10, 0], [1, 13, 4], [1, 14, 30], [2, 32, 1], [2, 33, 0]]
        expected_val = [-3, 1, 4, 1, 5, 9]
    np.testing.assert_array_equal(value.indices, expected_ind)
    np.testing.assert_array_equal(value.values, expected_val)
    np.testing.assert_array_equal(value.dense_shape, [3, 50, 31])


def test_merge_fed_inputs_values_gradient():
    ids = sl.sparse_placeholder(sl.int64)
    values = sl.placeholder(sl.float64, [6])
    vals = sl.SparseTensor(IND33, values, [3, 3])
    out = sl.sparse_merge(ids, vals, 50)
    dense = sl.sparse_tensor_to_dense(out)
    weights = np.arange(150.0).reshape(3, 50)
    (grad,) = sl.gradients(sl.reduce_sum(dense * weights), [values])
    with sl.Session() as sess:
        g = sess.run(grad, {ids: (IND33, IDS0, [3, 3]), values: VALS.astype(np.float64)})
    np.testing.assert_array_equal(g, weights[IND33[:, 0], IDS0])


def test_merge_errors():
    ids, vals = merge_inputs(np.int64, np.float32)
    with pytest.raises(TypeError, match="vocab_size has to be a Tensor or Python int"):
        sl.sparse_merge(ids, vals, 50.0)
    with pytest.raises(TypeError, match="vocab_size has to be a list"):
        sl.sparse_merge([ids], vals, 50)
    with pytest.raises(TypeError, match="vocab_size has to be a list"):
        sl.sparse_merge([ids], vals, ["50"])
    with pytest.raises(ValueError, match="equal lengths"):
        sl.sparse_merge([ids, ids], vals, [50])
    with pytest.raises(TypeError, match="sp_ids has to be a SparseTensor"):
        sl.sparse_merge("ids", vals, 50)
    float_ids = sl.SparseTensorValue(IND33, IDS0.astype(np.float32), np.array([3, 3]))
    with pytest.raises(TypeError, match="int32 or int64 ids"):
        sl.sparse_merge(float_ids, vals, 50)


# -- sparse_to_indicator ---------------------------------------------------------------------------
def test_to_indicator_5x6(engine):
    ind = np.array([[0, 0], [1, 0], [1, 3], [1, 4], [3, 2], [3, 3]])
    outs = []
    for dtype in (np.int32, np.int64):
        sp = sl.SparseTensor(ind, np.array([0, 10, 13, 14, 32, 33], dtype), [5, 6])
        outs.append(sl.sparse_to_indicator(sp, 50))
    assert outs[0].shape.as_list() == [5, 50] and outs[0].dtype == sl.bool
    expected = np.zeros((5, 50), bool)
    for t in ((0, 0), (1, 10), (1, 13), (1, 14), (3, 32), (3, 33)):
        expected[t] = True
    with session(engine) as sess:
        values = sess.run(outs)
    for value in values:
        np.testing.assert_array_equal(value, expected)


def test_to_indicator_higher_rank_repeated_ids(engine):
    ind = [[0, 0, 1], [0, 1, 0], [0, 1, 2], [1, 0, 3], [1, 1, 0], [1, 1, 1], [1, 1, 2], [1, 2, 2]]
    val = np.array([1, 10, 12, 103, 150, 149, 150, 122], np.int64)  # 150 twice in row [1, 1]
    out = sl.sparse_to_indicator(sl.SparseTensor(ind, val, [2, 3, 4]), sl.constant(200))
    expected = np.zeros((2, 3, 200), bool)
    for t in ((0, 0, 1), (0, 1, 10), (0, 1, 12), (1, 0, 103), (1, 1, 149), (1, 1, 150)):
        expected[t] = True
    expected[1, 2, 122] = True
    with session(engine) as sess:
        np.testing.assert_array_equal(sess.run(out), expected)


def test_to_indicator_fed_and_errors(engine):
    sp = sl.sparse_placeholder(sl.int64, shape=[None, None])
    out = sl.sparse_to_indicator(sp, 4)
    with session(engine, fallback=True) as sess:
        value = sess.run(out, {sp: ([[0, 0], [0, 1], [2, 0]], [3, 1, 0], [3, 2])})
    np.testing.assert_array_equal(
        value, [[False, True, False, True], [False] * 4, [True, False, False, False]]
    )
    with pytest.raises(TypeError, match="int32 or int64 ids"):
        sl.sparse_to_indicator(sl.SparseTensor([[0, 0]], [1.0], [1, 1]), 4)


# -- sparse_maximum / sparse_minimum ---------------------------------------------------------------
def assert_sparse_equal(value, indices, values, shape):
    np.testing.assert_array_equal(value.indices, indices)
    np.testing.assert_array_equal(value.values, values)
    np.testing.assert_array_equal(value.dense_shape, shape)


def test_min_max_basic(engine):
    sp_zero = sl.SparseTensor([[0]], [0], [7])
    sp_one = sl.SparseTensor([[0]], [1], [7])
    sp_zero_2 = sl.SparseTensor([[1]], [0], [7])
    outs = [
        sl.sparse_maximum(sp_zero, sp_one),
        sl.sparse_minimum(sp_zero, sp_one),
        sl.sparse.maximum(sp_zero, sp_zero_2),
        sl.sparse.minimum(sp_zero, sp_zero_2),
    ]
    with session(engine) as sess:
        mx, mn, mx2, mn2 = sess.run(outs)
    assert_sparse_equal(mx, [[0]], [1], [7])
    assert_sparse_equal(mn, [[0]], [0], [7])
    for v in (mx2, mn2):
        assert_sparse_equal(v, [[0], [1]], [0, 0], [7])
    assert mx.values.dtype == np.int32


def random_sparse(rng, shape, density, dtype):
    dense = (rng.standard_normal(shape) * 10).astype(dtype)
    dense[rng.random(shape) > density] = 0
    indices = np.argwhere(dense != 0)
    return dense, (indices, dense[tuple(indices.T)], np.array(shape))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_min_max_random_against_numpy(engine, dtype):
    rng = np.random.default_rng(7)
    a_dense, a = random_sparse(rng, (4, 5, 3), 0.4, dtype)
    b_dense, b = random_sparse(rng, (4, 5, 3), 0.4, dtype)
    sp_a = sl.sparse_placeholder(sl.as_dtype(dtype))
    sp_b = sl.sparse_placeholder(sl.as_dtype(dtype))
    mx, mn = sl.sparse_maximum(sp_a, sp_b), sl.sparse_minimum(sp_a, sp_b)
    with session(engine, fallback=True) as sess:
        vmx, vmn, dmx = sess.run([mx, mn, sl.sparse_tensor_to_dense(mx)], {sp_a: a, sp_b: b})
    union = np.argwhere((a_dense != 0) | (b_dense != 0))
    for value, expected in (
        (vmx, np.maximum(a_dense, b_dense)),
        (vmn, np.minimum(a_dense, b_dense)),
    ):
        np.testing.assert_array_equal(value.indices, union)  # row-major order
        np.testing.assert_array_equal(value.values, expected[tuple(union.T)])
        assert value.values.dtype == dtype
    np.testing.assert_array_equal(dmx, np.maximum(a_dense, b_dense))


def test_min_max_mismatched_shapes(engine):
    with session(engine, fallback=True) as sess:
        sp_zero = sl.SparseTensor([[0, 0]], [0], [1, 1])
        sp_one = sl.SparseTensor([[1]], [1], [2])
        with pytest.raises(
            sl.errors.InvalidArgumentError, match="Operands do not have the same ranks"
        ):
            sess.run(sl.sparse_maximum(sp_zero, sp_one))
        sp_zero = sl.SparseTensor([[0]], [0], [1])
        with pytest.raises(sl.errors.InvalidArgumentError, match="Operands' shapes do not match"):
            sess.run(sl.sparse_minimum(sp_zero, sp_one))


def test_min_max_build_errors_and_no_gradient():
    a = sl.SparseTensor([[0]], [1.0], [2])
    with pytest.raises(TypeError, match="float64"):
        sl.sparse_maximum(a, sl.SparseTensor([[0]], np.array([1.0]), [2]))
    with pytest.raises(TypeError, match="must be a SparseTensor"):
        sl.sparse_minimum(a, np.zeros(2))
    with pytest.raises(TypeError, match="real numbers"):
        flag = sl.SparseTensor([[0]], [True], [2])
        sl.sparse_maximum(flag, flag)
    values = sl.constant([1.0])
    out = sl.sparse_maximum(sl.SparseTensor([[0]], values, [2]), a)
    assert sl.gradients(sl.reduce_sum(out.values), [values]) == [None]
