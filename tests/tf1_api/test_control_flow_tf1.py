"""`cond` and `while_loop` as TF 1.15's control_flow_ops_py_test.py uses them: structure errors
in TF1's words, SparseTensor loop variables and their shape invariants, TF1's
`control_flow_ops.merge` of IndexedSlices. Values in both engines."""

import collections

import numpy as np
import pytest

import sluice as sl
from sluice.python.ops import control_flow_ops, gen_control_flow_ops

ENGINES = ["compiled", "interpreted"]


def _session(engine):
    return sl.Session(config=sl.SessionConfig(engine=engine))


# -- structures in TF1's words -----------------------------------------------------------------
def test_cond_branches_of_different_dict_keys():
    x = sl.constant(10)
    pred = sl.less(1, 2)
    with pytest.raises(ValueError, match="The two structures don't have the same nested") as e:
        sl.cond(pred, lambda: {"a": x + 1, "b": x}, lambda: {"c": x, "d": x})
    assert "don't have the same set of keys" in str(e.value)


def test_cond_branches_of_a_list_and_a_tuple():
    x = sl.constant(1.0)
    with pytest.raises(ValueError, match="same nested structure"):
        sl.cond(sl.less(1, 2), lambda: [x, x], lambda: (x, x))


def test_while_body_returning_one_value_more():
    x = sl.constant([2.0, 4.0])
    i = sl.constant(0)
    with pytest.raises(ValueError, match="same nested structure") as e:
        sl.while_loop(lambda i, *x: i < 10, lambda i, *x: (i, i) + x, [i, x])
    assert "don't have the same number of elements" in str(e.value)


def test_while_nested_body_of_bad_arity():
    named = collections.namedtuple("named", ("a", "b"))
    loop_vars = [named(sl.constant(0.0), sl.constant(1.0)), (sl.constant(2.0),), sl.constant(4.0)]
    with pytest.raises(ValueError, match="the same number of elements"):
        sl.while_loop(lambda lv0, _1, _2: lv0.a < 100.0, lambda a, b, _: [a, b], loop_vars)


def test_while_body_returning_a_tensor_for_a_tuple():
    pair = (sl.constant(1.0), sl.constant(2.0))
    with pytest.raises(ValueError, match="is a sequence, while substructure"):
        sl.while_loop(lambda i, p: i < 3, lambda i, p: (i + 1, p[0]), [sl.constant(0), pair])


# -- SparseTensor loop variables ----------------------------------------------------------------
def _sparse():
    values = sl.constant([2.0, 4.0], name="values")
    indices = sl.constant([[0], [3]], dtype=sl.int64, name="indices")
    shape = sl.constant([10], dtype=sl.int64, name="dense_shape")
    return values, sl.SparseTensor(indices, values, dense_shape=shape)


@pytest.mark.parametrize("engine", ENGINES)
def test_sparse_tensor_loop_variable_and_its_gradient(engine):
    values, x = _sparse()

    def body(i, x):
        return [i + 1, sl.SparseTensor(x.indices, x.values * 2.0, x.dense_shape)]

    _, r = sl.while_loop(lambda i, _: i < 10, body, [sl.constant(0), x])
    assert isinstance(r, sl.SparseTensor)
    # TF1: the number of elements may change, the rank may not
    assert r.indices.shape.as_list() == [None, 1] and r.values.shape.as_list() == [None]
    assert r.dense_shape.shape.as_list() == [1]
    (grad,) = sl.gradients(r.values, values)
    with _session(engine) as sess:
        value, g = sess.run([r, grad])
    np.testing.assert_array_equal(value.indices, [[0], [3]])
    np.testing.assert_allclose(value.values, [2048.0, 4096.0], rtol=1e-6)
    np.testing.assert_array_equal(value.dense_shape, [10])
    np.testing.assert_allclose(g, [1024.0, 1024.0], rtol=1e-6)


@pytest.mark.parametrize("engine", ["auto", "interpreted"])  # SparseAdd is a host kernel
def test_sparse_tensor_loop_variable_that_gains_elements(engine):
    _, x = _sparse()

    def body(i, x):
        one = sl.SparseTensor(
            sl.cast(sl.fill([1, 1], i), sl.int64), sl.fill([1], 1.0), x.dense_shape
        )
        return [i + 1, sl.sparse_add(x, one)]

    _, r = sl.while_loop(lambda i, _: i < 3, body, [sl.constant(0), x])
    with _session(engine) as sess:
        dense = sess.run(sl.sparse_tensor_to_dense(sl.sparse_reorder(r)))
    np.testing.assert_allclose(dense, [3.0, 1.0, 1.0, 4.0, 0, 0, 0, 0, 0, 0])


def _grow_rank(i, x):
    return [
        i + 1,
        sl.SparseTensor(
            sl.concat([x.indices, [[0], [0]]], axis=1),
            x.values * 2.0,
            sl.concat([x.dense_shape, [10]], axis=0),
        ),
    ]


def test_sparse_tensor_shape_invariants():
    _, x = _sparse()
    i = sl.constant(0)
    c = lambda i, _: i < 2  # noqa: E731
    with pytest.raises(ValueError, match="is not compatible with"):  # rank 5 given, rank 1 found
        sl.while_loop(c, lambda i, x: [i + 1, x], [i, x], [i.shape, sl.TensorShape([5])])
    with pytest.raises(ValueError):  # the default invariant keeps the rank
        sl.while_loop(c, _grow_rank, [i, x])
    with pytest.raises(ValueError, match="1 dimension"):
        sl.while_loop(c, _grow_rank, [i, x], [i.shape, sl.TensorShape([None, None])])
    for invariant in (sl.TensorShape([None]), sl.TensorShape(None)):
        _, r = sl.while_loop(c, _grow_rank, [i, x], [i.shape, invariant])
        assert r.indices.shape.as_list() == [None, None]
        assert r.dense_shape.shape.as_list() == [None]
    with sl.Session() as sess:
        value = sess.run(r)
    np.testing.assert_array_equal(value.dense_shape, [10, 10, 10])
    np.testing.assert_allclose(value.values, [8.0, 16.0], rtol=1e-6)


# -- TF1's control_flow_ops.merge -----------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_switch_merge_of_indexed_slices(engine):
    data = sl.IndexedSlices(sl.constant([1, 2, 3, 4, 5, 6]), sl.constant([0, 2, 4, 6, 8, 10]))
    pred = sl.placeholder(sl.bool, [])
    merged = control_flow_ops.merge(control_flow_ops.switch(data, pred))[0]
    assert isinstance(merged, sl.IndexedSlices)
    with _session(engine) as sess:
        for p in (True, False):
            values, indices = sess.run([merged.values, merged.indices], {pred: p})
            np.testing.assert_array_equal(values, np.arange(1, 7))
            np.testing.assert_array_equal(indices, np.arange(0, 12, 2))


# -- TensorSpec and SparseTensorSpec shape invariants ----------------------------------------------
def test_tensor_spec_shape_invariant():
    i = sl.constant(0)
    x = sl.constant([1])
    invariants = [sl.TensorSpec([], sl.int32), sl.TensorSpec(None, sl.int32)]
    _, r = sl.while_loop(lambda i, _: i < 3, lambda i, x: (i + 1, sl.stack([x, x])), [i, x],
                         invariants)  # fmt: skip
    assert r.shape.rank is None
    with sl.Session() as sess:
        assert sess.run(r).shape == (2, 2, 2, 1)
    assert sl.TensorSpec([None, 2], sl.float32) == sl.TensorSpec([None, 2], sl.float32)
    assert sl.TensorSpec.from_tensor(x).shape.as_list() == [1]


def test_type_spec_of_the_wrong_kind_or_dtype():
    c = lambda i, _: i < 10  # noqa: E731
    b = lambda i, x: (i + 1, x)  # noqa: E731
    i = sl.constant(0)
    x = sl.SparseTensor([[0]], [1.0], [10])
    invariants = [sl.TensorSpec([], sl.int32), sl.SparseTensorSpec([None])]
    _, r = sl.while_loop(c, b, [i, x], invariants)
    assert r.indices.shape.as_list() == [None, 1]
    with pytest.raises(TypeError, match="not compatible"):  # a Tensor for a SparseTensorSpec
        sl.while_loop(c, b, [i, sl.constant([1])], invariants)
    with pytest.raises(TypeError, match="not compatible"):  # a float counter for an int32 spec
        sl.while_loop(c, b, [sl.constant(0.0), x], invariants)


# -- what a session may feed and fetch -----------------------------------------------------------
def test_values_inside_a_loop_are_not_fetchable():
    x = sl.placeholder(sl.float32, [])
    r = sl.while_loop(lambda v: v < 10.0, lambda v: v * x, [sl.constant(1.0)])
    g = sl.get_default_graph()
    inside = [op for op in g.get_operations() if op.name.startswith("while/") and op is not r.op]
    assert inside and g.is_fetchable(r) and g.is_fetchable(x)
    assert not any(g.is_fetchable(op) for op in inside)
    with sl.Session() as sess:
        assert sess.run(r, {x: 3.0}) == 27.0
        with pytest.raises(ValueError, match="has been marked as not fetchable"):
            sess.run(inside[-1].outputs[0], {x: 3.0})
    out = sl.cond(sl.constant(True), lambda: x + 2, lambda: x + 0)  # sluice: fetchable
    assert g.is_fetchable(out)
    g.prevent_fetching(out.op)
    with sl.Session() as sess, pytest.raises(ValueError, match="marked as not fetchable"):
        sess.run(out, {x: 3.0})


def test_values_inside_a_loop_are_not_feedable():
    c = sl.constant(2)
    i0 = sl.constant(0)
    r = sl.while_loop(lambda i: i < 10, lambda i: sl.square(c) + i, [i0])
    g = sl.get_default_graph()
    assert g.is_feedable(i0) and g.is_feedable(c) and g.is_feedable(r) and g.is_fetchable(r)
    inside = [t for op in g.get_operations() for t in op.outputs if op.name.startswith("while/")]
    inside = [t for t in inside if t is not r]
    assert inside and not any(g.is_feedable(t) for t in inside)
    with sl.Session() as sess:
        assert sess.run(r, {i0: 3}) == 11
        with pytest.raises(ValueError, match="may not be fed"):
            sess.run(r, {inside[0]: 3})
    g.prevent_feeding(i0)
    with sl.Session() as sess, pytest.raises(ValueError, match="may not be fed"):
        sess.run(r, {i0: 3})


def test_a_dead_fetch_says_it_has_no_value():
    data = sl.constant([1, 2, 3])
    dead = sl.identity(control_flow_ops.switch(data, sl.constant(True))[0])
    with sl.Session() as sess, pytest.raises(sl.errors.InvalidArgumentError, match="Retval"):
        sess.run(dead)


# -- the raw primitives and the graph API as TF1 has them ----------------------------------------
def test_a_raw_enter_keeps_the_shape_only_of_a_constant():
    v = sl.constant([0.0, 0.0])
    assert gen_control_flow_ops.enter(v, "frame1", is_constant=True).shape == [2]
    assert gen_control_flow_ops.enter(v, "frame2", is_constant=False).shape.rank is None
    # while_loop's own Enters keep the loop variables' shapes
    r = sl.while_loop(lambda x: sl.reduce_sum(x) < 5.0, lambda x: x + 1.0, [v])
    assert r.shape == [2]


def test_an_empty_group_has_an_empty_list_of_control_inputs():
    op = sl.group()
    assert op.type == "NoOp" and op.control_inputs == []


# -- where a value may be used: TF1's CheckInputFromValidContext, when the op is built -----------
def _value_made_in_a_loop():
    kept = []

    def body(i):
        if not kept:
            kept.append(sl.constant(1))
        return i + kept[0]

    sl.while_loop(lambda i: i < 10, body, [0])
    return kept[0]


def test_a_loop_value_used_outside_its_loop_names_the_op_that_takes_it():
    inside = _value_made_in_a_loop()
    assert inside.op.name == "while/Const_1"
    message = "Cannot use 'while/Const_1' as input to 'Add' because 'while/Const_1' is in a while "
    with pytest.raises(ValueError, match=message + "loop. See info log for more details."):
        sl.add(1, inside)
    with pytest.raises(ValueError, match="as input to 'cond/Add' because 'while/Const_1' is in"):
        sl.cond(sl.less(1, 2), lambda: sl.add(1, inside), lambda: sl.constant(0))


def test_a_loop_value_used_in_another_loop_names_both():
    inside = _value_made_in_a_loop()
    message = "Cannot use 'while/Const_1' as input to 'while_1/Add' because they are in different "
    with pytest.raises(ValueError, match=message + "while loops. See info log"):
        sl.while_loop(lambda i: i < 10, lambda x: sl.add(1, inside), [0])
    # returned as the body's result: the op that would take it is the NextIteration
    with pytest.raises(ValueError, match="as input to 'while_2/NextIteration' because they are"):
        sl.while_loop(lambda i: i < 10, lambda i: inside, [0])
    with pytest.raises(ValueError, match="'while_3/NextIteration_1' because they are"):
        sl.while_loop(lambda i, j: i < 10, lambda i, j: (i + 1, inside), [0, 0])


def test_loops_in_a_cond_cannot_share_values_but_nested_loops_can():
    def true_fn():
        inside = _value_made_in_a_loop()
        return sl.while_loop(lambda i: i < 3, lambda i: i + inside, [0])

    message = "Cannot use 'cond/while/Const_1' as input to 'cond/while_1/add' because they are in "
    with pytest.raises(ValueError, match=message + "different while loops"):
        sl.cond(sl.less(1, 2), true_fn, lambda: sl.constant(0))

    def body(j):
        c = sl.constant(1)
        return j + sl.while_loop(lambda i: i < 3, lambda i: i + c, [0])

    with sl.Session() as sess:  # an inner loop may use its outer loop's values
        assert sess.run(sl.while_loop(lambda j: j < 5, body, [0])) == 6


def test_python_operators_name_their_ops_as_tf1():
    x = sl.constant(2.0)
    assert [t.op.name for t in (x + x, x - x, x * x, x / x, sl.add(x, x))] == [
        "add",
        "sub",
        "mul",
        "truediv",
        "Add_1",  # names are unique regardless of case, as in TF1
    ]
    assert (x + x).op.type == sl.add(x, x).op.type == "AddV2"


def test_a_loop_variable_whose_shape_grows_needs_a_shape_invariant():
    m = sl.ones([2, 2])
    body = lambda i, j: [i + 1, sl.concat([j, j], 0)]  # noqa: E731
    message = (
        r"Input tensor 'ones:0' enters the loop with shape \(2, 2\), but has shape \(4, 2\) after "
        r"one iteration. To allow the shape to vary across iterations, use the `shape_invariants` "
        r"argument of tf.while_loop to specify a less-specific shape."
    )
    with pytest.raises(ValueError, match=message):
        sl.while_loop(lambda i, j: i < 2, body, [sl.constant(0), m])


def test_a_gradient_inside_a_loop_cannot_pass_through_an_initial_value():
    x = sl.placeholder(sl.float32, shape=(), name="x")
    y = x + 1

    def body(i, v):
        return i + 1, sl.gradients(v * 2, x)[0]

    message = (
        "Cannot compute gradient inside while loop with respect to op 'x'. We do not support "
        "taking the gradient wrt or through the initial value of a loop variable."
    )
    with pytest.raises(ValueError, match=message):
        sl.while_loop(lambda i, x: i < 3, body, [0, y])


# -- tuple and with_dependencies on IndexedSlices ---------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_tuple_of_indexed_slices_gates_their_values(engine):
    v1 = sl.Variable(np.array([[0.0, 1.0], [10.0, 11.0], [20.0, 21.0]], np.float32))
    v2 = sl.Variable(np.array([[0.1, 1.1], [10.1, 11.1], [20.1, 21.1]], np.float32))
    # as TF1: the pair of a whole variable and one row index, its parts used apart
    at_1 = [
        sl.IndexedSlices(control_flow_ops.with_dependencies([v.initializer], v._ref()), [1])
        for v in (v1, v2)
    ]
    st1, st2 = sl.tuple(at_1)
    assert isinstance(st1, sl.IndexedSlices) and st1.indices is at_1[0].indices
    g1 = sl.gather(st1.values, st1.indices)
    with _session(engine) as sess:
        with pytest.raises(sl.errors.FailedPreconditionError, match="uninitialized"):
            sess.run(v2)
        np.testing.assert_allclose(sess.run(g1), [[10.0, 11.0]])  # runs both initializers
        np.testing.assert_allclose(sess.run(v2)[1], [10.1, 11.1])
    with pytest.raises(ValueError, match="1 indices for 3 slices"):
        sl.convert_to_tensor(sl.IndexedSlices(v1._ref(), [1], [3, 2]))  # dense: counts must agree


def test_with_dependencies_colocates_with_its_value():
    with sl.Graph().as_default():
        with sl.device("/job:ps"):
            vd = sl.Variable([0.0])
        assert "/job:ps" in control_flow_ops.with_dependencies([vd.initializer], vd).device
        vdef = sl.Variable([0.0], name="vdef")
        with sl.device("/job:worker/device:GPU:1"):
            dep = control_flow_ops.with_dependencies([vdef.initializer], vdef)
        assert dep.device == "" and dep.op.colocation_groups() == ["loc:@vdef"]
        zero = control_flow_ops.with_dependencies([vdef.initializer], 0)  # a value: its constant
        assert zero.op.colocation_groups() == [f"loc:@{zero.op.inputs[0].op.name}"]


def test_an_op_with_inputs_from_two_frames_fails_when_run():
    data = sl.placeholder(sl.float32, shape=[])
    enter_1 = gen_control_flow_ops.enter(data, "foo_1", False)
    enter_2 = gen_control_flow_ops.enter(data, "foo_2", False)
    res = sl.add(enter_1, enter_2)
    message = (
        "The node 'Add' has inputs from different frames. The input 'Enter_1' is in frame "
        "'foo_2'. The input 'Enter' is in frame 'foo_1'."
    )
    for engine in ("auto", "interpreted"):  # auto: a hand-wired frame runs interpreted
        with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
            with pytest.raises(sl.errors.InvalidArgumentError, match=message):
                sess.run(res, {data: 1.0})


# -- raw resource-variable ops on a handle -----------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_assign_variable_op_on_a_handle_inside_a_cond(engine):
    from sluice.python.ops import resource_variable_ops

    rv = sl.ResourceVariable(True)
    t = sl.convert_to_tensor(1.0)

    def case():
        assign = resource_variable_ops.assign_variable_op(rv.handle, False)
        with sl.control_dependencies([assign]):
            return sl.identity(t)

    r = sl.cond(rv, case, lambda: t)
    with _session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        assert sess.run(r) == 1.0 and not sess.run(rv)  # the branch ran and assigned False
        assert sess.run(r) == 1.0 and not sess.run(rv)  # the other branch: nothing assigned
    with pytest.raises(TypeError, match="holds bool, not float32"):
        resource_variable_ops.read_variable_op(rv.handle, sl.float32)
    with pytest.raises(TypeError, match="Expected a variable's resource handle"):
        resource_variable_ops.assign_variable_op(sl.identity(t), 2.0)
    stack = sl.get_default_graph().create_op("StackV2", [], {"elem_dtype": sl.float32})
    with pytest.raises(TypeError, match="comes from a StackV2 op"):  # a resource, not a variable
        resource_variable_ops.assign_variable_op(stack.outputs[0], 2.0)
