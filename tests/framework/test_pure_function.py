"""`PureFunction`: a pruned graph as a pure JAX function of bound variable values and feeds."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sluice as sl
from sluice.framework.compiler.pure import PureFunction, RandomCounter
from sluice.framework.prune import prune


def _name(v):
    return v.op.get_attr("shared_name")


def test_values_in_values_out_under_jit_grad_and_vmap():
    x = sl.placeholder(sl.float32, [2])
    w = sl.Variable([1.0, 2.0], name="w")
    b = sl.Variable(0.5, name="b")
    y = sl.reduce_sum(w * x) + b
    update = w.assign_add(x * 0.5)
    fn = PureFunction(prune([y], [update.op], [x]), bound=[_name(w), _name(b)])
    feeds = [np.float32([3, 4])]
    (value,), (new_w, new_b) = fn([jnp.float32([1, 2]), jnp.float32(0.5)], feeds)
    assert float(value) == 11.5
    np.testing.assert_array_equal(new_w, [2.5, 4.0])
    assert float(new_b) == 0.5
    with sl.Session() as sess:  # the session's own run of the same ops agrees
        sess.run(sl.global_variables_initializer())
        assert sess.run(y, {x: feeds[0]}) == pytest.approx(float(value))
        sess.run(update, {x: feeds[0]})
        np.testing.assert_array_equal(sess.run(w), new_w)

    def loss(values):
        return fn(values, feeds)[0][0]

    grads = jax.jit(jax.grad(loss))([jnp.float32([1, 2]), jnp.float32(0.5)])
    np.testing.assert_array_equal(grads[0], [3, 4])
    assert float(grads[1]) == 1.0
    batched = jax.vmap(lambda xs: fn([jnp.float32([1, 2]), 0.0], [xs])[0][0])(np.eye(2, dtype="f"))
    np.testing.assert_array_equal(batched, [1, 2])


def test_every_variable_used_must_be_bound_and_fit():
    w = sl.Variable([1.0, 2.0], name="w")
    y = w * 2.0
    with pytest.raises(ValueError, match="uses the variable 'w', which is not bound"):
        PureFunction(prune([y], [], []), bound=[])
    fn = PureFunction(prune([y], [], []), bound=[_name(w)])
    with pytest.raises(ValueError, match=r"variable 'w' has shape \(3,\), expected \(2,\)"):
        fn([np.zeros(3, np.float32)], [])
    with pytest.raises(ValueError, match="Expected 1 bound values, got 0"):
        fn([], [])


def _power_loop(n):
    w = sl.Variable([1.0, 2.0], name="w")
    _, out = sl.while_loop(
        lambda i, acc: i < n, lambda i, acc: (i + 1, acc * w), [sl.constant(0), sl.ones([2])]
    )
    return w, sl.reduce_sum(out)


def test_a_loop_of_static_trip_count_is_differentiable():
    w, y = _power_loop(3)
    fn = PureFunction(prune([y], [], []), bound=[_name(w)])
    grads = jax.grad(lambda ws: fn(ws, [])[0][0])([jnp.float32([1, 2])])
    np.testing.assert_allclose(grads[0], [3, 12])  # d/dw sum(w^3)


def test_a_loop_of_run_time_trip_count_refuses_reverse_mode():
    n = sl.placeholder(sl.int32, [])
    w, y = _power_loop(n)
    fn = PureFunction(prune([y], [], [n]), bound=[_name(w)])
    (value,), _ = jax.jit(fn)([jnp.float32([1, 2])], [3])
    assert float(value) == 9.0

    def loss(ws):
        return fn(ws, [3])[0][0]

    for differentiate in (jax.grad(loss), jax.jit(jax.grad(loss)), jax.grad(jax.jit(loss))):
        with pytest.raises(NotImplementedError, match="while loop 'while' .* reverse mode"):
            differentiate([jnp.float32([1, 2])])


def test_tf1_random_ops_take_their_counter_as_a_bound_value():
    r = sl.random_uniform([3], seed=1)
    with pytest.raises(ValueError, match=r"RandomUniform\) draws from its session's per-op"):
        PureFunction(prune([r], [], []), bound=[])
    fn = PureFunction(prune([r], [], []), bound=[RandomCounter(r.op.name)])
    (first,), (count,) = fn([0], [])
    (second,), _ = fn([count], [])
    assert int(count) == 1
    with sl.Session() as sess:  # the draws a session makes, in order
        np.testing.assert_array_equal(sess.run(r), first)
        np.testing.assert_array_equal(sess.run(r), second)


def test_host_ops_are_refused():
    x = sl.placeholder(sl.float32, [2])
    printed = sl.Print(x, [x])
    with pytest.raises(NotImplementedError, match="Print"):
        PureFunction(prune([printed], [], [x]), bound=[])
