"""TF1's cells (`sl.nn.rnn_cell`) inside Keras's `RNN` layer, as TF 1.15 runs them (its
rnn_test.py testRNNCellSerialization): the layer builds the cell with the weights made as its
own, steps it with `call`, and serializes it through the cell's `get_config`."""

import numpy as np
import pytest

import sluice as sl
from sluice.nn import rnn_cell


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def numpy_basic_rnn(x, kernel, bias, activation):
    h = np.zeros((x.shape[0], bias.shape[0]))
    for t in range(x.shape[1]):
        h = activation(np.concatenate([x[:, t], h], 1) @ kernel + bias)
    return h


def numpy_lstm(x, kernel, bias, forget_bias=1.0):
    units = bias.shape[0] // 4
    c = h = np.zeros((x.shape[0], units))
    for t in range(x.shape[1]):
        i, j, f, o = np.split(np.concatenate([x[:, t], h], 1) @ kernel + bias, 4, axis=1)
        c = sigmoid(f + forget_bias) * c + sigmoid(i) * np.tanh(j)
        h = sigmoid(o) * np.tanh(c)
    return h


def model_of(cell, time=None):
    x = sl.Input((time, 2))
    layer = sl.layers.RNN(cell)
    return sl.models.Model(x, layer(x)), layer


@pytest.mark.slow  # the MultiRNNCell test below covers this path in the default run
def test_a_basic_rnn_cell_in_a_keras_rnn_computes_tf1s_step():
    model, layer = model_of(rnn_cell.BasicRNNCell(3, activation="relu"))
    assert [w.name for w in layer.weights] == [
        "rnn/basic_rnn_cell/kernel:0",
        "rnn/basic_rnn_cell/bias:0",
    ]
    kernel, bias = model.get_weights()
    assert kernel.shape == (5, 3) and bias.shape == (3,)
    x = np.random.RandomState(0).uniform(-1, 1, (4, 3, 2)).astype(np.float32)
    want = numpy_basic_rnn(x.astype(np.float64), kernel, bias, lambda v: np.maximum(v, 0))
    np.testing.assert_allclose(model.predict(x, verbose=0), want, atol=1e-6, rtol=1e-6)


def test_a_multi_rnn_cell_makes_its_cells_weights_the_layers():
    # The cells of a MultiRNNCell make their weights in its first call, not in build: the layer
    # has them all as its weights (none made in its loop), and computes the stack's steps.
    cell = rnn_cell.MultiRNNCell(
        [rnn_cell.BasicRNNCell(3, name="a"), rnn_cell.BasicRNNCell(2, name="b", activation="relu")]
    )
    model, layer = model_of(cell, time=3)
    assert [w.name for w in layer.weights] == [
        "rnn/a/kernel:0",
        "rnn/a/bias:0",
        "rnn/b/kernel:0",
        "rnn/b/bias:0",
    ]
    # no TF1 variable of their own (get_variable would name it multi_rnn_cell/cell_0/a/kernel)
    assert not any("multi_rnn_cell" in v.name for v in sl.global_variables())
    k1, b1, k2, b2 = model.get_weights()
    b1, b2 = b1 + 0.25, b2 - 0.125
    model.set_weights([k1, b1, k2, b2])
    x = np.random.RandomState(4).uniform(-1, 1, (2, 3, 2))
    h1, h2 = np.zeros((2, 3)), np.zeros((2, 2))
    for t in range(3):
        h1 = np.tanh(np.concatenate([x[:, t], h1], 1) @ k1 + b1)
        h2 = np.maximum(np.concatenate([h1, h2], 1) @ k2 + b2, 0)
    got = model.predict(x.astype(np.float32), verbose=0)
    np.testing.assert_allclose(got, h2, atol=1e-6, rtol=1e-6)


@pytest.mark.slow
def test_an_lstm_cell_of_tuple_states_in_a_keras_rnn():
    model, layer = model_of(rnn_cell.LSTMCell(3), time=3)
    assert layer.state_size == [3, 3]  # LSTMStateTuple(c, h): two states
    kernel, bias = model.get_weights()
    bias = np.random.RandomState(1).uniform(-1, 1, bias.shape).astype(np.float32)
    model.set_weights([kernel, bias])
    x = np.random.RandomState(2).uniform(-1, 1, (2, 3, 2)).astype(np.float32)
    want = numpy_lstm(x.astype(np.float64), kernel, bias)
    np.testing.assert_allclose(model.predict(x, verbose=0), want, atol=1e-6, rtol=1e-6)


@pytest.mark.slow  # four models compiled: several seconds
def test_tf1_cells_round_trip_through_the_layers_config():
    # testRNNCellSerialization: the config names the TF1 class, custom_objects gives it back
    custom = {
        "BasicRNNCell": rnn_cell.BasicRNNCell,
        "GRUCell": rnn_cell.GRUCell,
        "LSTMCell": rnn_cell.LSTMCell,
    }
    x_np = np.random.RandomState(3).random_sample((3, 4, 2)).astype(np.float32)
    for cell in [
        rnn_cell.LSTMCell(4, use_peepholes=True, cell_clip=True),
        rnn_cell.GRUCell(4, dtype=sl.float32),
    ]:
        model, layer = model_of(cell)
        y_np = model.predict(x_np, verbose=0)
        config = layer.get_config()
        assert config["cell"]["class_name"] == type(cell).__name__
        copy = sl.layers.RNN.from_config(config, custom_objects=custom)
        assert type(copy.cell) is type(cell) and copy.cell is not cell
        x = sl.Input((None, 2))
        model_2 = sl.models.Model(x, copy(x))
        model_2.set_weights(model.get_weights())
        np.testing.assert_allclose(model_2.predict(x_np, verbose=0), y_np, atol=1e-6)


def test_a_tf1_cell_of_partitioned_weights_is_refused_in_a_keras_rnn():
    cell = rnn_cell.LSTMCell(4, num_unit_shards=2)
    with pytest.raises(ValueError, match="cannot be partitioned"):
        model_of(cell)
