"""The `fused_lstm_cell` loop pass and its native kernel (`native.lstm_cell`): the kernel gives
an LSTM step's values to float32 rounding on every shape class (row tails of its tiles, units
not a multiple of its 8 per panel, one row), its activations are as accurate as XLA's, and the
pass fires on the TF1 and Keras LSTM cells (not on cells it does not describe) with the numbers
of the interpreted engine, which runs the graph's ops themselves: losses and gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sluice as sl
from sluice import layers as L
from sluice.framework import native
from sluice.framework.compiler import fused_cells
from sluice.framework.compiler.loop_passes import DEFAULT_PASSES

used = pytest.mark.skipif(
    not native.panel_matmul_available(),
    reason="compiled steps do not use the native kernel here (not built, or the portable tile)",
)


def numpy_step(a, w, b, c_prev, slices, offsets):
    """The LSTM step in float64 NumPy: the four activations, c, tanh(c), h."""
    z = a.astype(np.float64) @ w.astype(np.float64) + b
    pieces = np.split(z, 4, axis=1)
    acts = [
        np.tanh(p + o) if s == slices[2] else 1 / (1 + np.exp(-(p + o)))
        for s, (p, o) in enumerate(zip(pieces, offsets))
    ]
    i, f, g, o = (acts[s] for s in slices)
    c = c_prev * f + i * g
    return [*acts, c, np.tanh(c), o * np.tanh(c)]


@used
@pytest.mark.parametrize(
    "m, k, units",
    # W1's and W2's steps; row tails of the 6- and 8-row tiles; units past a panel's 8
    [(32, 160, 128), (16, 288, 256), (1, 3, 5), (7, 13, 11), (13, 40, 24), (128, 64, 33)]
    + [(6, 8, 8), (9, 1, 3)],
)
@pytest.mark.parametrize(
    "slices, offsets",
    [((0, 2, 1, 3), (0.0, 0.0, 1.0, 0.0)), ((0, 1, 2, 3), (0.0, 0.0, 0.0, 0.0))],
    ids=["tf1_ijfo", "keras_ifco"],
)
def test_kernel_gives_the_step_to_float32_rounding(m, k, units, slices, offsets):
    rng = np.random.default_rng(m * 100 + k + units)
    a = rng.standard_normal((m, k)).astype(np.float32)
    w = (rng.standard_normal((k, 4 * units)) * 0.3).astype(np.float32)
    b = rng.standard_normal(4 * units).astype(np.float32)
    c_prev = (rng.standard_normal((m, units)) * 2).astype(np.float32)

    def step(a, w, b, c_prev):
        panels, packed_bias = native.pack_gate_panels(w, b)
        return native.lstm_cell(a, panels, packed_bias, c_prev, slices, offsets)

    got = jax.jit(step)(a, w, b, c_prev)
    expected = numpy_step(a, w, b, c_prev, slices, offsets)
    scale = 1e-6 * max(1.0, np.sqrt(k))  # the matmul's float32 rounding, as XLA's dot's
    for g, e in zip(got, expected):
        assert g.shape == (m, units) and g.dtype == np.float32
        np.testing.assert_allclose(g, e, rtol=4 * scale, atol=4 * scale)


@pytest.mark.parametrize("k, units", [(3, 8), (2, 5), (1, 1), (4, 19)])
def test_gate_panels_hold_8_units_of_each_slice(k, units):
    # panel p, column s * 8 + j: unit 8p + j of slice s, zero past the last unit
    w = np.random.default_rng(k + units).standard_normal((k, 4 * units)).astype(np.float32)
    b = np.arange(4 * units, dtype=np.float32) + 1
    count = -(-units // 8)
    expected = np.zeros((count, k, 32), np.float32)
    expected_bias = np.zeros(count * 32, np.float32)
    for p in range(count):
        for s in range(4):
            for j in range(8):
                if 8 * p + j < units:
                    expected[p, :, s * 8 + j] = w[:, s * units + 8 * p + j]
                    expected_bias[p * 32 + s * 8 + j] = b[s * units + 8 * p + j]
    panels, packed_bias = jax.jit(native.pack_gate_panels)(w, b)
    np.testing.assert_array_equal(panels, expected)
    np.testing.assert_array_equal(packed_bias, expected_bias)


@used
def test_activations_are_as_accurate_as_xlas():
    # z = 1 * w: each slice's activation of a grid of values, saturated ones included
    xs = np.concatenate(
        [np.linspace(-30, 30, 4096), np.linspace(-1, 1, 2048), np.linspace(-1e-3, 1e-3, 1024)]
        + [np.array([0.0, 0.625, -0.625, 7.9, -7.9, 20.0, -20.0, 87.0, -87.0, 1e-30])]
    ).astype(np.float32)
    units = len(xs)
    w = np.tile(xs, 4)[None, :]
    zeros = np.zeros((1, units), np.float32)
    panels, packed_bias = native.pack_gate_panels(w, np.zeros(4 * units, np.float32))
    acts = native.lstm_cell(
        np.ones((1, 1), np.float32), panels, packed_bias, zeros, (0, 1, 2, 3), (0.0,) * 4
    )
    sigmoid, tanh = np.asarray(acts[0])[0], np.asarray(acts[2])[0]
    x64 = xs.astype(np.float64)
    normal = 1 / (1 + np.exp(-x64)) > 1.2e-38  # XLA's and ours flush subnormal results
    for got, xla, exact in (
        (sigmoid, 1 / (1 + jnp.exp(-xs)), 1 / (1 + np.exp(-x64))),
        (tanh, jnp.tanh(xs), np.tanh(x64)),
    ):
        scale = np.maximum(np.abs(exact), 1e-30)[normal]
        error = np.abs(got - exact)[normal] / scale
        xla_error = np.abs(np.asarray(xla) - exact)[normal] / scale
        assert error.max() <= max(2.5e-7, 1.25 * xla_error.max())


def graph_of(build_outputs, batch=3, steps=6, inputs=4):
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float32, [batch, steps, inputs], name="x")
        outputs = build_outputs(x)
        loss = sl.reduce_sum(sl.square(outputs)) + sl.reduce_sum(outputs[:, -1, :])
        variables = sl.trainable_variables()
        fetches = [loss] + sl.gradients(loss, variables)
        init = sl.global_variables_initializer()
    value = np.random.default_rng(batch).normal(size=(batch, steps, inputs)).astype(np.float32)
    return g, init, fetches, {x: value}


def run(graph, engine="compiled", passes=DEFAULT_PASSES):
    g, init, fetches, feed = graph
    metadata = sl.RunMetadata()
    config = sl.SessionConfig(engine=engine, graph_passes=passes)
    with jax.default_matmul_precision("float32"), sl.Session(graph=g, config=config) as sess:
        sess.run(init)
        values = sess.run(fetches, feed, run_metadata=metadata)
    return values, [name for name, _ in metadata.graph_passes]


def tf1_rnn(make_cell, sequence_length=None):
    def build(x):
        lengths = None if sequence_length is None else sl.constant(sequence_length)
        outputs, _ = sl.nn.dynamic_rnn(make_cell(), x, sequence_length=lengths, dtype=sl.float32)
        return outputs

    return build


CELLS = {
    "basic_lstm": (tf1_rnn(lambda: sl.nn.rnn_cell.BasicLSTMCell(5)), 1),
    "lstm_forget_bias_0": (tf1_rnn(lambda: sl.nn.rnn_cell.BasicLSTMCell(9, forget_bias=0.0)), 1),
    "lstm_cell": (tf1_rnn(lambda: sl.nn.rnn_cell.LSTMCell(8)), 1),
    "stacked": (
        tf1_rnn(
            lambda: sl.nn.rnn_cell.MultiRNNCell(
                [sl.nn.rnn_cell.BasicLSTMCell(6), sl.nn.rnn_cell.BasicLSTMCell(4)]
            )
        ),
        2,
    ),
    "sequence_length": (tf1_rnn(lambda: sl.nn.rnn_cell.BasicLSTMCell(5), [6, 2, 4]), 1),
    "keras_lstm": (lambda x: L.LSTM(7, return_sequences=True)(x), 1),
    # cells the pass does not describe: peepholes, another activation, not an LSTM
    "peepholes": (tf1_rnn(lambda: sl.nn.rnn_cell.LSTMCell(5, use_peepholes=True)), 0),
    "keras_relu": (lambda x: L.LSTM(5, activation="relu", return_sequences=True)(x), 0),
    "gru": (tf1_rnn(lambda: sl.nn.rnn_cell.GRUCell(5)), 0),
}


@used
@pytest.mark.parametrize("cell", sorted(CELLS))
def test_pass_gives_the_interpreters_numbers(cell):
    build, fused = CELLS[cell]
    graph = graph_of(build)
    with_pass, applied = run(graph)
    assert applied.count("fused_lstm_cell") == fused
    if not fused:
        return  # the step is lowered as without the pass
    interpreted, _ = run(graph, engine="interpreted")  # the ops themselves, never fused
    for a, b in zip(with_pass, interpreted):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


@used
def test_a_batch_past_the_kernels_rows_runs_xlas_ops():
    graph = graph_of(tf1_rnn(lambda: sl.nn.rnn_cell.BasicLSTMCell(5)), batch=130, steps=3)
    with_pass, applied = run(graph)
    interpreted, _ = run(graph, engine="interpreted")
    assert "fused_lstm_cell" in applied
    for a, b in zip(with_pass, interpreted):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


def test_the_pattern_needs_sigmoid_gates_and_a_tanh_candidate():
    # found on the graph alone (no kernel needed): both cells' steps, with their slice roles
    for build, slices, offsets in (
        (tf1_rnn(lambda: sl.nn.rnn_cell.BasicLSTMCell(5)), (0, 2, 1, 3), (0.0, 0.0, 1.0, 0.0)),
        (lambda x: L.LSTM(5, return_sequences=True)(x), (0, 1, 2, 3), (0.0,) * 4),
    ):
        g, _, _, _ = graph_of(build)
        found = _found(g)
        assert [(c.slices, c.offsets) for c in found] == [(slices, offsets)]
        assert [op.type for op in found[0].replaced] == [
            *(("Tanh" if s == slices[2] else "Sigmoid") for s in range(4)),
            "AddV2",
            "Tanh",
            "Mul",
        ]


def _found(g):
    consumers = {}
    for op in g.get_operations():
        for t in op.inputs:
            consumers.setdefault(t, []).append(op)
    contexts = {
        op.control_flow_context
        for op in g.get_operations()
        if op.type == "Split" and op.control_flow_context is not None
    }
    found = []
    for ctx in contexts:
        ops = [op for op in g.get_operations() if op.control_flow_context is ctx]
        found += fused_cells.fused_lstm_cell(ops, ctx, set(), consumers)
    return found


@used
@pytest.mark.parametrize("written", [(0, 1, 2, 3, 5), (2,), (4, 6)])
def test_kernel_writes_results_as_rows_of_the_buffers_it_is_given(written):
    rng = np.random.default_rng(len(written))
    m, k, units, n = 7, 13, 11, 5
    a = rng.standard_normal((m, k)).astype(np.float32)
    w = (rng.standard_normal((k, 4 * units)) * 0.3).astype(np.float32)
    b = rng.standard_normal(4 * units).astype(np.float32)
    c_prev = rng.standard_normal((m, units)).astype(np.float32)
    slices, offsets = (0, 2, 1, 3), (0.0, 0.0, 1.0, 0.0)
    panels, packed_bias = native.pack_gate_panels(w, b)
    plain = native.lstm_cell(a, panels, packed_bias, c_prev, slices, offsets)
    buffers = {j: rng.standard_normal((n, m, units)).astype(np.float32) for j in written}

    @jax.jit
    def step(buffers, index):
        rows = (index, buffers)
        return native.lstm_cell(a, panels, packed_bias, c_prev, slices, offsets, rows=rows)

    # rows past either end are the nearest row, as XLA's dynamic update clamps the index
    for index, row in ((0, 0), (3, 3), (n - 1, n - 1), (n + 2, n - 1), (-1, 0)):
        got = step(buffers, np.int32(index))
        for j in range(7):
            if j not in buffers:
                np.testing.assert_array_equal(got[j], plain[j])
                continue
            expected = buffers[j].copy()
            expected[row] = plain[j]
            np.testing.assert_array_equal(got[j], expected)  # the other rows as they were


@used
@pytest.mark.parametrize("cell", ["basic_lstm", "keras_lstm", "stacked"])
def test_the_saved_rows_of_an_exact_loop_are_written_by_the_kernel(cell):
    from tests.framework.test_cond_lowering import jaxpr_of_last_step

    g, init, fetches, feed = graph_of(CELLS[cell][0])
    config = sl.SessionConfig(engine="compiled")
    with jax.default_matmul_precision("float32"), sl.Session(graph=g, config=config) as sess:
        sess.run(init)
        values = sess.run(fetches, feed)
        jaxpr = jaxpr_of_last_step(sess, feed)
    assert jaxpr.count("sluice_lstm_cell_rows") == CELLS[cell][1]
    interpreted, _ = run((g, init, fetches, feed), engine="interpreted")
    for a, b in zip(values, interpreted):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)
