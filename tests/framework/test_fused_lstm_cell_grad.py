"""The `fused_lstm_cell_grad` loop pass and its native kernel (`native.lstm_cell_grad`): the
kernel gives the backward step of an LSTM cell's gates to float32 rounding on every shape class
and reads the saved row it is told (clamped as XLA's pop clamps it); the pass fires on the
backward loops of the TF1 and Keras LSTM cells (a batch unknown while building too, where
Keras's broadcasting gradients stand between the ops), with the numbers of the interpreted
engine and of the step without the pass, and not on what it does not describe."""

import jax
import numpy as np
import pytest

import sluice as sl
from sluice import layers as L
from sluice.framework import native
from sluice.framework.compiler.loop_passes import DEFAULT_PASSES
from tests.framework.test_fused_lstm_cell import CELLS, graph_of, run, tf1_rnn, used

WITHOUT_GRAD = tuple(p for p in DEFAULT_PASSES if p != "fused_lstm_cell_grad")


def numpy_grad(dh, dc_next, rows, slices):
    """The backward step in float64 NumPy: dz in z's order, dc_prev, db."""
    i, f, g, o, tanh_c, c_prev = (r.astype(np.float64) for r in rows)
    dc = dc_next + dh * o * (1 - tanh_c**2)
    pieces = {
        slices[0]: dc * g * i * (1 - i),
        slices[1]: dc * c_prev * f * (1 - f),
        slices[2]: dc * i * (1 - g**2),
        slices[3]: dh * tanh_c * o * (1 - o),
    }
    dz = np.concatenate([pieces[s] for s in range(4)], axis=1)
    return [dz, dc * f, dz.sum(axis=0)]


def saved_buffers(rng, n, m, units):
    gate = lambda: rng.uniform(0.02, 0.98, (n, m, units))  # noqa: E731 (a sigmoid's range)
    squashed = lambda: np.tanh(rng.standard_normal((n, m, units)) * 2)  # noqa: E731
    c_prev = rng.standard_normal((n, m, units)) * 3
    return [b.astype(np.float32) for b in (gate(), gate(), squashed(), gate(), squashed(), c_prev)]


@used
@pytest.mark.parametrize(
    "m, units",
    # W1's and W2's steps; one row and one unit; lengths that are no multiple of a vector
    [(32, 128), (16, 256), (1, 1), (7, 13), (3, 33)],
)
@pytest.mark.parametrize("slices", [(0, 2, 1, 3), (0, 1, 2, 3)], ids=["tf1_ijfo", "keras_ifco"])
def test_kernel_gives_the_backward_step_to_float32_rounding(m, units, slices):
    rng = np.random.default_rng(m * 1000 + units)
    n = 4
    saved = saved_buffers(rng, n, m, units)
    dh = rng.standard_normal((m, units)).astype(np.float32)
    dc_next = rng.standard_normal((m, units)).astype(np.float32)
    step = jax.jit(lambda dh, dc, saved, row: native.lstm_cell_grad(dh, dc, saved, row, slices))
    # rows past either end read the nearest row, as a dynamic slice (XLA's pop) clamps
    for row, read in ((0, 0), (2, 2), (n - 1, n - 1), (n + 5, n - 1), (-3, 0)):
        got = step(dh, dc_next, saved, np.int32(row))
        expected = numpy_grad(dh, dc_next, [s[read] for s in saved], slices)
        shapes = [(m, 4 * units), (m, units), (4 * units,)]
        for value, e, shape in zip(got, expected, shapes):
            assert value.shape == shape and value.dtype == np.float32
            np.testing.assert_allclose(value, e, rtol=1e-5, atol=1e-5 * np.sqrt(m))


GRAD_CELLS = {
    **{name: count for name, (_, count) in CELLS.items()},
    "unknown_batch": 1,
    "keras_unknown_batch": 1,
    "swap_memory": 0,  # saved rows in host memory: the kernel reads device buffers only
}
assert "fused_lstm_cell_grad" in DEFAULT_PASSES  # what test_fused_lstm_cell's steps run


def build_of(cell):
    if cell in CELLS:
        return CELLS[cell][0], 3
    if cell == "unknown_batch":  # Mul's gradients then go through BroadcastGradientArgs
        return tf1_rnn(lambda: sl.nn.rnn_cell.BasicLSTMCell(5)), None
    if cell == "keras_unknown_batch":
        return (lambda x: L.LSTM(6, return_sequences=True)(x)), None

    def swapping(x):
        cell = sl.nn.rnn_cell.BasicLSTMCell(5)
        return sl.nn.dynamic_rnn(cell, x, dtype=sl.float32, swap_memory=True)[0]

    return swapping, 3


def graph_with_batch(build, batch):
    """`graph_of`, its placeholder's batch None where `batch` is (fed 3 rows)."""
    if batch is not None:
        return graph_of(build, batch=batch)
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float32, [None, 6, 4], name="x")
        outputs = build(x)
        loss = sl.reduce_sum(sl.square(outputs)) + sl.reduce_sum(outputs[:, -1, :])
        variables = sl.trainable_variables()
        fetches = [loss] + sl.gradients(loss, variables)
        init = sl.global_variables_initializer()
    value = np.random.default_rng(7).normal(size=(3, 6, 4)).astype(np.float32)
    return g, init, fetches, {x: value}


@used
@pytest.mark.parametrize("cell", sorted(GRAD_CELLS))
def test_pass_gives_the_numbers_of_the_step_without_it(cell):
    graph = graph_with_batch(*build_of(cell))
    with_pass, applied = run(graph)
    assert applied.count("fused_lstm_cell_grad") == GRAD_CELLS[cell]
    if not GRAD_CELLS[cell]:
        return  # lowered as without the pass
    without_pass, applied_without = run(graph, passes=WITHOUT_GRAD)
    assert "fused_lstm_cell_grad" not in applied_without
    for a, c in zip(with_pass, without_pass):
        np.testing.assert_allclose(a, c, rtol=1e-6, atol=1e-6)
    if cell not in CELLS:  # test_fused_lstm_cell compares CELLS' default steps (this pass on)
        interpreted, _ = run(graph, engine="interpreted")  # the ops themselves, never fused
        for a, b in zip(with_pass, interpreted):
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


@used
def test_backward_steps_are_fused_where_the_forward_ones_are_not():
    # a hoisted input projection keeps XLA's forward gates; their gradients are the same ops
    graph = graph_of(tf1_rnn(lambda: sl.nn.rnn_cell.BasicLSTMCell(5)))
    passes = ("hoist_input_projection", *DEFAULT_PASSES)
    with_pass, applied = run(graph, passes=passes)
    assert "fused_lstm_cell_grad" in applied and "hoist_input_projection" in applied
    interpreted, _ = run(graph, engine="interpreted")
    for a, b in zip(with_pass, interpreted):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


@used
def test_a_training_loop_with_the_pass_follows_the_one_without():
    # Adam steps compound any difference in the gradients
    def train(passes):
        g = sl.Graph()
        with g.as_default():
            sl.set_random_seed(3)
            x = sl.placeholder(sl.float32, [None, 5, 3])
            cell = sl.nn.rnn_cell.MultiRNNCell(
                [sl.nn.rnn_cell.BasicLSTMCell(8), sl.nn.rnn_cell.LSTMCell(6)]
            )
            outputs, _ = sl.nn.dynamic_rnn(cell, x, dtype=sl.float32)
            loss = sl.reduce_mean(sl.square(outputs[:, -1, :] - 0.5))
            train_op = sl.train.AdamOptimizer(0.05).minimize(loss)
            init = sl.global_variables_initializer()
        data = np.random.default_rng(0).normal(size=(4, 5, 3)).astype(np.float32)
        config = sl.SessionConfig(engine="compiled", graph_passes=passes)
        metadata = sl.RunMetadata()
        with sl.Session(graph=g, config=config) as sess:
            sess.run(init)
            losses = [sess.run([loss, train_op], {x: data}, run_metadata=metadata)[0]]
            losses += [sess.run([loss, train_op], {x: data})[0] for _ in range(4)]
        return losses, [name for name, _ in metadata.graph_passes].count("fused_lstm_cell_grad")

    (fused, count), (unfused, _) = train(DEFAULT_PASSES), train(WITHOUT_GRAD)
    assert count == 2
    np.testing.assert_allclose(fused, unfused, rtol=1e-5, atol=1e-6)
