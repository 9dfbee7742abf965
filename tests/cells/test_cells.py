"""Every cell through the one contract test (`run_cell_test`), plus cell-specific behaviour."""

import functools

import numpy as np
import pytest

import sluice as sl
from sluice import cells
from sluice.cells import LSTMStateTuple
from sluice.testing import CellCase, run_cell_test

from . import numpy_cells as ref

D, U = 3, 4  # input depth, units


def _dropout_lstm():
    keep = sl.placeholder_with_default(1.0, [], name="keep_prob")  # a Tensor: dropout ops run
    return cells.DropoutWrapper(
        cells.BasicLSTMCell(U),
        input_keep_prob=keep,
        output_keep_prob=keep,
        state_keep_prob=keep,
        seed=5,
    )


CASES = [
    CellCase(
        "basic_rnn",
        lambda: cells.BasicRNNCell(U),
        ref.basic_rnn,
        {"kernel": (D + U, U), "bias": (U,)},
        D,
        U,
        U,
        "basic_rnn_cell",
    ),
    CellCase(
        "basic_lstm",
        lambda: cells.BasicLSTMCell(U),
        ref.basic_lstm,
        {"kernel": (D + U, 4 * U), "bias": (4 * U,)},
        D,
        U,
        LSTMStateTuple(U, U),
        "basic_lstm_cell",
    ),
    CellCase(
        "basic_lstm_forget_bias_0",
        lambda: cells.BasicLSTMCell(U, forget_bias=0.0),
        functools.partial(ref.basic_lstm, forget_bias=0.0),
        {"kernel": (D + U, 4 * U), "bias": (4 * U,)},
        D,
        U,
        LSTMStateTuple(U, U),
        "basic_lstm_cell",
    ),
    CellCase(
        "basic_lstm_concat_state",
        lambda: cells.BasicLSTMCell(U, state_is_tuple=False),
        functools.partial(ref.basic_lstm_concat_state, num_units=U),
        {"kernel": (D + U, 4 * U), "bias": (4 * U,)},
        D,
        U,
        2 * U,
        "basic_lstm_cell",
    ),
    CellCase(
        "lstm",
        lambda: cells.LSTMCell(U),
        ref.lstm,
        {"kernel": (D + U, 4 * U), "bias": (4 * U,)},
        D,
        U,
        LSTMStateTuple(U, U),
        "lstm_cell",
    ),
    CellCase(
        "lstm_peepholes_clip_projection",
        lambda: cells.LSTMCell(U, use_peepholes=True, cell_clip=0.6, num_proj=2, proj_clip=0.3),
        functools.partial(ref.lstm, use_peepholes=True, cell_clip=0.6, num_proj=2, proj_clip=0.3),
        {
            "kernel": (D + 2, 4 * U),
            "bias": (4 * U,),
            "w_f_diag": (U,),
            "w_i_diag": (U,),
            "w_o_diag": (U,),
            "projection/kernel": (U, 2),
        },
        D,
        2,
        LSTMStateTuple(U, 2),
        "lstm_cell",
    ),
    CellCase(
        "gru",
        lambda: cells.GRUCell(U),
        ref.gru,
        {
            "gates/kernel": (D + U, 2 * U),
            "gates/bias": (2 * U,),
            "candidate/kernel": (D + U, U),
            "candidate/bias": (U,),
        },
        D,
        U,
        U,
        "gru_cell",
    ),
    CellCase(
        "multi_lstm_gru",
        lambda: cells.MultiRNNCell([cells.BasicLSTMCell(U), cells.GRUCell(U)]),
        ref.multi_lstm_gru,
        {
            "cell_0/basic_lstm_cell/kernel": (D + U, 4 * U),
            "cell_0/basic_lstm_cell/bias": (4 * U,),
            "cell_1/gru_cell/gates/kernel": (2 * U, 2 * U),
            "cell_1/gru_cell/gates/bias": (2 * U,),
            "cell_1/gru_cell/candidate/kernel": (2 * U, U),
            "cell_1/gru_cell/candidate/bias": (U,),
        },
        D,
        U,
        (LSTMStateTuple(U, U), U),
        "multi_rnn_cell",
    ),
    CellCase(
        "dropout_wrapper_keep_1",
        _dropout_lstm,
        ref.basic_lstm,
        {"kernel": (D + U, 4 * U), "bias": (4 * U,)},
        D,
        U,
        LSTMStateTuple(U, U),
        "basic_lstm_cell",
    ),
    CellCase(
        "residual_wrapper",
        lambda: cells.ResidualWrapper(cells.BasicRNNCell(D)),
        ref.residual_rnn,
        {"kernel": (2 * D, D), "bias": (D,)},
        D,
        D,
        D,
        "basic_rnn_cell",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_cell_contract(case):
    run_cell_test(case)


# -- default initial weights ----------------------------------------------------------------------
def _initial_weights(make, seed):
    g = sl.Graph()
    with g.as_default():
        sl.set_random_seed(seed)
        cell = make()
        cells.dynamic_rnn(cell, sl.zeros([2, 3, D]), dtype=sl.float32)
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            return {v.op.name: sess.run(v) for v in cell.variables}


def test_default_initializers_are_tf1s_and_follow_the_graph_seed():
    first = _initial_weights(lambda: cells.GRUCell(U), seed=3)
    again = _initial_weights(lambda: cells.GRUCell(U), seed=3)
    other = _initial_weights(lambda: cells.GRUCell(U), seed=4)
    for name, value in first.items():
        np.testing.assert_array_equal(value, again[name])
    np.testing.assert_array_equal(first["rnn/gru_cell/gates/bias"], 1.0)
    np.testing.assert_array_equal(first["rnn/gru_cell/candidate/bias"], 0.0)
    kernel = first["rnn/gru_cell/gates/kernel"]
    limit = np.sqrt(6.0 / sum(kernel.shape))  # glorot uniform
    assert np.abs(kernel).max() <= limit and np.abs(kernel).max() > 0.5 * limit
    assert not np.array_equal(kernel, other["rnn/gru_cell/gates/kernel"])


def test_custom_initializers():
    weights = _initial_weights(
        lambda: cells.GRUCell(
            U,
            kernel_initializer=cells.constant_initializer(0.25),
            bias_initializer=cells.constant_initializer(-1.0),
        ),
        seed=0,
    )
    np.testing.assert_array_equal(weights["rnn/gru_cell/gates/kernel"], 0.25)
    np.testing.assert_array_equal(weights["rnn/gru_cell/candidate/bias"], -1.0)
    lstm = _initial_weights(
        lambda: cells.LSTMCell(
            U, use_peepholes=True, initializer=cells.random_uniform_initializer(-0.01, 0.01)
        ),
        0,
    )
    assert np.abs(lstm["rnn/lstm_cell/w_f_diag"]).max() <= 0.01
    np.testing.assert_array_equal(lstm["rnn/lstm_cell/bias"], 0.0)


# -- names and scopes -----------------------------------------------------------------------------
def test_scope_names_follow_tf1():
    x = sl.zeros([2, 3, D])
    a, b, c = cells.BasicLSTMCell(U), cells.BasicLSTMCell(U), cells.BasicLSTMCell(U)
    with cells.variable_scope("enc"):  # two new cells in one open scope: a suffix
        a(x[:, 0], a.zero_state(2, sl.float32))
        b(x[:, 0], b.zero_state(2, sl.float32))
    assert (a.scope_name, b.scope_name) == ("enc/basic_lstm_cell", "enc/basic_lstm_cell_1")
    cells.dynamic_rnn(a, x, dtype=sl.float32)  # a built cell keeps its scope
    assert a.variables[0].op.name == "enc/basic_lstm_cell/kernel"
    cells.dynamic_rnn(c, x, dtype=sl.float32)
    # TF1's classic error: a second new cell in a second dynamic_rnn without a scope
    with pytest.raises(ValueError, match="rnn/basic_lstm_cell/kernel already exists"):
        cells.dynamic_rnn(cells.BasicLSTMCell(U), x, dtype=sl.float32)
    cells.dynamic_rnn(cells.BasicLSTMCell(U), x, dtype=sl.float32, scope="rnn2")


def test_scope_argument_names_the_cell_scope():
    cell = cells.BasicRNNCell(U)
    cell(sl.zeros([2, D]), sl.zeros([2, U]), scope="my_rnn")
    assert [v.op.name for v in cell.variables] == ["my_rnn/kernel", "my_rnn/bias"]
    named = cells.GRUCell(U, name="encoder")
    cells.dynamic_rnn(named, sl.zeros([2, 3, D]), dtype=sl.float32, scope="seq")
    assert named.variables[0].op.name == "seq/encoder/gates/kernel"


def test_existing_variable_name_is_an_error():
    cells.get_variable("w", [2])
    with pytest.raises(ValueError, match="Variable w already exists"):
        cells.get_variable("w", [2])


# -- bad input ------------------------------------------------------------------------------------
def test_unknown_input_depth_raises_at_construction():
    x = sl.placeholder(sl.float32, [2, None])
    with pytest.raises(ValueError, match="inputs.shape\\[-1\\] to be known"):
        cells.BasicLSTMCell(U)(x, cells.BasicLSTMCell(U).zero_state(2, sl.float32))


def test_wrong_state_structure_raises():
    cell = cells.MultiRNNCell([cells.BasicRNNCell(U), cells.BasicRNNCell(U)])
    with pytest.raises(ValueError, match="Expected state to be a tuple of length 2"):
        cell(sl.zeros([2, D]), sl.zeros([2, U]))


def test_multi_rnn_cell_argument_checks():
    with pytest.raises(ValueError, match="at least one cell"):
        cells.MultiRNNCell([])
    with pytest.raises(ValueError, match="state_is_tuple is not set"):
        cells.MultiRNNCell([cells.BasicLSTMCell(U)], state_is_tuple=False)


def test_multi_rnn_cell_with_concatenated_state():
    cell = cells.MultiRNNCell([cells.BasicRNNCell(U), cells.GRUCell(2)], state_is_tuple=False)
    assert cell.state_size == U + 2
    x, h = np.ones([2, D]), np.full([2, U + 2], 0.5)
    out, state = cell(sl.constant(x), sl.constant(h))
    assert out.shape.as_list() == [2, 2] and state.shape.as_list() == [2, U + 2]
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        w = {v.op.name.split("multi_rnn_cell/")[1]: sess.run(v) for v in cell.variables}
        got_out, got_state = sess.run((out, state))
    w0 = {k[len("cell_0/basic_rnn_cell/") :]: v for k, v in w.items() if k.startswith("cell_0")}
    out0, s0 = ref.basic_rnn(w0, x, h[:, :U])
    out1, s1 = ref.gru(w, out0, h[:, U:], prefix="cell_1/gru_cell/")
    np.testing.assert_allclose(got_out, out1, rtol=1e-12)
    np.testing.assert_allclose(got_state, np.concatenate([s0, s1], 1), rtol=1e-12)


def test_residual_wrapper_needs_matching_sizes():
    cell = cells.ResidualWrapper(cells.BasicRNNCell(U))
    with pytest.raises(ValueError, match="ResidualWrapper"):
        cell(sl.zeros([2, D]), sl.zeros([2, U]))


@pytest.mark.parametrize("keep", [0.0, 1.5, -1])
def test_dropout_keep_probability_out_of_range(keep):
    with pytest.raises(ValueError, match="must be between 0 and 1"):
        cells.DropoutWrapper(cells.BasicRNNCell(U), output_keep_prob=keep)


def test_not_a_cell_is_a_type_error():
    with pytest.raises(TypeError, match="not an RNNCell"):
        cells.dynamic_rnn(lambda x, s: (x, s), sl.zeros([2, 3, D]), dtype=sl.float32)
    with pytest.raises(TypeError, match="must be an RNNCell"):
        cells.DropoutWrapper(object())


def _assert_kept_or_dropped(got, plain, keep):
    kept = got != 0
    np.testing.assert_allclose(got[kept], plain[kept] / keep, rtol=1e-12)
    assert 0 < kept.mean() < 1


def test_state_dropout_follows_the_filter():
    inner = cells.MultiRNNCell([cells.BasicLSTMCell(16), cells.BasicRNNCell(16)])
    default = cells.DropoutWrapper(inner, state_keep_prob=0.5, seed=1)
    nothing = cells.DropoutWrapper(
        inner, state_keep_prob=0.5, seed=1, dropout_state_filter_visitor=lambda s: False
    )
    x = sl.constant(np.random.default_rng(0).normal(size=[8, D]))
    zero = inner.zero_state(8, sl.float64)
    _, (lstm, rnn) = default(x, zero)
    _, kept = nothing(x, zero)
    _, (plain_lstm, plain_rnn) = inner(x, zero)
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        got = sess.run({"lstm": lstm, "rnn": rnn, "kept": kept})
        plain = sess.run({"lstm": plain_lstm, "rnn": plain_rnn})
    np.testing.assert_array_equal(got["lstm"].c, plain["lstm"].c)  # the memory is never dropped
    _assert_kept_or_dropped(got["lstm"].h, plain["lstm"].h, 0.5)
    _assert_kept_or_dropped(got["rnn"], plain["rnn"], 0.5)
    np.testing.assert_array_equal(got["kept"][1], plain["rnn"])
