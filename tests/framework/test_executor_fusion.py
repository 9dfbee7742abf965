"""Fused groups in the interpreted engine: same values, same dead tensors, same kernel calls.

A Plan fuses convex runs of pure ops of one frame into groups (`executor_fusion`); every graph
here runs with and without fusion and must give identical results, node counts included.
"""

import numpy as np
import pytest

import sluice as sl
from sluice.framework.interpreter.executor import DEAD, Executor, Plan
from sluice.framework.interpreter.plan import kernel_cache
from sluice.framework.interpreter.stack_memory import StackMemory
from sluice.framework.ops.control.control_flow_ops import switch
from sluice.framework.prune import prune
from sluice.framework.session import SessionState


def run_plan(fetches, feeds=None, fuse=True):
    """Runs fetches through a fresh Plan, returning (plan, executor, values with DEAD kept)."""
    feeds = feeds or {}
    plan = Plan(prune(list(fetches), [], list(feeds)), fuse=fuse)
    state = SessionState()
    state.stack_memory = StackMemory(None)
    executor = Executor(plan, state)
    return plan, executor, executor.run([np.asarray(v) for v in feeds.values()])


def assert_fused_equals_plain(fetches, feeds=None):
    """Runs with and without fusion; both give the same values and count the same ops run.
    Returns the fused plan and values."""
    plan, fused, values = run_plan(fetches, feeds)
    _, plain, expected = run_plan(fetches, feeds, fuse=False)
    assert fused.nodes_run == plain.nodes_run
    for got, want in zip(values, expected, strict=True):
        if want is DEAD:
            assert got is DEAD
        else:
            assert got is not DEAD
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
            assert np.asarray(got).dtype == np.asarray(want).dtype
    assert_groups_are_convex(plan)
    return plan, values


def assert_groups_are_convex(plan):
    """No path leaves a group and comes back into it (loop back edges excepted)."""
    consumers = {op: [] for op in plan.nodes}
    for op in plan.nodes:
        for producer in [t.op for t in op.inputs] + list(op.control_inputs):
            if producer in consumers and producer.type != "NextIteration":
                consumers[producer].append(op)
    for group in plan.groups:
        inside = set(group.ops)
        seen = set()
        stack = [c for op in group.ops for c in consumers[op] if c not in inside]
        while stack:
            op = stack.pop()
            if op in seen:
                continue
            seen.add(op)
            assert op not in inside, f"a path leaves {group.ops[0].name}'s group and comes back"
            stack.extend(consumers[op])


def group_of(plan, name):
    return next(g for g in plan.groups if any(op.name == name for op in g.ops))


def test_a_loop_body_runs_as_one_group():
    # W5 of shared/WORKLOADS.md: (i, x) -> (i + 1, x * 0.999 + 1.0) while i < N.
    limit = sl.placeholder(sl.int32, [])
    i, x = sl.while_loop(
        lambda i, x: i < limit,
        lambda i, x: (i + 1, x * 0.999 + 1.0),
        (sl.constant(0), sl.constant(0.0)),
    )
    plan, (i_value, x_value) = assert_fused_equals_plain([i, x], {limit: 50})
    assert int(i_value) == 50
    expected = np.float32(0.0)
    for _ in range(50):
        expected = expected * np.float32(0.999) + np.float32(1.0)
    assert x_value == expected
    body = group_of(plan, "while/mul")  # `x * 0.999`: TF1 names it "mul"
    assert {op.type for op in body.ops} == {"Identity", "Const", "AddV2", "Mul"}
    assert len(body.ops) == 10


@pytest.mark.parametrize("n", [0, 1, 7])
def test_cond_inside_a_loop_keeps_dead_branches_dead(n):
    limit = sl.placeholder(sl.int32, [])

    def body(i, x):
        x = sl.cond(sl.equal(i % 2, 0), lambda: x * 2.0 + 1.0, lambda: x - 3.0 * x)
        return i + 1, x

    i, x = sl.while_loop(lambda i, x: i < limit, body, (sl.constant(0), sl.constant(1.0)))
    plan, (_, got) = assert_fused_equals_plain([i, x], {limit: n})
    expected = 1.0
    for k in range(n):
        expected = expected * 2.0 + 1.0 if k % 2 == 0 else expected - 3.0 * expected
    assert float(got) == expected
    assert plan.groups


def test_a_group_with_some_inputs_dead_computes_only_what_the_live_ones_reach():
    _, dead_side = switch(sl.constant(1.0), sl.constant(False))
    _, live_side = switch(sl.constant(2.0), sl.constant(True))
    u = live_side + live_side  # live
    v = dead_side * u  # dead: one input is dead
    w = u * u  # live
    plan, values = assert_fused_equals_plain([u, v, w])
    assert [float(values[0]), values[1], float(values[2])] == [4.0, DEAD, 16.0]
    group = group_of(plan, u.op.name)
    assert {u.op, v.op, w.op} <= set(group.ops)


def test_a_member_on_a_dead_path_never_runs_its_kernel():
    x = sl.placeholder(sl.float32, [64])  # large enough for the device kernel, not a host one
    p = sl.placeholder(sl.bool, [])
    _, t = switch(x, p)
    y = sl.tanh(t)
    z = y * 2.0
    ran = []
    original = y.op.op_def.kernel

    def spy(*args):
        ran.append(True)
        return original(*args)

    kernel_cache[y.op] = spy
    ones = np.ones(64, np.float32)
    _, _, values = run_plan([z], {x: ones, p: False})
    assert values == [DEAD] and ran == []
    _, _, values = run_plan([z], {x: ones, p: True})
    np.testing.assert_allclose(values[0], np.tanh(ones) * 2.0, rtol=1e-6)
    assert ran == [True]


def test_ops_joined_through_a_control_flow_op_are_not_fused_together():
    # x feeds y directly and through a Switch: fusing x and y would make y wait on itself.
    x = sl.constant(3.0) + 1.0
    _, t = switch(x, sl.constant(True))
    y = t * x
    plan, (value,) = assert_fused_equals_plain([y])
    assert float(value) == 16.0
    assert not any({x.op, y.op} <= set(g.ops) for g in plan.groups)


def test_fetched_members_and_fed_inputs_of_a_group():
    a = sl.placeholder(sl.float32, [3])
    b = sl.placeholder(sl.float32, [3])
    s = a + b
    out = sl.tanh(s * a) - b
    plan, (s_value, _) = assert_fused_equals_plain(
        [s, out], {a: np.float32([1, 2, 3]), b: np.float32([0.5, -1, 2])}
    )
    np.testing.assert_allclose(s_value, [1.5, 1, 5])
    assert group_of(plan, out.op.name) is group_of(plan, s.op.name)


def test_nested_loops_with_a_loop_constant_and_vectors():
    v = sl.constant(np.linspace(-1, 1, 32).astype(np.float32))

    def outer(i, acc):
        def inner(j, a):
            return j + 1, sl.tanh(a * 0.5 + v)

        _, acc = sl.while_loop(lambda j, a: j < i, inner, (sl.constant(0), acc))
        return i + 1, acc + 1.0

    _, result = sl.while_loop(lambda i, acc: i < 4, outer, (sl.constant(0), sl.zeros([32])))
    assert_fused_equals_plain([result])


@pytest.mark.parametrize("parallel_iterations", [1, 10])
def test_loop_gradients_through_stacks(parallel_iterations):
    x = sl.placeholder(sl.float32, [4])
    _, y = sl.while_loop(
        lambda i, y: i < 5,
        lambda i, y: (i + 1, sl.sin(y) * x),
        (sl.constant(0), x),
        parallel_iterations=parallel_iterations,
    )
    (grad,) = sl.gradients(sl.reduce_sum(y), [x])
    assert_fused_equals_plain([y, grad], {x: np.float32([0.1, 0.5, -0.3, 1.2])})


def test_a_failing_member_is_named_in_the_error():
    x = sl.placeholder(sl.float32, [None])
    y = sl.reshape(x * 2.0, [3, -1]) + 1.0
    plan, _, _ = run_plan([y], {x: np.ones(6, np.float32)})
    assert any(y.op.inputs[0].op in g.ops for g in plan.groups)
    with pytest.raises(sl.errors.InvalidArgumentError, match="Reshape"):
        run_plan([y], {x: np.ones(7, np.float32)})


def test_small_host_values_come_back_as_arrays():
    c = sl.constant(2.5)
    with sl.Session(config=sl.SessionConfig(engine="interpreted")) as sess:
        value = sess.run(c * c)
        assert isinstance(value, np.ndarray) and value.dtype == np.float32 and value == 6.25
        fed = sess.run(c, {c: 1.5})
        assert isinstance(fed, np.ndarray) and fed == 1.5
