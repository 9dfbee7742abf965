"""static_rnn and static_bidirectional_rnn: the values and gradients of their dynamic twins."""

import numpy as np
import pytest

import sluice as sl
from sluice import cells
from sluice._tf1.cells import nest

B, T, D, U = 3, 3, 2, 3
LENGTHS = [3, 1, 0]


def _inputs(seed=0):
    return np.random.default_rng(seed).normal(size=[B, T, D])


@pytest.mark.parametrize("engine", ["interpreted", "compiled"])
def test_static_rnn_equals_dynamic_rnn_on_the_same_variables_values_and_gradients(engine):
    x = sl.placeholder(sl.float64, [B, T, D])
    lengths = sl.placeholder(sl.int32, [B])
    static_cell = cells.BasicLSTMCell(U, name="lstm")
    outputs, state = sl.nn.static_rnn(
        static_cell, sl.unstack(x, axis=1), dtype=sl.float64, sequence_length=lengths
    )
    with sl.variable_scope(sl.get_variable_scope(), reuse=True):
        dynamic_cell = cells.BasicLSTMCell(U, name="lstm")
        dyn_outputs, dyn_state = sl.nn.dynamic_rnn(
            dynamic_cell, x, sequence_length=lengths, dtype=sl.float64
        )
    # The same scope names find the same variables: "rnn/lstm/kernel", "rnn/lstm/bias".
    assert [v.name for v in sl.global_variables()] == ["rnn/lstm/kernel:0", "rnn/lstm/bias:0"]
    assert len(outputs) == T and outputs[0].shape.as_list() == [B, U]
    assert isinstance(state, cells.LSTMStateTuple)
    loss = sl.reduce_sum(sl.stack(outputs, axis=1) ** 2) + sl.reduce_sum(state.c * state.h)
    dyn_loss = sl.reduce_sum(dyn_outputs**2) + sl.reduce_sum(dyn_state.c * dyn_state.h)
    wrt = [x] + sl.global_variables()
    grads, dyn_grads = sl.gradients(loss, wrt), sl.gradients(dyn_loss, wrt)
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        sess.run(sl.global_variables_initializer())
        feed = {x: _inputs(), lengths: LENGTHS}
        got = sess.run((outputs, state, grads), feed)
        want = sess.run((dyn_outputs, dyn_state, dyn_grads), feed)
    np.testing.assert_allclose(np.stack(got[0], axis=1), want[0], rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(got[1].c, want[1].c, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(got[1].h, want[1].h, rtol=1e-6, atol=1e-12)
    for a, b in zip(got[2], want[2]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-12)
    # Past each row's length: zero outputs, and the state of its last step (zero for length 0).
    assert np.all(got[0][1][1] == 0) and np.all(got[0][0][2] == 0)
    assert np.all(got[1].h[2] == 0) and np.any(got[0][0][1] != 0)


def test_static_rnn_reuses_one_set_of_weights_and_takes_an_initial_state():
    xs = [sl.constant(_inputs(1)[:, t]) for t in range(T)]
    cell = cells.GRUCell(U)
    h0 = sl.constant(np.full([B, U], 0.5))
    outputs, state = sl.nn.static_rnn(cell, xs, initial_state=h0, scope="encoder")
    assert sorted(v.op.name for v in sl.global_variables()) == [
        "encoder/gru_cell/candidate/bias",
        "encoder/gru_cell/candidate/kernel",
        "encoder/gru_cell/gates/bias",
        "encoder/gru_cell/gates/kernel",
    ]
    step_by_step, h = [], h0
    for x_t in xs:  # the cell called by hand on the same weights gives the same numbers
        out, h = cell(x_t, h)
        step_by_step.append(out)
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        got, got_state, want, want_state = sess.run((outputs, state, step_by_step, h))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got_state, want_state, rtol=1e-12)
    np.testing.assert_allclose(got[-1], got_state, rtol=1e-12)


def test_static_bidirectional_rnn_equals_bidirectional_dynamic_rnn():
    x = sl.constant(_inputs(2))
    lengths = sl.placeholder(sl.int64, [B])
    fw, bw = cells.BasicRNNCell(U, name="f"), cells.GRUCell(2, name="b")
    outputs, state_fw, state_bw = sl.nn.static_bidirectional_rnn(
        fw, bw, sl.unstack(x, axis=1), dtype=sl.float64, sequence_length=lengths
    )
    with sl.variable_scope(sl.get_variable_scope(), reuse=True):
        (dyn_fw, dyn_bw), (dyn_state_fw, dyn_state_bw) = sl.nn.bidirectional_dynamic_rnn(
            cells.BasicRNNCell(U, name="f"),
            cells.GRUCell(2, name="b"),
            x,
            sequence_length=lengths,
            dtype=sl.float64,
        )
    assert len(sl.global_variables()) == 2 + 4
    assert len(outputs) == T and outputs[0].shape.as_list() == [B, U + 2]
    with sl.Session(config=sl.SessionConfig(engine="interpreted")) as sess:
        sess.run(sl.global_variables_initializer())
        got, sf, sb, want_fw, want_bw, wsf, wsb = sess.run(
            (outputs, state_fw, state_bw, dyn_fw, dyn_bw, dyn_state_fw, dyn_state_bw),
            {lengths: [3, 2, 0]},
        )
    want = np.concatenate([want_fw, want_bw], axis=-1)
    np.testing.assert_allclose(np.stack(got, axis=1), want, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(sf, wsf, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(sb, wsb, rtol=1e-6, atol=1e-12)


def test_static_bidirectional_rnn_without_lengths_reverses_the_whole_list():
    xs = [sl.constant(v) for v in np.random.default_rng(3).normal(size=[T, B, D])]
    fw, bw = cells.BasicRNNCell(U), cells.BasicRNNCell(U)
    outputs, _, state_bw = sl.nn.static_bidirectional_rnn(fw, bw, xs, dtype=sl.float64)
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        got, last_bw = sess.run((outputs, state_bw))
    # The backward cell ends at step 0, so its output there is its final state.
    np.testing.assert_allclose(got[0][:, U:], last_bw, rtol=1e-12)


@pytest.mark.parametrize(
    "inputs, kwargs, error, match",
    [
        (lambda: sl.zeros([B, T, D]), {"dtype": sl.float32}, TypeError, "list of"),
        (lambda: [], {"dtype": sl.float32}, ValueError, "must not be empty"),
        (lambda: [sl.zeros([B, D])], {}, ValueError, "must give a dtype"),
        (
            lambda: [sl.zeros([B, D])],
            {"dtype": sl.float32, "sequence_length": [[1]]},
            ValueError,
            "vector",
        ),
        (
            lambda: [sl.zeros([B, D])],
            {"dtype": sl.float32, "sequence_length": [1, 2]},
            ValueError,
            "batch size is 3",
        ),
        (
            lambda: [sl.placeholder(sl.float32, [B, None])],
            {"dtype": sl.float32},
            ValueError,
            "depth",
        ),
    ],
    ids=["not-a-list", "empty", "no-dtype", "lengths-matrix", "lengths-size", "unknown-depth"],
)
def test_static_rnn_rejects_bad_arguments_with_clear_errors(inputs, kwargs, error, match):
    with pytest.raises(error, match=match):
        sl.nn.static_rnn(cells.BasicRNNCell(U), inputs(), **kwargs)


def test_static_rnn_rejects_what_is_not_a_cell():
    with pytest.raises(TypeError, match="not an RNNCell"):
        sl.nn.static_rnn(object(), [sl.zeros([B, D])], dtype=sl.float32)


class RunningSumCell(cells.RNNCell):
    """Output and new state: the running sum of the inputs, whose structure and shapes (after
    the batch) are `shapes`: a cell whose outputs have rank above 2, or are a tuple."""

    def __init__(self, shapes):
        super().__init__()
        self._shapes = shapes

    @property
    def state_size(self):
        return self._shapes

    @property
    def output_size(self):
        return self._shapes

    def call(self, inputs, state):
        total = nest.map_structure(lambda x, s: x + s, inputs, state)
        return total, total


def _running_sums(x, lengths):
    """NumPy: forward and backward running sums of x [time, batch, ...] within each length."""
    fw, bw = np.zeros_like(x), np.zeros_like(x)
    for b, n in enumerate(lengths):
        fw[:n, b] = np.cumsum(x[:n, b], axis=0)
        bw[:n, b] = np.cumsum(x[:n, b][::-1], axis=0)[::-1]
    return fw, bw


@pytest.mark.parametrize("lengths", [None, [4, 2]])
def test_static_bidirectional_rnn_joins_outputs_on_axis_1_for_every_rank(lengths):
    # TF1 rnn.py: `array_ops.concat([fw, bw], 1)`; [2, 3, 4, 5] outputs join to [2, 6, 4, 5].
    x = np.random.default_rng(4).normal(size=[4, 2, 3, 4, 5])
    shape = sl.TensorShape([3, 4, 5])
    outputs, state_fw, state_bw = sl.nn.static_bidirectional_rnn(
        RunningSumCell(shape),
        RunningSumCell(shape),
        [sl.constant(v) for v in x],
        dtype=sl.float64,
        sequence_length=lengths,
    )
    assert [o.shape.as_list() for o in outputs] == [[2, 6, 4, 5]] * 4
    with sl.Session(config=sl.SessionConfig(engine="interpreted")) as sess:
        got, last_fw, last_bw = sess.run((outputs, state_fw, state_bw))
    fw, bw = _running_sums(x, lengths or [4, 4])
    np.testing.assert_allclose(np.stack(got), np.concatenate([fw, bw], axis=2), rtol=1e-12)
    np.testing.assert_allclose(last_bw, bw[0], rtol=1e-12)
    np.testing.assert_allclose(
        last_fw, [fw[(lengths or [4, 4])[b] - 1, b] for b in range(2)], rtol=1e-12
    )


def test_static_rnns_take_steps_that_are_tuples(lengths=(4, 2)):
    # TF1 takes a list of nested structures: each part reversed on its own, joined on axis 1.
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=[4, 2, 3]), rng.normal(size=[4, 2, 2])
    steps = [(sl.constant(a[t]), sl.constant(b[t])) for t in range(4)]
    cell_fw, cell_bw = RunningSumCell((3, 2)), RunningSumCell((3, 2))
    outputs, _, _ = sl.nn.static_bidirectional_rnn(
        cell_fw, cell_bw, steps, dtype=sl.float64, sequence_length=list(lengths)
    )
    single, _ = sl.nn.static_rnn(
        RunningSumCell((3, 2)), steps, dtype=sl.float64, sequence_length=list(lengths)
    )
    assert all(isinstance(o, tuple) and len(o) == 2 for o in outputs + single)
    assert outputs[0][0].shape.as_list() == [2, 6] and outputs[0][1].shape.as_list() == [2, 4]
    with sl.Session(config=sl.SessionConfig(engine="interpreted")) as sess:
        got, got_single = sess.run((outputs, single))
    for part, x in enumerate((a, b)):
        fw, bw = _running_sums(x, lengths)
        want = np.concatenate([fw, bw], axis=2)
        np.testing.assert_allclose(np.stack([o[part] for o in got]), want, rtol=1e-12)
        np.testing.assert_allclose(np.stack([o[part] for o in got_single]), fw, rtol=1e-12)
