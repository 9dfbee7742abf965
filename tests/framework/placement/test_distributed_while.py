"""sl.while_loop split across devices (whitepaper §6, distributed loops): each device holding a
cut edge inside a loop runs a control loop fed with the predicate, nested loops stack them, and
values, gradients and trip counts equal those of the same graph on one device."""

import numpy as np
import pytest

import sluice as sl

from .split import ENGINES, by_device, on, run_built

C = np.array([1.0, 2.0, 3.0])
X0 = np.array([0.3, -0.7, 1.1])


def body_on_another_device(split: bool, parallel_iterations: int = 10):
    """Loop variables and predicate on cpu:0; the body's arithmetic on cpu:1, using a value `c`
    captured from cpu:0. Returns the placeholders n and x0, and the fetches
    (i, x, dx/dx0, dx/dc)."""
    n = sl.placeholder(sl.int32, [], name="n")
    x0 = sl.placeholder(sl.float64, [3], name="x0")
    with on("/cpu:0", split):
        c = sl.constant(C)

        def body(i, x):
            with on("/cpu:1", split):
                x = x * 0.99 + 0.05 * sl.sin(x * c)
            return i + 1, x

        i, x = sl.while_loop(
            lambda i, x: i < n, body, [sl.constant(0), x0], parallel_iterations=parallel_iterations
        )
    grad_x0, grad_c = sl.gradients(sl.reduce_sum(x), [x0, c])
    return n, x0, (i, x, grad_x0, grad_c)


# Each engine that runs a multi-device graph, and parallel_iterations 1 and 10, for 0, 1 and
# many iterations (not every product: a 200-iteration run with its gradient takes ~1 s).
@pytest.mark.parametrize(
    "iterations, parallel_iterations, engine",
    [
        (0, 1, "auto"),
        (0, 10, "interpreted"),
        (1, 1, "interpreted"),
        (1, 10, "auto"),
        (200, 1, "interpreted"),
        (200, 10, "auto"),
    ],
)
def test_body_on_another_device_equals_one_device(iterations, parallel_iterations, engine):
    def build(split):
        n, x0, fetches = body_on_another_device(split, parallel_iterations)
        return fetches, {n: iterations, x0: X0}

    i, x, grad_x0, grad_c = run_built(build, split=True, engine=engine)
    want_i, want_x, want_grad_x0, want_grad_c = run_built(build, split=False, engine="interpreted")
    assert i == want_i == iterations
    np.testing.assert_allclose(x, want_x, rtol=1e-9)
    np.testing.assert_allclose(grad_x0, want_grad_x0, rtol=1e-6)
    np.testing.assert_allclose(grad_c, want_grad_c, rtol=1e-6, atol=1e-12)
    if iterations == 0:
        np.testing.assert_array_equal(x, X0)
        np.testing.assert_array_equal(grad_x0, np.ones(3))


def predicate_device_without_cut_edges(split: bool):
    """i and the predicate on cpu:0; x's loop (its Enter, Merge, Switch, NextIteration and Exit
    follow its initial value) and the body's arithmetic on cpu:1: nothing computed inside the
    loop comes back to cpu:0."""
    n = sl.placeholder(sl.int32, [], name="n")
    x0 = sl.placeholder(sl.float64, [], name="x0")
    with on("/cpu:0", split):
        i0 = sl.constant(0)
    with on("/cpu:1", split):
        x_init = sl.identity(x0)

    def body(i, x):
        with on("/cpu:1", split):
            x = sl.sin(x) * 0.5 + 1.0
        return i + 1, x

    _, x = sl.while_loop(lambda i, x: i < n, body, [i0, x_init])
    return n, x0, x


def forward_of_body_on_another_device():
    n, x0, (_, x, _, _) = body_on_another_device(split=True)
    return x, {n: 5, x0: X0}


def forward_of_predicate_alone():
    n, x0, x = predicate_device_without_cut_edges(split=True)
    return x, {n: 5, x0: 0.3}


# (sends, recvs, control loops) per device, for the forward loop alone. A device gets a control
# loop for each loop with a cut edge into it inside that loop, unless it holds one of the loop's
# own Merges, which fires once per iteration as the control loop's would; one Send/Recv pair per
# (tensor or control source, destination). The body pivot's control edge (the body's constants
# depend on it, as TF1 builds them) is never cut: the destination's loop Switch or control loop
# Switch gives the same signal from the predicate.
#   body on another device: cpu:0 sends cpu:1 the predicate (for cpu:1's control loop and x's
#     ops there), x's value in the body (used twice: one pair) and c (into its Enter, placed
#     with its consumer on cpu:1; a pair outside the loop): 3. cpu:1 sends the new x back for
#     its NextIteration on cpu:0: 1, inside the loop, triggered by cpu:0's own loop Merges.
#   predicate alone: cpu:0 sends the predicate; x's Merge on cpu:1 triggers its Recv there.
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "build, expected",
    [
        (forward_of_body_on_another_device, {"CPU:0": (3, 1, 0), "CPU:1": (1, 3, 1)}),
        (forward_of_predicate_alone, {"CPU:0": (1, 0, 0), "CPU:1": (0, 1, 0)}),
    ],
)
def test_control_loops_per_partition(build, expected, engine):
    x, feeds = build()
    metadata = sl.RunMetadata()
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        sess.run(x, feeds, run_metadata=metadata)
    got = {d: (s.sends, s.recvs, s.control_loops) for d, s in by_device(metadata).items()}
    assert got == expected


def test_predicate_values_sent_each_iteration():
    # The frame leader cpu:0 sends the predicate once per iteration and once more (False) to end
    # the loop: 5 + 1 values for 5 iterations (the pivot's control edge is not sent: cpu:1's
    # Switch of x stands in for it).
    n, x0, x = predicate_device_without_cut_edges(split=True)
    metadata = sl.RunMetadata()
    with sl.Session() as sess:
        sess.run(x, {n: 5, x0: 0.3}, run_metadata=metadata)
    assert by_device(metadata)["CPU:0"].values_sent == 6


def nested_loops(split: bool):
    """An outer loop on cpu:0; in its body, something on cpu:1 (outer-loop nodes only) and an
    inner loop on cpu:0 whose body computes on cpu:2."""
    m = sl.placeholder(sl.int32, [], name="m")
    acc0 = sl.placeholder(sl.float64, [2], name="acc0")
    with on("/cpu:0", split):

        def outer_body(j, acc):
            with on("/cpu:1", split):
                s = acc * 0.5 + 1.0

            def inner_body(k, y):
                with on("/cpu:2", split):
                    y = sl.sin(y) + 0.5 * y
                return k + 1, y

            _, y = sl.while_loop(lambda k, y: k < 3, inner_body, [sl.constant(0), s])
            return j + 1, y + 0.1 * s

        _, acc = sl.while_loop(lambda j, acc: j < m, outer_body, [sl.constant(0), acc0])
    grad = sl.gradients(sl.reduce_sum(acc * acc), acc0)[0]
    return m, acc0, acc, grad


ACC0 = np.array([0.4, -1.3])


@pytest.mark.parametrize(
    "outer_iterations, engine",
    [
        (0, "auto"),
        (1, "interpreted"),
        (4, "auto"),
    ],
)
def test_nested_loops_across_three_devices_equal_one_device(outer_iterations, engine):
    def build(split):
        m, acc0, acc, grad = nested_loops(split)
        return (acc, grad), {m: outer_iterations, acc0: ACC0}

    acc, grad = run_built(build, split=True, engine=engine)
    want_acc, want_grad = run_built(build, split=False, engine="interpreted")
    np.testing.assert_allclose(acc, want_acc, rtol=1e-9)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-6)


def test_nested_loops_stack_control_loops_only_where_inner_nodes_are():
    # cpu:1 holds outer-body nodes only (it receives acc, sends s): no control loop, its
    # iterations are made by the values cpu:0 sends (`partitioner.SenderDriven`). cpu:2 holds
    # the inner body: it receives y each inner iteration, so an inner control loop stacked on
    # an outer one. cpu:0 receives s (outer) and the inner body's result (inner), but holds
    # both loops' own Merges, which trigger its Recvs: no control loop.
    m, acc0, acc, _ = nested_loops(split=True)
    metadata = sl.RunMetadata()
    with sl.Session() as sess:
        sess.run(acc, {m: 3, acc0: ACC0}, run_metadata=metadata)
    loops = {d: s.control_loops for d, s in by_device(metadata).items()}
    assert loops == {"CPU:0": 0, "CPU:1": 0, "CPU:2": 2}


def cond_inside_loop(split: bool):
    """Loop variables on cpu:0; each iteration a cond on i's parity picks a branch on cpu:1 or
    on cpu:2."""
    n = sl.placeholder(sl.int32, [], name="n")
    x0 = sl.placeholder(sl.float64, [], name="x0")
    with on("/cpu:0", split):

        def body(i, x):
            def even():
                with on("/cpu:1", split):
                    return sl.sin(x) * 2.0

            def odd():
                with on("/cpu:2", split):
                    return x * x * 0.5 + 0.25

            return i + 1, sl.cond(sl.equal(i % 2, 0), even, odd)

        _, x = sl.while_loop(lambda i, x: i < n, body, [sl.constant(0), x0])
    grad = sl.gradients(x, x0)[0]
    return n, x0, x, grad


@pytest.mark.parametrize(
    "iterations, engine",
    [
        (0, "interpreted"),
        (1, "auto"),
        (2, "interpreted"),
        (7, "auto"),
    ],
)
def test_cond_inside_a_distributed_loop_equals_one_device(iterations, engine):
    def build(split):
        n, x0, x, grad = cond_inside_loop(split)
        return (x, grad), {n: iterations, x0: 0.4}

    metadata = sl.RunMetadata()
    x, grad = run_built(build, split=True, engine=engine, metadata=metadata)
    want_x, want_grad = run_built(build, split=False, engine="interpreted")
    np.testing.assert_allclose(x, want_x, rtol=1e-9)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-6)
    assert {"CPU:0", "CPU:1", "CPU:2"} <= set(by_device(metadata))


def interleaved_recurrence(split: bool):
    """i's loop and predicate on cpu:0, i * i on cpu:2, and x's loop on cpu:1 with
    x <- (31 x + i * i) mod 1000003: i runs ahead of x by up to parallel_iterations iterations,
    so a value of one iteration meeting another's gives a different x."""
    n = sl.placeholder(sl.int64, [], name="n")
    with on("/cpu:0", split):
        i0 = sl.constant(0, sl.int64)
    with on("/cpu:1", split):
        x_init = sl.constant(1, sl.int64)

    def body(i, x):
        with on("/cpu:2", split):
            square = i * i
        with on("/cpu:1", split):
            x = (x * 31 + square) % 1000003
        return i + 1, x

    _, x = sl.while_loop(lambda i, x: i < n, body, [i0, x_init], parallel_iterations=10)
    return n, x


@pytest.mark.parametrize("engine", ENGINES)
def test_iterations_in_flight_never_mix(engine):
    expected = 1
    for i in range(500):
        expected = (expected * 31 + i * i) % 1000003
    n, x = interleaved_recurrence(split=True)
    metadata = sl.RunMetadata()
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        assert sess.run(x, {n: 500}, run_metadata=metadata) == expected
    assert set(by_device(metadata)) == {"CPU:0", "CPU:1", "CPU:2"}
