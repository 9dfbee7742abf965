"""`sl.GradientTape` on a graph, checked as TF2's tape behaves: values against `sl.gradients`,
central differences and NumPy; what is recorded (watched tensors, trainable variables read inside,
nothing built before entering or under `stop_recording`); persistent and non-persistent tapes;
nested structures, output_gradients, unconnected "zero"; jacobian and batch_jacobian; loops and
conds inside the tape; TF's errors. Graphs are built first and run with `sess.run`, as TF1 code
does; every run is a differential run (`sluice.testing.differential_sessions`): the compiled and
the interpreted engine must agree, and the assertions check the interpreted values.
"""

import logging

import numpy as np
import pytest

import sluice as sl
from sluice.testing import central_difference, differential_sessions

F64 = sl.float64


@pytest.fixture(autouse=True)
def both_engines():
    with differential_sessions() as log:
        yield
    assert set(log.engines) <= {"compiled", "none"}, log.engines  # every graph compiled


def run(fetches, feeds=None):
    with sl.Session() as s:
        s.run(sl.global_variables_initializer())
        return s.run(fetches, feeds)


def numeric_gradient(y, x, feeds):
    """d sum(y) / dx at feeds[x], by central differences (x is a float64 placeholder)."""
    with sl.Session() as s:
        s.run(sl.global_variables_initializer())
        flat = np.asarray(feeds[x], np.float64).reshape(-1)

        def loss(v):
            return np.sum(s.run(y, {**feeds, x: v.reshape(np.shape(feeds[x]))}))

        slopes = [central_difference(loss, flat, k, 1e-6) for k in range(flat.size)]
    return np.reshape(slopes, np.shape(feeds[x]))


# -- what is recorded -----------------------------------------------------------------------------
def test_a_watched_placeholder_gets_the_gradient_of_sl_gradients_and_of_central_differences():
    x = sl.placeholder(F64, [3])
    with sl.GradientTape() as tape:
        tape.watch(x)
        y = sl.reduce_sum(sl.sin(x) * x)
    dx = tape.gradient(y, x)
    (reference,) = sl.gradients(y, x)
    feeds = {x: np.array([0.3, -1.2, 2.0])}
    got, want = run([dx, reference], feeds)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got, numeric_gradient(y, x, feeds), rtol=1e-6, atol=1e-9)


def test_trainable_variables_read_inside_are_watched_and_others_are_not():
    x = sl.placeholder(sl.float32, [3])
    v = sl.Variable([1.0, 2.0, 3.0], name="v")
    frozen = sl.Variable([2.0, 2.0, 2.0], trainable=False, name="frozen")
    unread = sl.Variable(1.0, name="unread")
    with sl.GradientTape(persistent=True) as tape:
        y = sl.reduce_sum(v * frozen) + sl.reduce_sum(x * x)
    assert tape.watched_variables() == (v,)
    dv, dfrozen, dunread, dx = tape.gradient(y, [v, frozen, unread, x])
    assert (dfrozen, dunread, dx) == (None, None, None)  # as TF: none of them is watched
    np.testing.assert_allclose(run(dv, {x: [1.0, 2.0, 3.0]}), [2.0, 2.0, 2.0])
    zeros = tape.gradient(y, [frozen, x], unconnected_gradients="zero")
    np.testing.assert_allclose(run(zeros, {x: [1.0, 2.0, 3.0]}), np.zeros((2, 3)))


def test_without_watch_accessed_variables_only_watched_variables_get_gradients():
    # TF's docstring example: x is watched, w is not
    x, w = sl.Variable(2.0, name="x"), sl.Variable(5.0, name="w")
    with sl.GradientTape(watch_accessed_variables=False, persistent=True) as tape:
        tape.watch(x)
        y = x**2
        z = w**3
    assert tape.watched_variables() == (x,)
    assert tape.gradient(z, w) is None
    assert run(tape.gradient(y, x)) == 4.0


def test_ops_built_before_entering_carry_no_gradient():
    x = sl.placeholder(F64, [])
    before = x * 2.0
    with sl.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = before * x
    # y = 2x * x, but only the inner product is recorded: d/dx = before = 2x, not 4x
    assert run(tape.gradient(y, x), {x: 3.0}) == 6.0
    assert run(tape.gradient(y, before), {x: 3.0}) == 3.0  # an input of a recorded op, as TF
    (full,) = sl.gradients(y, x)
    assert run(full, {x: 3.0}) == 12.0


def test_a_watch_counts_from_the_watch_on():
    x = sl.placeholder(F64, [])
    with sl.GradientTape(persistent=True) as tape:
        y = x * 2.0
        tape.watch(x)
        z = x * 3.0
    assert tape.gradient(y, x) is None
    assert run(tape.gradient(z, x), {x: 1.0}) == 3.0


def test_stop_recording_leaves_ops_out():
    x = sl.constant(4.0)
    with sl.GradientTape() as tape:
        tape.watch(x)
        with tape.stop_recording():
            y = x**2
    assert tape.gradient(y, x) is None  # TF's docstring example

    with sl.GradientTape() as tape:
        tape.watch(x)
        with tape.stop_recording():
            cube = x**3
        y = x**2 + cube
    assert run(tape.gradient(y, x)) == 8.0


def test_reset_forgets_what_was_recorded():
    x = sl.constant(3.0)
    with sl.GradientTape() as tape:
        tape.watch(x)
        loss = x * x
        tape.reset()
        tape.watch(x)
        loss += 4.0 * x
    assert run(tape.gradient(loss, x)) == 4.0


def test_weights_of_a_layer_built_in_another_graph_resolve_to_their_mirrors():
    with sl.Graph().as_default():
        dense = sl.layers.Dense(2)
        dense(sl.placeholder(sl.float32, [None, 3]))
    x = sl.placeholder(sl.float32, [None, 3])
    with sl.GradientTape() as tape:
        loss = sl.reduce_sum(dense(x) ** 2)
    kernel, bias = dense.trainable_weights  # variables of the first graph
    assert [v.graph for v in tape.watched_variables()] == [x.graph, x.graph]  # their mirrors
    grads = tape.gradient(loss, {"kernel": kernel, "bias": bias})
    reference = sl.gradients(loss, [kernel, bias])
    feeds = {x: np.random.RandomState(0).randn(4, 3).astype(np.float32)}
    got, want = run([grads, reference], feeds)
    np.testing.assert_allclose(got["kernel"], want[0], rtol=1e-6)
    np.testing.assert_allclose(got["bias"], want[1], rtol=1e-6)


def test_a_keras_layer_built_inside_the_tape():
    x = sl.placeholder(sl.float32, [None, 3])
    dense = sl.layers.Dense(2, activation="tanh")
    with sl.GradientTape() as tape:
        loss = sl.reduce_mean(dense(x) ** 2)
    assert tape.watched_variables() == tuple(dense.trainable_weights)
    grads = tape.gradient(loss, dense.trainable_weights)
    reference = sl.gradients(loss, dense.trainable_weights)
    feeds = {x: np.random.RandomState(0).randn(4, 3).astype(np.float32)}
    for got, want in zip(*run([grads, reference], feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_tf1_training_step_applies_the_tapes_gradients():
    x = sl.placeholder(sl.float32, [None])
    w = sl.Variable(1.0, name="w")
    table = sl.Variable([[0.5], [1.5], [-1.0]], name="table")
    with sl.GradientTape() as tape:
        pred = w * x + sl.reshape(sl.gather(table, [0, 2]), [-1])
        loss = sl.reduce_sum((pred - 1.0) ** 2)
    grads = tape.gradient(loss, [w, table])
    step = sl.train.GradientDescentOptimizer(0.1).apply_gradients(zip(grads, [w, table]))
    with sl.Session() as s:
        s.run(sl.global_variables_initializer())
        s.run(step, {x: [1.0, 2.0]})
        new_w, new_table = s.run([w, table])
    residual = np.array([1.0 * 1.0 + 0.5 - 1.0, 1.0 * 2.0 - 1.0 - 1.0])  # [0.5, 0.0]
    np.testing.assert_allclose(new_w, 1.0 - 0.1 * np.sum(2 * residual * [1.0, 2.0]), rtol=1e-6)
    np.testing.assert_allclose(new_table, [[0.5 - 0.1 * 2 * 0.5], [1.5], [-1.0]], rtol=1e-6)


# -- persistence ----------------------------------------------------------------------------------
def test_a_persistent_tape_gives_several_gradients():
    x = sl.constant(3.0)
    with sl.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert run([tape.gradient(z, x), tape.gradient(y, x)]) == [108.0, 6.0]


def test_a_non_persistent_tape_gives_one_gradient():
    x = sl.constant(3.0)
    with sl.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    dx = tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="can only be called once on non-persistent tapes"):
        tape.gradient(y, x)
    assert run(dx) == 6.0


def test_a_gradient_inside_a_non_persistent_tape_stops_its_recording():
    x = sl.constant(3.0)
    with sl.GradientTape() as tape:
        tape.watch(x)
        dx = tape.gradient(x * x, x)
        with pytest.raises(RuntimeError, match="not recording"):
            with tape.stop_recording():
                pass
    assert run(dx) == 6.0


def test_a_gradient_inside_a_persistent_tape_warns_once(caplog):
    x = sl.constant(3.0)
    with sl.GradientTape(persistent=True) as tape, caplog.at_level(logging.WARNING, "sluice"):
        tape.watch(x)
        tape.gradient(x * x, x)
    # once per process: a first call in an earlier test may have said it already
    assert sum("persistent tape inside its context" in r.message for r in caplog.records) <= 1


def test_nested_tapes_give_second_derivatives():
    x = sl.constant(5.0)  # TF's docstring example
    with sl.GradientTape() as outer:
        outer.watch(x)
        with sl.GradientTape() as inner:
            inner.watch(x)
            y = x * x
        dy_dx = inner.gradient(y, x)
    d2y_dx2 = outer.gradient(dy_dx, x)
    assert run([dy_dx, d2y_dx2]) == [10.0, 2.0]


# -- structures -----------------------------------------------------------------------------------
def test_nested_targets_are_summed_and_the_result_is_packed_like_the_sources():
    a, b = sl.placeholder(F64, [2]), sl.placeholder(F64, [])
    v = sl.Variable(np.array([0.5, -1.0]), name="v")
    with sl.GradientTape() as tape:
        tape.watch([a, b])
        y1 = sl.reduce_sum(a * v) * b
        y2 = sl.tanh(b) * sl.reduce_sum(v * v)
    grads = tape.gradient({"first": y1, "rest": [y2]}, {"a": a, "pair": (v, b)})
    assert set(grads) == {"a", "pair"} and isinstance(grads["pair"], tuple)
    reference = sl.gradients([y1, y2], [a, v, b])
    feeds = {a: np.array([1.5, 2.0]), b: 0.7}
    got, want = run([grads, reference], feeds)
    np.testing.assert_allclose(got["a"], want[0], rtol=1e-12)
    np.testing.assert_allclose(got["pair"][0], want[1], rtol=1e-12)
    np.testing.assert_allclose(got["pair"][1], want[2], rtol=1e-12)


def test_output_gradients_weight_the_targets():
    x = sl.placeholder(F64, [2])
    with sl.GradientTape() as tape:
        tape.watch(x)
        y1, y2 = x * x, sl.sin(x)
    w1, w2 = np.array([1.0, -2.0]), np.array([0.5, 3.0])
    dx = tape.gradient([y1, y2], x, output_gradients=[sl.constant(w1), sl.constant(w2)])
    feeds = {x: np.array([0.4, 1.1])}
    (reference,) = sl.gradients([y1, y2], x, grad_ys=[sl.constant(w1), sl.constant(w2)])
    got, want = run([dx, reference], feeds)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got, w1 * 2 * feeds[x] + w2 * np.cos(feeds[x]), rtol=1e-12)


def test_a_gather_gives_indexed_slices_as_sl_gradients_does():
    table = sl.Variable(np.arange(8.0).reshape(4, 2), name="table")
    with sl.GradientTape() as tape:
        y = sl.reduce_sum(sl.gather(table, [2, 0, 2]) ** 2)
    grad = tape.gradient(y, table)
    (reference,) = sl.gradients(y, table)
    assert isinstance(grad, sl.IndexedSlices) and isinstance(reference, sl.IndexedSlices)
    got, want = run([sl.convert_to_tensor(grad), sl.convert_to_tensor(reference)])
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(got, [[0.0, 2.0], [0.0, 0.0], [16.0, 20.0], [0.0, 0.0]])


def test_a_variable_target_is_read_on_the_tape():
    v = sl.Variable([1.0, 2.0], name="v")
    with sl.GradientTape() as tape:
        pass
    np.testing.assert_allclose(run(tape.gradient(v, v)), [1.0, 1.0])


# -- control flow ---------------------------------------------------------------------------------
def test_a_while_loop_and_a_cond_inside_the_tape():
    x = sl.placeholder(F64, [2])
    w = sl.Variable(np.array([0.8, -0.3]), name="w")
    with sl.GradientTape() as tape:
        tape.watch(x)

        def body(i, acc):
            return i + 1, sl.tanh(acc * w + x)

        _, acc = sl.while_loop(
            lambda i, acc: i < 3, body, [sl.constant(0), sl.zeros([2], F64)], maximum_iterations=3
        )
        total = sl.reduce_sum(acc)
        y = sl.cond(total > 0.0, lambda: total * total, lambda: -total)
    dx, dw = tape.gradient(y, [x, w])
    reference = sl.gradients(y, [x, w])
    for value in ([0.5, 0.1], [-0.7, -0.2]):  # both branches of the cond
        feeds = {x: np.array(value)}
        got, want = run([[dx, dw], reference], feeds)
        np.testing.assert_allclose(got, want, rtol=1e-12)
        np.testing.assert_allclose(got[0], numeric_gradient(y, x, feeds), rtol=1e-6, atol=1e-9)


# -- jacobians ------------------------------------------------------------------------------------
def test_jacobian_matches_numpy():
    x = sl.placeholder(F64, [3])
    m = np.array([[0.2, -0.5, 1.0], [0.7, 0.1, -0.4]])
    w = sl.Variable(m, name="w")
    with sl.GradientTape() as tape:
        tape.watch(x)
        y = sl.tanh(sl.squeeze(sl.matmul(w, sl.expand_dims(x, 1)), 1))  # [2]
    jx, jw = tape.jacobian(y, [x, w])
    assert jx.shape.as_list() == [2, 3] and jw.shape.as_list() == [2, 2, 3]
    x_value = np.array([0.3, -1.0, 0.5])
    got_x, got_w = run([jx, jw], {x: x_value})
    slope = 1 - np.tanh(m @ x_value) ** 2
    np.testing.assert_allclose(got_x, slope[:, None] * m, rtol=1e-12)
    want_w = np.zeros((2, 2, 3))
    for i in range(2):
        want_w[i, i] = slope[i] * x_value
    np.testing.assert_allclose(got_w, want_w, rtol=1e-12)


def test_jacobian_of_a_matrix_target_and_an_unconnected_source():
    x = sl.constant([1.0, 2.0])  # TF's docstring example, as a 2 x 2 target
    other = sl.constant(1.0)
    with sl.GradientTape(persistent=True) as tape:
        tape.watch([x, other])
        y = sl.reshape(sl.stack([x * x, 3.0 * x]), [2, 2])
    jx, jother = tape.jacobian(y, [x, other])
    assert jother is None
    want = np.array([[[2.0, 0.0], [0.0, 4.0]], [[3.0, 0.0], [0.0, 3.0]]])
    np.testing.assert_allclose(run(jx), want)
    zero = tape.jacobian(y, other, unconnected_gradients="zero")
    np.testing.assert_allclose(run(zero), np.zeros((2, 2)))


def test_jacobian_of_a_loop_target_of_unknown_size():
    x = sl.placeholder(F64, [None])
    with sl.GradientTape() as tape:
        tape.watch(x)
        _, y = sl.while_loop(
            lambda i, a: i < 3, lambda i, a: (i + 1, sl.sin(a) * x), [0, x], maximum_iterations=3
        )
    jacobian = tape.jacobian(y, x)
    x_value = np.array([0.5, 1.3, -0.4])
    with sl.Session() as s:
        got = s.run(jacobian, {x: x_value})

    def f(v):
        a = v.copy()
        for _ in range(3):
            a = np.sin(a) * v
        return a

    want = [central_difference(f, x_value, k, 1e-6) for k in range(3)]  # columns
    np.testing.assert_allclose(got, np.transpose(want), rtol=1e-6, atol=1e-9)


def test_batch_jacobian_matches_per_example_jacobians():
    x = sl.placeholder(F64, [None, 3])
    a = np.array([[0.5, -1.0], [0.3, 0.2], [-0.8, 0.6]])
    with sl.GradientTape() as tape:
        tape.watch(x)
        y = sl.tanh(sl.matmul(x, sl.constant(a)))  # [b, 2]
    bj = tape.batch_jacobian(y, x)
    x_value = np.array([[0.1, 0.2, 0.3], [-1.0, 0.5, 2.0]])
    got = run(bj, {x: x_value})
    slope = 1 - np.tanh(x_value @ a) ** 2  # [b, 2]
    np.testing.assert_allclose(got, slope[:, :, None] * a.T[None], rtol=1e-12)


def test_batch_jacobian_of_an_unconnected_source_is_zeros_as_tf():
    x, other = sl.constant([[1.0, 2.0]]), sl.constant([[1.0, 1.0, 1.0]])
    with sl.GradientTape() as tape:
        tape.watch([x, other])
        y = x * x
    np.testing.assert_allclose(run(tape.batch_jacobian(y, other)), np.zeros((1, 2, 3)))


# -- errors ---------------------------------------------------------------------------------------
def test_errors_as_tf():
    x = sl.constant(1.0)
    tape = sl.GradientTape()
    with pytest.raises(RuntimeError, match="can only be called once"):
        tape.gradient(x, x)  # never entered: nothing recorded
    with pytest.raises(RuntimeError, match="not recording"):
        with tape.stop_recording():
            pass
    with pytest.raises(ValueError, match="Tape is not recording"):
        tape.reset()
    with tape:
        with pytest.raises(ValueError, match="re-enter an already-active tape"):
            tape.__enter__()
        with pytest.raises(ValueError, match="not sl.Tensor"):
            tape.watch(3.0)
        tape.watch(x)
        y = sl.stack([x, x])
    with pytest.raises(ValueError, match="first dimension of target shape"):
        tape.batch_jacobian(sl.zeros([2, 2]), sl.zeros([3, 2]))
    with pytest.raises(ValueError, match="unconnected_gradients"):
        sl.GradientTape().__enter__().gradient(y, x, unconnected_gradients="zeros")
    with sl.GradientTape() as other, sl.Graph().as_default() as elsewhere:
        z = sl.constant(2.0)
        other.watch(z)
        doubled = z * 2.0
    with elsewhere.as_default(), pytest.raises(ValueError, match="a graph that this tape never"):
        other.gradient(doubled, z)
    with pytest.raises(TypeError, match="a source must be a Tensor or a Variable"):
        with sl.GradientTape() as other:
            other.watch(x)
        other.gradient(x * 2.0, [1.0])
