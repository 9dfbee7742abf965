"""Graph IR: names, scopes, control dependencies, collections, shapes, construction errors."""

import pytest

import sluice as sl


def test_unique_names_in_nested_scopes():
    with sl.name_scope("rnn"):
        with sl.name_scope("while"):
            a = sl.constant(1.0, name="add")
            b = sl.constant(1.0, name="add")
    assert a.op.name == "rnn/while/add"
    assert b.op.name == "rnn/while/add_1"
    assert a.name == "rnn/while/add:0"
    with sl.name_scope("rnn"):
        c = sl.constant(1.0, name="x")
    assert c.op.name == "rnn_1/x"


def test_scope_name_ending_in_slash_reenters_the_scope():
    with sl.name_scope("outer") as scope:
        pass
    with sl.name_scope(scope):
        x = sl.constant(0, name="x")
    assert x.op.name == "outer/x"


def test_lookup_by_name():
    g = sl.get_default_graph()
    x = sl.constant(3.0, name="three")
    assert g.get_tensor_by_name("three:0") is x
    assert g.get_operation_by_name("three") is x.op
    with pytest.raises(KeyError):
        g.get_operation_by_name("missing")


def test_default_graph_stack():
    g = sl.Graph()
    with g.as_default():
        x = sl.constant(1)
        assert sl.get_default_graph() is g
    assert x.graph is g
    assert sl.get_default_graph() is not g


def test_control_dependencies_are_recorded_and_clearable():
    a = sl.constant(1.0)
    with sl.control_dependencies([a]):
        b = sl.constant(2.0)
        with sl.control_dependencies(None):
            c = sl.constant(3.0)
    assert b.op.control_inputs == [a.op]
    assert c.op.control_inputs == []


def test_control_dependencies_order_execution():
    v = sl.Variable(1.0, name="v")
    assign = v.assign(5.0)
    with sl.control_dependencies([assign]):
        read = v.read_value() * 1.0
    with sl.Session() as s:
        s.run(sl.global_variables_initializer())
        assert s.run(read) == 5.0


def test_collections():
    v = sl.Variable(1.0, name="w")
    u = sl.Variable(2.0, name="u", trainable=False)
    assert sl.global_variables() == [v, u]
    assert sl.trainable_variables() == [v]
    sl.add_to_collection("mine", 3)
    assert sl.get_collection("mine") == [3]


def test_tensor_shape_unknown_dims():
    s = sl.TensorShape([None, 3])
    assert s.rank == 2 and not s.is_fully_defined()
    assert s.merge_with([4, None]).as_list() == [4, 3]
    assert sl.TensorShape(None).rank is None
    assert s.is_compatible_with([7, 3]) and not s.is_compatible_with([7, 4])
    with pytest.raises(ValueError):
        s.merge_with([1, 2])


def test_every_op_infers_dtype_and_shape_at_construction():
    x = sl.placeholder(sl.float32, [None, 3])
    y = sl.matmul(x, sl.ones([3, 5]))
    assert y.dtype == sl.float32
    assert y.shape.as_list() == [None, 5]


def test_mismatch_raises_at_construction_naming_op_and_shapes():
    a = sl.placeholder(sl.float32, [2, 3], name="a")
    b = sl.placeholder(sl.float32, [4, 5], name="b")
    with pytest.raises(ValueError) as info:
        sl.matmul(a, b, name="mm")
    message = str(info.value)
    assert "mm" in message and "(2, 3)" in message and "(4, 5)" in message


def test_dtype_mismatch_raises_at_construction():
    a = sl.placeholder(sl.float32, [2])
    b = sl.placeholder(sl.int32, [2])
    with pytest.raises(TypeError, match="dtype"):
        sl.add(a, b)


def test_op_from_another_graph_is_an_error():
    other = sl.Graph()
    with other.as_default():
        x = sl.constant(1.0)
    y = sl.constant(2.0)
    with pytest.raises(ValueError, match="graph"):
        sl.add(x, y)


def test_tensor_is_not_a_python_bool():
    with pytest.raises(TypeError, match="bool"):
        if sl.constant(True):
            pass


def test_set_shape_refines_and_rejects():
    x = sl.placeholder(sl.float32, [None, 3])
    x.set_shape([2, 3])
    assert x.shape.as_list() == [2, 3]
    with pytest.raises(ValueError):
        x.set_shape([2, 4])


def test_graph_seed_is_settable():
    sl.set_random_seed(42)
    assert sl.get_default_graph().seed == 42
