"""`SimpleRNN`, `LSTM`, `GRU`: RNN layers whose cell is made from the layer's own arguments
(Keras 3's signatures, equations and weight layout; see `rnn_cells` and `rnn.RNN`)."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice._keras.layers.rnn.rnn import RNN
from sluice._keras.layers.rnn.rnn_cells import GRUCell, LSTMCell, SimpleRNNCell

_RNN_ARGUMENTS = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll")


class _CellLayer(RNN):
    """An RNN whose cell is made from the layer's own arguments (SimpleRNN, LSTM, GRU): the
    subclasses list Keras's arguments and pass them all here as `arguments`."""

    _cell_class = None
    _cell_name = ""

    def __init__(self, units: int, arguments: dict, kwargs: dict):
        arguments = {
            k: v for k, v in arguments.items() if k not in ("self", "units", "kwargs", "__class__")
        }
        arguments.pop("use_cudnn", None)  # accepted for Keras signatures: there is no cuDNN path
        rnn_args = {k: arguments.pop(k) for k in _RNN_ARGUMENTS}
        kwargs = {**kwargs, "activity_regularizer": arguments.pop("activity_regularizer")}
        cell = type(self)._cell_class(
            units, name=self._cell_name, dtype=kwargs.get("dtype"),
            trainable=kwargs.get("trainable", True), **arguments,
        )  # fmt: skip
        super().__init__(cell, **rnn_args, **kwargs)

    def get_config(self) -> dict:
        cell_config = self.cell.get_config()
        for key in ("name", "trainable", "dtype"):
            cell_config.pop(key, None)
        return {**Layer.get_config(self), **cell_config, **self._rnn_config()}


@export("layers.SimpleRNN")
class SimpleRNN(_CellLayer):
    """A fully connected RNN: h = activation(x @ kernel + bias + h_prev @ recurrent_kernel).

    Weights (Keras layout): `simple_rnn_cell/kernel`, `/recurrent_kernel`, `/bias`.
    Arguments: Keras 3's (see `SimpleRNNCell` and `RNN`).
    """

    _cell_class = SimpleRNNCell
    _cell_name = "simple_rnn_cell"

    def __init__(
        self,
        units: int,
        activation: Any = "tanh",
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        recurrent_initializer: Any = "orthogonal",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        recurrent_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        recurrent_constraint: Any = None,
        bias_constraint: Any = None,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        unroll: bool = False,
        seed: int | None = None,
        **kwargs: Any,
    ):
        super().__init__(units, locals(), kwargs)


@export("layers.LSTM")
class LSTM(_CellLayer):
    """Long short-term memory (Hochreiter & Schmidhuber, 1997) with Keras's equations and weight
    layout (see `LSTMCell`): Keras-saved weights `lstm_cell/kernel` [input_dim, 4*units],
    `lstm_cell/recurrent_kernel` [units, 4*units], `lstm_cell/bias` [4*units] map 1:1.

    Arguments: Keras 3's (see `LSTMCell` and `RNN`); `use_cudnn` is accepted and ignored.

    >>> tokens = sl.Input((None,), dtype="int32")
    >>> y = LSTM(64, return_sequences=True)(sl.layers.Embedding(100, 16, mask_zero=True)(tokens))
    >>> y.shape
    TensorShape([None, None, 64])
    """

    _cell_class = LSTMCell
    _cell_name = "lstm_cell"

    def __init__(
        self,
        units: int,
        activation: Any = "tanh",
        recurrent_activation: Any = "sigmoid",
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        recurrent_initializer: Any = "orthogonal",
        bias_initializer: Any = "zeros",
        unit_forget_bias: bool = True,
        kernel_regularizer: Any = None,
        recurrent_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        recurrent_constraint: Any = None,
        bias_constraint: Any = None,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        seed: int | None = None,
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        unroll: bool = False,
        use_cudnn: Any = "auto",
        **kwargs: Any,
    ):
        super().__init__(units, locals(), kwargs)


@export("layers.GRU")
class GRU(_CellLayer):
    """Gated recurrent unit (Cho et al., 2014) with Keras's equations and weight layout (see
    `GRUCell`; `reset_after=True` by default, with a [2, 3*units] bias): Keras-saved weights
    `gru_cell/kernel`, `gru_cell/recurrent_kernel`, `gru_cell/bias` map 1:1.

    Arguments: Keras 3's (see `GRUCell` and `RNN`); `use_cudnn` is accepted and ignored.
    """

    _cell_class = GRUCell
    _cell_name = "gru_cell"

    def __init__(
        self,
        units: int,
        activation: Any = "tanh",
        recurrent_activation: Any = "sigmoid",
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        recurrent_initializer: Any = "orthogonal",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        recurrent_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        recurrent_constraint: Any = None,
        bias_constraint: Any = None,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        seed: int | None = None,
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        unroll: bool = False,
        reset_after: bool = True,
        use_cudnn: Any = "auto",
        **kwargs: Any,
    ):
        super().__init__(units, locals(), kwargs)
