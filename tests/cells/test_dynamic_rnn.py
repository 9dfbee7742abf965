"""dynamic_rnn and bidirectional_dynamic_rnn: layouts, ragged lengths, loop structure, engines."""

import numpy as np
import pytest

import sluice as sl
from sluice import cells
from sluice.cells import LSTMStateTuple
from sluice.testing import CellCase, numpy_dynamic_rnn

from . import numpy_cells as ref

B, T, D, U = 3, 5, 2, 4
LSTM = CellCase(
    "lstm",
    lambda: cells.BasicLSTMCell(U),
    ref.basic_lstm,
    {},
    D,
    U,
    LSTMStateTuple(U, U),
    "basic_lstm_cell",
)


def _weights(sess, cell, scope):
    return {v.op.name[len(scope) + 1 :]: sess.run(v) for v in cell.variables}


def _inputs(seed=0, batch=B, time=T):
    return np.random.default_rng(seed).normal(size=[batch, time, D])


def test_time_major_and_batch_major_agree_with_static_and_dynamic_time():
    x = _inputs()
    batch_major = sl.placeholder(sl.float64, [B, T, D])
    time_major = sl.placeholder(sl.float64, [None, B, D])  # time known only at run time
    cell = cells.BasicLSTMCell(U)
    out_b, state_b = cells.dynamic_rnn(cell, batch_major, dtype=sl.float64)
    out_t, state_t = cells.dynamic_rnn(cell, time_major, dtype=sl.float64, time_major=True)
    assert out_b.shape.as_list() == [B, T, U] and out_t.shape.as_list() == [None, B, U]
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        feed = {batch_major: x, time_major: x.transpose(1, 0, 2)}
        got_b, got_t, sb, st = sess.run((out_b, out_t, state_b, state_t), feed)
        w = _weights(sess, cell, "rnn/basic_lstm_cell")
        shorter = sess.run(out_t, {time_major: x.transpose(1, 0, 2)[:2]})
    np.testing.assert_allclose(got_b, got_t.transpose(1, 0, 2), rtol=1e-12)
    np.testing.assert_allclose(sb.h, st.h, rtol=1e-12)
    expected, final = numpy_dynamic_rnn(LSTM, w, x, [T] * B)
    np.testing.assert_allclose(got_b, expected, rtol=1e-10)
    np.testing.assert_allclose(sb.c, final.c, rtol=1e-10)
    np.testing.assert_allclose(shorter.transpose(1, 0, 2), expected[:, :2], rtol=1e-10)


def _loop_ops(time):
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float32, [B, time, D])
        cells.dynamic_rnn(cells.BasicLSTMCell(U), x, sequence_length=[time] * B, dtype=sl.float32)
        loops = g.get_collection(sl.GraphKeys.WHILE_CONTEXT)
        return len(g.get_operations()), loops


def test_one_loop_frame_whose_size_does_not_depend_on_the_sequence_length():
    short_ops, short_loops = _loop_ops(3)
    long_ops, long_loops = _loop_ops(300)
    assert short_ops == long_ops
    assert len(short_loops) == len(long_loops) == 1
    assert short_loops[0].maximum_iterations == 3 and long_loops[0].maximum_iterations == 300


def test_ragged_lengths_give_zero_outputs_and_each_rows_last_state():
    x = _inputs(1)
    lengths = sl.placeholder(sl.int64, [B])
    cell = cells.GRUCell(U)
    outputs, final = cells.dynamic_rnn(
        cell, sl.constant(x), sequence_length=lengths, dtype=sl.float64
    )
    gru = CellCase("gru", None, ref.gru, {}, D, U, U, "gru_cell")
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        w = _weights(sess, cell, "rnn/gru_cell")
        for row_lengths in ([5, 0, 3], [2, 2, 2], [0, 0, 0]):
            got, got_final = sess.run((outputs, final), {lengths: row_lengths})
            expected, expected_final = numpy_dynamic_rnn(gru, w, x, row_lengths)
            np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(got_final, expected_final, rtol=1e-10, atol=1e-12)


def test_sequence_length_fed_without_a_static_shape():
    # TF1 programs often feed placeholder(int64) with no shape: the copy-through must still
    # select whole rows, and the gradient must flow only through each row's live steps.
    x = _inputs(5)
    lengths = sl.placeholder(sl.int64)
    known = sl.placeholder(sl.int64, [B])
    cell = cells.GRUCell(U)
    outputs, final = cells.dynamic_rnn(
        cell, sl.constant(x), sequence_length=lengths, dtype=sl.float64
    )
    same, same_final = cells.dynamic_rnn(
        cell, sl.constant(x), sequence_length=known, dtype=sl.float64
    )
    grads = sl.gradients(sl.reduce_sum(outputs) + sl.reduce_sum(final), cell.variables)
    same_grads = sl.gradients(sl.reduce_sum(same) + sl.reduce_sum(same_final), cell.variables)
    gru = CellCase("gru", None, ref.gru, {}, D, U, U, "gru_cell")
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        w = _weights(sess, cell, "rnn/gru_cell")
        for row_lengths in ([5, 0, 3], [1, 4, 2]):
            got, got_final, g1, g2 = sess.run(
                (outputs, final, grads, same_grads), {lengths: row_lengths, known: row_lengths}
            )
            expected, expected_final = numpy_dynamic_rnn(gru, w, x, row_lengths)
            np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(got_final, expected_final, rtol=1e-10, atol=1e-12)
            for a, b in zip(g1, g2):
                np.testing.assert_allclose(a, b, rtol=1e-12)


def test_bidirectional_sequence_length_fed_without_a_static_shape():
    x = _inputs(6)
    lengths = sl.placeholder(sl.int64)
    (out_fw, out_bw), _ = cells.bidirectional_dynamic_rnn(
        cells.GRUCell(U),
        cells.GRUCell(U),
        sl.constant(x),
        sequence_length=lengths,
        dtype=sl.float64,
    )
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        fw, bw = sess.run((out_fw, out_bw), {lengths: [5, 2, 0]})
    for out in (fw, bw):
        assert np.all(out[1, 2:] == 0) and np.all(out[2] == 0) and np.all(out[0] != 0)


def test_multi_rnn_cell_of_lstm_cells():
    x = _inputs(2)
    cell = cells.MultiRNNCell([cells.BasicLSTMCell(U), cells.LSTMCell(U, use_peepholes=True)])
    outputs, (s0, s1) = cells.dynamic_rnn(
        cell, sl.constant(x), sequence_length=[5, 3, 1], dtype=sl.float64
    )
    assert [v.op.name for v in cell.variables] == [
        "rnn/multi_rnn_cell/cell_0/basic_lstm_cell/kernel",
        "rnn/multi_rnn_cell/cell_0/basic_lstm_cell/bias",
        "rnn/multi_rnn_cell/cell_1/lstm_cell/kernel",
        "rnn/multi_rnn_cell/cell_1/lstm_cell/bias",
        "rnn/multi_rnn_cell/cell_1/lstm_cell/w_f_diag",
        "rnn/multi_rnn_cell/cell_1/lstm_cell/w_i_diag",
        "rnn/multi_rnn_cell/cell_1/lstm_cell/w_o_diag",
    ]

    def step(w, x, state):
        out0, st0 = ref.basic_lstm(w, x, state[0], prefix="cell_0/basic_lstm_cell/")
        w1 = {k[len("cell_1/lstm_cell/") :]: v for k, v in w.items() if k.startswith("cell_1")}
        out1, st1 = ref.lstm(w1, out0, state[1], use_peepholes=True)
        return out1, (st0, st1)

    case = CellCase("multi", None, step, {}, D, U, (LSTMStateTuple(U, U),) * 2, "")
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        w = _weights(sess, cell, "rnn/multi_rnn_cell")
        got, got_s0, got_s1 = sess.run((outputs, s0, s1))
    expected, (e0, e1) = numpy_dynamic_rnn(case, w, x, [5, 3, 1])
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_s0.c, e0.c, rtol=1e-10)
    np.testing.assert_allclose(got_s1.h, e1.h, rtol=1e-10)


def test_bidirectional_dynamic_rnn_against_numpy():
    x = _inputs(3)
    lengths = [5, 2, 4]
    fw, bw = cells.BasicLSTMCell(U), cells.GRUCell(U)
    (out_fw, out_bw), (_, st_bw) = cells.bidirectional_dynamic_rnn(
        fw, bw, sl.constant(x), sequence_length=lengths, dtype=sl.float64
    )
    assert fw.variables[0].op.name == "bidirectional_rnn/fw/basic_lstm_cell/kernel"
    assert bw.variables[0].op.name == "bidirectional_rnn/bw/gru_cell/gates/kernel"
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        w_fw = _weights(sess, fw, "bidirectional_rnn/fw/basic_lstm_cell")
        w_bw = _weights(sess, bw, "bidirectional_rnn/bw/gru_cell")
        got_fw, got_bw, got_st_bw = sess.run((out_fw, out_bw, st_bw))
    expected_fw, _ = numpy_dynamic_rnn(LSTM, w_fw, x, lengths)
    np.testing.assert_allclose(got_fw, expected_fw, rtol=1e-10, atol=1e-12)
    gru = CellCase("gru", None, ref.gru, {}, D, U, U, "gru_cell")
    x_rev = np.stack([np.concatenate([x[b, :n][::-1], x[b, n:]]) for b, n in enumerate(lengths)])
    out_rev, final_bw = numpy_dynamic_rnn(gru, w_bw, x_rev, lengths)
    expected_bw = np.stack(
        [np.concatenate([out_rev[b, :n][::-1], out_rev[b, n:]]) for b, n in enumerate(lengths)]
    )
    np.testing.assert_allclose(got_bw, expected_bw, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_st_bw, final_bw, rtol=1e-10, atol=1e-12)


def _rnn_gradients(swap_memory, engine="auto"):
    g = sl.Graph()
    with g.as_default():
        sl.set_random_seed(0)
        x = sl.constant(_inputs(4))
        cell = cells.LSTMCell(U, num_proj=3)
        outputs, final = cells.dynamic_rnn(
            cell, x, sequence_length=[5, 1, 3], dtype=sl.float64, swap_memory=swap_memory
        )
        loss = sl.reduce_sum(outputs * outputs) + sl.reduce_sum(final.c)
        grads = sl.gradients(loss, [x] + cell.variables)
        with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
            sess.run(sl.global_variables_initializer())
            return sess.run([loss] + grads)


def test_swap_memory_and_the_interpreted_engine_give_the_same_gradients():
    reference = _rnn_gradients(swap_memory=False)
    for swap, engine in ((True, "auto"), (True, "interpreted")):
        for got, want in zip(_rnn_gradients(swap, engine), reference):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_initial_state_and_nested_inputs():
    class ConcatInputs(cells.BasicRNNCell):  # a user cell taking a pair of inputs
        def __call__(self, inputs, state, scope=None):
            return super().__call__(sl.concat(list(inputs), 1), state, scope)

    a, b = _inputs(5), _inputs(6)[..., :1]
    h0 = np.full([B, U], 0.3)
    cell = ConcatInputs(U)
    outputs, final = cells.dynamic_rnn(
        cell, (sl.constant(a), sl.constant(b)), initial_state=sl.constant(h0)
    )
    assert outputs.dtype == sl.float64
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        w = _weights(sess, cell, "rnn/concat_inputs")
        got, got_final = sess.run((outputs, final))
    h = h0
    for t in range(T):
        out, h = ref.basic_rnn(w, np.concatenate([a[:, t], b[:, t]], 1), h)
        np.testing.assert_allclose(got[:, t], out, rtol=1e-10)
    np.testing.assert_allclose(got_final, h, rtol=1e-10)


# -- zero steps (both engines) -------------------------------------------------------------------
ENGINES = ["interpreted", "compiled"]


@pytest.mark.parametrize("engine", ENGINES)
def test_zero_time_steps_give_empty_outputs_and_the_initial_state(engine):
    # As TF1: the loop runs no step. The compiled engine still traces its body once, so reading
    # the row of an empty input must trace (it raised InvalidArgumentError from ReadRow).
    cell = cells.GRUCell(U)
    h0 = sl.constant(np.full([B, U], 0.25))
    lengths = sl.placeholder(sl.int32, [B])
    static = sl.placeholder(sl.float64, [B, 0, D])
    unknown = sl.placeholder(sl.float64, [B, None, D])  # the time known at run time only
    time_major = sl.placeholder(sl.float64, [0, B, D])
    runs = [
        cells.dynamic_rnn(cell, static, initial_state=h0),
        cells.dynamic_rnn(cell, unknown, sequence_length=lengths, initial_state=h0),
        cells.dynamic_rnn(cell, time_major, lengths, h0, time_major=True),
        cells.dynamic_rnn(cell, static, lengths, dtype=sl.float64),
    ]
    assert runs[0][0].shape.as_list() == [B, 0, U] and runs[2][0].shape.as_list() == [0, B, U]
    # the backward loop of zero steps is traced too: its stack pops read a buffer of no rows
    grad = sl.gradients(sl.reduce_sum(runs[0][1]), [h0])[0]
    feed = {
        lengths: [0] * B,
        static: np.zeros([B, 0, D]),
        unknown: np.zeros([B, 0, D]),
        time_major: np.zeros([0, B, D]),
    }
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        sess.run(sl.global_variables_initializer())
        got, grad_value = sess.run([runs, grad], feed)
    np.testing.assert_array_equal(grad_value, np.ones([B, U]))
    for (out, state), shape in zip(got, [(B, 0, U), (B, 0, U), (0, B, U), (B, 0, U)]):
        assert out.shape == shape and state.shape == (B, U)
    for _, state in got[:3]:
        np.testing.assert_array_equal(state, np.full([B, U], 0.25))
    np.testing.assert_array_equal(got[3][1], np.zeros([B, U]))


@pytest.mark.parametrize("engine", ENGINES)
def test_gradients_over_zero_time_steps_known_only_at_run_time(engine):
    # The forward loop is bounded by a time dimension that is 0 only in the feed: its buffers of
    # values saved for the gradient have no rows, and the compiled engine still traces its body
    # (writing a row there raised TypeError). Both directions of a bidirectional_dynamic_rnn.
    x = sl.placeholder(sl.float64, [B, None, D])
    (fw, bw), (fw_state, bw_state) = cells.bidirectional_dynamic_rnn(
        cells.GRUCell(U), cells.BasicRNNCell(U), x, dtype=sl.float64
    )
    loss = sl.reduce_sum(fw) + sl.reduce_sum(fw_state) + sl.reduce_sum(bw_state)
    grads = sl.gradients(loss, [x] + sl.trainable_variables())
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        sess.run(sl.global_variables_initializer())
        out, state, got = sess.run([bw, bw_state, grads], {x: np.zeros([B, 0, D])})
    assert out.shape == (B, 0, U) and got[0].shape == (B, 0, D)
    np.testing.assert_array_equal(state, np.zeros([B, U]))
    for g in got[1:]:
        np.testing.assert_array_equal(g, np.zeros_like(g))


# -- dropout --------------------------------------------------------------------------------------
def _dropout_run(seed, variational=False):
    g = sl.Graph()
    with g.as_default():
        sl.set_random_seed(1)
        inner = cells.BasicLSTMCell(16)
        cell = cells.DropoutWrapper(
            inner,
            output_keep_prob=0.5,
            state_keep_prob=0.5,
            variational_recurrent=variational,
            dtype=sl.float64,
            seed=seed,
        )
        x = sl.constant(_inputs(7, time=8))
        outputs, final = cells.dynamic_rnn(cell, x, dtype=sl.float64)
        plain, _ = cells.dynamic_rnn(inner, x, dtype=sl.float64, scope="rnn")
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            return sess.run((outputs, final, plain))


def test_dropout_wrapper_is_seeded_and_scales_kept_values():
    outputs, final, plain = _dropout_run(seed=3)
    again, _, _ = _dropout_run(seed=3)
    other, _, _ = _dropout_run(seed=4)
    np.testing.assert_array_equal(outputs, again)
    assert not np.array_equal(outputs, other)
    dropped = outputs == 0
    assert 0.3 < dropped.mean() < 0.7
    # the memory c is never dropped; h is kept or zero
    assert np.all(final.c != 0)
    # at the first step the state is still zero, so kept outputs are plain / keep_prob
    first = outputs[:, 0]
    np.testing.assert_allclose(first[first != 0], plain[:, 0][first != 0] / 0.5, rtol=1e-12)


def test_variational_dropout_uses_one_mask_for_all_steps():
    outputs, _, _ = _dropout_run(seed=3, variational=True)
    mask = outputs != 0
    assert np.all(mask == mask[:, :1]) and 0 < mask.mean() < 1
    with pytest.raises(ValueError, match="dtype must be provided"):
        cells.DropoutWrapper(cells.BasicRNNCell(U), variational_recurrent=True)
    with pytest.raises(ValueError, match="input_size must be provided"):
        cells.DropoutWrapper(
            cells.BasicRNNCell(U), input_keep_prob=0.5, variational_recurrent=True, dtype=sl.float32
        )


# -- bad input ------------------------------------------------------------------------------------
def test_bad_arguments_raise_at_construction():
    cell = cells.BasicRNNCell(U)
    x = sl.zeros([B, T, D])
    with pytest.raises(ValueError, match="you must give a dtype"):
        cells.dynamic_rnn(cell, x)
    with pytest.raises(ValueError, match="must have rank at least 3"):
        cells.dynamic_rnn(cell, sl.zeros([T, B]), dtype=sl.float32, time_major=True)
    with pytest.raises(ValueError, match="depth of inputs"):
        cells.dynamic_rnn(cell, sl.placeholder(sl.float32, [B, T, None]), dtype=sl.float32)
    with pytest.raises(ValueError, match="sequence_length must be a vector"):
        cells.dynamic_rnn(cell, x, sequence_length=[[1]], dtype=sl.float32)
    with pytest.raises(ValueError, match="sequence_length has 2 entries but the batch size is 3"):
        cells.dynamic_rnn(cell, x, sequence_length=[1, 2], dtype=sl.float32)
    with pytest.raises(ValueError, match="Batch_size is not the same"):
        cells.dynamic_rnn(cell, (x, sl.zeros([B + 1, T, D])), dtype=sl.float32)
