"""`sl.hessians` and the options of `sl.gradients` (`stop_gradients`, `unconnected_gradients`,
`aggregation_method`), checked as TF1's gradients_test checks them (HessianTest,
testStopGradients, the unconnected-gradients tests): values against analytic results at 1e-6,
the errors TF1 raises, the structure of what is returned, in both engines."""

import numpy as np
import pytest

import sluice as sl

ENGINES = ["compiled", "interpreted"]


def session(engine):
    return sl.Session(config=sl.SessionConfig(engine=engine))


# -- hessians -----------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_hessian_of_quadratic_forms_is_a_plus_a_transposed(engine):
    rng = np.random.RandomState([1, 2, 3])
    mats = [rng.randn(4, 4) for _ in range(2)]
    x_values = [rng.randn(4) for _ in range(2)]
    xs = [sl.constant(v) for v in x_values]
    ys = [sl.reduce_sum(sl.expand_dims(x, 1) * sl.constant(m) * x) for x, m in zip(xs, mats)]
    hessians = sl.hessians(ys, xs)
    assert isinstance(hessians, list) and len(hessians) == 2
    assert [h.shape.as_list() for h in hessians] == [[4, 4], [4, 4]]
    with session(engine) as s:
        for got, m in zip(s.run(hessians), mats):
            np.testing.assert_allclose(got, m + m.T, rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_hessian_of_a_matrix_argument(engine):
    # f(X) = 1/2 sum(X^T X): the Hessian is the identity on pairs of columns (TF's 2-D test)
    m = 3
    x = sl.constant(np.random.RandomState(0).randn(m, m))
    y = sl.reduce_sum(sl.matmul(sl.transpose(x), x) * 0.5)
    (h,) = sl.hessians(y, x)
    expected = np.block([[e * np.ones((m, m)) for e in row] for row in np.eye(m)])
    with session(engine) as s:
        got = s.run(h)
    assert got.shape == (m, m, m, m)
    np.testing.assert_allclose(got.reshape(m * m, m * m), expected, rtol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_hessian_of_a_nonlinear_function(engine):
    x = sl.placeholder(sl.float64, [2])
    y = sl.square(x[0]) * x[1] ** 3 + sl.reduce_sum(x * sl.exp(x))
    (h,) = sl.hessians(y, x)
    a, b = 0.7, -1.3
    expected = np.array([[2 * b**3, 6 * a * b**2], [6 * a * b**2, 6 * a**2 * b]])
    expected += np.diag([(a + 2) * np.exp(a), (b + 2) * np.exp(b)])
    with session(engine) as s:
        np.testing.assert_allclose(s.run(h, {x: [a, b]}), expected, rtol=1e-6)


def test_hessian_errors_as_tf1():
    with pytest.raises(ValueError, match="not fully known"):
        sl.hessians(
            sl.reduce_sum(sl.placeholder(sl.float32, None) ** 2), sl.placeholder(sl.float32, None)
        )
    x = sl.placeholder(sl.float32, [3])
    with pytest.raises(ValueError, match="does not depend on x"):
        sl.hessians(sl.reduce_sum(2.0 * x), x)  # linear: TF1's TensorArray.write(None) fails
    with pytest.raises(ValueError, match="do not depend"):
        sl.hessians(sl.constant(1.0), x)
    # second-order gradients of while loops: TF1 raises TypeError as well
    _, y = sl.while_loop(
        lambda i, v: i < 2, lambda i, v: (i + 1, v * x), [0, x], maximum_iterations=2
    )
    with pytest.raises(TypeError, match="Second-order gradient for while loops"):
        sl.hessians(sl.reduce_sum(y), x)


# -- stop_gradients -----------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_stop_gradients(engine):
    x = sl.constant(1.0)
    a = x * 2.0
    b = a + x
    with_stop = sl.gradients(b, [x, a], stop_gradients=[a])
    without = sl.gradients(b, [x, a])
    # TF's docstring example: stop_gradients on every x is stop_gradient on each of them
    c = sl.constant(0.0)
    d = 2.0 * c
    stopped = sl.gradients(c + d, [c, d], stop_gradients=[c, d])
    as_ops = sl.gradients(sl.stop_gradient(c) + sl.stop_gradient(d), [c, d])
    single = sl.gradients(b, x, stop_gradients=a)  # one tensor, not a list, is accepted
    with session(engine) as s:
        assert s.run(with_stop) == [1.0, 1.0]
        assert s.run(without) == [3.0, 1.0]
        assert s.run(stopped) == [1.0, 1.0]
        assert as_ops == [None, None]  # stop_gradient ops make x unconnected instead
        assert s.run(single) == [1.0]


# -- unconnected_gradients ----------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_unconnected_gradients(engine):
    x = sl.constant(np.ones([2, 3], np.float32))
    y = sl.constant(3.0)
    assert sl.gradients(y, x) == [None]
    assert sl.gradients(y, x, unconnected_gradients=sl.UnconnectedGradients.NONE) == [None]
    (zero,) = sl.gradients(y, x, unconnected_gradients="zero")
    (zero_enum,) = sl.gradients(y, x, unconnected_gradients=sl.UnconnectedGradients.ZERO)
    (connected,) = sl.gradients(x * 3.0, x, unconnected_gradients="zero")
    assert zero.dtype == sl.float32 and zero.shape.as_list() == [2, 3]
    with session(engine) as s:
        np.testing.assert_array_equal(s.run(zero), np.zeros([2, 3]))
        np.testing.assert_array_equal(s.run(zero_enum), np.zeros([2, 3]))
        np.testing.assert_array_equal(s.run(connected), np.full([2, 3], 3.0))
    assert sl.UnconnectedGradients.ZERO == "zero" and sl.UnconnectedGradients.NONE == "none"
    with pytest.raises(ValueError, match="Unknown value for unconnected_gradients: 'nonsense'"):
        sl.gradients(y, x, unconnected_gradients="nonsense")


# -- aggregation_method -------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_every_aggregation_method_sums_alike(engine):
    x = sl.placeholder(sl.float32, [3])
    y = x * x + 3.0 * x + sl.sin(x)  # x fans out to four consumers
    methods = [
        None,
        sl.AggregationMethod.ADD_N,
        sl.AggregationMethod.DEFAULT,
        sl.AggregationMethod.EXPERIMENTAL_TREE,
        sl.AggregationMethod.EXPERIMENTAL_ACCUMULATE_N,
    ]
    grads = [sl.gradients(y, x, aggregation_method=m)[0] for m in methods]
    values = np.array([0.5, -1.0, 2.0], np.float32)
    with session(engine) as s:
        got = s.run(grads, {x: values})
    expected = 2 * values + 3 + np.cos(values)
    for g in got:
        np.testing.assert_allclose(g, expected, rtol=1e-6)
    assert sl.AggregationMethod.DEFAULT == sl.AggregationMethod.ADD_N


def test_an_unknown_aggregation_method_is_a_value_error():
    x = sl.constant(1.0)
    for bad in (7, "add_n", True):
        with pytest.raises(ValueError, match="Invalid aggregation_method specified"):
            sl.gradients(x * x, x, aggregation_method=bad)
