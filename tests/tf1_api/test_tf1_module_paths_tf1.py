"""TF1 module paths TF1's tests and programs import: `control_flow_ops.with_dependencies` and
`switch`, `tensor_shape.unknown_shape`/`dimension_value`, and `ResourceVariable.sparse_read`."""

import numpy as np
import pytest

import sluice as sl
from sluice.python.framework import tensor_shape
from sluice.python.ops import control_flow_ops


def test_with_dependencies_runs_the_dependencies_first():
    v = sl.Variable(1.0)
    inc = v.assign_add(1.0)
    y = control_flow_ops.with_dependencies([inc], sl.constant(5.0))
    assert y.op.name == "control_dependency"
    assert inc.op in y.op.control_inputs
    with sl.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(y) == 5.0
        assert sess.run(v) == 2.0
    slices = sl.IndexedSlices(sl.ones([2, 3]), sl.constant([0, 2]))
    out = control_flow_ops.with_dependencies([inc], slices)
    assert isinstance(out, sl.IndexedSlices) and out.indices is slices.indices


@pytest.mark.parametrize("pred,alive", [(True, 1), (False, 0)])
def test_switch_and_merge(pred, alive):
    outs = control_flow_ops.switch(2, sl.constant(pred), dtype=sl.float32)
    assert outs[0].dtype == sl.float32
    merged, index = control_flow_ops.merge([outs[0] * 10.0, outs[1] * 100.0])
    with sl.Session() as sess:
        assert sess.run([merged, index]) == [2.0 * (100.0 if alive else 10.0), alive]


def test_tensor_shape_module():
    assert tensor_shape.unknown_shape().rank is None
    assert tensor_shape.unknown_shape(rank=2).as_list() == [None, None]
    assert tensor_shape.dimension_value(sl.ones([3]).shape[0]) == 3
    assert tensor_shape.as_shape([1, None]).as_list() == [1, None]
    assert tensor_shape.TensorShape is sl.TensorShape
    assert tensor_shape.scalar().as_list() == []


def test_sparse_read_values_and_indexed_slices_gradient():
    value = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    v = sl.Variable(value, use_resource=True)
    rows = v.sparse_read([2, 0])
    (grad,) = sl.gradients(sl.reduce_sum(rows * 3.0), [v])
    assert isinstance(grad, sl.IndexedSlices)
    with sl.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(rows), value[[2, 0]])
        g = sess.run(grad)
        np.testing.assert_array_equal(g.indices, [2, 0])
        np.testing.assert_array_equal(g.values, np.full([2, 2], 3.0))


def test_a_loop_built_from_control_flow_ops_primitives():
    # TF1's control_flow_ops re-exports gen_control_flow_ops: enter, merge, loop_cond, switch,
    # next_iteration, exit build a counting loop by hand
    i0 = control_flow_ops.enter(sl.constant(0), "count_loop")
    limit = control_flow_ops.enter(sl.constant(4), "count_loop", is_constant=True)
    one = control_flow_ops.enter(sl.constant(1), "count_loop", is_constant=True)
    merged, _ = control_flow_ops.merge([i0, i0])
    pred = control_flow_ops.loop_cond(merged < limit)
    out_false, out_true = control_flow_ops.switch(merged, pred)
    nxt = control_flow_ops.next_iteration(out_true + one)
    merged.op.update_input(1, nxt)
    done = control_flow_ops.exit(out_false)
    assert sl.Session().run(done) == 4


def test_safe_embedding_lookup_sparse_v2_is_the_div_strategy_lookup():
    from sluice.python.ops import embedding_ops

    w = np.arange(12, dtype=np.float32).reshape(6, 2)
    ids = sl.SparseTensor([[0, 0], [0, 1], [2, 0]], sl.constant([1, 3, 5], sl.int64), [3, 2])
    weights = [sl.constant(w[:3]), sl.constant(w[3:])]  # "div": ids 0-2 in the first part
    got = embedding_ops.safe_embedding_lookup_sparse_v2(weights, ids, combiner="sum")
    expected = sl.nn.safe_embedding_lookup_sparse(
        weights, ids, combiner="sum", partition_strategy="div"
    )
    got, expected = sl.Session().run([got, expected])
    np.testing.assert_array_equal(got, [w[1] + w[3], [0, 0], w[5]])
    np.testing.assert_array_equal(got, expected)
