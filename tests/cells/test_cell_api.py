"""Parts of the TF1 cell API that published programs rely on: names, initial states, input
checks."""

import numpy as np
import pytest

import sluice as sl
from sluice import cells


def test_cells_are_named_when_made_as_tf1_does():
    a, b = cells.BasicRNNCell(3), cells.BasicRNNCell(3)
    c = cells.LSTMCell(3)
    assert (a.name, b.name, c.name) == ("basic_rnn_cell", "basic_rnn_cell_1", "lstm_cell")
    assert cells.GRUCell(2, name="mine").name == "mine"
    x = sl.placeholder(sl.float32, [None, 2])
    a(x, a.zero_state(2, sl.float32))
    b(x, b.zero_state(2, sl.float32))
    assert [v.op.name for v in a.variables + b.variables] == [
        "basic_rnn_cell/kernel", "basic_rnn_cell/bias",
        "basic_rnn_cell_1/kernel", "basic_rnn_cell_1/bias"]


def test_names_count_per_graph():
    assert cells.BasicRNNCell(3).name == "basic_rnn_cell"
    with sl.Graph().as_default():
        assert cells.BasicRNNCell(3).name == "basic_rnn_cell"


def test_initial_state_from_inputs_of_unknown_batch_size():
    cell = cells.LSTMCell(3)
    x = sl.placeholder(sl.float32, [None, 5, 2])
    state = cell.get_initial_state(inputs=x)
    assert state.c.dtype == sl.float32 and state.c.shape.as_list() == [None, 3]
    with sl.Session() as s:
        got = s.run(state, {x: np.zeros((4, 5, 2), np.float32)})
    assert got.c.shape == (4, 3) and not got.h.any()
    assert cell.get_initial_state(batch_size=2, dtype=sl.float64).h.shape.as_list() == [2, 3]
    with pytest.raises(ValueError, match="dtype from input tensor"):
        cell.get_initial_state(inputs=x, dtype=sl.float64)
    with pytest.raises(ValueError, match="cannot be None"):
        cell.get_initial_state()


@pytest.mark.parametrize("make", [
    lambda: cells.BasicRNNCell(3), lambda: cells.BasicLSTMCell(3), lambda: cells.LSTMCell(3),
    lambda: cells.GRUCell(3), lambda: cells.MultiRNNCell([cells.GRUCell(3)]),
    lambda: cells.DropoutWrapper(cells.GRUCell(3), output_keep_prob=0.5),
])
def test_integer_inputs_are_refused_up_front(make):
    x = sl.placeholder(sl.int32, [None, 4, 2])
    cell = make()
    with pytest.raises(ValueError,
                       match="only supports floating point inputs, but saw dtype: int32"):
        cell(x[:, 0], cell.zero_state(2, sl.float32))
    with pytest.raises(ValueError, match="only supports floating point inputs"):
        cells.dynamic_rnn(make(), x, dtype=sl.float32)
    assert not sl.get_default_graph().get_collection(sl.GraphKeys.WHILE_CONTEXT)
