"""`GRUCell` with TF1's arithmetic and weight names (`gates/...`, `candidate/...`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sluice._export import export
from sluice._tf1.cells.cell_config import (
    get_activation,
    get_initializer,
    serialize_activation,
    serialize_initializer,
)
from sluice._tf1.cells.initializers import constant_initializer, zeros_initializer
from sluice._tf1.cells.rnn_cell import BIAS_NAME, WEIGHTS_NAME, RNNCell, input_depth, linear
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, unary_ops


@export("nn.rnn_cell.GRUCell", "contrib.rnn.GRUCell")
class GRUCell(RNNCell):
    """The gated recurrent unit of TF1 (Cho et al., 2014), reset gate applied before the matmul:

        r, u = split(sigmoid(concat([x, h]) @ gates/kernel + gates/bias), 2, axis=1)
        c    = activation(concat([x, r * h]) @ candidate/kernel + candidate/bias)
        h'   = u * h + (1 - u) * c;  output = h'

    Weights: `gates/kernel` [depth + num_units, 2 * num_units], `gates/bias` [2 * num_units]
    (ones: the gates start open), `candidate/kernel` [depth + num_units, num_units],
    `candidate/bias` [num_units] (zeros).

    Args:
      num_units: the size of the state and the output.
      activation: a function or its name; default tanh.
      kernel_initializer: the initializer of both kernels (default glorot uniform).
      bias_initializer: the initializer of both biases (default: 1 for the gates, 0 for the
        candidate).
      reuse, name, dtype, trainable: see `RNNCell`.
    """

    _float_inputs_only = True

    def __init__(
        self,
        num_units: int,
        activation: Callable | str | None = None,
        reuse: Any = None,
        kernel_initializer: Callable | None = None,
        bias_initializer: Callable | None = None,
        name: str | None = None,
        dtype: Any = None,
        **kwargs: Any,
    ):
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kwargs)
        self._num_units = int(num_units)
        self._activation = get_activation(activation) or unary_ops.tanh
        self._kernel_initializer = get_initializer(kernel_initializer)
        self._bias_initializer = get_initializer(bias_initializer)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "num_units": self._num_units,
            "kernel_initializer": serialize_initializer(self._kernel_initializer),
            "bias_initializer": serialize_initializer(self._bias_initializer),
            "activation": serialize_activation(self._activation),
            "reuse": self._reuse,
        }

    @property
    def state_size(self) -> int:
        return self._num_units

    @property
    def output_size(self) -> int:
        return self._num_units

    def build(self, inputs_shape: TensorShape) -> None:
        n, k_init, b_init = self._num_units, self._kernel_initializer, self._bias_initializer
        rows = input_depth(self, inputs_shape) + n
        self._gate_kernel = self.add_variable(
            f"gates/{WEIGHTS_NAME}", [rows, 2 * n], initializer=k_init
        )
        self._gate_bias = self.add_variable(
            f"gates/{BIAS_NAME}", [2 * n], initializer=b_init or constant_initializer(1.0)
        )
        self._candidate_kernel = self.add_variable(
            f"candidate/{WEIGHTS_NAME}", [rows, n], initializer=k_init
        )
        self._candidate_bias = self.add_variable(
            f"candidate/{BIAS_NAME}", [n], initializer=b_init or zeros_initializer()
        )
        self.built = True

    def call(self, inputs: Tensor, state: Tensor) -> tuple[Tensor, Tensor]:
        value = unary_ops.sigmoid(linear([inputs, state], self._gate_kernel, self._gate_bias))
        r, u = join_ops.split(value, 2, axis=1)
        r_state = math_ops.multiply(r, state)
        c = self._activation(
            linear([inputs, r_state], self._candidate_kernel, self._candidate_bias)
        )
        one = core_ops.convert_to_tensor(1, dtype=u.dtype)
        new_h = math_ops.add(
            math_ops.multiply(u, state), math_ops.multiply(math_ops.subtract(one, u), c)
        )
        return new_h, new_h
