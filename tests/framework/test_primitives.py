"""Each control-flow primitive's rule on tagged values, including dead-signal propagation."""

import numpy as np
import pytest

import sluice as sl
from sluice.framework.interpreter.executor import DEAD, Executor, Plan
from sluice.framework.interpreter.plan import kernel_cache
from sluice.framework.ops.control.control_flow_ops import merge, switch
from sluice.framework.ops.core.core_ops import apply_op
from sluice.framework.prune import prune
from sluice.framework.session import SessionState


def run_raw(fetches, feeds=None):
    """Runs without the Session's dead-fetch check, returning DEAD markers as they are."""
    feeds = feeds or {}
    plan = Plan(prune(list(fetches), [], list(feeds)))
    return Executor(plan, SessionState()).run([np.asarray(v) for v in feeds.values()])


@pytest.mark.parametrize("pred", [True, False])
def test_switch_sends_data_to_one_side_and_dead_to_the_other(pred):
    x = sl.constant(3.0)
    f, t = switch(x, sl.constant(pred))
    out_f, out_t = run_raw([f, t])
    live, dead = (out_t, out_f) if pred else (out_f, out_t)
    assert float(live) == 3.0
    assert dead is DEAD


def test_dead_input_makes_ordinary_ops_dead_without_running_their_kernel():
    f, t = switch(sl.constant(2.0), sl.constant(False))
    y = sl.identity(t)
    calls = []
    kernel_cache[y.op] = lambda *a: calls.append(a)
    (value,) = run_raw([y])
    assert value is DEAD
    assert calls == []


def test_dead_predicate_makes_both_switch_outputs_dead():
    _, dead_pred = switch(sl.constant(True), sl.constant(False))
    f, t = switch(sl.constant(1.0), dead_pred)
    assert run_raw([f, t]) == [DEAD, DEAD]


@pytest.mark.parametrize("pred", [True, False])
def test_merge_forwards_the_live_input_and_its_index(pred):
    f, t = switch(sl.constant(5.0), sl.constant(pred))
    value, index = merge([sl.identity(f), sl.identity(t)])
    v, i = run_raw([value, index])
    assert float(v) == 5.0
    assert int(i) == (1 if pred else 0)


def test_merge_is_dead_only_when_all_inputs_are_dead():
    _, dead_pred = switch(sl.constant(True), sl.constant(False))
    f, t = switch(sl.constant(1.0), dead_pred)
    value, index = merge([f, t])
    assert run_raw([value, index]) == [DEAD, DEAD]


def test_control_edge_from_a_dead_op_makes_the_consumer_dead():
    f, t = switch(sl.constant(1.0), sl.constant(False))
    dead_op = sl.identity(t).op
    with sl.control_dependencies([dead_op]):
        y = sl.constant(7.0)
    assert run_raw([y]) == [DEAD]


def test_enter_exit_and_next_iteration_build_a_counting_loop_by_hand():
    # i = 0; while i < 3: i = i + 1   -- wired from the primitives directly.
    attrs = {"frame_name": "hand_loop", "is_constant": False, "parallel_iterations": 10}
    enter = apply_op("Enter", [sl.constant(0)], attrs).outputs[0]
    m = merge([enter, enter])[0]
    limit = apply_op("Enter", [sl.constant(3)], dict(attrs, is_constant=True)).outputs[0]
    pred = apply_op("LoopCond", [m < limit]).outputs[0]
    one = apply_op("Enter", [sl.constant(1)], dict(attrs, is_constant=True)).outputs[0]
    f, t = switch(m, pred)
    nxt = apply_op("NextIteration", [t + one]).outputs[0]
    m.op.update_input(1, nxt)
    out = apply_op("Exit", [f]).outputs[0]
    with sl.Session() as s:
        assert s.run(out) == 3


def test_loop_constant_enter_is_seen_by_every_iteration():
    step = sl.constant(5)
    r = sl.while_loop(lambda i: i < 20, lambda i: i + step, [sl.constant(0)])
    with sl.Session() as s:
        assert s.run(r) == 20


def test_primitives_check_their_predicate():
    with pytest.raises(TypeError, match="bool"):
        switch(sl.constant(1.0), sl.constant(1))
    with pytest.raises(ValueError, match="scalar"):
        switch(sl.constant(1.0), sl.constant([True, False]))
