"""`sl.Assert` and the `assert_*` helpers, as TF1's check_ops tests check them: a false
condition fails the run with InvalidArgumentError carrying the data, in both engines; a true one
lets the gated ops run; statically known failures raise while the graph is built."""

import numpy as np
import pytest

import sluice as sl

ENGINES = ["compiled", "interpreted"]


def session(engine):
    return sl.Session(config=sl.SessionConfig(engine=engine))


@pytest.mark.parametrize("engine", ENGINES)
def test_assert_gates_the_ops_that_depend_on_it(engine):
    x = sl.placeholder(sl.float32, [3])
    data = ["x must be positive", sl.constant([7, 8, 9, 10]), x, x > 0.0]
    check = sl.Assert(sl.reduce_all(x > 0.0), data, summarize=2, name="positive")
    with sl.control_dependencies([check]):
        y = sl.sqrt(x)
    assert isinstance(check, sl.Operation) and check.type == "Assert"
    assert check.name == "positive/Assert"
    with session(engine) as s:
        np.testing.assert_allclose(s.run(y, {x: [1.0, 4.0, 9.0]}), [1.0, 2.0, 3.0], rtol=1e-6)
        with pytest.raises(sl.errors.InvalidArgumentError) as info:
            s.run(y, {x: [1.0, -4.0, 9.0]})
    # constants and strings are known while building; x's value is the failing run's
    assert info.value.message == (
        "assertion failed: [x must be positive] [7 8...] [1 -4...] [1 0...]"
    )
    assert info.value.op is check


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failed_assert_leaves_variables_unchanged(engine):
    v = sl.Variable(1.0, name="v")
    delta = sl.placeholder(sl.float32, [])
    with sl.control_dependencies([sl.assert_non_negative(delta)]):
        update = v.assign_add(delta)
    with session(engine) as s:
        s.run(v.initializer)
        s.run(update, {delta: 2.0})
        with pytest.raises(sl.errors.InvalidArgumentError, match="Condition x >= 0"):
            s.run(update, {delta: -1.0})
        assert s.run(v) == 3.0


@pytest.mark.parametrize("engine", ENGINES)
def test_assert_in_a_while_loop_and_an_untaken_branch(engine):
    limit = sl.placeholder(sl.int32, [])

    def body(i, total):
        with sl.control_dependencies([sl.assert_less(i, 3, message="i too large")]):
            return i + 1, total + sl.cast(i, sl.float32)

    _, total = sl.while_loop(lambda i, t: i < limit, body, [sl.constant(0), sl.constant(0.0)])
    flag = sl.placeholder(sl.bool, [])

    def false_branch():
        with sl.control_dependencies([sl.debugging.Assert(flag, ["flag was false"])]):
            return sl.identity(total)

    guarded = sl.cond(flag, lambda: total * 2.0, false_branch)
    with session(engine) as s:
        assert s.run(total, {limit: 3}) == 3.0  # i = 0, 1, 2 all pass
        with pytest.raises(sl.errors.InvalidArgumentError) as info:
            s.run(total, {limit: 5})  # fails at i = 3 and i = 4: the first failure is shown
        assert info.value.message.startswith("assertion failed: [i too large] [Condition x < y")
        assert info.value.message.endswith(" = ] [3] [y (while/assert_less/y:0) = ] [3]")
        assert s.run(guarded, {limit: 2, flag: True}) == 2.0  # the Assert's branch is untaken
        with pytest.raises(sl.errors.InvalidArgumentError, match=r"\[flag was false\]"):
            s.run(guarded, {limit: 2, flag: False})


# (helper, passing x, failing x, the condition it names); y = 1 for the two-sided ones.
HELPERS = [
    (sl.assert_positive, [1.0, 2.0], [1.0, 0.0], "x > 0"),
    (sl.assert_negative, [-1.0, -2.0], [-1.0, 0.0], "x < 0"),
    (sl.assert_non_negative, [0.0, 2.0], [0.0, -2.0], "x >= 0"),
    (sl.debugging.assert_non_positive, [0.0, -2.0], [0.0, 2.0], "x <= 0"),
    (lambda x, **kw: sl.assert_equal(x, 1.0, **kw), [1.0, 1.0], [1.0, 2.0], "x == y"),
    (lambda x, **kw: sl.assert_less(x, 1.0, **kw), [0.0, 0.5], [0.0, 1.0], "x < y"),
    (lambda x, **kw: sl.assert_greater(x, 1.0, **kw), [2.0, 3.0], [2.0, 1.0], "x > y"),
    (
        lambda x, **kw: sl.debugging.assert_less_equal(x, 1.0, **kw),
        [1.0, 0.0],
        [1.0, 2.0],
        "x <= y",
    ),
    (
        lambda x, **kw: sl.debugging.assert_greater_equal(x, 1.0, **kw),
        [1.0, 2.0],
        [1.0, 0.0],
        "x >= y",
    ),
]


@pytest.mark.parametrize("helper, good, bad, condition", HELPERS)
def test_assert_helpers_in_both_engines(helper, good, bad, condition):
    x = sl.placeholder(sl.float32, [2], name="x")
    check = helper(x, message="checked x")
    with sl.control_dependencies([check]):
        y = sl.identity(x)
    for engine in ENGINES:
        with session(engine) as s:
            np.testing.assert_array_equal(s.run(y, {x: good}), good)
            with pytest.raises(sl.errors.InvalidArgumentError) as info:
                s.run(y, {x: bad})
        assert info.value.message.startswith(
            f"assertion failed: [checked x] [Condition {condition} did not hold element-wise:] "
            f"[x (x:0) = ] [{' '.join(f'{v:g}' for v in bad)}]"
        )


def test_statically_known_failures_raise_while_building():
    with pytest.raises(sl.errors.InvalidArgumentError) as info:
        sl.assert_equal(sl.constant([1, 2]), sl.constant([1, 3]), message="static")
    lines = info.value.message.split("\n")
    assert lines[:2] == ["static", "Condition x == y did not hold element-wise:"]
    assert lines[3] == "[1 2]" and lines[5] == "[1 3]"
    with pytest.raises(sl.errors.InvalidArgumentError, match="Condition x > 0"):
        sl.assert_positive(sl.constant([1.0, -1.0]))
    passing = sl.assert_equal(sl.constant([1, 2]), [1, 2])
    sl.Session().run(passing)  # known to hold: builds an Assert that passes


def test_assert_rank_static_and_at_run_time():
    with pytest.raises(ValueError, match=r"Tensor zeros:0 must have rank 1\.  Received rank 2"):
        sl.assert_rank(sl.zeros([2, 3]), 1)
    assert sl.debugging.assert_rank(sl.zeros([2, 3]), 2).type == "NoOp"
    x = sl.placeholder(sl.float32, None)
    check = sl.assert_rank(x, 2, message="need a matrix")
    assert check.type == "Assert"
    for engine in ENGINES:
        with session(engine) as s:
            s.run(check, {x: np.zeros((2, 2))})
            with pytest.raises(sl.errors.InvalidArgumentError, match=r"\[need a matrix\]"):
                s.run(check, {x: np.zeros(3)})


def test_bad_conditions_name_the_op():
    with pytest.raises(ValueError, match="Assert 'Assert/Assert': the condition must be a scalar"):
        sl.Assert(sl.constant([True, False]), ["x"])
    with pytest.raises(ValueError, match="rank must be a scalar"):
        sl.assert_rank(sl.zeros([2]), [1, 2])


def test_summarize_value_matches_tf_text():
    from sluice.framework.ops.control.assert_ops import summarize_value

    assert summarize_value(np.arange(5), 3) == "0 1 2..."
    assert summarize_value(np.arange(5), -1) == "0 1 2 3 4"
    assert summarize_value(np.float32(2.5), 3) == "2.5"
    assert summarize_value(np.array([True, False]), 3) == "1 0"
    assert summarize_value(np.array([[1, 2], [3, 4]]), 3) == "[1 2][3]..."
