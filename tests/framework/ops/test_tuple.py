"""`sl.tuple`, checked as TF1's control_flow_ops_test TupleTest checks it: a list back, each
output available only after every input (and every control input) ran, None entries passed
through, Operations gated too, TF1's errors; in both engines."""

import numpy as np
import pytest

import sluice as sl

ENGINES = ["compiled", "interpreted"]


def session(engine):
    return sl.Session(config=sl.SessionConfig(engine=engine))


@pytest.mark.parametrize("engine", ENGINES)
def test_each_output_waits_for_every_input(engine):
    v = sl.Variable(0.0)
    x = sl.constant([1.0, 2.0])
    assigned = v.assign(5.0)
    gated_x, gated_assign, nothing = sl.tuple([x, assigned, None])
    assert nothing is None
    assert gated_x.op.type == "Identity" and gated_x.shape.as_list() == [2]
    with session(engine) as s:
        s.run(v.initializer)
        np.testing.assert_array_equal(s.run(gated_x), [1.0, 2.0])  # fetching x alone ...
        assert s.run(v) == 5.0  # ... ran the assignment
        assert s.run(gated_assign) == 5.0


@pytest.mark.parametrize("engine", ENGINES)
def test_control_inputs_and_operations_are_gated(engine):
    v = sl.Variable(1.0)
    increment = v.assign_add(1.0).op
    x = sl.constant(3.0)
    result = sl.tuple([x], control_inputs=[increment], name="t")
    assert isinstance(result, list) and len(result) == 1
    assert result[0].op.name.startswith("t/")
    (gated_op,) = sl.tuple([increment])
    assert isinstance(gated_op, sl.Operation)
    with session(engine) as s:
        s.run(v.initializer)
        assert s.run(result[0]) == 3.0
        assert s.run(v) == 2.0
        s.run(gated_op)
        assert s.run(v) == 3.0


def test_errors_as_tf1():
    with pytest.raises(ValueError, match="at least one Tensor"):
        sl.tuple([None])
    with pytest.raises(TypeError, match="Control input must be"):
        sl.tuple([sl.constant(1.0)], control_inputs=[3])
