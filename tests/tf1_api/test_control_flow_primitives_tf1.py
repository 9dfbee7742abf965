"""The raw control-flow primitives TF1's control_flow_ops_py_test.py builds graphs from by hand
(`gen_control_flow_ops` under TF's module path, names forwarded from `tensorflow.` to
`sluice.`), run by the interpreted engine (the compiled one lowers the loops while_loop
builds; a session of the default engine runs these interpreted)."""

import numpy as np
import pytest

import sluice as sl
from sluice.python.ops import gen_control_flow_ops


@pytest.fixture
def sess():
    with sl.Session(config=sl.SessionConfig(engine="interpreted")) as session:
        yield session


def test_enter_mul_exit(sess):
    data = sl.constant([1, 2, 3, 4, 5, 6], name="data")
    enter_data = gen_control_flow_ops.enter(data, "foo_1", False)
    five = sl.constant(5)
    enter_five = gen_control_flow_ops.enter(five, "foo_1", False)
    mul_op = sl.multiply(enter_data, enter_five)
    exit_op = gen_control_flow_ops.exit(mul_op)
    np.testing.assert_array_equal(sess.run(exit_op), [x * 5 for x in [1, 2, 3, 4, 5, 6]])


def test_loop_1(sess):
    zero = sl.constant(0)
    one = sl.constant(1)
    n = sl.constant(10)
    enter_i = gen_control_flow_ops.enter(zero, "foo", False)
    enter_one = gen_control_flow_ops.enter(one, "foo", True)
    enter_n = gen_control_flow_ops.enter(n, "foo", True)
    merge_i = gen_control_flow_ops.merge([enter_i, enter_i])[0]
    less_op = sl.less(merge_i, enter_n)
    cond_op = gen_control_flow_ops.loop_cond(less_op)
    switch_i = gen_control_flow_ops.switch(merge_i, cond_op)
    add_i = sl.add(switch_i[1], enter_one)
    next_i = gen_control_flow_ops.next_iteration(add_i)
    merge_i.op.update_input(1, next_i)
    exit_i = gen_control_flow_ops.exit(switch_i[0])
    assert sess.run(exit_i) == 10


def test_switch_merge(sess):
    data = sl.constant([1.0, 2.0])
    pred = sl.placeholder(sl.bool, [])
    out_false, out_true = gen_control_flow_ops.ref_switch(data, pred)
    merged, index = gen_control_flow_ops.merge([out_false * 2.0, out_true * 3.0])
    np.testing.assert_allclose(sess.run(merged, {pred: True}), [3.0, 6.0], rtol=1e-6)
    assert sess.run(index, {pred: False}) == 0


def test_default_engine_runs_a_hand_wired_frame():
    enter = gen_control_flow_ops.enter(sl.constant(2.0), "frame")
    one = gen_control_flow_ops.enter(sl.constant(1.0), "frame")
    out = gen_control_flow_ops.exit(enter + one)
    with sl.Session() as sess:
        assert sess.run(out) == 3.0
    with pytest.raises(ValueError, match="frame_name"):
        gen_control_flow_ops.enter(sl.constant(1.0), "")
