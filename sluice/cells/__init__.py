"""RNN cells and `dynamic_rnn` with TensorFlow 1.x numerics and weight names.

TF1 spelling: `tf.nn.rnn_cell.BasicLSTMCell` is `sluice.cells.BasicLSTMCell`, `tf.nn.dynamic_rnn`
is `sluice._tf1.cells.dynamic_rnn`.
"""

from sluice._tf1.cells.dynamic_rnn import bidirectional_dynamic_rnn, dynamic_rnn
from sluice._tf1.cells.gru import GRUCell
from sluice._tf1.cells.initializers import (
    constant_initializer,
    glorot_uniform_initializer,
    ones_initializer,
    random_normal_initializer,
    random_uniform_initializer,
    truncated_normal_initializer,
    zeros_initializer,
)
from sluice._tf1.cells.lstm import BasicLSTMCell, LSTMCell, LSTMStateTuple
from sluice._tf1.cells.rnn_cell import BasicRNNCell, RNNCell
from sluice._tf1.cells.scopes import (
    AUTO_REUSE,
    VariableScope,
    get_variable_scope,
    variable_scope,
)
from sluice._tf1.cells.variable_store import (
    fixed_size_partitioner,
    get_variable,
    min_max_variable_partitioner,
)
from sluice._tf1.cells.wrappers import DeviceWrapper, DropoutWrapper, MultiRNNCell, ResidualWrapper

__all__ = [
    "AUTO_REUSE",
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
    "VariableScope",
    "bidirectional_dynamic_rnn",
    "constant_initializer",
    "dynamic_rnn",
    "fixed_size_partitioner",
    "get_variable",
    "get_variable_scope",
    "glorot_uniform_initializer",
    "min_max_variable_partitioner",
    "ones_initializer",
    "random_normal_initializer",
    "random_uniform_initializer",
    "truncated_normal_initializer",
    "variable_scope",
    "zeros_initializer",
]
