"""`sl.contrib.rnn`: TF1's `tf.contrib.rnn`, the cells and the RNN functions under one name."""

from sluice._tf1.cells.dynamic_rnn import dynamic_rnn
from sluice._tf1.cells.static_rnn import (
    static_bidirectional_rnn,
    static_rnn,
    static_state_saving_rnn,
)
from sluice.cells import (
    BasicLSTMCell,
    BasicRNNCell,
    DeviceWrapper,
    DropoutWrapper,
    GRUCell,
    LSTMCell,
    LSTMStateTuple,
    MultiRNNCell,
    ResidualWrapper,
    RNNCell,
    bidirectional_dynamic_rnn,
)

__all__ = [
    "BasicLSTMCell",
    "BasicRNNCell",
    "DeviceWrapper",
    "DropoutWrapper",
    "GRUCell",
    "LSTMCell",
    "LSTMStateTuple",
    "MultiRNNCell",
    "RNNCell",
    "ResidualWrapper",
    "bidirectional_dynamic_rnn",
    "dynamic_rnn",
    "static_bidirectional_rnn",
    "static_rnn",
    "static_state_saving_rnn",
]
