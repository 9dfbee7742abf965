"""Recurrent layers: `RNN` (any Keras cell), `SimpleRNN`, `LSTM`, `GRU`.

Each call builds ONE while loop (`sl.nn.dynamic_rnn` over a `LoopCell`), whatever the sequence
length. Semantics, for inputs [batch, time, features] with an optional mask [batch, time]:

    lengths = sum(mask, axis=1)                    # the mask must be right-padded: 1...1 0...0
    x = each row's first lengths[b] steps reversed          if go_backwards
    state = initial_state or zeros
    for t in range(time):                          # rows past their length keep their state
        output_t, state = cell(x[:, t], state)
    last_output = the output of each row's last valid step (zeros for an empty row)
    outputs = [output_0, ...], steps past a row's length hold last_output
              (zeros when zero_output_for_mask, as inside Bidirectional)
    return (outputs if return_sequences else last_output) (+ final states if return_state)

As in Keras, with go_backwards the outputs are in processing (reversed) order. One difference:
with a mask and go_backwards, Keras reverses the padding too, so its padding steps come first;
here each row's valid steps come first and the padding after them.
"""

from __future__ import annotations

from typing import Any

from sluice.cells.dynamic_rnn import dynamic_rnn
from sluice.framework.ir import dtypes
from sluice.framework.ops import (
    array_ops,
    core_ops,
    fill_ops,
    gather_ops,
    join_ops,
    math_ops,
    reduction_ops,
)
from sluice.layers.base import Layer
from sluice.layers.rnn_cells import CELLS, GRUCell, LoopCell, LSTMCell, SimpleRNNCell


def reverse_valid_steps(x: Any, lengths: Any) -> Any:
    """`x` [batch, time, ...] with each row's first `lengths[b]` steps reversed (all steps when
    `lengths` is None); the rest stays in place."""
    if lengths is None:
        return array_ops.reverse(x, [1])
    steps = fill_ops.range(fill_ops.shape(x)[1])  # [T]
    lengths = array_ops.expand_dims(lengths, 1)  # [B, 1]
    one = core_ops.convert_to_tensor(1, dtype=dtypes.int32)
    reversed_steps = math_ops.subtract(math_ops.subtract(lengths, one), steps)
    index = gather_ops.where_v2(math_ops.less(steps, lengths), reversed_steps, steps)
    result = gather_ops.gather(x, index, axis=1, batch_dims=1)
    result.set_shape(x.shape)
    return result


def _last_valid(outputs: Any, lengths: Any) -> Any:
    """outputs[b, lengths[b] - 1] per row, zeros for rows of length 0."""
    one = core_ops.convert_to_tensor(1, dtype=dtypes.int32)
    index = math_ops.maximum(math_ops.subtract(lengths, one), 0 * one)
    picked = gather_ops.gather(outputs, array_ops.expand_dims(index, 1), axis=1, batch_dims=1)
    picked = array_ops.squeeze(picked, [1])
    empty = math_ops.equal(lengths, 0 * one)
    return gather_ops.where(empty, fill_ops.zeros_like(picked), picked)


class RNN(Layer):
    """Runs a Keras cell over the time axis (see the module docstring for the semantics).

    Args:
      cell: a SimpleRNNCell, LSTMCell or GRUCell.
      return_sequences: return every step's output [batch, time, units], not only the last.
      return_state: also return the final states (a list: [output, *states]).
      go_backwards: process the sequence in reverse.
      stateful, unroll: must be False (not supported).
      zero_output_for_mask: masked steps output zeros instead of the last valid output.
    """

    def __init__(
        self,
        cell: Any,
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        unroll: bool = False,
        zero_output_for_mask: bool = False,
        **kwargs: Any,
    ):
        if isinstance(cell, dict):
            cell = CELLS[cell["class_name"]].from_config(cell["config"])
        if not hasattr(cell, "step") or not hasattr(cell, "state_size"):
            raise TypeError(
                f"RNN needs a Keras cell (SimpleRNNCell, LSTMCell, GRUCell), got {cell!r}. "
                "For TF1 cells use sl.nn.dynamic_rnn."
            )
        if stateful or unroll:
            raise NotImplementedError("stateful=True and unroll=True are not supported.")
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences = return_sequences
        self.return_state = return_state
        self.go_backwards = go_backwards
        self.stateful = stateful
        self.unroll = unroll
        self.zero_output_for_mask = zero_output_for_mask
        self.supports_masking = True

    @property
    def units(self) -> int:
        return self.cell.units

    def build(self, sequences_shape: tuple) -> None:
        if len(sequences_shape) != 3:
            raise ValueError(
                f"{type(self).__name__} {self.name!r} expects inputs [batch, time, features], got "
                f"shape {sequences_shape}."
            )
        self._build_sublayer(self.cell, (sequences_shape[0], sequences_shape[2]))

    def _state_sizes(self) -> list[int]:
        size = self.cell.state_size
        return list(size) if isinstance(size, (list, tuple)) else [size]

    def get_initial_state(self, batch_size: Any) -> list:
        return [
            fill_ops.zeros(join_ops.stack([batch_size, n]), dtype=self._dtype)
            for n in self._state_sizes()
        ]

    def call(
        self,
        sequences: Any,
        initial_state: Any = None,
        mask: Any = None,
        training: bool = False,
    ) -> Any:
        batch = fill_ops.shape(sequences)[0]
        lengths = None
        if mask is not None:
            lengths = reduction_ops.reduce_sum(fill_ops.cast(mask, dtypes.int32), axis=1)
        x = reverse_valid_steps(sequences, lengths) if self.go_backwards else sequences
        if initial_state is None:
            state = self.get_initial_state(batch)
        else:
            state = (
                list(initial_state) if isinstance(initial_state, (list, tuple)) else [initial_state]
            )
            if len(state) != len(self._state_sizes()):
                raise ValueError(
                    f"{type(self).__name__} {self.name!r} has {len(self._state_sizes())} states; "
                    f"initial_state has {len(state)}."
                )
            state = [core_ops.convert_to_tensor(s, dtype=self._dtype) for s in state]
        for s, n in zip(state, self._state_sizes()):
            s.set_shape([sequences.shape[0], n])
        loop_cell = LoopCell(self.cell, *self.cell.dropout_masks(x[:, 0, :], training))
        outputs, final_state = dynamic_rnn(
            loop_cell, x, sequence_length=lengths, initial_state=tuple(state), scope="rnn"
        )
        if lengths is None:
            last_output = outputs[:, -1, :]
        else:
            last_output = _last_valid(outputs, lengths)
        if self.return_sequences:
            result = outputs
            if lengths is not None and not self.zero_output_for_mask:
                keep = array_ops.expand_dims(mask, -1)
                repeated = array_ops.expand_dims(last_output, 1) * fill_ops.ones_like(outputs)
                result = gather_ops.where_v2(keep, outputs, repeated)
                result.set_shape(outputs.shape)
        else:
            result = last_output
        if self.return_state:
            return [result] + list(final_state)
        return result

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        output_mask = mask if self.return_sequences else None
        if self.return_state:
            return [output_mask] + [None] * len(self._state_sizes())
        return output_mask

    def compute_output_shape(self, sequences_shape: tuple) -> Any:
        batch, time = sequences_shape[0], sequences_shape[1]
        out = (
            (batch, time, self.cell.output_size)
            if self.return_sequences
            else (batch, self.cell.output_size)
        )
        if self.return_state:
            return [out] + [(batch, n) for n in self._state_sizes()]
        return out

    def _rnn_config(self) -> dict:
        return {
            "return_sequences": self.return_sequences,
            "return_state": self.return_state,
            "go_backwards": self.go_backwards,
            "stateful": self.stateful,
            "unroll": self.unroll,
            "zero_output_for_mask": self.zero_output_for_mask,
        }

    def get_config(self) -> dict:
        cell = {"class_name": type(self.cell).__name__, "config": self.cell.get_config()}
        return {**super().get_config(), "cell": cell, **self._rnn_config()}


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
