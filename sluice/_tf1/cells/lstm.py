"""LSTM cells with TF1's arithmetic, weight names and gate layout: `BasicLSTMCell`, `LSTMCell`.

Both use one kernel over concat([inputs, h]) whose 4 * num_units columns are the gates in the
order i (input), j (new input), f (forget), o (output), and one bias of the same width:

    i, j, f, o = split(concat([x, h]) @ kernel + bias, 4, axis=1)
    c' = sigmoid(f + forget_bias) * c + sigmoid(i) * activation(j)
    h' = sigmoid(o) * activation(c')

so a TF1 checkpoint's `.../kernel` and `.../bias` arrays load unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from sluice._export import export
from sluice._tf1.cells.cell_config import (
    get_activation,
    get_initializer,
    serialize_activation,
    serialize_initializer,
)
from sluice._tf1.cells.initializers import zeros_initializer
from sluice._tf1.cells.partitioners import fixed_size_partitioner
from sluice._tf1.cells.rnn_cell import BIAS_NAME, WEIGHTS_NAME, RNNCell, clip, input_depth, linear
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, matmul_ops, unary_ops


@export("nn.rnn_cell.LSTMStateTuple", "contrib.rnn.LSTMStateTuple")
class LSTMStateTuple(NamedTuple):
    """The state of an LSTM cell: the memory `c` and the output `h` (in this order)."""

    c: Any
    h: Any

    @property
    def dtype(self):
        if self.c.dtype != self.h.dtype:
            raise TypeError(f"Inconsistent internal state: {self.c.dtype} vs {self.h.dtype}")
        return self.c.dtype


def _split_state(state: Any, num_units: int, num_proj: int, state_is_tuple: bool):
    if state_is_tuple:
        c, h = state
        return c, h
    c = state[:, :num_units]
    h = state[:, num_units : num_units + num_proj]
    return c, h


def _pack_state(c: Tensor, h: Tensor, state_is_tuple: bool) -> Any:
    return LSTMStateTuple(c, h) if state_is_tuple else join_ops.concat([c, h], 1)


def _shards_partitioner(num_shards: int | None) -> Callable | None:
    """TF1's LSTMCell: a weight given a number of shards is partitioned along its rows."""
    return None if num_shards is None else fixed_size_partitioner(num_shards)


@export("nn.rnn_cell.BasicLSTMCell", "contrib.rnn.BasicLSTMCell")
class BasicLSTMCell(RNNCell):
    """The basic LSTM cell of TF1 (no peepholes, no clipping, no projection).

    Weights: `kernel` [depth + num_units, 4 * num_units] (glorot uniform), `bias`
    [4 * num_units] (zeros); gates i, j, f, o.

    Args:
      num_units: the size of c and h.
      forget_bias: added to the forget gate's pre-activation (not to the bias variable).
      state_is_tuple: the state is `LSTMStateTuple(c, h)`; when False, concat([c, h], 1).
      activation: a function or its name; default tanh.
      reuse, name, dtype, trainable: see `RNNCell`.
    """

    _float_inputs_only = True

    def __init__(
        self,
        num_units: int,
        forget_bias: float = 1.0,
        state_is_tuple: bool = True,
        activation: Callable | str | None = None,
        reuse: Any = None,
        name: str | None = None,
        dtype: Any = None,
        **kwargs: Any,
    ):
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kwargs)
        self._num_units = int(num_units)
        self._forget_bias = float(forget_bias)
        self._state_is_tuple = state_is_tuple
        self._activation = get_activation(activation) or unary_ops.tanh

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "num_units": self._num_units,
            "forget_bias": self._forget_bias,
            "state_is_tuple": self._state_is_tuple,
            "activation": serialize_activation(self._activation),
            "reuse": self._reuse,
        }

    @property
    def state_size(self) -> Any:
        n = self._num_units
        return LSTMStateTuple(n, n) if self._state_is_tuple else 2 * n

    @property
    def output_size(self) -> int:
        return self._num_units

    def build(self, inputs_shape: TensorShape) -> None:
        n = self._num_units
        self._kernel = self.add_variable(WEIGHTS_NAME, [input_depth(self, inputs_shape) + n, 4 * n])
        self._bias = self.add_variable(BIAS_NAME, [4 * n], initializer=zeros_initializer())
        self.built = True

    def call(self, inputs: Tensor, state: Any) -> tuple[Tensor, Any]:
        # As TF1: a concatenated state is cut in halves, so one not of width 2 * num_units
        # fails (in the split or the matmul) instead of being sliced silently.
        c, h = state if self._state_is_tuple else join_ops.split(state, 2, axis=1)
        gates = linear([inputs, h], self._kernel, self._bias)
        i, j, f, o = join_ops.split(gates, 4, axis=1)
        forget_bias = core_ops.convert_to_tensor(self._forget_bias, dtype=f.dtype)
        sigmoid, act = unary_ops.sigmoid, self._activation
        new_c = math_ops.add(
            math_ops.multiply(c, sigmoid(math_ops.add(f, forget_bias))),
            math_ops.multiply(sigmoid(i), act(j)),
        )
        new_h = math_ops.multiply(act(new_c), sigmoid(o))
        return new_h, _pack_state(new_c, new_h, self._state_is_tuple)


@export("nn.rnn_cell.LSTMCell", "contrib.rnn.LSTMCell")
class LSTMCell(RNNCell):
    """TF1's full LSTM cell: optional peepholes, cell clipping and an output projection.

    Weights: `kernel` [depth + h_depth, 4 * num_units] with h_depth = num_proj or num_units,
    `bias` [4 * num_units] (zeros); with peepholes `w_f_diag`, `w_i_diag`, `w_o_diag`
    [num_units]; with num_proj `projection/kernel` [num_units, num_proj]. Every weight but the
    bias uses `initializer` (default glorot uniform).

        c' = sigmoid(f + forget_bias + w_f_diag * c) * c + sigmoid(i + w_i_diag * c) * act(j)
        c' = clip(c', cell_clip)
        m  = sigmoid(o + w_o_diag * c') * act(c');  m = clip(m @ projection, proj_clip)

    Args:
      num_units: the size of c.
      use_peepholes: adds the diagonal peephole connections.
      cell_clip: clips c' to [-cell_clip, cell_clip].
      initializer: the initializer of the kernels and peepholes.
      num_proj: projects the output (and h) to this size.
      proj_clip: clips the projected output.
      num_unit_shards: splits `kernel` along its rows into this many parts
        (`kernel/part_<i>`, `fixed_size_partitioner`), as TF1 does; the cell multiplies by
        their concatenation, so its values are those of the unsharded cell.
      num_proj_shards: the same for `projection/kernel`.
      forget_bias, state_is_tuple, activation: as in `BasicLSTMCell`.
      reuse, name, dtype, trainable: see `RNNCell`.
    """

    _float_inputs_only = True

    def __init__(
        self,
        num_units: int,
        use_peepholes: bool = False,
        cell_clip: float | None = None,
        initializer: Callable | None = None,
        num_proj: int | None = None,
        proj_clip: float | None = None,
        num_unit_shards: Any = None,
        num_proj_shards: Any = None,
        forget_bias: float = 1.0,
        state_is_tuple: bool = True,
        activation: Callable | str | None = None,
        reuse: Any = None,
        name: str | None = None,
        dtype: Any = None,
        **kwargs: Any,
    ):
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kwargs)
        self._num_unit_shards, self._num_proj_shards = num_unit_shards, num_proj_shards
        self._num_units = int(num_units)
        self._use_peepholes = use_peepholes
        self._cell_clip = cell_clip
        self._initializer = get_initializer(initializer)
        self._num_proj = None if num_proj is None else int(num_proj)
        self._proj_clip = proj_clip
        self._forget_bias = float(forget_bias)
        self._state_is_tuple = state_is_tuple
        self._activation = get_activation(activation) or unary_ops.tanh

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "num_units": self._num_units,
            "use_peepholes": self._use_peepholes,
            "cell_clip": self._cell_clip,
            "initializer": serialize_initializer(self._initializer),
            "num_proj": self._num_proj,
            "proj_clip": self._proj_clip,
            "num_unit_shards": self._num_unit_shards,
            "num_proj_shards": self._num_proj_shards,
            "forget_bias": self._forget_bias,
            "state_is_tuple": self._state_is_tuple,
            "activation": serialize_activation(self._activation),
            "reuse": self._reuse,
        }

    @property
    def state_size(self) -> Any:
        n, p = self._num_units, self._num_proj or self._num_units
        return LSTMStateTuple(n, p) if self._state_is_tuple else n + p

    @property
    def output_size(self) -> int:
        return self._num_proj or self._num_units

    def build(self, inputs_shape: TensorShape) -> None:
        n, init = self._num_units, self._initializer
        rows = input_depth(self, inputs_shape) + (self._num_proj or n)
        self._kernel = self.add_variable(
            WEIGHTS_NAME,
            [rows, 4 * n],
            initializer=init,
            partitioner=_shards_partitioner(self._num_unit_shards),
        )
        self._bias = self.add_variable(BIAS_NAME, [4 * n], initializer=zeros_initializer())
        if self._use_peepholes:
            self._w_f_diag = self.add_variable("w_f_diag", [n], initializer=init)
            self._w_i_diag = self.add_variable("w_i_diag", [n], initializer=init)
            self._w_o_diag = self.add_variable("w_o_diag", [n], initializer=init)
        if self._num_proj is not None:
            self._proj_kernel = self.add_variable(
                f"projection/{WEIGHTS_NAME}",
                [n, self._num_proj],
                initializer=init,
                partitioner=_shards_partitioner(self._num_proj_shards),
            )
        self.built = True

    def call(self, inputs: Tensor, state: Any) -> tuple[Tensor, Any]:
        n, p = self._num_units, self._num_proj or self._num_units
        c_prev, m_prev = _split_state(state, n, p, self._state_is_tuple)
        gates = linear([inputs, m_prev], self._kernel, self._bias)
        i, j, f, o = join_ops.split(gates, 4, axis=1)
        sigmoid, act = unary_ops.sigmoid, self._activation
        add, mul = math_ops.add, math_ops.multiply
        forget_bias = core_ops.convert_to_tensor(self._forget_bias, dtype=f.dtype)
        if self._use_peepholes:
            c = add(
                mul(sigmoid(add(add(f, forget_bias), mul(self._w_f_diag, c_prev))), c_prev),
                mul(sigmoid(add(i, mul(self._w_i_diag, c_prev))), act(j)),
            )
        else:
            c = add(mul(sigmoid(add(f, forget_bias)), c_prev), mul(sigmoid(i), act(j)))
        if self._cell_clip is not None:
            c = clip(c, self._cell_clip)
        if self._use_peepholes:
            m = mul(sigmoid(add(o, mul(self._w_o_diag, c))), act(c))
        else:
            m = mul(sigmoid(o), act(c))
        if self._num_proj is not None:
            m = matmul_ops.matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = clip(m, self._proj_clip)
        return m, _pack_state(c, m, self._state_is_tuple)
