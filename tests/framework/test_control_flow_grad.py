"""Gradients through cond and while_loop (whitepaper §7), checked against central differences
and against the same computation unrolled in Python."""

import numpy as np
import pytest

import sluice as sl
from sluice.testing import check_gradients

F64 = np.float64


def grads_of(y, xs, feeds=None):
    g = sl.gradients(y, xs)
    with sl.Session() as s:
        s.run(sl.global_variables_initializer())
        return s.run(g, feeds)


# -- the textbook example -------------------------------------------------------------------------
def test_textbook_example():
    x1, x2 = sl.constant(3.0, sl.float64), sl.constant(2.0, sl.float64)
    f = (sl.exp(x1) + x2) * (x2 + 1.0)
    d1, d2 = sl.gradients(f, [x1, x2])
    with sl.Session() as s:
        value, g1, g2 = s.run([f, d1, d2])
    assert value == pytest.approx(66.2566, abs=1e-4)
    assert g1 == pytest.approx(60.2566, abs=1e-4)
    assert g2 == pytest.approx(25.0855, abs=1e-4)


# -- cond ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("pred", [True, False])
def test_cond_gradient_for_both_predicate_values(pred):
    x = np.array([0.5, -1.5, 2.0])
    check_gradients(
        lambda x: sl.cond(sl.constant(pred), lambda: x * x, lambda: sl.sin(x) * 3.0), [x]
    )


@pytest.mark.parametrize("a_value", [-2.0, 0.5, 3.0])
def test_nested_cond_gradient_with_captured_tensors(a_value):
    w = np.array([1.5, -0.5])

    def build(x, w):
        a = sl.constant(a_value, sl.float64)

        def outer_true():
            return sl.cond(a > 1.0, lambda: x * w * w, lambda: sl.exp(x) + w)

        return sl.cond(a > 0.0, outer_true, lambda: x * 2.0 - w)

    check_gradients(build, [np.array([0.3, 0.7]), w])


def test_untaken_branch_gets_zero_gradient_not_none():
    x = sl.constant(2.0, sl.float64)
    y = sl.cond(sl.constant(False), lambda: x * 5.0, lambda: sl.constant(1.0, sl.float64))
    (dx,) = sl.gradients(y, [x])
    with sl.Session() as s:
        assert s.run(dx) == 0.0


# -- while_loop ------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 5])
def test_loop_run_zero_one_and_many_times(n):
    # x_{k+1} = x_k * w + 1 ; gradients w.r.t. the initial value and the loop constant w.
    def build(x0, w):
        limit = sl.constant(n)
        _, x = sl.while_loop(
            lambda i, x: i < limit, lambda i, x: (i + 1, x * w + 1.0), (sl.constant(0), x0)
        )
        return x

    check_gradients(build, [np.array([0.5, -1.0]), np.array([1.1, 0.9])])


def test_loop_iteration_count_fed_at_run_time():
    x0 = sl.placeholder(sl.float64, [])
    n = sl.placeholder(sl.int32, [])
    _, x = sl.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, x * x), (sl.constant(0), x0))
    (dx,) = sl.gradients(x, [x0])
    with sl.Session() as s:
        for steps in (0, 1, 3):
            # x = x0 ** (2 ** steps)
            p = 2**steps
            assert s.run(dx, {x0: 1.1, n: steps}) == pytest.approx(p * 1.1 ** (p - 1))


def test_gradient_of_several_loop_variables_and_unused_exit():
    def build(a0, b0):
        _, a, b = sl.while_loop(
            lambda i, a, b: i < 3, lambda i, a, b: (i + 1, a * b, b + a), (sl.constant(0), a0, b0)
        )
        return a  # b's Exit is unused, but b feeds a in the body

    check_gradients(build, [np.array(0.7), np.array(1.3)])


def test_nested_loops_gradient():
    def build(x0, w):
        def outer_body(i, x):
            _, y = sl.while_loop(
                lambda j, y: j < i + 1, lambda j, y: (j + 1, sl.sin(y) * w), (sl.constant(0), x)
            )
            return i + 1, y

        return sl.while_loop(lambda i, x: i < 3, outer_body, (sl.constant(0), x0))[1]

    check_gradients(build, [np.array([0.4, 0.9]), np.array([1.2, 0.8])])


def test_cond_inside_loop_gradient():
    def build(x0, w):
        def body(i, x):
            x = sl.cond(sl.equal(i % 2, 0), lambda: x * w, lambda: sl.tanh(x) + w)
            return i + 1, x

        return sl.while_loop(lambda i, x: i < 5, body, (sl.constant(0), x0))[1]

    check_gradients(build, [np.array([0.3, -0.6]), np.array([1.3, 0.7])])


def test_data_dependent_cond_inside_loop_gradient():
    def build(x0):
        def body(i, x):
            x = sl.cond(sl.reduce_sum(x) > 1.0, lambda: x * 0.5, lambda: x * x + 0.7)
            return i + 1, x

        return sl.while_loop(lambda i, x: i < 6, body, (sl.constant(0), x0))[1]

    check_gradients(build, [np.array([0.2, 0.5])])


def test_hand_written_rnn_matches_the_unrolled_computation():
    rng = np.random.default_rng(0)
    steps, batch, n_in, n_hidden = 6, 2, 3, 4
    xs_value = rng.normal(size=[steps, batch, n_in])
    wx_value = rng.normal(size=[n_in, n_hidden]) * 0.5
    wh_value = rng.normal(size=[n_hidden, n_hidden]) * 0.5
    xs = sl.constant(xs_value)
    wx, wh = sl.Variable(wx_value, name="wx"), sl.Variable(wh_value, name="wh")
    h0 = sl.zeros([batch, n_hidden], sl.float64)

    def body(t, h):
        return t + 1, sl.tanh(sl.matmul(sl.gather(xs, t), wx) + sl.matmul(h, wh))

    _, h_loop = sl.while_loop(lambda t, h: t < steps, body, (sl.constant(0), h0))
    loss_loop = sl.reduce_sum(h_loop * h_loop)
    h = h0
    for t in range(steps):
        h = sl.tanh(sl.matmul(xs[t], wx) + sl.matmul(h, wh))
    loss_unrolled = sl.reduce_sum(h * h)
    loop_grads = sl.gradients(loss_loop, [wx, wh])
    unrolled_grads = sl.gradients(loss_unrolled, [wx, wh])
    with sl.Session() as s:
        s.run(sl.global_variables_initializer())
        a, b = s.run([loop_grads, unrolled_grads])
    for ga, gb in zip(a, b):
        np.testing.assert_allclose(ga, gb, rtol=1e-10, atol=1e-12)


def test_back_prop_false_loop_passes_no_gradient():
    # As TF1: what depends on x0 only through a back_prop=False loop gets None; other paths
    # still get their gradients.
    x0 = sl.constant(1.0, sl.float64)
    x = sl.while_loop(lambda x: x < 10.0, lambda x: x * 2.0, [x0], back_prop=False)
    assert sl.gradients(x, [x0]) == [None]
    (g,) = sl.gradients(x + 3.0 * x0, [x0])
    with sl.Session() as s:
        assert s.run(g) == 3.0


def test_loop_constant_gradient_uses_an_accumulator_loop_variable():
    w = sl.constant(2.0, sl.float64)
    _, x = sl.while_loop(
        lambda i, x: i < 4,
        lambda i, x: (i + 1, x + w * w),
        (sl.constant(0), sl.constant(0.0, sl.float64)),
    )
    (dw,) = sl.gradients(x, [w])
    accumulators = [
        op
        for op in sl.get_default_graph().get_operations()
        if "accumulator" in op.name and op.type == "Merge"
    ]
    assert len(accumulators) == 1
    with sl.Session() as s:
        assert s.run(dw) == pytest.approx(4 * 2 * 2.0)


def test_shapes_of_forward_values_are_saved_instead_of_the_values():
    # An unknown-shape forward value whose gradient needs only its shape (x + b broadcast).
    x0 = sl.placeholder(sl.float64, [None])
    b = sl.constant(0.5, sl.float64)
    _, x = sl.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x + b), (sl.constant(0), x0))
    (db,) = sl.gradients(sl.reduce_sum(x), [b])
    pushed = [
        op.inputs[1] for op in sl.get_default_graph().get_operations() if op.type == "StackPushV2"
    ]
    assert all(t.dtype == sl.int32 for t in pushed), [t.name for t in pushed]
    with sl.Session() as s:
        assert s.run(db, {x0: np.ones(5)}) == pytest.approx(15.0)


def test_variable_read_inside_loop_gets_gradient():
    w = sl.Variable(np.array([0.5, 2.0]), name="w")
    _, x = sl.while_loop(
        lambda i, x: i < 3, lambda i, x: (i + 1, x * w), (sl.constant(0), sl.constant(np.ones(2)))
    )
    (dw,) = grads_of(x, [w])
    np.testing.assert_allclose(dw, 3 * np.array([0.5, 2.0]) ** 2)


def test_backward_ops_are_ordinary_ops_of_the_same_graph():
    x0 = sl.constant(1.5, sl.float64)
    x = sl.while_loop(lambda x: x < 100.0, lambda x: x * x, [x0])
    before = set(sl.get_default_graph().get_operations())
    (dx,) = sl.gradients(x, [x0])
    after = set(sl.get_default_graph().get_operations())
    new_ops = after - before
    assert dx.op in new_ops
    assert {"Enter", "Merge", "Switch", "NextIteration", "Exit", "StackPushV2", "StackPopV2"} <= {
        op.type for op in new_ops
    }
    # the forward result is still computable alone, and the backward graph runs in pieces
    with sl.Session() as s:
        assert s.run(x) == pytest.approx(1.5**16)
        assert s.run(dx) == pytest.approx(16 * 1.5**15)


# -- stop_gradient and loops (TF1's testWhileGrad_StopGrad, _StopGradInside, _NoShape) ---------
def test_stop_gradient_inside_a_loop_body_gives_zeros_not_none():
    # TF1: y reaches rx only through the loop variable whose update is held in stop_gradient;
    # the loop's unused Exit sends zeros back to y's initial value (0.0, not None).
    x, y = sl.constant(3.0, name="x"), sl.constant(2.0, name="y")

    def body(x, y):
        y1 = sl.stop_gradient(sl.square(y))
        return sl.square(x) + y1, y1

    rx, _ = sl.while_loop(lambda x, y: x < 100.0, body, [x, y])
    (dy,) = sl.gradients(rx, y)
    (dx,) = sl.gradients(rx, x)
    assert dy is not None
    with sl.Session() as s:
        assert s.run([dy, dx]) == [0.0, 156.0]


def test_stop_gradient_inside_a_loop_body_of_unknown_shape():
    x, y = sl.placeholder(sl.float32), sl.placeholder(sl.float32)

    def body(x, y):
        y1 = sl.stop_gradient(sl.square(y, name="stopped"))
        return sl.square(x) + y1, y1

    rx, _ = sl.while_loop(lambda x, y: sl.reduce_sum(x) < 100.0, body, [x, y])
    (dy,) = sl.gradients(rx, y)
    (dx,) = sl.gradients(rx, x)
    with sl.Session() as s:
        got_dy, got_dx = s.run([dy, dx], {x: [3.0, 4.0], y: [2.0, 3.0]})
    np.testing.assert_allclose(got_dy, [0.0, 0.0])
    np.testing.assert_allclose(got_dx, [156.0, 400.0])
    assert not any(
        "while/stopped_grad" in op.name for op in sl.get_default_graph().get_operations()
    )


def test_a_loop_constant_used_only_in_stop_gradient_gets_none():
    # As TF1: no gradient reaches the Enter of a loop constant (nothing flows back through
    # StopGradient), so w is unconnected; an x with no path at all is None as well.
    x, w, z = (sl.constant(v, F64) for v in (1.5, 2.0, 7.0))
    rx = sl.while_loop(lambda x: x < 10.0, lambda x: x * 2.0 + sl.stop_gradient(w * w), [x])
    assert sl.gradients(rx, [w, z]) == [None, None]


def test_stop_gradient_on_loop_outputs():
    # TF1's testWhileGrad_StopGrad, its numbers.
    x, y = sl.constant(3.0, name="x"), sl.constant(2.0, name="y")

    def body(x, y):
        y1 = sl.square(y)
        return sl.square(x) + y1, y1

    rx, ry = sl.while_loop(lambda x, y: x < 100.0, body, [x, y])
    stop = sl.stop_gradient
    for y_, x_ in [
        (stop(rx), y),
        (stop(ry), y),
        (stop(sl.square(rx)), y),
        (stop(rx + ry), x),
        (stop(rx + ry), y),
    ]:
        assert sl.gradients(y_, x_) == [None]
    grads = [
        sl.gradients(rx, y)[0],
        sl.gradients(ry, y)[0],
        sl.gradients(rx + ry, y)[0],
        sl.gradients(rx + stop(ry), y)[0],
        sl.gradients(stop(rx) + ry, y)[0],
    ]
    with sl.Session() as s:
        assert s.run(grads) == [136.0, 32.0, 168.0, 136.0, 32.0]


def test_scan_with_part_of_its_carry_held_in_stop_gradient():
    a, b = sl.constant(2.0, F64), sl.constant(3.0, F64)
    elems = sl.constant(np.array([1.0, 2.0, 3.0]))

    def fn(carry, e):
        c1, c2 = carry
        return c1 * e + sl.stop_gradient(c2), sl.stop_gradient(c2 * e)

    out, _ = sl.scan(fn, elems, initializer=(a, b))
    # out = [2 + 3, 5 * 2 + 3, 13 * 3 + 6]: d sum/da = 1 + 2 + 6; b only through stop_gradient
    da, db, de = sl.gradients(out, [a, b, elems])
    assert db is not None
    with sl.Session() as s:
        got = s.run([da, db, de])
    assert got[:2] == [9.0, 0.0]
    np.testing.assert_allclose(got[2], [18.0, 20.0, 13.0])


def test_scan_whose_output_is_held_in_stop_gradient():
    a = sl.constant(2.0, F64)
    elems = sl.constant(np.array([1.0, 2.0, 3.0]))
    out = sl.scan(lambda c, e: sl.stop_gradient(c * e), elems, initializer=a)
    da, de = sl.gradients(out, [a, elems])
    assert de is None  # the elements are read only under stop_gradient (TF1: None)
    with sl.Session() as s:
        assert s.run(da) == 0.0


# -- IndexedSlices gradients (TF1's testSingletonIndexedSlices) ------------------------------------
def test_indexed_slices_grad_ys_pass_through_identity_unchanged():
    x = sl.placeholder(sl.float32)
    y = sl.identity(x)
    dy = sl.IndexedSlices(sl.placeholder(sl.float32), sl.placeholder(sl.int32))
    (dx,) = sl.gradients(y, x, grad_ys=dy)
    assert isinstance(dx, sl.IndexedSlices)
    with sl.Session() as s:
        vdx, vdy = s.run([dx, dy], {x: [1.0], dy.indices: [0], dy.values: [2.0]})
    assert vdx.indices.tolist() == vdy.indices.tolist() == [0]
    assert vdx.values.tolist() == vdy.values.tolist() == [2.0]


def test_indexed_slices_grad_ys_into_a_loop_and_a_cond():
    # Other rules get the slices as the dense tensor they stand for (rows at repeated indices
    # summed); a gradient of the wrong dtype is refused.
    x0 = sl.constant([1.0, 2.0, 3.0], F64)
    _, y = sl.while_loop(lambda i, x: i < 2, lambda i, x: (i + 1, x * x), [sl.constant(0), x0])
    z = sl.cond(sl.constant(True), lambda: y * 2.0, lambda: y)
    dz = sl.IndexedSlices(
        sl.constant([1.0, 1.0, 5.0], F64), sl.constant([2, 0, 2]), sl.constant([3])
    )
    (dx,) = sl.gradients(z, x0, grad_ys=dz)
    with sl.Session() as s:
        np.testing.assert_allclose(s.run(dx), 2.0 * 4.0 * np.array([1.0, 0.0, 6.0 * 27.0]))
    with pytest.raises(TypeError, match="IndexedSlices of float32"):
        sl.gradients(z, x0, grad_ys=sl.IndexedSlices(sl.constant([1.0]), sl.constant([0])))


def test_gradient_of_a_gather_inside_a_loop_with_respect_to_its_params():
    # The gather's IndexedSlices gradient is summed in the loop constant's accumulator: rows
    # 0, 1, 2 gathered once each and row 0 three times more (with weights i + 1).
    params = sl.Variable(np.arange(10.0).reshape(5, 2), name="params")

    def body(i, acc):
        rows = sl.gather(params, sl.stack([i, 0]))
        return i + 1, acc + sl.cast(i + 1, F64) * sl.reduce_sum(rows)

    _, acc = sl.while_loop(
        lambda i, acc: i < 3, body, [sl.constant(0), sl.constant(0.0, F64)], maximum_iterations=3
    )
    (dp,) = grads_of(acc, [params])
    np.testing.assert_allclose(dp, [[7.0, 7.0], [2.0, 2.0], [3.0, 3.0], [0.0, 0.0], [0.0, 0.0]])
