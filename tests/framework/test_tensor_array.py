"""sl.TensorArray as TF1's tensor_array_ops_test checks it: values at 1e-6 against NumPy, error
types, the structure of results, gradients, inside while_loop and cond, in both engines."""

import logging

import numpy as np
import pytest

import sluice as sl
from sluice.testing import check_gradients

ENGINES = ["interpreted", "compiled"]
RNG = np.random.default_rng(0)


def session(engine):
    return sl.Session(config=sl.SessionConfig(engine=engine))


@pytest.fixture(params=ENGINES)
def engine(request):
    return request.param


def test_write_read_stack_size(engine):
    ta = sl.TensorArray(sl.float32, size=3, tensor_array_name="foo")
    w = ta.write(0, [[4.0, 5.0]]).write(1, [[1.0, 3.0]]).write(2, [[7.0, -8.5]])
    r0, r1, r2 = w.read(0), w.read(1), w.read(2)
    assert isinstance(w, sl.TensorArray) and w is not ta
    assert w.element_shape.as_list() == [1, 2] and w.dtype == sl.float32
    assert w.stack().shape.as_list() == [3, 1, 2]
    with session(engine) as s:
        values = s.run([r0, r1, r2, w.stack(), w.size(), w.concat()])
    np.testing.assert_allclose(values[0], [[4.0, 5.0]], atol=1e-6)
    np.testing.assert_allclose(values[2], [[7.0, -8.5]], atol=1e-6)
    np.testing.assert_allclose(values[3], [[[4.0, 5.0]], [[1.0, 3.0]], [[7.0, -8.5]]], atol=1e-6)
    assert values[4] == 3
    np.testing.assert_allclose(values[5], [[4.0, 5.0], [1.0, 3.0], [7.0, -8.5]], atol=1e-6)


def test_unwritten_elements_read_as_zeros_and_unstack_split(engine):
    ta = sl.TensorArray(sl.float32, size=3, element_shape=[2])
    w = ta.write(1, [1.0, 2.0])
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    unstacked = sl.TensorArray(sl.float32, size=3).unstack(x)
    split = sl.TensorArray(sl.float32, size=3).split(np.arange(6, dtype=np.float32), [2, 2, 2])
    with session(engine) as s:
        r0, st, u, sp, ident = s.run(
            [
                w.read(0),
                w.stack(),
                unstacked.read(2),
                split.stack(),
                unstacked.identity().gather([2, 0]),
            ]
        )
    np.testing.assert_array_equal(r0, [0.0, 0.0])
    np.testing.assert_array_equal(st, [[0, 0], [1, 2], [0, 0]])
    np.testing.assert_array_equal(u, x[2])
    np.testing.assert_array_equal(sp, x)
    np.testing.assert_array_equal(ident, x[[2, 0]])


def test_gather_scatter_values_and_gradients(engine):
    x = sl.placeholder(sl.float64, [4, 2])
    ta = sl.TensorArray(sl.float64, size=4).unstack(x)
    gathered = ta.gather([3, 1, 1])
    scattered = sl.TensorArray(sl.float64, size=5).scatter([4, 0], x[:2] * 2.0)
    xv = RNG.normal(size=[4, 2])
    loss = sl.reduce_sum(gathered * gathered) + sl.reduce_sum(scattered.stack() * 3.0)
    (grad,) = sl.gradients(loss, [x])
    with session(engine) as s:
        g, sc, gr = s.run([gathered, scattered.stack(), grad], {x: xv})
    np.testing.assert_allclose(g, xv[[3, 1, 1]], atol=1e-6)
    expected = np.zeros([5, 2])
    expected[4], expected[0] = 2 * xv[0], 2 * xv[1]
    np.testing.assert_allclose(sc, expected, atol=1e-6)
    want = np.zeros([4, 2])
    want[3] += 2 * xv[3]
    want[1] += 4 * xv[1]
    want[:2] += 6.0
    np.testing.assert_allclose(gr, want, atol=1e-6)


def test_write_read_gradients_against_central_differences():
    def build(a, b):
        ta = sl.TensorArray(sl.float64, size=3).write(0, a).write(2, b * a)
        return ta.stack() + ta.read(2) * ta.read(0)

    check_gradients(build, [RNG.normal(size=[2]), RNG.normal(size=[2])])


def _rnn(x_ta_source, w, u, steps, engine_loop_bound=True):
    """h_t = tanh(x_t w + h_{t-1} u), outputs written to a TensorArray (TF1 style)."""
    xs = sl.TensorArray(sl.float64, size=steps).unstack(x_ta_source)
    out = sl.TensorArray(sl.float64, size=steps)
    h0 = sl.zeros([2, 3], sl.float64)

    def body(t, h, out):
        h = sl.tanh(sl.matmul(xs.read(t), w) + sl.matmul(h, u))
        return t + 1, h, out.write(t, h)

    _, h, out = sl.while_loop(
        lambda t, *_: t < steps,
        body,
        (0, h0, out),
        maximum_iterations=steps if engine_loop_bound else None,
    )
    return out.stack(), h


def _numpy_rnn(x, w, u):
    h, outs = np.zeros([2, 3]), []
    for t in range(x.shape[0]):
        h = np.tanh(x[t] @ w + h @ u)
        outs.append(h)
    return np.stack(outs), h


def test_rnn_over_a_tensor_array_in_a_while_loop(engine):
    xv, wv, uv = RNG.normal(size=[4, 2, 2]), RNG.normal(size=[2, 3]), RNG.normal(size=[3, 3]) * 0.5
    x = sl.constant(xv)
    w, u = sl.constant(wv), sl.constant(uv)
    outputs, h = _rnn(x, w, u, 4)
    loss = sl.reduce_sum(outputs * outputs)
    grads = sl.gradients(loss, [x, w, u])
    with session(engine) as s:
        o, hv, gx, gw, gu = s.run([outputs, h, *grads])
    want_o, want_h = _numpy_rnn(xv, wv, uv)
    np.testing.assert_allclose(o, want_o, atol=1e-6)
    np.testing.assert_allclose(hv, want_h, atol=1e-6)

    def numeric(which, value):
        out = np.zeros_like(value)
        for idx in np.ndindex(value.shape):
            args = [xv, wv, uv]
            for sign in (1, -1):
                v = value.copy()
                v[idx] += sign * 1e-6
                args[which] = v
                out[idx] += sign * np.sum(_numpy_rnn(*args)[0] ** 2) / 2e-6
        return out

    np.testing.assert_allclose(gw, numeric(1, wv), atol=1e-5)
    np.testing.assert_allclose(gu, numeric(2, uv), atol=1e-5)
    np.testing.assert_allclose(gx, numeric(0, xv), atol=1e-5)


def test_the_backward_loop_saves_indices_not_buffers():
    x = sl.constant(RNG.normal(size=[6, 2, 2]))
    outputs, _ = _rnn(
        x, sl.constant(RNG.normal(size=[2, 3])), sl.constant(RNG.normal(size=[3, 3])), 6
    )
    sl.gradients(sl.reduce_sum(outputs), [x])
    pushed = [
        op.inputs[1] for op in sl.get_default_graph().get_operations() if op.type == "StackPushV2"
    ]
    assert pushed
    for t in pushed:  # an index, a shape, a [2, 3] state: never a [6, 2, ...] buffer
        assert t.shape.num_elements() is not None and t.shape.num_elements() <= 6, t


def test_unknown_element_shape_is_learned_at_run_time(engine):
    x = sl.placeholder(sl.float32, [None, None, 3])  # time, batch, depth
    n = sl.shape(x)[0]
    xs = sl.TensorArray(sl.float32, size=n).unstack(x)

    def body(t, out):
        return t + 1, out.write(t, sl.tanh(xs.read(t)) * 2.0)

    _, out = sl.while_loop(
        lambda t, _: t < n, body, (0, sl.TensorArray(sl.float32, size=n)), maximum_iterations=n
    )
    (grad,) = sl.gradients(sl.reduce_sum(out.stack()), [x])
    xv = RNG.normal(size=[3, 2, 3]).astype(np.float32)
    # compiled: the loop allocates the array with its first write's shape (no fallback)
    with session(engine) as s:
        st, gv = s.run([out.stack(), grad], {x: xv})
    np.testing.assert_allclose(st, 2 * np.tanh(xv), atol=1e-6)
    np.testing.assert_allclose(gv, 2 * (1 - np.tanh(xv) ** 2), atol=1e-5)


def test_dynamic_size_grows_in_both_engines(engine, caplog):
    ta = sl.TensorArray(sl.float32, size=0, dynamic_size=True)

    def body(i, ta):
        return i + 1, ta.write(i, sl.cast(i, sl.float32) * [1.0, 2.0])

    _, ta = sl.while_loop(lambda i, _: i < 5, body, (0, ta))
    straight = sl.TensorArray(sl.float32, size=1, dynamic_size=True).write(3, [1.0])
    with caplog.at_level(logging.WARNING), session(engine) as s:
        st, size, st2, size2 = s.run([ta.stack(), ta.size(), straight.stack(), straight.size()])
    np.testing.assert_array_equal(st, np.arange(5)[:, None] * [1.0, 2.0])
    assert size == 5 and st.shape == (5, 2)
    np.testing.assert_array_equal(st2, [[0.0], [0.0], [0.0], [1.0]])
    assert size2 == 4
    assert "interpreted" not in caplog.text  # the compiled loop writes rows of a presized array


def test_dynamic_size_writes_the_compiled_loop_cannot_size_run_interpreted(engine, caplog):
    ta = sl.TensorArray(sl.float32, size=0, dynamic_size=True)

    def body(i, ta):  # index 2i: the array's final size is not the loop's bound
        return i + 1, ta.write(2 * i, sl.cast(i, sl.float32) * [1.0, 2.0])

    _, ta = sl.while_loop(lambda i, _: i < 3, body, (0, ta))
    config = sl.SessionConfig(engine="auto" if engine == "compiled" else engine)
    with caplog.at_level(logging.WARNING), sl.Session(config=config) as s:
        st = s.run(ta.stack())
    np.testing.assert_array_equal(st, [[0, 0], [0, 0], [1, 2], [0, 0], [2, 4]])
    if engine == "compiled":
        assert "TensorArrayGrowWriteV3" in caplog.text  # said once, never silently wrong


def test_tensor_array_through_cond(engine):
    p = sl.placeholder(sl.bool, [])
    ta = sl.TensorArray(sl.float32, size=2).write(0, [1.0, 1.0])
    out = sl.cond(p, lambda: ta.write(1, [2.0, 3.0]), lambda: ta.write(1, [-1.0, -1.0]))
    assert isinstance(out, sl.TensorArray)
    both = sl.cond(p, lambda: (ta, sl.constant(1.0)), lambda: (ta, sl.constant(0.0)))
    assert isinstance(both, tuple) and isinstance(both[0], sl.TensorArray)
    with session(engine) as s:
        np.testing.assert_array_equal(s.run(out.stack(), {p: True}), [[1, 1], [2, 3]])
        np.testing.assert_array_equal(s.run(out.stack(), {p: False}), [[1, 1], [-1, -1]])
        np.testing.assert_array_equal(s.run(both[0].read(0), {p: False}), [1, 1])


def test_nested_loops_with_tensor_arrays(engine):
    x = sl.constant(np.arange(6, dtype=np.float64).reshape(2, 3))

    def outer(i, rows):
        def inner(j, acc):
            return j + 1, acc.write(j, x[i, j] * 10.0)

        _, acc = sl.while_loop(
            lambda j, _: j < 3, inner, (0, sl.TensorArray(sl.float64, size=3)), maximum_iterations=3
        )
        return i + 1, rows.write(i, acc.stack())

    _, rows = sl.while_loop(
        lambda i, _: i < 2, outer, (0, sl.TensorArray(sl.float64, size=2)), maximum_iterations=2
    )
    (grad,) = sl.gradients(sl.reduce_sum(rows.stack() ** 2), [x])
    with session(engine) as s:
        st, g = s.run([rows.stack(), grad])
    np.testing.assert_allclose(st, np.arange(6).reshape(2, 3) * 10.0, atol=1e-6)
    np.testing.assert_allclose(g, 200.0 * np.arange(6).reshape(2, 3), atol=1e-6)


def test_errors_at_graph_construction():
    ta = sl.TensorArray(sl.float32, size=3)
    with pytest.raises(
        sl.errors.InvalidArgumentError,
        match="dtype is float32 but Op is trying to write dtype int32",
    ):
        ta.write(0, sl.constant([1, 2]))
    w = ta.write(0, [1.0, 2.0])
    with pytest.raises(ValueError, match="Inconsistent shapes"):
        w.write(1, [1.0, 2.0, 3.0])
    twice = w.write(0, [3.0, 4.0])  # as TF1: the error comes when the write runs
    with session("interpreted") as s:
        with pytest.raises(sl.errors.InvalidArgumentError, match="already been written"):
            s.run(twice.flow)
    with pytest.raises(ValueError, match="Size must be provided"):
        sl.TensorArray(sl.float32)
    with pytest.raises(ValueError, match="both a handle and size"):
        sl.TensorArray(sl.float32, size=2, flow=w.flow)
    with pytest.raises(TypeError, match="TensorArray"):
        sl.while_loop(lambda i, t: i < 2, lambda i, t: (i + 1, t.flow), (0, w))
    wrapped = sl.TensorArray(sl.float32, handle=w.handle, flow=w.flow)
    assert wrapped.element_shape.as_list() == [2]


def test_run_time_index_errors(engine):
    i = sl.placeholder(sl.int32, [])
    ta = sl.TensorArray(sl.float32, size=3, element_shape=[2])
    with session(engine) as s:
        with pytest.raises(
            sl.errors.InvalidArgumentError,
            match="Tried to write to index 3 but array is not resizeable and size is: 3",
        ):
            s.run(ta.write(i, [1.0, 2.0]).stack(), {i: 3})
        with pytest.raises(
            sl.errors.InvalidArgumentError, match="Tried to read from index 5 but array size is: 3"
        ):
            s.run(ta.read(i), {i: 5})


def test_stacking_a_zero_size_array_of_unknown_shape_is_an_error():
    ta = sl.TensorArray(sl.float32, size=0)
    with session("interpreted") as s:
        with pytest.raises(sl.errors.InvalidArgumentError, match="size zero"):
            s.run(ta.stack())
    known = sl.TensorArray(sl.float32, size=0, element_shape=[2])
    with session("interpreted") as s:
        assert s.run(known.stack()).shape == (0, 2)


@pytest.mark.slow
def test_hand_written_loop_matches_dynamic_rnn(engine):
    x = sl.constant(RNG.normal(size=[3, 2, 2]).astype(np.float32))  # time-major
    cell = sl.nn.rnn_cell.BasicRNNCell(3)
    expected, _ = sl.nn.dynamic_rnn(cell, x, dtype=sl.float32, time_major=True)
    xs = sl.TensorArray(sl.float32, size=3).unstack(x)

    def body(t, h, out):
        o, h = cell(xs.read(t), h)  # the same cell: the same variables
        return t + 1, h, out.write(t, o)

    _, _, out = sl.while_loop(
        lambda t, *_: t < 3,
        body,
        (0, cell.zero_state(2, sl.float32), sl.TensorArray(sl.float32, 3)),
        maximum_iterations=3,
    )
    grads = sl.gradients(sl.reduce_sum(out.stack() ** 2), [x] + cell.trainable_weights)
    want = sl.gradients(sl.reduce_sum(expected**2), [x] + cell.trainable_weights)
    with session(engine) as s:
        s.run(sl.global_variables_initializer())
        got, ref, g, w = s.run([out.stack(), expected, grads, want])
    np.testing.assert_allclose(got, ref, atol=1e-6)
    for a, b in zip(g, w):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_gradient_through_cond_and_second_order(engine):
    x = sl.placeholder(sl.float64, [2])
    p = sl.placeholder(sl.bool, [])
    ta = sl.TensorArray(sl.float64, size=2).write(0, x * 2.0)
    out = sl.cond(p, lambda: ta.write(1, x * x), lambda: ta.write(1, -x))
    (grad,) = sl.gradients(sl.reduce_sum(out.stack() ** 2), [x])
    straight = sl.TensorArray(sl.float64, size=2).write(0, x).write(1, x * x).stack()
    (hessian,) = sl.hessians(sl.reduce_sum(straight**2), x)
    xv = np.array([1.0, 2.0])
    with session(engine) as s:
        np.testing.assert_allclose(s.run(grad, {x: xv, p: True}), 8 * xv + 4 * xv**3, atol=1e-6)
        np.testing.assert_allclose(s.run(grad, {x: xv, p: False}), 10 * xv, atol=1e-6)
        np.testing.assert_allclose(s.run(hessian, {x: xv}), np.diag(2 + 12 * xv**2), atol=1e-6)


def test_an_overwritten_element_gets_no_gradient(engine):
    """TF1 raises on a second write to one index; sluice sees it only for constant indices. The
    loop below writes index 0 three times: the forward value is the last write, and so the
    gradient must be the last write's only (d(3x)/dx = 3), not the sum over all writes (6)."""
    x = sl.constant(2.0, sl.float64)

    def body(i, ta):
        return i + 1, ta.write(0, x * sl.cast(i + 1, sl.float64))

    _, ta = sl.while_loop(lambda i, ta: i < 3, body, [0, sl.TensorArray(sl.float64, size=2)])
    scattered = sl.TensorArray(sl.float64, size=3).scatter([0, 2], sl.stack([x, x * x]))
    rescattered = scattered.scatter([2], sl.reshape(x * 5.0, [1]))
    y = ta.read(0) + sl.reduce_sum(rescattered.stack())
    with session(engine) as s:
        value, grad = s.run([y, sl.gradients(y, x)[0]])
    np.testing.assert_allclose(value, 6.0 + 2.0 + 10.0, atol=1e-12)
    np.testing.assert_allclose(grad, 3.0 + 1.0 + 5.0, atol=1e-12)


def test_elements_of_different_shapes_split_concat_and_clearing_reads(engine):
    """TF1's infer_shape=False arrays (kept as a list while building), an unequal split, a concat
    of different first dimensions, their gradients, and clear_after_read, in one graph."""
    x = sl.constant(np.arange(6, dtype=np.float32).reshape(3, 2))
    ragged = sl.TensorArray(sl.float32, size=3, infer_shape=False)
    ragged = ragged.write(0, x[:2]).write(1, x[2]).write(2, -3.0)
    split = sl.TensorArray(sl.float32, size=2, infer_shape=False).split(x * 2.0, [1, 2])
    joined = split.concat()
    (grad,) = sl.gradients(sl.reduce_sum(joined * joined) + sl.reduce_sum(ragged.read(1)), [x])
    once = sl.TensorArray(sl.float32, size=2).unstack(x[:2])
    r0 = once.read(0)
    with sl.control_dependencies([r0]):
        again = once.read(0)
    with session(engine) as s:
        r, j, g, s1 = s.run([ragged.read(0), joined, grad, split.read(1)])
        with pytest.raises(sl.errors.InvalidArgumentError, match="Could not read index 0 twice"):
            s.run(again)
    np.testing.assert_allclose(r, [[0.0, 1.0], [2.0, 3.0]], atol=1e-6)
    np.testing.assert_allclose(j, 2.0 * np.arange(6).reshape(3, 2), atol=1e-6)
    np.testing.assert_allclose(s1, [[4.0, 6.0], [8.0, 10.0]], atol=1e-6)
    want = 8.0 * np.arange(6).reshape(3, 2)
    want[2] += 1.0
    np.testing.assert_allclose(g, want, atol=1e-6)


def test_gradient_arrays_one_per_source_with_shapes_prepended(engine):
    # TF1's testSkipEagerTensorGradAccessTwiceReceiveSameObject and
    # testSkipEagerTensorArrayGradWithShapeKnownElementShape, in one graph
    from sluice.python.ops import gen_data_flow_ops

    ta = sl.TensorArray(sl.float32, size=2, element_shape=[3])
    g0, g1 = ta.grad("g"), ta.write(0, [1.0, 2.0, 3.0]).grad("g")
    assert g0.flow is g1.flow  # one gradient array per source, from any value of the array
    with sl.control_dependencies([g0.write(1, [4.0, 5.0, 6.0]).flow]):
        ordered = g1.read(1)  # through the other copy, after the write: sees it
    handle, flow = gen_data_flow_ops.tensor_array_grad_with_shape(ta.handle, ta.flow, [2], "s")
    value = sl.placeholder(sl.float32)
    shaped = sl.TensorArray(sl.float32, handle=handle, flow=flow).write(0, value).read(0)
    assert shaped.shape.as_list() == [None, 3]
    fed = np.arange(6.0).reshape(2, 3)
    with session(engine) as s:
        got, got_shaped = s.run([ordered, shaped], {value: fed})
        with pytest.raises(sl.errors.InvalidArgumentError, match="Could not write to TensorArray"):
            s.run(shaped, {value: np.zeros(3)})
    np.testing.assert_allclose(got, [4.0, 5.0, 6.0], atol=1e-6)
    np.testing.assert_allclose(got_shaped, fed, atol=1e-6)
