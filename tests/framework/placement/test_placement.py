"""The placer as a user sees it: explicit requests, the rule for unassigned ops, colocation,
variables, impossible requests with and without soft placement, the TF1 config spellings and
the session's device list. Where ops run is read from the `log_device_placement` log."""

import re

import numpy as np
import pytest

import sluice as sl

from .split import by_device, on

FULL_NAME = "/job:localhost/replica:0/task:0/device:CPU:{}"
LOG_LINE = re.compile(r"^(\S+): \((\w+)\): (/job:localhost/replica:0/task:0/device:(\w+:\d+))$")


def logged_placement(capfd) -> dict[str, tuple[str, str]]:
    """op name -> (op type, short device) from the placement log written to stderr so far."""
    placed = {}
    for line in capfd.readouterr().err.splitlines():
        match = LOG_LINE.match(line)
        if match:
            name, op_type, _, device = match.groups()
            placed[name] = (op_type, device)
    return placed


def run_logged(fetches, feeds=None, **config):
    with sl.Session(config=sl.SessionConfig(log_device_placement=True, **config)) as sess:
        return sess.run(fetches, feeds)


def test_log_names_every_op_with_its_type_and_full_device_name(capfd):
    with sl.device("/cpu:2"):
        a = sl.constant(2.0, name="a")
    with sl.device("/job:localhost/replica:0/task:0/device:CPU:3"):
        b = sl.square(a, name="b")
    assert run_logged(b) == 4.0
    lines = capfd.readouterr().err.splitlines()
    assert f"a: (Const): {FULL_NAME.format(2)}" in lines
    assert f"b: (Square): {FULL_NAME.format(3)}" in lines
    assert len([line for line in lines if LOG_LINE.match(line)]) == 2  # one line per op


def test_explicit_requests_are_honoured_and_unassigned_ops_follow_their_inputs(capfd):
    x = sl.placeholder(sl.float32, [], name="x")
    with sl.device("/cpu:2"):
        a = sl.multiply(x, 2.0, name="a")
    b = sl.sin(a, name="b")  # no request: with its first input, on cpu:2
    with sl.device("/cpu:1"):
        c = sl.add(b, 1.0, name="c")
    d = sl.add(c, b, name="d")  # first input c: cpu:1
    with sl.device("/cpu:3"):
        k = sl.constant(5.0, name="k")  # requested: cpu:3
    e = sl.multiply(d, k, name="e")  # first input d: cpu:1
    lone = sl.constant(1.0, name="lone")  # no inputs, no requesting consumers: the default
    out = sl.add(e, lone, name="out")
    run_logged(out, {x: 0.5})
    placed = logged_placement(capfd)
    expected = {
        "a": "CPU:2",
        "b": "CPU:2",
        "c": "CPU:1",
        "d": "CPU:1",
        "k": "CPU:3",
        "e": "CPU:1",
        "lone": "CPU:0",
        "out": "CPU:1",
    }
    assert {name: placed[name][1] for name in expected} == expected


def test_a_constant_goes_where_all_its_consumers_ask(capfd):
    x = sl.placeholder(sl.float32, [], name="x")
    k = sl.constant(3.0, name="k")
    with sl.device("/cpu:3"):
        a = sl.multiply(x, k, name="a")
        b = sl.add(x, k, name="b")
    run_logged([a, b], {x: 1.0})
    assert logged_placement(capfd)["k"] == ("Const", "CPU:3")


def test_colocate_with_overrides_the_device_scope_and_follows_the_target(capfd):
    x = sl.placeholder(sl.float32, [], name="x")
    with sl.device("/cpu:3"):
        a = sl.multiply(x, 2.0, name="a")
    unplaced = sl.sin(a, name="unplaced")  # cpu:3, with its input
    with sl.device("/cpu:1"):
        with sl.colocate_with(a):
            b = sl.add(x, 1.0, name="b")  # a's request, not the scope's
        with sl.colocate_with(unplaced):
            c = sl.constant(4.0, name="c")  # no request: the group's device, cpu:3
        d = sl.add(b, c, name="d")
    run_logged([d, unplaced], {x: 1.0})
    placed = logged_placement(capfd)
    assert {name: placed[name][1] for name in ("a", "b", "c", "d")} == {
        "a": "CPU:3",
        "b": "CPU:3",
        "c": "CPU:3",
        "d": "CPU:1",
    }


def regression(split: bool):
    """A variable on cpu:1 read by a model on cpu:2 and trained with Adam."""
    x = sl.placeholder(sl.float32, [None, 2], name="x")
    y = sl.placeholder(sl.float32, [None], name="y")
    with on("/cpu:1", split):
        w = sl.Variable(np.array([0.5, -0.25], np.float32), name="w")
    with on("/cpu:2", split):
        prediction = sl.reduce_sum(w * x, axis=1)
    loss = sl.reduce_mean(sl.square(prediction - y))
    optimizer = sl.train.AdamOptimizer(0.1)
    return x, y, w, loss, optimizer.minimize(loss), optimizer


FEATURES = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]], np.float32)
TARGETS = np.array([1.0, 2.0, -1.0], np.float32)


def train_losses(split: bool, steps: int = 4):
    with sl.Graph().as_default():
        x, y, _, loss, train, _ = regression(split)
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            return [sess.run([loss, train], {x: FEATURES, y: TARGETS})[0] for _ in range(steps)]


def test_a_variable_keeps_its_reads_assigns_and_slots_on_its_device(capfd):
    x, y, w, _, train, optimizer = regression(split=True)
    with sl.Session(config=sl.SessionConfig(log_device_placement=True)) as sess:
        sess.run(sl.global_variables_initializer())
        sess.run(train, {x: FEATURES, y: TARGETS})
    placed = logged_placement(capfd)
    graph = sl.get_default_graph()
    slots = [optimizer.get_slot(w, name) for name in optimizer.get_slot_names()]
    assert len(slots) == 2  # Adam's two moments
    handles = {w.op} | {slot.op for slot in slots}
    users = [
        op
        for op in graph.get_operations()
        if any(t.op in handles for t in op.inputs) and op.name in placed
    ]
    assert {op.type for op in users} >= {"ReadVariableOp", "AssignVariableOp"}
    assert {placed[op.name][1] for op in handles | set(users)} == {"CPU:1"}


def test_training_a_variable_on_another_device_equals_one_device():
    metadata = sl.RunMetadata()
    with sl.Graph().as_default():
        x, y, _, loss, train, _ = regression(split=True)
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            sess.run(train, {x: FEATURES, y: TARGETS}, run_metadata=metadata)
    assert {"CPU:1", "CPU:2"} <= set(by_device(metadata))
    np.testing.assert_allclose(train_losses(split=True), train_losses(split=False), rtol=1e-6)


@pytest.mark.parametrize(
    "request_name, device_in_message",
    [
        ("/cpu:7", "CPU:7"),
        ("/gpu:0", "GPU:0"),
        ("/job:worker/task:1/cpu:0", "/job:worker"),
    ],
)
def test_a_device_that_does_not_exist_is_an_error_naming_op_and_device(
    request_name, device_in_message
):
    with sl.device(request_name):
        a = sl.constant(2.0, name="misplaced")
    out = a * 3.0
    with sl.Session() as sess:
        with pytest.raises(sl.errors.InvalidArgumentError) as raised:
            sess.run(out)
    assert "misplaced" in str(raised.value)
    assert device_in_message in str(raised.value)


@pytest.mark.parametrize("request_name, lands_on", [("/cpu:7", "CPU:0"), ("/gpu:0", "CPU:0")])
def test_soft_placement_runs_an_impossible_request_on_a_device_that_exists(
    capfd, request_name, lands_on
):
    with sl.device(request_name):
        a = sl.constant(2.0, name="misplaced")
    with sl.device("/cpu:2"):
        out = sl.multiply(a, 3.0, name="out")
    assert run_logged(out, allow_soft_placement=True) == 6.0
    placed = logged_placement(capfd)
    assert placed["misplaced"][1] == lands_on
    assert placed["out"][1] == "CPU:2"


def test_config_proto_maps_onto_the_session_config(capfd):
    with sl.device("/cpu:7"):
        a = sl.constant(2.0, name="misplaced")
    config = sl.ConfigProto(
        allow_soft_placement=True, log_device_placement=True, inter_op_parallelism_threads=2
    )
    with sl.Session(config=config) as sess:
        assert sess.run(a * 2.0) == 4.0
    assert logged_placement(capfd)["misplaced"] == ("Const", "CPU:0")
    with sl.Session(config=sl.ConfigProto()) as sess:
        with pytest.raises(sl.errors.InvalidArgumentError, match="misplaced"):
            sess.run(a)


def test_list_devices_names_the_four_cpus_with_tf1_full_names():
    with sl.Session() as sess:
        devices = sess.list_devices()
    assert [d.name for d in devices] == [FULL_NAME.format(i) for i in range(4)]
    assert {d.device_type for d in devices} == {"CPU"}


def test_the_compiled_engine_names_why_it_cannot_run_a_multi_device_graph():
    with sl.device("/cpu:1"):
        a = sl.constant(2.0)
    with sl.device("/cpu:2"):
        b = sl.square(a)
    with sl.Session(config=sl.SessionConfig(engine="compiled")) as sess:
        with pytest.raises(sl.errors.UnimplementedError, match="device"):
            sess.run(b)
    with sl.Session(config=sl.SessionConfig(engine="auto")) as sess:
        assert sess.run(b) == 4.0


@pytest.mark.parametrize("colocate", [True, False])
def test_colocate_gradients_with_ops_puts_each_gradient_on_its_forward_op(capfd, colocate):
    # Without the flag, gradient ops are placed by the rule for unassigned ops (with their first
    # input, or on the default device), and some land elsewhere.
    x = sl.placeholder(sl.float32, [3], name="x")
    with sl.device("/cpu:1"):
        a = sl.sin(x, name="fwd_sin")
    with sl.device("/cpu:2"):
        b = sl.multiply(a, a, name="fwd_mul")
    with sl.device("/cpu:3"):
        c = sl.reduce_sum(sl.tanh(b, name="fwd_tanh"), name="fwd_sum")
    grad = sl.gradients(c, x, colocate_gradients_with_ops=colocate)[0]
    value = np.linspace(-1, 1, 3).astype(np.float32)
    got = run_logged(grad, {x: value})
    np.testing.assert_allclose(
        got, 2 * np.sin(value) * np.cos(value) / np.cosh(np.sin(value) ** 2) ** 2, rtol=1e-5
    )
    placed = logged_placement(capfd)
    # (the sum of a fan-out's gradients goes with its first part, as TF1's _MultiDeviceAddN:
    # `a`'s two gradients both come from fwd_mul's, on cpu:2)
    forward_of = {
        name: re.match(r"gradients/(fwd_\w+?)_grad", name).group(1)
        for name in placed
        if name.startswith("gradients/fwd_") and not (colocate and name.endswith("_grad/AddN"))
    }
    assert len(forward_of) >= 8
    colocated = [placed[name][1] == placed[fwd][1] for name, fwd in forward_of.items()]
    assert all(colocated) == colocate


def test_a_loop_variables_control_flow_ops_stay_together(capfd):
    # i's initial value is on cpu:0 and x's on cpu:1; the loop is built in no device scope. Each
    # variable's Enter, Merge, Switch, NextIteration and Exit follow its initial value.
    n = sl.placeholder(sl.int32, [], name="n")
    with sl.device("/cpu:0"):
        i0 = sl.constant(0)
    with sl.device("/cpu:1"):
        x0 = sl.constant(1.0)
    with sl.device("/cpu:2"):

        def body(i, x):
            return i + 1, x * 2.0

    _, x = sl.while_loop(lambda i, x: i < n, body, [i0, x0])
    i_exit, x_exit = [op for op in sl.get_default_graph().get_operations() if op.type == "Exit"]
    assert run_logged([i_exit.outputs[0], x], {n: 3}) == [3, 8.0]
    placed = logged_placement(capfd)

    def loop_variable_ops(exit_op):
        switch = exit_op.inputs[0].op
        merge = switch.inputs[0].op
        enter, next_iteration = (t.op for t in merge.inputs)
        return [exit_op, switch, merge, enter, next_iteration]

    for exit_op, device in ((i_exit, "CPU:0"), (x.op, "CPU:1")):
        ops = loop_variable_ops(exit_op)
        assert [op.type for op in ops] == ["Exit", "Switch", "Merge", "Enter", "NextIteration"]
        assert {placed[op.name][1] for op in ops} == {device}
