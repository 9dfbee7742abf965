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
        "basic_rnn_cell/kernel",
        "basic_rnn_cell/bias",
        "basic_rnn_cell_1/kernel",
        "basic_rnn_cell_1/bias",
    ]


def test_cells_built_by_hand_side_by_side_get_their_own_variables():
    # TF1.15 rnn_cell_test testCellsBuild: `build` called before the first call makes the
    # weights in the cell's own scope, as the first call would (two cells, two scopes).
    for make in (cells.BasicRNNCell, cells.BasicLSTMCell, cells.GRUCell, cells.LSTMCell):
        for dtype in (sl.float32, sl.float64):
            cell = make(3, dtype=dtype)
            cell.build(sl.TensorShape([5, 7]))
            state = cell.get_initial_state(inputs=None, batch_size=5, dtype=dtype)
            output, _ = cell(sl.zeros([5, 7], dtype), state)
            assert output.shape.as_list() == [5, 3]
            assert {sl.as_dtype(v.dtype) for v in cell.variables} == {dtype}
    names = sorted(v.op.name for v in sl.global_variables() if v.op.name.endswith("kernel"))
    assert names == [
        "basic_lstm_cell/kernel",
        "basic_lstm_cell_1/kernel",
        "basic_rnn_cell/kernel",
        "basic_rnn_cell_1/kernel",
        "gru_cell/candidate/kernel",
        "gru_cell/gates/kernel",
        "gru_cell_1/candidate/kernel",
        "gru_cell_1/gates/kernel",
        "lstm_cell/kernel",
        "lstm_cell_1/kernel",
    ]
    assert len(sl.global_variables()) == 2 * (2 + 2 + 4 + 2)
    # Under a scope, and beside a cell built by its first call; reuse keeps the names.
    with sl.variable_scope("enc"):
        a, b = cells.BasicLSTMCell(2), cells.BasicLSTMCell(2)
        a.build(sl.TensorShape([None, 4]))
        b(sl.zeros([1, 4]), b.zero_state(1, sl.float32))
    with sl.variable_scope("enc", reuse=True):
        shared = cells.BasicLSTMCell(2)
        shared(sl.zeros([1, 4]), shared.zero_state(1, sl.float32))
    assert [v.op.name for v in a.variables + b.variables + shared.variables] == [
        "enc/basic_lstm_cell/kernel",
        "enc/basic_lstm_cell/bias",
        "enc/basic_lstm_cell_1/kernel",
        "enc/basic_lstm_cell_1/bias",
        "enc/basic_lstm_cell/kernel",
        "enc/basic_lstm_cell/bias",
    ]


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


def test_a_batch_size_that_the_inputs_cannot_confirm_is_refused():
    # TF1's testCellGetInitialState: the inputs' static batch size must equal batch_size's
    # value, also where the inputs' is unknown; a batch_size that agrees is taken.
    cell = cells.BasicRNNCell(5)
    x = sl.placeholder(sl.float32, [None, 4, 1])
    for batch_size in (50, sl.constant(50)):
        with pytest.raises(ValueError, match="batch size from input tensor is different from"):
            cell.get_initial_state(inputs=x, batch_size=batch_size)
    known = sl.placeholder(sl.float32, [3, 4, 1])
    with pytest.raises(ValueError, match="Input tensor batch: 3, batch_size: 4"):
        cell.get_initial_state(inputs=known, batch_size=4)
    assert cell.get_initial_state(inputs=known, batch_size=3).shape.as_list() == [3, 5]
    assert cell.get_initial_state(inputs=known, batch_size=sl.constant(3)).shape[0] == 3
    state = cell.get_initial_state(None, sl.shape(x)[0], x.dtype)
    assert state.shape.as_list() == [None, 5] and state.dtype == sl.float32


@pytest.mark.parametrize(
    "make",
    [
        lambda: cells.BasicRNNCell(3),
        lambda: cells.BasicLSTMCell(3),
        lambda: cells.LSTMCell(3),
        lambda: cells.GRUCell(3),
        lambda: cells.MultiRNNCell([cells.GRUCell(3)]),
        lambda: cells.DropoutWrapper(cells.GRUCell(3), output_keep_prob=0.5),
    ],
)
def test_integer_inputs_are_refused_up_front(make):
    x = sl.placeholder(sl.int32, [None, 4, 2])
    cell = make()
    with pytest.raises(
        ValueError, match="only supports floating point inputs, but saw dtype: int32"
    ):
        cell(x[:, 0], cell.zero_state(2, sl.float32))
    with pytest.raises(ValueError, match="only supports floating point inputs"):
        cells.dynamic_rnn(make(), x, dtype=sl.float32)
    assert not sl.get_default_graph().get_collection(sl.GraphKeys.WHILE_CONTEXT)


def test_trainable_and_non_trainable_variables_of_a_cell():
    # TF1's testBasicRNNCell and testBasicRNNCellNotTrainable (a custom getter that makes
    # every variable non-trainable).
    def not_trainable(getter, *args, **kwargs):
        kwargs["trainable"] = False
        return getter(*args, **kwargs)

    names = ["root/basic_rnn_cell/kernel:0", "root/basic_rnn_cell/bias:0"]
    x = sl.zeros([1, 2])
    with sl.variable_scope("root"):
        cell = cells.BasicRNNCell(2)
        cell(x, x)
    assert [v.name for v in cell.trainable_variables] == names
    assert cell.non_trainable_variables == cell.non_trainable_weights == []
    with sl.Graph().as_default(), sl.variable_scope("root", custom_getter=not_trainable):
        x = sl.zeros([1, 2])
        cell = cells.BasicRNNCell(2)
        cell(x, x)
        assert cell.trainable_variables == []
        assert [v.name for v in cell.non_trainable_variables] == names
        assert cell.non_trainable_weights == cell.non_trainable_variables


@pytest.mark.parametrize("width, phrase", [(6, "inner dimensions"), (5, "split evenly")])
def test_basic_lstm_cell_refuses_a_concatenated_state_not_of_twice_its_units(width, phrase):
    # TF1's testBasicLSTMCellStateSizeError: the state is cut in halves, as TF1's split.
    cell = cells.BasicLSTMCell(2, state_is_tuple=False)
    with pytest.raises(ValueError, match=phrase):
        cell(sl.zeros([3, 4]), sl.zeros([3, width]))
