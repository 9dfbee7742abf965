"""CheckNumerics and the checks of ops (registry.Check) in both engines: the error names the op
and says what was wrong; a failed step leaves every variable as it was; checks inside while loops
and cond branches count only where their op runs; graphs without checks compile as before."""

import numpy as np
import pytest

import sluice as sl
from sluice.framework.compiler.step import CompiledStep

ENGINES = ["compiled", "interpreted"]


def session(engine):
    return sl.Session(config=sl.SessionConfig(engine=engine))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "value, found",
    [([1.0, np.nan], "NaN"), ([np.inf, 1.0], "Inf"), ([-np.inf, np.nan], "Inf and NaN")],
)
def test_check_numerics_names_the_op_and_what_it_found(engine, value, found):
    x = sl.placeholder(sl.float32, [2])
    y = sl.debugging.check_numerics(x * 2.0, "doubled x", name="check_x") + 1.0
    with session(engine) as s:
        np.testing.assert_array_equal(s.run(y, {x: [1.0, 2.0]}), [3.0, 5.0])
        with pytest.raises(sl.errors.InvalidArgumentError) as info:
            s.run(y, {x: value})
    assert info.value.op.name == "check_x"
    assert info.value.message == f"doubled x : Tensor had {found} values"
    assert "[[node check_x (op CheckNumerics)]]" in str(info.value)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failed_check_leaves_every_variable_as_it_was(engine):
    x = sl.placeholder(sl.float32, [3])
    w = sl.Variable([1.0, 2.0, 3.0], name="w")
    steps = sl.Variable(0, name="steps")
    loss = sl.check_numerics(sl.reduce_sum(sl.log(x) * w), "loss")
    train = sl.group(sl.train.GradientDescentOptimizer(0.1).minimize(loss), steps.assign_add(1))
    with session(engine) as s:
        s.run(sl.global_variables_initializer())
        s.run(train, {x: [1.0, 2.0, 3.0]})
        before = s.run([w, steps])
        with pytest.raises(sl.errors.InvalidArgumentError, match="loss : Tensor had NaN"):
            s.run(train, {x: [1.0, -1.0, 3.0]})
        after = s.run([w, steps])
        s.run(train, {x: [1.0, 2.0, 3.0]})  # and the session carries on
        assert s.run(steps) == after[1] + 1
    # the update depends on the failed check, so it never runs (TF1)
    np.testing.assert_array_equal(after[0], before[0])
    if engine == "compiled":  # the step is one program: nothing of it is kept
        assert after[1] == before[1]


@pytest.mark.parametrize("engine", ENGINES)
def test_sparse_cross_entropy_rejects_labels_out_of_range(engine):
    logits = sl.placeholder(sl.float32, [4, 5])
    labels = sl.placeholder(sl.int32, [4])
    loss = sl.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits, name="xent")
    with session(engine) as s:
        assert s.run(loss, {logits: np.zeros((4, 5)), labels: [0, 1, 4, 2]}).shape == (4,)
        for bad in (7, -1):
            with pytest.raises(sl.errors.InvalidArgumentError) as info:
                s.run(loss, {logits: np.zeros((4, 5)), labels: [0, 1, bad, 2]})
            assert info.value.message == (
                f"Received a label value of {bad} which is outside the valid range of [0, 5)."
            )
            assert info.value.op.name == "xent"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_check_in_a_while_loop_fails_in_the_iteration_that_overflows(engine):
    # x doubles each iteration; float32 overflows to inf after 128 doublings of 1.0
    n = sl.placeholder(sl.int32, [])

    def body(i, x):
        return i + 1, sl.check_numerics(x * 2.0, "doubling")

    _, x = sl.while_loop(lambda i, x: i < n, body, [0, sl.constant(1.0)], maximum_iterations=200)
    with session(engine) as s:
        assert s.run(x, {n: 10}) == 1024.0
        with pytest.raises(sl.errors.InvalidArgumentError, match="doubling : Tensor had Inf"):
            s.run(x, {n: 150})


@pytest.mark.parametrize("engine", ENGINES)
def test_a_check_in_a_loop_predicate_and_in_nested_loops(engine):
    n, start = sl.placeholder(sl.float32, []), sl.placeholder(sl.float32, [])

    def inner(j, y):
        return j + 1, sl.check_numerics(sl.sqrt(y), "inner")

    def outer(i, x):
        _, y = sl.while_loop(lambda j, y: j < 2, inner, [0, x + 1.0])
        return i + 1, y

    def cond(i, x):
        return sl.check_numerics(sl.log(n - sl.cast(i, sl.float32)), "pred") > -5.0

    _, x = sl.while_loop(cond, outer, [0, start], maximum_iterations=3)
    with session(engine) as s:
        assert np.isfinite(s.run(x, {n: 5.0, start: 1.0}))
        with pytest.raises(sl.errors.InvalidArgumentError, match="inner : Tensor had NaN"):
            s.run(x, {n: 5.0, start: -3.0})
        # the predicate runs once more after the last iteration: log(3 - 3) = -inf there
        with pytest.raises(sl.errors.InvalidArgumentError, match="pred : Tensor had Inf"):
            s.run(x, {n: 3.0, start: 1.0})


@pytest.mark.parametrize("engine", ENGINES)
def test_a_check_counts_only_on_the_branch_taken(engine):
    x = sl.placeholder(sl.float64, [4, 4])
    p = sl.placeholder(sl.bool, [])
    # an expensive branch (a matmul) would be a lax.cond; with a check it stays a select
    y = sl.cond(p, lambda: sl.check_numerics(sl.matmul(x, x), "taken"), lambda: x * 2.0)
    # a loop with a check on the untaken side is not entered
    z = sl.cond(
        p,
        lambda: x,
        lambda: sl.while_loop(
            lambda i, v: i < 2, lambda i, v: (i + 1, sl.check_numerics(v, "loop")), [0, x]
        )[1],
    )
    bad = np.full((4, 4), np.inf)
    with session(engine) as s:
        np.testing.assert_array_equal(s.run(y, {x: bad, p: False}), bad)
        np.testing.assert_array_equal(s.run(z, {x: bad, p: True}), bad)
        with pytest.raises(sl.errors.InvalidArgumentError, match="taken : Tensor had"):
            s.run(y, {x: bad, p: True})
        with pytest.raises(sl.errors.InvalidArgumentError, match="loop : Tensor had"):
            s.run(z, {x: bad, p: False})


def test_check_numerics_gradient_passes_through_and_is_checked():
    x = sl.placeholder(sl.float32, [2])
    y = sl.check_numerics(x, "x")
    (dx,) = sl.gradients(y * sl.log(x), [x])
    with sl.Session() as s:
        np.testing.assert_allclose(s.run(dx, {x: [1.0, 2.0]}), np.log([1.0, 2.0]) + 1.0, 1e-6)
        with pytest.raises(sl.errors.InvalidArgumentError, match="detected in gradient. x"):
            s.run(dx, {x: [1.0, 0.0]})  # log(0) = -inf in the gradient only


def test_check_numerics_takes_floating_point_tensors_only():
    with pytest.raises(TypeError, match="floating"):
        sl.check_numerics(sl.constant([1, 2]), "ints")


@pytest.mark.parametrize("engine", ENGINES)
def test_add_check_numerics_ops_checks_every_float_tensor(engine):
    x = sl.placeholder(sl.float32, [2], name="x")
    y = sl.sqrt(x, name="root") * 3.0
    check = sl.add_check_numerics_ops()
    assert check.type == "NoOp"
    with session(engine) as s:
        assert s.run([y, check], {x: [1.0, 4.0]})[0].tolist() == [3.0, 6.0]
        with pytest.raises(sl.errors.InvalidArgumentError, match="^root:0 : Tensor had NaN"):
            s.run([y, check], {x: [1.0, -4.0]})


def test_add_check_numerics_ops_refuses_control_flow():
    x = sl.placeholder(sl.float32, [])
    sl.cond(x > 0.0, lambda: x * 2.0, lambda: x)
    with pytest.raises(ValueError, match="not compatible with control flow"):
        sl.add_check_numerics_ops()


def test_a_graph_without_checks_compiles_as_before():
    x = sl.placeholder(sl.float32, [2])
    with sl.Session() as s:
        s.run(x * 2.0, {x: [1.0, 2.0]})
        (step,) = [v for v in s._compiled.values() if isinstance(v, CompiledStep)]
    assert step.checking == []
