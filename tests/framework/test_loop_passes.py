"""The compiled engine's loop passes: each one fires on the RNN patterns it is for, leaves other
graphs alone, and gives the same loss and gradients as the graph without it (and as the
interpreted engine, which never applies them)."""

import jax
import numpy as np
import pytest

import sluice as sl
from sluice.framework import native
from sluice.framework.compiler.loop_passes import DEFAULT_PASSES, PASSES
from sluice.framework.ops.state import buffer_ops

CELLS = {
    "basic_rnn": lambda: sl.nn.rnn_cell.BasicRNNCell(5),
    "lstm": lambda: sl.nn.rnn_cell.BasicLSTMCell(5),
    "gru": lambda: sl.nn.rnn_cell.GRUCell(5),
    "lstm_peepholes": lambda: sl.nn.rnn_cell.LSTMCell(5, use_peepholes=True),
}
# matmuls over concat([x_t, h]) per cell: GRU has two (gates and candidate)
PROJECTIONS = {"basic_rnn": 1, "lstm": 1, "gru": 2, "lstm_peepholes": 1}


def rnn_graph(make_cell, sequence_length=None, swap_memory=False):
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float32, [3, 6, 4], name="x")
        cell = make_cell()
        lengths = None if sequence_length is None else sl.constant(sequence_length)
        outputs, _ = sl.nn.dynamic_rnn(
            cell, x, sequence_length=lengths, dtype=sl.float32, swap_memory=swap_memory
        )
        loss = sl.reduce_sum(sl.square(outputs)) + sl.reduce_sum(outputs[:, -1, :])
        variables = sl.trainable_variables()
        grads = sl.gradients(loss, variables)
        init = sl.global_variables_initializer()
    x_value = np.random.default_rng(1).normal(size=(3, 6, 4)).astype(np.float32)
    return g, init, [loss] + grads, {x: x_value}


def run(g, init, fetches, feed, engine="compiled", passes=PASSES):
    metadata = sl.RunMetadata()
    # full float32 matmuls: a GPU's default (TF32) would differ by more than the reordering does
    with (
        jax.default_matmul_precision("float32"),
        sl.Session(graph=g, config=sl.SessionConfig(engine=engine, graph_passes=passes)) as sess,
    ):
        sess.run(init)
        values = sess.run(fetches, feed, run_metadata=metadata)
    return values, metadata


def applied_of(passes) -> set:
    """The passes that fire on a TF1 LSTM: where the native kernel is used it takes the backward
    `dz @ kernel^T` that `transpose_invariant_weight` would take; elsewhere it does nothing."""
    expected = set(passes)
    if native.panel_matmul_available() and "packed_recurrent_matmul" in expected:
        expected.discard("transpose_invariant_weight")
    else:
        expected.discard("packed_recurrent_matmul")
    return expected


def assert_same(a, b):
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "cell, passes",
    [(cell, PASSES) for cell in sorted(CELLS)]
    + [("lstm", ("hoist_input_projection",)), ("gru", ("batch_weight_gradient",))],
)
def test_pass_gives_the_same_loss_and_gradients(cell, passes):
    g, init, fetches, feed = rnn_graph(CELLS[cell])
    without, md_without = run(g, init, fetches, feed, passes=())
    with_pass, md = run(g, init, fetches, feed, passes=passes)
    assert md_without.graph_passes == []
    applied = [name for name, _ in md.graph_passes]
    if "hoist_input_projection" in passes:
        assert applied.count("hoist_input_projection") == PROJECTIONS[cell]
    if "batch_weight_gradient" in passes:
        assert applied.count("batch_weight_gradient") >= 1  # every kernel's gradient
    # (the differential sweep, tests/differential_sweep.py, compares with the interpreter)
    assert_same(with_pass, without)


def test_batched_weight_gradients_cover_every_kernel():
    g, init, fetches, feed = rnn_graph(CELLS["gru"])
    _, md = run(g, init, fetches, feed)
    batched = [op for name, op in md.graph_passes if name == "batch_weight_gradient"]
    assert len(batched) == 2  # gates/kernel and candidate/kernel


def test_passes_with_sequence_length_run_in_a_while_loop():
    # sequence_length makes the trip count data dependent: lax.while_loop with buffers sized
    # by the time dimension, rows past the last iteration left at zero
    g, init, fetches, feed = rnn_graph(CELLS["lstm"], sequence_length=[6, 2, 4])
    with_pass, md = run(g, init, fetches, feed)
    without, _ = run(g, init, fetches, feed, passes=())
    interpreted, _ = run(g, init, fetches, feed, engine="interpreted")
    # a while loop does not run exactly its bound: its buffers keep their zero fill
    assert {name for name, _ in md.graph_passes} == applied_of(PASSES) - {"unwritten_loop_buffers"}
    assert_same(with_pass, without)
    assert_same(with_pass, interpreted)


def test_swap_memory_gives_the_same_gradients():
    g, init, fetches, feed = rnn_graph(CELLS["lstm"], swap_memory=True)
    with_pass, _ = run(g, init, fetches, feed)
    without, _ = run(g, init, fetches, feed, passes=())
    assert_same(with_pass, without)


@pytest.mark.parametrize("assigned", [True, False])
def test_hoist_only_when_the_weight_is_loop_invariant(assigned):
    g = sl.Graph()
    with g.as_default():
        xs = sl.placeholder(sl.float32, [5, 2, 3])
        w = sl.Variable(np.full((7, 4), 0.1, np.float32))

        def body(t, h):
            x_t = buffer_ops.read_row(xs, t)
            z = sl.matmul(sl.concat([x_t, h], 1), w.read_value())
            if not assigned:
                return t + 1, sl.tanh(z)
            with sl.control_dependencies([z]):
                bump = w.assign_add(sl.ones_like(w))  # the weight differs every iteration
            with sl.control_dependencies([bump]):
                return t + 1, sl.tanh(z)

        _, h = sl.while_loop(lambda t, h: t < 5, body, (sl.constant(0), sl.zeros([2, 4])))
        init = sl.global_variables_initializer()
    feed = {xs: np.random.default_rng(0).normal(size=(5, 2, 3)).astype(np.float32)}
    compiled, md = run(g, init, [h], feed)
    interpreted, _ = run(g, init, [h], feed, engine="interpreted")
    assert [name for name, _ in md.graph_passes] == ([] if assigned else ["hoist_input_projection"])
    assert_same(compiled, interpreted)


def test_unknown_pass_is_rejected():
    with pytest.raises(ValueError, match="Unknown graph passes"):
        sl.SessionConfig(graph_passes=("fuse_everything",))


@pytest.mark.parametrize("layer", ["LSTM", "GRU", "SimpleRNN"])
def test_keras_recurrent_layers_hoist_their_input_matmul(layer):
    from sluice import layers as L

    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float32, [3, 6, 4], name="x")
        outputs = getattr(L, layer)(5, return_sequences=True)(x)
        loss = sl.reduce_sum(sl.square(outputs))
        variables = sl.trainable_variables()
        fetches = [loss] + sl.gradients(loss, variables)
        init = sl.global_variables_initializer()
    feed = {x: np.random.default_rng(2).normal(size=(3, 6, 4)).astype(np.float32)}
    with_pass, md = run(g, init, fetches, feed)
    without, _ = run(g, init, fetches, feed, passes=())
    applied = [name for name, _ in md.graph_passes]
    assert "hoist_input_projection" in applied and "batch_weight_gradient" in applied
    if layer == "LSTM":  # kernel and recurrent kernel: two sums over one saved factor, dz
        assert applied.count("batch_weight_gradient") == 2
    assert_same(with_pass, without)


@pytest.mark.parametrize("assigned", [True, False])
@pytest.mark.parametrize("transpose", ["a", "b"])
def test_transposed_weight_made_once_only_when_loop_invariant(assigned, transpose):
    g = sl.Graph()
    with g.as_default():
        w = sl.Variable(np.linspace(-0.5, 0.5, 16, dtype=np.float32).reshape(4, 4))

        def body(t, h):
            if transpose == "b":
                z = sl.matmul(h, w.read_value(), transpose_b=True)
            else:
                z = sl.transpose(sl.matmul(w.read_value(), sl.transpose(h), transpose_a=True))
            if not assigned:
                return t + 1, sl.tanh(z + 0.1)
            with sl.control_dependencies([z]):
                bump = w.assign_add(sl.fill([4, 4], 0.01))  # the weight differs every iteration
            with sl.control_dependencies([bump]):
                return t + 1, sl.tanh(z + 0.1)

        _, h = sl.while_loop(lambda t, h: t < 5, body, (sl.constant(0), sl.ones([2, 4])))
        init = sl.global_variables_initializer()
    compiled, md = run(g, init, [h], {})
    interpreted, _ = run(g, init, [h], {}, engine="interpreted")
    applied = [name for name, _ in md.graph_passes]
    # `h @ w^T`, the weight on the right, is what the native kernel takes where it is built
    packed = transpose == "b" and native.panel_matmul_available()
    invariant = ["packed_recurrent_matmul" if packed else "transpose_invariant_weight"]
    assert applied == ([] if assigned else invariant)
    assert_same(compiled, interpreted)


def test_passes_are_on_by_default_and_can_be_turned_off():
    assert sl.SessionConfig().graph_passes == DEFAULT_PASSES
    assert set(DEFAULT_PASSES) <= set(PASSES)
    g, init, fetches, feed = rnn_graph(CELLS["lstm"])
    _, md = run(g, init, fetches, feed, passes=sl.SessionConfig().graph_passes)
    assert {name for name, _ in md.graph_passes} == applied_of(DEFAULT_PASSES)
    _, md_off = run(g, init, fetches, feed, passes=())
    assert md_off.graph_passes == []


def test_a_keras_lstm_of_unknown_batch_saves_dz_once(monkeypatch):
    """With the batch unknown while the graph is built, the kernel's and the recurrent kernel's
    gradients take dz through two reshapes of a run-time sum over no axes: one traced value, so
    the backward loop writes one buffer of it, not two (a 64 KB write per iteration on W1), and
    the two weight gradients over it are one matmul after the loop."""
    from sluice import layers as L
    from sluice.framework.compiler import loop_passes, lowering

    shared, joined = [], []
    original = lowering._with_shared
    monkeypatch.setattr(
        lowering, "_with_shared", lambda ys, rows: shared.append(dict(rows)) or original(ys, rows)
    )
    products = loop_passes.batched_products
    monkeypatch.setattr(
        loop_passes,
        "batched_products",
        lambda saved, *rest, **kw: joined.append(len(saved)) or products(saved, *rest, **kw),
    )
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float32, [None, 6, 4], name="x")
        outputs = L.LSTM(5, return_sequences=True)(x)
        loss = sl.reduce_sum(sl.square(outputs))
        fetches = [loss] + sl.gradients(loss, sl.trainable_variables())
        init = sl.global_variables_initializer()
    feed = {x: np.random.default_rng(3).normal(size=(3, 6, 4)).astype(np.float32)}
    with_pass, _ = run(g, init, fetches, feed)
    assert any(rows for rows in shared)  # the backward loop: one dz push shares the other's rows
    assert joined == [2]  # and both weights' sums over dz are one matmul
    interpreted, _ = run(g, init, fetches, feed, engine="interpreted")
    assert_same(with_pass, interpreted)


def test_reshape_and_dynamic_sum_that_change_nothing_return_their_input():
    from sluice.framework.ops.array.array_ops import _reshape_kernel
    from sluice.framework.ops.math.math_grad_util import _dynamic_sum_kernel

    x = jax.numpy.ones((2, 3))
    assert _reshape_kernel(x, [2, 3]) is x
    assert _reshape_kernel(x, [3, 2]).shape == (3, 2)
    assert _dynamic_sum_kernel(x, np.zeros([0], np.int32)) is x
    np.testing.assert_array_equal(_dynamic_sum_kernel(x, np.array([0])), np.full((1, 3), 2.0))


@pytest.mark.parametrize("with_input_gradient", [False, True])
def test_backward_matmul_computes_only_the_columns_used(monkeypatch, with_input_gradient):
    """A TF1 cell's backward `dz @ kernel^T` is split into the gradients of x_t (4 columns) and h
    (5): when x_t's piece is unused the packed kernel multiplies by h's rows alone; when the
    inputs' gradient is asked for too, by all. Values as the interpreted engine's either way."""
    if not native.panel_matmul_available():
        pytest.skip("sluice's native kernel is not built here")
    from sluice.framework.compiler import loop_passes

    found = []
    original = loop_passes.used_columns
    monkeypatch.setattr(
        loop_passes,
        "used_columns",
        lambda product, consumers: found.append(original(product, consumers)) or found[-1],
    )
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float32, [3, 6, 4], name="x")
        outputs, _ = sl.nn.dynamic_rnn(sl.nn.rnn_cell.BasicLSTMCell(5), x, dtype=sl.float32)
        loss = sl.reduce_sum(sl.square(outputs))
        sources = sl.trainable_variables() + ([x] if with_input_gradient else [])
        fetches = [loss] + sl.gradients(loss, sources)
        init = sl.global_variables_initializer()
    feed = {x: np.random.default_rng(4).normal(size=(3, 6, 4)).astype(np.float32)}
    compiled, _ = run(g, init, fetches, feed, passes=DEFAULT_PASSES)
    assert (None if with_input_gradient else (4, 9)) in found and found.count((4, 9)) <= 1
    if with_input_gradient:
        assert (4, 9) not in found
    interpreted, _ = run(g, init, fetches, feed, engine="interpreted")
    assert_same(compiled, interpreted)
