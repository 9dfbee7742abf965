"""The Variable API as TF1 code touches it (TF1's `variables_test.py` and
`resource_variable_ops_test.py` in graph mode, names forwarded from `tf.` to `sl.`):
ResourceVariable, `_ref()`, `value()`, `op`, `initial_value`, `constraint`,
`to_proto`/`from_proto`, and custom_gradient's `variables=`."""

import numpy as np
import pytest

import sluice as sl


def test_resource_variable_isinstance():
    ref = sl.Variable(1.0)
    res = sl.Variable(1.0, use_resource=True)
    direct = sl.ResourceVariable(2.0, name="direct")
    assert not isinstance(ref, sl.ResourceVariable)
    assert isinstance(res, sl.ResourceVariable) and isinstance(res, sl.Variable)
    assert isinstance(direct, sl.ResourceVariable) and direct.name == "direct:0"
    with sl.variable_scope("s", use_resource=True):
        assert isinstance(sl.get_variable("v", []), sl.ResourceVariable)
        with sl.variable_scope("inner", use_resource=False):
            assert not isinstance(sl.get_variable("v", []), sl.ResourceVariable)


def test_variable_op_types_as_tf1():
    ref = sl.Variable(1.0, name="ref")
    res = sl.Variable(1.0, name="res", use_resource=True)
    assert ref.op.node_def.op == "VariableV2"
    assert res.op.node_def.op == "VarHandleOp"
    assert isinstance(ref.op.node_def, sl.NodeDef)
    assert ref.op.node_def.name == "ref"
    assert ref.op.node_def.attr["dtype"] == sl.float32
    # other ops report their own type
    c = sl.constant(1.0, name="c")
    assert c.op.node_def.op == c.op.type == "Const"


def test_ref_value_initial_value_constraint():
    def constraint(x):
        return sl.clip_by_value(x, 0.0, 1.0)

    v = sl.Variable([1.0, 2.0], name="v", constraint=constraint)
    assert v.constraint is constraint
    assert v.initial_value.dtype == sl.float32
    assert v._ref().dtype == sl.float32 and v._ref().shape.as_list() == [2]
    assign = v.assign([5.0, 6.0])
    with sl.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_allclose(sess.run(v.initial_value), [1.0, 2.0], rtol=1e-6)
        np.testing.assert_allclose(sess.run(v._ref()), [1.0, 2.0], rtol=1e-6)
        sess.run(assign)
        np.testing.assert_allclose(sess.run(v.value()), [5.0, 6.0], rtol=1e-6)
        np.testing.assert_allclose(sess.run(v.constraint(v.value())), [1.0, 1.0], rtol=1e-6)


def test_to_proto_from_proto_round_trip():
    with sl.name_scope("scope"):
        v = sl.Variable([1.0, 2.0], name="v", trainable=False)
    r = sl.Variable(3.0, name="r", use_resource=True)
    proto = v.to_proto()
    assert proto.variable_name == "scope/v:0"
    assert proto.initializer_name == v.initializer.name
    assert proto.snapshot_name == v._ref().name
    assert proto.trainable is False and proto.is_resource is False
    w = sl.Variable.from_proto(proto)
    assert type(w) is sl.Variable
    assert w.name == v.name and w.op is v.op and w.initializer is v.initializer
    assert not w.trainable
    rr = sl.Variable(variable_def=r.to_proto())
    assert isinstance(rr, sl.ResourceVariable) and rr.op is r.op
    # export and import scopes strip and add the prefix, as TF1
    scoped = v.to_proto(export_scope="scope")
    assert scoped.variable_name == "v:0"
    assert r.to_proto(export_scope="scope") is None
    again = sl.Variable.from_proto(scoped, import_scope="scope")
    assert again.op is v.op
    # the serialised form reads back
    parsed = sl.VariableDef.FromString(proto.SerializeToString())
    assert parsed == proto
    with sl.Session() as sess:
        sess.run(w.initializer)
        np.testing.assert_allclose(sess.run(v), [1.0, 2.0], rtol=1e-6)
        sess.run(rr.initializer)
        assert sess.run(r) == 3.0


def test_from_proto_names_what_is_missing():
    proto = sl.VariableDef("nope:0", "nope/init:0", "nope/Assign", "nope/read:0")
    with pytest.raises(KeyError, match="nope"):
        sl.Variable.from_proto(proto)
    with pytest.raises(TypeError, match="VariableDef"):
        sl.Variable.from_proto({"variable_name": "v:0"})


def test_from_proto_in_an_imported_meta_graph():
    with sl.Graph().as_default() as g1:
        v = sl.Variable([[1.0, 2.0]], name="w")
        proto = v.to_proto()
        meta = sl.train.export_meta_graph()
    with sl.Graph().as_default():
        sl.train.import_meta_graph(meta, import_scope="imported")
        w = sl.Variable.from_proto(proto, import_scope="imported")
        assert w.name == "imported/w:0"
        with sl.Session() as sess:
            sess.run(w.initializer)
            np.testing.assert_allclose(sess.run(w.value()), [[1.0, 2.0]], rtol=1e-6)
    del g1


def test_custom_gradient_with_variables():
    # TF1's gradients_test.testCustomGradientWithVariables
    @sl.custom_gradient
    def F(x):  # noqa: N802  (TF1's test names it so)
        out = sl.layers.dense(x, 3, use_bias=False)

        def Grad(out_grad, variables=None):  # noqa: N802
            assert len(variables) == 1
            grads = sl.gradients(out, [x, variables[0]], grad_ys=out_grad)
            return grads[0], [sl.ones((4, 3))]

        return out, Grad

    with sl.Graph().as_default():
        x = sl.ones((2, 4))
        with sl.variable_scope("f", use_resource=True) as vs:
            y = F(x)
            all_vars = vs.global_variables()
            assert len(all_vars) == 1
        grads = sl.gradients(y, [x, all_vars[0]])
        for g in grads:
            assert g is not None
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            dw = sess.run(sl.reduce_sum(grads[1]))
            assert dw == 12.0


def test_custom_gradient_variable_read_inside_gets_gradient():
    # a variable created outside and read inside the function: get_dependent_variables
    v = sl.Variable(3.0, use_resource=True)

    @sl.custom_gradient
    def scale(x):
        def grad(dy, variables):
            assert variables == [v]
            return dy * 2.0, [dy * 10.0]

        return x * v.value(), grad

    x = sl.constant(1.5)
    dx, dv = sl.gradients(scale(x), [x, v])
    with sl.Session() as sess:
        sess.run(v.initializer)
        assert sess.run([dx, dv]) == [2.0, 10.0]
