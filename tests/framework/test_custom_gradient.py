"""`sl.custom_gradient`, `sl.RegisterGradient` with `Graph.gradient_override_map`, and
`sl.NotDifferentiable`, checked as TF1's gradients_test and custom_gradient_test check them:
the custom gradient is the one used (it differs from the true one), values at 1e-6, the errors
TF1 raises, inside while loops and cond branches, in both engines."""

import numpy as np
import pytest

import sluice as sl
from sluice.testing import check_gradients

ENGINES = ["compiled", "interpreted"]


def session(engine):
    return sl.Session(config=sl.SessionConfig(engine=engine))


@sl.custom_gradient
def times_three_identity(x):
    """y = x, with the gradient 3 * dy (not the true one, so a test sees which is used)."""

    def grad(dy):
        return 3.0 * dy

    return sl.identity(x), grad


@sl.custom_gradient
def log1pexp(x):
    """log(1 + exp(x)) with a gradient that stays finite where exp(x) overflows."""
    e = sl.exp(x)

    def grad(dy):
        return dy * (1.0 - 1.0 / (1.0 + e))

    return sl.log(1.0 + e), grad


@sl.custom_gradient
def clip_gradient_by_norm(x):
    """The identity, whose gradient is clipped to norm 1 (TF's docstring example)."""

    def grad(dy):
        norm = sl.sqrt(sl.reduce_sum(dy * dy))
        return dy / sl.maximum(norm, 1.0)

    return sl.identity(x), grad


# -- custom_gradient ----------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_the_custom_gradient_is_used_and_composes(engine):
    x = sl.constant(3.0)
    y = times_three_identity(times_three_identity(x))
    (dx,) = sl.gradients(y, x)
    with session(engine) as s:
        assert s.run(y) == 3.0
        assert s.run(dx) == 9.0  # the true gradient would be 1


@pytest.mark.parametrize("engine", ENGINES)
def test_log1pexp_gradient_is_finite_where_the_naive_one_is_nan(engine):
    x = sl.placeholder(sl.float32, [3])
    (dx,) = sl.gradients(log1pexp(x), x)
    (naive,) = sl.gradients(sl.log(1.0 + sl.exp(x)), x)
    values = np.array([0.0, 2.0, 100.0], np.float32)
    with session(engine) as s:
        got, got_naive = s.run([dx, naive], {x: values})
    np.testing.assert_allclose(got, 1.0 / (1.0 + np.exp(-values.astype(np.float64))), rtol=1e-6)
    assert np.isnan(got_naive[2])  # inf / inf


def test_log1pexp_gradient_matches_central_differences():
    check_gradients(log1pexp, [np.array([-1.5, 0.25, 3.0])])


@pytest.mark.parametrize("engine", ENGINES)
def test_clip_gradient_by_norm(engine):
    x = sl.placeholder(sl.float32, [2])
    y = clip_gradient_by_norm(x)
    (small,) = sl.gradients(y, x, grad_ys=sl.constant([0.3, 0.4]))
    (large,) = sl.gradients(y, x, grad_ys=sl.constant([3.0, 4.0]))
    with session(engine) as s:
        feed = {x: [5.0, 6.0]}
        np.testing.assert_allclose(s.run(y, feed), [5.0, 6.0], rtol=1e-6)
        np.testing.assert_allclose(s.run(small, feed), [0.3, 0.4], rtol=1e-6)
        np.testing.assert_allclose(s.run(large, feed), [0.6, 0.8], rtol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_several_inputs_a_none_gradient_and_nested_outputs(engine):
    @sl.custom_gradient
    def f(a, b):
        def grad(d_sum, d_p, d_q):  # one gradient per leaf of the result, flattened (TF1)
            # b gets no gradient: sl.gradients gives None for it (nothing else connects it)
            return 2.0 * d_sum + d_p + 10.0 * d_q, None

        return (a + b, {"p": a * b, "q": a - b}), grad

    a, b = sl.constant([1.0, 2.0]), sl.constant([3.0, 4.0])
    total, parts = f(a, b)
    assert isinstance(parts, dict) and sorted(parts) == ["p", "q"]
    loss = sl.reduce_sum(total) + sl.reduce_sum(parts["p"]) + sl.reduce_sum(parts["q"])
    da, db = sl.gradients(loss, [a, b])
    assert db is None
    with session(engine) as s:
        np.testing.assert_allclose(s.run(parts["p"]), [3.0, 8.0], rtol=1e-6)
        np.testing.assert_allclose(s.run(da), [13.0, 13.0], rtol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_custom_gradient_in_a_while_loop_body(engine):
    x = sl.placeholder(sl.float32, [])

    @sl.custom_gradient
    def square(v):
        def grad(dy):
            return dy * (2.0 * v + 1.0)  # not the true 2v, and on this iteration's v

        return v * v, grad

    _, y = sl.while_loop(
        lambda i, v: i < 2, lambda i, v: (i + 1, square(v)), [0, x], maximum_iterations=2
    )
    (dx,) = sl.gradients(y, x)
    with session(engine) as s:
        y_value, dx_value = s.run([y, dx], {x: 1.5})
    # v1 = x^2, y = v1^2: dy/dv1 = 2 v1 + 1, dv1/dx = 2x + 1
    v1 = 1.5**2
    np.testing.assert_allclose(y_value, v1**2, rtol=1e-6)
    np.testing.assert_allclose(dx_value, (2 * v1 + 1) * (2 * 1.5 + 1), rtol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_custom_gradient_in_a_cond_branch(engine):
    x = sl.placeholder(sl.float32, [])
    pred = sl.placeholder(sl.bool, [])
    y = sl.cond(pred, lambda: times_three_identity(x * x), lambda: 5.0 * x)
    (dx,) = sl.gradients(y, x)
    with session(engine) as s:
        assert s.run([y, dx], {x: 2.0, pred: True}) == [4.0, 12.0]
        assert s.run([y, dx], {x: 2.0, pred: False}) == [10.0, 5.0]


@pytest.mark.parametrize("engine", ENGINES)
def test_custom_gradient_with_variables(engine):
    @sl.custom_gradient
    def dense(x):
        w = sl.get_variable("w", initializer=sl.constant([[1.0, 2.0, 3.0]] * 4))
        out = sl.matmul(x, w)

        def grad(dy, variables=None):
            assert len(variables) == 1 and variables[0] is w
            (dx,) = sl.gradients(out, [x], grad_ys=dy)
            return dx, [sl.ones([4, 3])]

        return out, grad

    x = sl.ones([2, 4])
    with sl.variable_scope("f"):
        y = dense(x)
    (w,) = sl.global_variables()
    dx, dw = sl.gradients(y, [x, w])
    with session(engine) as s:
        s.run(sl.global_variables_initializer())
        assert s.run(sl.reduce_sum(dw)) == 12.0
        np.testing.assert_allclose(s.run(dx), np.full([2, 4], 6.0), rtol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_custom_gradient_reading_a_variable_in_a_while_loop(engine):
    v = sl.Variable(2.0)

    @sl.custom_gradient
    def times_v(a):
        def grad(dy, variables):
            return dy * v.value(), [dy * a]  # each iteration's a, summed over iterations

        return a * v.value(), grad

    x = sl.placeholder(sl.float32, [])
    _, y = sl.while_loop(
        lambda i, a: i < 3, lambda i, a: (i + 1, times_v(a)), [0, x], maximum_iterations=3
    )
    dx, dv = sl.gradients(y, [x, v])
    with session(engine) as s:
        s.run(v.initializer)
        # y = x v^3: dy/dx = v^3, dy/dv = x v^2 + (x v) v + (x v^2) = 3 x v^2
        np.testing.assert_allclose(s.run([y, dx, dv], {x: 1.5}), [12.0, 8.0, 18.0], rtol=1e-6)


def test_errors_as_tf1():
    v = sl.Variable(2.0)

    @sl.custom_gradient
    def reads_a_variable(x):
        return x * v.value(), lambda dy: dy

    with pytest.raises(TypeError, match="variables"):
        reads_a_variable(sl.constant(1.0))

    @sl.custom_gradient
    def wrong_count(x):
        return x * 2.0, lambda dy: [dy, dy]

    x = sl.constant(1.0)
    with pytest.raises(ValueError, match="2 gradients for 1 inputs"):
        sl.gradients(wrong_count(x), x)
    with pytest.raises(ValueError, match="keyword"):
        times_three_identity(x=x)

    @sl.custom_gradient
    def failing(x):
        def grad(_):
            raise RuntimeError("x")

        return sl.identity(x), grad

    with pytest.raises(RuntimeError):
        sl.gradients(failing(x), x)


# -- RegisterGradient and gradient_override_map -------------------------------------------------
@sl.RegisterGradient("TestCustomGradient_Square5")
def _square_times_five(op, grad):
    return 5.0 * grad


@sl.RegisterGradient("TestCustomGradient_SquareNeg")
def _square_negated(op, grad):
    return -grad * 2.0 * op.inputs[0]


sl.NotDifferentiable("TestCustomGradient_NoGrad")


@pytest.mark.parametrize("engine", ENGINES)
def test_gradient_override_map_applies_to_ops_built_inside_only(engine):
    g = sl.get_default_graph()
    x = sl.constant(3.0)
    inside_before = sl.square(x)  # built before the block: unaffected
    with g.gradient_override_map({"Square": "TestCustomGradient_Square5"}):
        overridden = sl.square(x)
        other_type = sl.exp(x)  # not in the map: unaffected
    after = sl.square(x)
    assert overridden.op.get_attr("_gradient_op_type") == "TestCustomGradient_Square5"
    with pytest.raises(ValueError):
        after.op.get_attr("_gradient_op_type")
    grads = [sl.gradients(y, x)[0] for y in (inside_before, overridden, other_type, after)]
    with session(engine) as s:
        np.testing.assert_allclose(s.run(grads), [6.0, 5.0, np.exp(3.0), 6.0], rtol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_nested_override_maps_restore_the_outer_mapping(engine):
    g = sl.get_default_graph()
    x = sl.constant(3.0)
    with g.gradient_override_map({"Square": "TestCustomGradient_Square5"}):
        with g.gradient_override_map({"Square": "TestCustomGradient_SquareNeg"}):
            inner = sl.square(x)
        outer = sl.square(x)
    with session(engine) as s:
        assert s.run(sl.gradients(inner, x)[0]) == -6.0
        assert s.run(sl.gradients(outer, x)[0]) == 5.0


def test_override_errors_as_tf1():
    g = sl.get_default_graph()
    x = sl.constant(3.0)
    with g.gradient_override_map({"Square": "TestCustomGradient_NotRegistered"}):
        y = sl.square(x)  # an unknown name is only looked up by gradients
    with pytest.raises(LookupError, match="No gradient defined for operation"):
        sl.gradients(y, x)
    with pytest.raises(KeyError):
        sl.RegisterGradient("TestCustomGradient_Square5")(_square_times_five)
    with pytest.raises(KeyError):
        sl.RegisterGradient("Square")(_square_times_five)  # the op type has its own
    with pytest.raises(TypeError):
        sl.RegisterGradient(5)
    with pytest.raises(TypeError):
        with g.gradient_override_map({"Square": 5}):
            pass
    with pytest.raises(KeyError):
        sl.NotDifferentiable("Square")


def test_a_not_differentiable_override_gives_none():
    x = sl.constant(3.0)
    with sl.get_default_graph().gradient_override_map({"Square": "TestCustomGradient_NoGrad"}):
        y = sl.square(x)
    assert sl.gradients(y, x) == [None]
    assert sl.no_gradient is sl.NotDifferentiable


def test_a_gradient_of_the_wrong_shape_is_an_error_as_tf1():
    """TF1 sets each gradient's shape to its input's: a user's gradient of another shape raises
    rather than flowing on (a [5] gradient for a [2] input, a scalar for a vector)."""

    @sl.custom_gradient
    def wrong_shape(x):
        return x * 2.0, lambda dy: sl.ones([5])

    @sl.custom_gradient
    def python_float(x):
        return x * 2.0, lambda dy: 3.0

    @sl.custom_gradient
    def no_grad_fn(x):
        return x * 2.0

    x = sl.constant([1.0, 2.0])
    with pytest.raises(ValueError, match=r"shape \(5,\) for input .* has shape \(2,\)"):
        sl.gradients(sl.reduce_sum(wrong_shape(x)), x)
    with pytest.raises(ValueError, match=r"shape \(\) for input"):
        sl.gradients(sl.reduce_sum(python_float(x)), x)
    with pytest.raises(TypeError, match=r"must return a pair \(y, grad_fn\)"):
        no_grad_fn(x)


@sl.RegisterGradient("TestCustomGradient_WrongShape")
def _wrong_shape_gradient(op, grad):
    return sl.ones([3])


def test_a_registered_gradient_of_the_wrong_shape_is_an_error():
    x = sl.constant([1.0, 2.0])
    with sl.get_default_graph().gradient_override_map({"Square": "TestCustomGradient_WrongShape"}):
        y = sl.square(x)
    with pytest.raises(ValueError, match="TestCustomGradient_WrongShape.*shape \\(3,\\)"):
        sl.gradients(y, x)
