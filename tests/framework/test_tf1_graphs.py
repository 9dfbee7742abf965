"""Graphs that TF1 builds and runs, taken from the shapes of published TF1 programs and of
TensorFlow's own control-flow tests, and the cross-context uses TF1 rejects.

The differential sweep (tests/differential_sweep.py) runs these tests in both engines too.
"""

import numpy as np
import pytest

import sluice as sl

F64 = sl.float64


def run(fetches, feeds=None):
    with sl.Session() as s:
        s.run(sl.global_variables_initializer())
        return s.run(fetches, feeds)


# -- control dependencies --------------------------------------------------------------------------
def test_a_fed_placeholder_used_only_as_a_control_input_of_a_loop():
    p = sl.placeholder(F64, [])
    with sl.control_dependencies([p]):
        outside = sl.while_loop(lambda i: i < 10, lambda i: i + 1, [sl.constant(0)])

    def body(i):
        with sl.control_dependencies([p]):
            return i + 1

    inside = sl.while_loop(lambda i: i < 7, body, [sl.constant(0)])
    assert run([outside, inside], {p: 1.0}) == [10, 7]
    with pytest.raises(sl.errors.InvalidArgumentError, match="must feed a value"):
        run(outside)


def test_a_cond_in_a_loop_body_under_control_dependencies():
    v = sl.Variable(1.0, dtype=F64)

    def body(i, x):
        bump = v.assign_add(1.0)
        with sl.control_dependencies([bump]):
            y = sl.cond(x > 2.0, lambda: x * 2.0, lambda: x + 1.0)
        return i + 1, y

    r = sl.while_loop(lambda i, x: i < 3, body, [sl.constant(0), sl.constant(1.0, F64)])
    with sl.Session() as s:
        s.run(sl.global_variables_initializer())
        assert s.run(r) == [3, 6.0]
        assert s.run(v) == 4.0


def test_a_cond_under_control_dependencies_waits_for_them():
    v = sl.Variable(0.0, dtype=F64)
    p = sl.placeholder(sl.bool, [])
    bump = v.assign_add(5.0)
    with sl.control_dependencies([bump]):
        # the taken branch returns a tensor from outside: only the Merge waits for `bump`
        out = sl.cond(p, lambda: sl.constant(1.0, F64), lambda: sl.constant(2.0, F64))
    with sl.Session() as s:
        s.run(sl.global_variables_initializer())
        assert s.run(out, {p: True}) == 1.0
        assert s.run(out, {p: False}) == 2.0
        assert s.run(v) == 10.0


# -- gradients inside loop bodies and cond branches ------------------------------------------------
def test_newtons_method_with_the_gradient_taken_in_the_loop_body():
    def body(i, x):
        f = x * x - 2.0
        (df,) = sl.gradients(f, x)
        return i + 1, x - f / df

    r = sl.while_loop(lambda i, x: i < 6, body, [sl.constant(0), sl.constant(1.0, F64)])
    np.testing.assert_allclose(run(r)[1], np.sqrt(2.0), rtol=1e-12)


def test_a_loop_inside_a_loop_body_differentiated_in_the_body():
    def body(i, x):
        y = sl.while_loop(
            lambda j, y: j < 3, lambda j, y: (j + 1, y * x), [sl.constant(0), sl.constant(1.0, F64)]
        )[1]  # x**3
        (dy,) = sl.gradients(y, x)  # 3 x**2
        return i + 1, x + dy / 100.0

    r = sl.while_loop(lambda i, x: i < 2, body, [sl.constant(0), sl.constant(1.0, F64)])
    x = 1.0
    for _ in range(2):
        x += 3 * x * x / 100
    np.testing.assert_allclose(run(r)[1], x, rtol=1e-12)


def test_the_gradient_of_a_captured_tensor_taken_in_the_loop_body():
    w = sl.constant(3.0, F64)

    def body(i, x):
        (dw,) = sl.gradients(x * w * w, w)  # 2 x w
        return i + 1, x + dw

    r = sl.while_loop(lambda i, x: i < 2, body, [sl.constant(0), sl.constant(1.0, F64)])
    assert run(r) == [2, 49.0]  # 1 + 6 = 7, then 7 + 42


def test_the_gradient_taken_in_a_cond_branch():
    w = sl.constant(3.0, F64)
    p = sl.placeholder(sl.bool, [])
    out = sl.cond(p, lambda: sl.gradients(w**3, w)[0], lambda: w)
    assert run(out, {p: True}) == 27.0
    assert run(out, {p: False}) == 3.0


def test_the_loop_variable_before_the_body_cannot_be_differentiated_in_the_body():
    def body(x):
        with pytest.raises(ValueError, match="initial value of a loop variable"):
            sl.gradients(x * x, x0)
        return x + 1.0

    x0 = sl.constant(1.0, F64)
    sl.while_loop(lambda x: x < 3.0, body, [x0])


def test_an_untaken_branch_that_cannot_run_on_the_fed_shapes():
    # TF1 never runs the branch not taken: reshape(x, [7]) of 4 elements is no error then.
    x = sl.placeholder(F64, [None])
    p = sl.placeholder(sl.bool, [])
    y = sl.cond(p, lambda: x * 2.0, lambda: sl.reshape(x, [7]))
    assert list(run(y, {x: [1.0, 2.0, 3.0, 4.0], p: True})) == [2.0, 4.0, 6.0, 8.0]
    with pytest.raises(sl.errors.InvalidArgumentError, match="Reshape"):
        run(y, {x: [1.0, 2.0, 3.0, 4.0], p: False})


def test_a_kernel_error_outside_conds_is_the_users_error_in_both_engines():
    x = sl.placeholder(F64, [None])
    y = sl.reshape(x, [7])
    for engine in ("compiled", "interpreted"):
        with sl.Session(config=sl.SessionConfig(engine=engine)) as s:
            with pytest.raises(sl.errors.InvalidArgumentError, match="Reshape op 'Reshape'"):
                s.run(y, {x: [1.0, 2.0]})


# -- which tensors may be used where ---------------------------------------------------------------
def test_values_of_enclosing_branches_and_bodies_are_usable_in_nested_contexts():
    x = sl.constant(2.0, F64)
    p = sl.placeholder(sl.bool, [])

    def branch():
        a = x * 2.0  # used by a nested cond, a nested loop and a doubly nested cond
        nested = sl.cond(x > 1.0, lambda: a + 1.0, lambda: a)
        looped = sl.while_loop(lambda i: i < a, lambda i: i + 1.0, [sl.constant(0.0, F64)])
        deeper = sl.cond(x > 1.0, lambda: sl.cond(x > 0.0, lambda: a * 3.0, lambda: a), lambda: a)
        return nested + looped + deeper

    def body(i, y):
        b = y * 2.0
        return i + 1, sl.cond(b > 4.0, lambda: b, lambda: b + 1.0) / 2.0

    out = sl.cond(p, branch, lambda: x)
    loop = sl.while_loop(lambda i, y: i < 3, body, [sl.constant(0), x])
    assert run([out, loop], {p: True}) == [5.0 + 4.0 + 12.0, [3, 2.5]]


def test_a_value_of_one_cond_branch_used_in_the_other_and_after_the_cond():
    # TF1 accepts both; the value is dead unless its branch ran.
    x = sl.constant(2.0, F64)
    p = sl.placeholder(sl.bool, [])
    kept = []

    def true_fn():
        kept.append(x * 2.0)
        return kept[0]

    out = sl.cond(p, true_fn, lambda: kept[0] + 1.0)
    after = kept[0] + 1.0
    assert run([out, after], {p: True}) == [4.0, 5.0]
    with pytest.raises(sl.errors.InvalidArgumentError, match="dead"):
        run(after, {p: False})


def test_a_value_of_a_loop_body_cannot_leave_the_loop_except_as_a_result():
    kept = []

    def body(i):
        kept.append(i * 2)
        return i + 1

    sl.while_loop(lambda i: i < 5, body, [sl.constant(0)])
    with pytest.raises(ValueError, match="is in the while loop 'while'"):
        kept[0] + 1
    with pytest.raises(ValueError, match="does not enclose this one"):
        sl.while_loop(lambda i: i < 5, lambda i: i + kept[0], [sl.constant(0)])
    with pytest.raises(ValueError, match="is in the while loop"):
        sl.cond(sl.constant(True), lambda: kept[0], lambda: sl.constant(1))


# -- small API differences -------------------------------------------------------------------------
def test_ones_and_zeros_of_a_scalar_shape():
    n = sl.constant(3)
    assert sl.ones(5).shape.as_list() == [5]
    assert sl.zeros(np.int64(2), sl.int32).shape.as_list() == [2]
    ones, zeros = run([sl.ones(5), sl.zeros(n)])
    np.testing.assert_array_equal(ones, np.ones(5, np.float32))
    np.testing.assert_array_equal(zeros, np.zeros(3, np.float32))


def test_a_loop_of_one_variable_given_as_a_tuple_returns_the_tensor():
    i = sl.constant(0)
    bare = sl.while_loop(lambda i: i < 3, lambda i: i + 1, (i,))
    same = sl.while_loop(lambda i: i < 3, lambda i: (i + 1,), (i,), return_same_structure=True)
    assert isinstance(bare, sl.Tensor)
    assert isinstance(same, tuple) and len(same) == 1
    assert run([bare, same]) == [3, (3,)]


def test_cond_refuses_a_python_bool():
    with pytest.raises(TypeError, match="must not be a Python bool"):
        sl.cond(True, lambda: sl.constant(1), lambda: sl.constant(2))


def test_gradients_of_integer_tensors_are_none_and_cannot_be_fetched():
    x = sl.constant(3)
    (g,) = sl.gradients(x * x, x)
    assert g is None
    with pytest.raises(TypeError, match="Fetch argument None"):
        run(sl.gradients(x * x, x))
