"""Several `gradients` calls on one graph: each call adds ops (an iteration counter, stacks,
accumulators) to the loops it differentiates, and a later call must walk through them.

The reference values are worked out by hand: for x = 2, y = 2 the loop
`while x < 100: x = x * y` runs 6 times, so rx = x * y**6 = 128 and d rx / dy = 6 x y**5 = 384.
The differential sweep (tests/differential_sweep.py) runs these tests in both engines too.
"""

import numpy as np
import pytest

import sluice as sl

F64 = sl.float64


def power_loop(maximum_iterations=None):
    x, y = sl.constant(2.0, F64), sl.constant(2.0, F64)
    rx = sl.while_loop(
        lambda x: x < 100.0, lambda x: x * y, [x], maximum_iterations=maximum_iterations
    )
    return x, y, rx


def run(fetches, feeds=None):
    with sl.Session() as s:
        s.run(sl.global_variables_initializer())
        return s.run(fetches, feeds)


@pytest.mark.parametrize("maximum_iterations", [None, 20])
def test_an_earlier_gradient_held_in_stop_gradient_keeps_the_loops_contribution(maximum_iterations):
    # The defect: the second call never entered the loop variables the first one added, so it
    # dropped the loop and returned 2y = 4.
    x, y, rx = power_loop(maximum_iterations)
    rg = sl.stop_gradient(sl.gradients(rx, y)[0])
    (dy,) = sl.gradients(y**2 + rx + rg, y)
    assert run([rx, rg, dy]) == [128.0, 384.0, 388.0]
    assert run(dy) == 388.0


def test_the_issue_example_in_float32():
    x, y = sl.constant(2.0), sl.constant(2.0)
    rx = sl.while_loop(lambda x: x < 100, lambda x: x * y, [x])
    rg = sl.stop_gradient(sl.gradients(rx, y)[0])
    assert run(sl.gradients(y**2 + rx + rg, y)) == [388.0]


def test_several_calls_on_one_loop_agree():
    x, y, rx = power_loop()
    calls = [sl.gradients(rx, [x, y]) for _ in range(3)]
    assert run(calls) == [[64.0, 384.0]] * 3
    for call in calls:  # each alone, too: every call has its own backward loop and stacks
        assert run(call) == [64.0, 384.0]


def test_calls_with_other_ys_after_a_first_call():
    x, y, rx = power_loop()
    first = sl.gradients(rx, y)
    second = sl.gradients(3.0 * rx + y, y)
    third = sl.gradients(rx * rx, [x, y])
    assert run([first, second, third]) == [[384.0], [1153.0], [2 * 128 * 64.0, 2 * 128 * 384.0]]


def test_stop_gradient_of_an_earlier_gradient_used_in_a_second_loop():
    x, y, rx = power_loop()
    g = sl.stop_gradient(sl.gradients(rx, y)[0])  # 384, a constant to what follows
    total = sl.while_loop(
        lambda i, acc: i < 3,
        lambda i, acc: (i + 1, acc + g * y),
        [sl.constant(0), sl.constant(0.0, F64)],
    )[1]
    (dy,) = sl.gradients(total + rx, y)
    assert run([total, dy]) == [3 * 384.0 * 2.0, 3 * 384.0 + 384.0]


def test_gradient_penalty_style_reuse_of_an_rnn_gradient():
    # loss2 = loss + 0.1 * <stop_gradient(dloss/dW), W>, so dloss2/dW = 1.1 * dloss/dW.
    sl.set_random_seed(0)
    inputs = sl.constant(np.random.default_rng(0).normal(size=[2, 4, 3]))
    cell = sl.nn.rnn_cell.GRUCell(5)
    outputs, _ = sl.nn.dynamic_rnn(cell, inputs, sequence_length=[4, 2], dtype=F64)
    loss = sl.reduce_sum(outputs * outputs)
    weights = cell.trainable_variables
    first = sl.gradients(loss, weights)
    penalty = sl.add_n([sl.reduce_sum(sl.stop_gradient(g) * w) for g, w in zip(first, weights)])
    second = sl.gradients(loss + 0.1 * penalty, weights)
    got_first, got_second = run([first, second])
    for a, b in zip(got_first, got_second):
        np.testing.assert_allclose(b, 1.1 * a, rtol=1e-10)


def test_nested_loops_differentiated_twice():
    w = sl.constant(1.5, F64)

    def outer(i, acc):
        inner = sl.while_loop(
            lambda j, a: j < 2, lambda j, a: (j + 1, a * w), [sl.constant(0), acc]
        )[1]
        return i + 1, inner

    _, r = sl.while_loop(lambda i, acc: i < 3, outer, [sl.constant(0), sl.constant(1.0, F64)])
    # r = w**6
    g1 = sl.stop_gradient(sl.gradients(r, w)[0])
    (g2,) = sl.gradients(r + g1 * w, w)
    np.testing.assert_allclose(run([r, g1, g2]), [1.5**6, 6 * 1.5**5, 2 * 6 * 1.5**5], rtol=1e-12)


def test_cond_in_a_loop_differentiated_twice():
    y = sl.constant(1.5, F64)

    def body(i, x):
        return i + 1, sl.cond(sl.equal(i % 2, 0), lambda: x * y, lambda: x + y)

    _, r = sl.while_loop(lambda i, x: i < 4, body, [sl.constant(0), sl.constant(1.0, F64)])
    # r = ((1 * y + y) * y + y) = 2y^2 + y; dr/dy = 4y + 1
    g1 = sl.stop_gradient(sl.gradients(r, y)[0])
    (g2,) = sl.gradients(r * 2.0 + g1, y)
    np.testing.assert_allclose(run([r, g1, g2]), [2 * 1.5**2 + 1.5, 7.0, 14.0], rtol=1e-12)


def test_second_order_through_a_loop_is_a_clear_error():
    # As in TF1: the backward loop's saved values come from stacks, which have no gradient, so
    # a second derivative through it would silently miss part of the answer.
    _, y, rx = power_loop()
    (g,) = sl.gradients(rx, y)
    with pytest.raises(TypeError, match="Second-order gradient for while loops"):
        sl.gradients(g, y)
    with pytest.raises(TypeError, match="Second-order gradient for while loops"):
        sl.gradients(g * g + y, y)


def test_second_order_outside_loops_still_works():
    x = sl.constant(3.0, F64)
    p = sl.placeholder(sl.bool, [])
    f = sl.cond(p, lambda: x**3, lambda: sl.sin(x))
    (d1,) = sl.gradients(f, x)
    (d2,) = sl.gradients(d1, x)
    assert run([d1, d2], {p: True}) == [27.0, 18.0]
    np.testing.assert_allclose(run(d2, {p: False}), -np.sin(3.0), rtol=1e-12)


def test_a_walk_that_meets_only_dead_ends_of_an_earlier_call_gives_none():
    # rg depends on y only through the first call's backward loop, held in stop_gradient.
    _, y, rx = power_loop()
    rg = sl.stop_gradient(sl.gradients(rx, y)[0])
    assert sl.gradients(rg, y) == [None]
    assert sl.gradients(rg * 2.0, y, unconnected_gradients="zero") is not None
