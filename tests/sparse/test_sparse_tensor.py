"""SparseTensor, SparseTensorValue and sparse_placeholder, as TF1's sparse_tensor_test.py and
session_test.py's sparse feeds and fetches."""

import numpy as np
import pytest

import sluice as sl
from tests.sparse.conftest import session

IND = np.array([[0, 0], [1, 2], [2, 3]], np.int64)
VAL = np.array([1.0, 2.0, 3.0], np.float32)
SHAPE = np.array([3, 4], np.int64)


def test_properties_and_static_shape():
    st = sl.SparseTensor(IND, VAL, SHAPE)
    assert st.indices.dtype == sl.int64 and st.dense_shape.dtype == sl.int64
    assert st.dtype == sl.float32
    assert st.shape.as_list() == [3, 4] and st.get_shape().as_list() == [3, 4]
    assert st.op is st.values.op and st.graph is sl.get_default_graph()
    assert isinstance(st, sl.sparse.SparseTensor)


def test_int32_indices_are_cast_to_int64():
    st = sl.SparseTensor(sl.constant(IND.astype(np.int32)), VAL, sl.constant([3, 4]))
    assert st.indices.dtype == sl.int64 and st.dense_shape.dtype == sl.int64


def test_bad_ranks_and_dtypes_raise_at_construction():
    with pytest.raises(ValueError, match="indices must have rank 2"):
        sl.SparseTensor([0, 1], [1.0, 2.0], [3])
    with pytest.raises(ValueError, match="values must have rank 1"):
        sl.SparseTensor(IND, [[1.0], [2.0], [3.0]], SHAPE)
    with pytest.raises(ValueError, match="3 indices .* for 2 values"):
        sl.SparseTensor(IND, [1.0, 2.0], SHAPE)
    with pytest.raises(ValueError, match="dense_shape has 3 dimensions"):
        sl.SparseTensor(IND, VAL, [3, 4, 5])
    with pytest.raises(TypeError, match="indices must be an int64 tensor"):
        sl.SparseTensor(sl.constant(IND.astype(np.float32)), VAL, SHAPE)


def test_from_value_and_value_namedtuple():
    value = sl.SparseTensorValue(IND, VAL, SHAPE)
    assert value._fields == ("indices", "values", "dense_shape")
    st = sl.SparseTensor.from_value(value)
    assert st.shape.as_list() == [3, 4]
    with pytest.raises(TypeError, match="Neither a SparseTensor nor SparseTensorValue"):
        sl.SparseTensor.from_value((IND, VAL, SHAPE))


def test_run_returns_a_sparse_tensor_value_in_structures(engine):
    st = sl.SparseTensor(IND, VAL, SHAPE)
    with session(engine) as sess:
        value = sess.run(st)
        nested = sess.run({"a": [st], "b": st.values})
    assert isinstance(value, sl.SparseTensorValue)
    np.testing.assert_array_equal(value.indices, IND)
    np.testing.assert_array_equal(value.values, VAL)
    np.testing.assert_array_equal(value.dense_shape, SHAPE)
    assert isinstance(nested["a"][0], sl.SparseTensorValue)
    np.testing.assert_array_equal(nested["b"], VAL)


def test_eval_in_default_session():
    st = sl.SparseTensor(IND, VAL, SHAPE)
    with sl.Session():
        value = st.eval()
    assert isinstance(value, sl.SparseTensorValue)


@pytest.mark.parametrize("as_tuple", [False, True])
def test_sparse_placeholder_fed_as_one_key(engine, as_tuple):
    sp = sl.sparse_placeholder(sl.float32, name="sp")
    assert sp.values.name == "sp/values:0" and sp.indices.name == "sp/indices:0"
    assert sp.dense_shape.name == "sp/shape:0"
    fed = (IND, VAL, SHAPE) if as_tuple else sl.SparseTensorValue(IND, VAL, SHAPE)
    doubled = sl.SparseTensor(sp.indices, sp.values * 2, sp.dense_shape)
    with session(engine) as sess:
        value = sess.run(doubled, {sp: fed})
    np.testing.assert_array_equal(value.indices, IND)
    np.testing.assert_allclose(value.values, 2 * VAL, atol=1e-6)
    np.testing.assert_array_equal(value.dense_shape, SHAPE)


def test_sparse_placeholder_nnz_changes_between_runs(engine):
    sp = sl.sparse_placeholder(sl.float32, shape=[3, 4])
    total = sl.sparse_reduce_sum(sp)
    with session(engine) as sess:
        for n in (1, 3, 2):
            assert sess.run(total, {sp: (IND[:n], VAL[:n], SHAPE)}) == pytest.approx(VAL[:n].sum())


def test_sparse_placeholder_shapes():
    full = sl.sparse_placeholder(sl.float32, shape=[3, 4])
    assert full.shape.as_list() == [3, 4] and full.dense_shape.op.type == "Const"
    part = sl.sparse_placeholder(sl.float32, shape=[None, 4])
    assert part.shape.as_list() == [None, 4] and part.dense_shape.op.type == "Placeholder"
    assert part.indices.shape.as_list() == [None, 2]
    assert sl.sparse_placeholder(sl.float32).shape.rank is None


def test_feed_errors():
    sp = sl.sparse_placeholder(sl.float32, shape=[3, 4])
    with sl.Session() as sess:
        with pytest.raises(ValueError, match="fixed to \\[3, 4\\]"):
            sess.run(sp.values, {sp: (IND, VAL, [5, 4])})
        with pytest.raises(TypeError, match="SparseTensorValue"):
            sess.run(sp.values, {sp: (IND, VAL)})


def test_ops_accept_a_sparse_tensor_value_and_refuse_dense():
    dense = sl.sparse_tensor_to_dense(sl.SparseTensorValue(IND, VAL, SHAPE))
    expected = np.zeros([3, 4], np.float32)
    expected[tuple(IND.T)] = VAL
    with sl.Session() as sess:
        np.testing.assert_array_equal(sess.run(dense), expected)
    with pytest.raises(TypeError, match="must be a SparseTensor"):
        sl.sparse_tensor_to_dense(sl.constant(expected))
