"""SessionConfig(check_graph=True): a graph the builders made passes; the same graph broken the
way a builder bug would break it (an input rewired, an Exit dropped, a frame mislabelled) is an
InternalError naming the op, before anything runs."""

import pytest

import sluice as sl
from sluice.framework.control_flow import checks
from sluice.framework.ir import registry
from sluice.framework.ir.graph import Operation, Tensor

CHECKED = sl.SessionConfig(check_graph=True)


def ops_of(graph, op_type, inside=None):
    """The ops of one type, in creation order (those whose name contains `inside`)."""
    return [
        op
        for op in graph.get_operations()
        if op.type == op_type and (inside is None or inside in op.name)
    ]


def run_checked(fetches, feed_dict=None):
    with sl.Session(config=CHECKED) as sess:
        return sess.run(fetches, feed_dict)


def refused(fetches, op, *words):
    """Running `fetches` with checks on fails at `op`, with `words` in the message."""
    with pytest.raises(sl.errors.InternalError) as info:
        run_checked(fetches)
    message = str(info.value)
    assert info.value.op is op, message
    assert repr(op.name) in message and "bug in a graph builder" in message
    for word in words:
        assert word in message
    return message


def a_loop():
    """i, total = 0, 0; while i < 3: i, total = i + 1, total + x * i -- and its gradient."""
    x = sl.constant(2.0, name="x")
    i, total = sl.while_loop(
        lambda i, t: i < 3,
        lambda i, t: (i + 1, t + x * sl.cast(i, sl.float32)),
        [sl.constant(0), sl.constant(0.0)],
        name="loop",
    )
    return x, i, total


def a_cond():
    x = sl.constant(3.0, name="x")
    p = sl.placeholder_with_default(True, [], name="p")
    y = sl.cond(p, lambda: x * 2.0, lambda: x - 1.0, name="branch")
    return x, y


# -- what the builders make passes ------------------------------------------------------------
def test_loops_conds_and_their_gradients_pass():
    x, i, total = a_loop()
    _, y = a_cond()
    (dx,) = sl.gradients(total, [x])
    inner = sl.while_loop(
        lambda j, s: j < 2,
        lambda j, s: (j + 1, s + sl.cond(s > 1.0, lambda: s * x, lambda: s + x)),
        [sl.constant(0), sl.constant(1.0)],
    )[1]
    (d_inner,) = sl.gradients(inner, [x])
    values = run_checked([i, total, y, dx, inner, d_inner])
    assert values[:4] == [3, 6.0, 6.0, 3.0]


def test_the_check_runs_once_per_fetch_set_and_not_when_off(monkeypatch):
    calls = []
    real = checks.check_ops
    monkeypatch.setattr(checks, "check_ops", lambda *a, **k: calls.append(1) or real(*a, **k))
    _, _, total = a_loop()
    with sl.Session(config=CHECKED) as sess:
        sess.run(total)
        sess.run(total)
        assert len(calls) == 1
    with sl.Session(config=CHECKED) as sess:
        sess.run(total)  # another session: the graph's ops are checked already
    assert len(calls) == 1
    with sl.Session(config=sl.SessionConfig(check_graph=False)) as sess:
        sess.run(total + 1.0)
    assert len(calls) == 1


def test_the_option_defaults_to_the_environment():
    assert sl.SessionConfig(check_graph=False).check_graph is False
    # tests/conftest.py sets SLUICE_CHECK_GRAPH=1 for the suite
    assert sl.SessionConfig().check_graph is checks.default_enabled() is True


# -- every op: producers, dtypes --------------------------------------------------------------
def test_a_producer_of_another_graph():
    y = sl.constant(1.0) + 1.0
    other = sl.Graph()
    with other.as_default():
        stranger = sl.constant(5.0, name="stranger")
    g = y.graph
    op = Operation(g, registry.get_op_def("Identity"), "importer_bug", [stranger], [], {})
    g.add_built_op(op, [Tensor(op, 0, stranger.dtype, stranger.shape)])
    refused(op.outputs[0], op, "another graph", "stranger")


def test_a_producer_no_longer_in_the_graph():
    a = sl.constant(1.0, name="a")
    b = sl.identity(a, name="b")
    c = sl.identity(b, name="c")
    a.graph.discard_built_ops([b.op])
    refused(c, c.op, "not among its ops")


def test_a_control_input_no_longer_in_the_graph():
    a = sl.constant(1.0, name="a")
    with sl.control_dependencies([a.op]):
        c = sl.constant(2.0, name="c")
    a.graph.discard_built_ops([a.op])
    refused(c, c.op, "control input 'a'")


def test_an_input_of_another_dtype_than_the_op_infers():
    x = sl.constant(1.5, name="x")
    y = sl.identity(x, name="y")
    z = y * 2.0
    y.op.update_input(0, sl.constant(3, name="an_int"))
    refused(z, y.op, "float32", "int32")


def test_an_input_the_inference_rule_rejects():
    a = sl.constant([1.0, 2.0], name="a")
    total = sl.add(a, a, name="total")
    total.op.update_input(1, sl.constant([1, 2, 3], name="three_ints"))
    refused(total, total.op, "rejects its inputs")


# -- loops ------------------------------------------------------------------------------------
def test_an_enter_with_another_frame_name():
    _, _, total = a_loop()
    enter = ops_of(total.graph, "Enter", "loop/")[0]
    enter.set_attr("frame_name", "elsewhere")
    refused(total, enter, "'loop'", "'elsewhere'")


def test_two_loops_with_one_frame_name():
    _, _, first = a_loop()
    second = sl.while_loop(lambda j: j < 2, lambda j: j + 1, [sl.constant(0)], name="other")
    second.op.control_flow_context.name = "loop"
    with pytest.raises(sl.errors.InternalError, match="share one frame name"):
        run_checked([first, second])


def test_a_dropped_exit():
    _, i, total = a_loop()
    g = total.graph
    exit_op = total.op
    switch = exit_op.inputs[0].op
    g.discard_built_ops([exit_op])
    refused(i, switch, "without its Exit", "no consumer")


def test_an_exit_on_the_true_side():
    _, _, total = a_loop()
    exit_op = total.op
    switch = exit_op.inputs[0].op
    exit_op.update_input(0, switch.outputs[1])
    refused(total, exit_op, "false side")


def test_a_merge_without_its_back_edge():
    _, _, total = a_loop()
    merge = ops_of(total.graph, "Merge", "loop/")[1]
    merge.update_input(1, merge.inputs[0])
    refused(total, merge, "back edge", "NextIteration")


def test_a_next_iteration_outside_a_frame():
    _, _, total = a_loop()
    x, y = a_cond()
    nxt = ops_of(total.graph, "NextIteration", "loop/")[1]
    nxt.control_flow_context = ops_of(x.graph, "Mul", "branch/")[0].control_flow_context
    refused([total, y], nxt, "outside a while frame", "cond branch 'branch'")


def test_a_next_iteration_of_another_frame():
    _, _, total = a_loop()
    other = sl.while_loop(lambda j: j < 2, lambda j: j + 1, [sl.constant(0)], name="other")
    nxt = ops_of(total.graph, "NextIteration", "loop/")[1]
    nxt.control_flow_context = other.op.control_flow_context
    refused([total, other], nxt, "back edge", "while frame 'other'")


def test_a_loop_built_by_hand_from_the_raw_ops_is_checked_as_ops():
    """TF1 lets a loop be built from the raw primitives, in no context (its frame is the
    Enter's frame_name): tests/framework/test_primitives.py runs one. Its ops are checked as
    ops (producers, dtypes), not as a builder's loop."""
    from sluice.framework.ops.core import core_ops

    attrs = {"frame_name": "by_hand", "is_constant": False, "parallel_iterations": 1}
    enter = core_ops.apply_op("Enter", [sl.constant(0)], attrs).outputs[0]
    merge = core_ops.apply_op("Merge", [enter, enter]).outputs[0]
    pred = core_ops.apply_op("LoopCond", [merge < 3]).outputs[0]
    exit_side, body = core_ops.apply_op("Switch", [merge, pred]).outputs
    nxt = core_ops.apply_op("NextIteration", [body + 1]).outputs[0]
    merge.op.update_input(1, nxt)
    done = core_ops.apply_op("Exit", [exit_side]).outputs[0]
    checks.check_ops(done.graph, done.graph.get_operations())  # raises nothing


def test_a_switch_that_is_not_on_the_loop_cond():
    _, _, total = a_loop()
    switch = total.op.inputs[0].op
    loop_cond = switch.inputs[1].op
    switch.update_input(1, loop_cond.inputs[0])  # the predicate before its LoopCond
    message = refused(total, total.op, "LoopCond")
    assert switch.name in message


def test_a_body_op_reading_an_outside_value_directly():
    x, _, total = a_loop()
    body_mul = next(op for op in ops_of(x.graph, "Mul", "loop/") if op.inputs[0].op.type == "Enter")
    body_mul.update_input(0, x)
    refused(total, body_mul, "from outside it directly", "Enter")


def test_a_loop_value_read_after_the_loop():
    x, _, total = a_loop()
    body_mul = ops_of(x.graph, "Mul", "loop/")[0]
    after = sl.identity(total, name="after")
    after.op.update_input(0, body_mul.outputs[0])
    refused(after, after.op, "read outside it", "Exit")


def test_a_control_edge_out_of_a_loop():
    x, _, total = a_loop()
    body_mul = ops_of(x.graph, "Mul", "loop/")[0]
    after = sl.identity(total, name="after")
    after.op.add_control_input(body_mul)
    refused(after, after.op, "another while frame")


# -- conds ------------------------------------------------------------------------------------
def test_a_branch_op_reading_an_outside_value_directly():
    x, y = a_cond()
    doubled = ops_of(x.graph, "Mul", "branch/")[0]
    assert doubled.inputs[0].op.type == "Switch"
    doubled.update_input(0, x)
    refused(y, doubled, "cond branch 'branch'", "Switch of that cond")


def test_a_branch_op_reading_the_side_its_branch_never_takes():
    x, y = a_cond()
    doubled = ops_of(x.graph, "Mul", "branch/")[0]
    switch = doubled.inputs[0].op
    doubled.update_input(0, switch.outputs[0])  # the true branch reads the false side
    refused(y, doubled, "never takes")


def test_a_merge_of_two_conds():
    x, y = a_cond()
    p = sl.placeholder_with_default(False, [], name="q")
    other = sl.cond(p, lambda: x + 10.0, lambda: x - 10.0, name="other")
    merge = y.op
    merge.update_input(1, other.op.inputs[1])
    refused(y, merge, "two branches of one cond")


def test_a_branch_whose_pivot_is_not_a_cond_switch():
    x, y = a_cond()
    doubled = ops_of(x.graph, "Mul", "branch/")[0]
    doubled.control_flow_context.pivot = x
    refused(y, x.op, "pivot of cond branch 'branch'", "Switch(pred, pred)")


def test_a_broken_graph_runs_unchecked_when_the_check_is_off():
    x = sl.constant(1.5, name="x")
    y = sl.identity(x, name="y")
    y.op.update_input(0, sl.constant(3, name="an_int"))  # y says float32, gets an int32
    with sl.Session(config=sl.SessionConfig(check_graph=False)) as sess:
        assert sess.run(y) == 3
