"""Keras 3 recurrent cells: SimpleRNNCell, LSTMCell, GRUCell, with Keras's equations and weight
layout (so Keras-saved weights map onto them 1:1).

Why these are not the TF1 cells of `sluice.cells` (`sl.nn.rnn_cell`) with other names: the two
families compute different functions on differently shaped weights, and each must load its own
framework's checkpoints unchanged.

  * weights: Keras has a `kernel` [input_dim, k*units] for the inputs and a separate
    `recurrent_kernel` [units, k*units] for the state; a TF1 cell has one `kernel`
    [input_dim + units, k*units] over concat([x, h]);
  * LSTM: Keras's gates are (i, f, c, o) and `unit_forget_bias` puts the 1 in the bias
    variable; TF1's are (i, j, f, o) and `forget_bias` is added at every step instead;
  * GRU: Keras applies the reset gate after the recurrent matmul (`reset_after=True`, a
    [2, 3*units] bias) by default, gates (z, r, h) in one kernel; TF1 applies it before the
    matmul, with separate `gates/` (r, u) and `candidate/` kernels and biases;
  * life cycle: these are Layers (Keras names, regularizers, Keras dropout masks); TF1 cells
    name their weights by variable scope.

What the two families share is the loop: a Keras RNN runs its cell through `dynamic_rnn`
(see `rnn_loop`), the one while-loop implementation of both.

Dropout as in Keras: one input mask and one recurrent mask per sequence, drawn before the loop
(`sequence_dropout_masks`), applied at every step in training. A cell called on its own, outside
an RNN, draws new masks at each call. The draws come from the cell's `seed_generator` (a
`keras.random.SeedGenerator(seed)`, as Keras's cells hold one), whose state is the cell's
non-trainable variable.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from sluice._export import export
from sluice._keras import activations, constraints, initializers, regularizers
from sluice._keras import random as keras_random
from sluice._keras.layers.base import Layer
from sluice._keras.layers.rnn import rnn_loop
from sluice.framework.ops.array import fill_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, matmul_ops
from sluice.framework.ops.nn import nn_ops


class _KerasCell(Layer):
    """What the three cells share: units, activations, initializers, dropout masks."""

    _gates = 1

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
        kernel_constraint: Any = None,
        recurrent_constraint: Any = None,
        bias_constraint: Any = None,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        seed: int | None = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        if int(units) <= 0:
            raise ValueError(
                "Received an invalid value for argument `units`, expected a positive integer,"
                f" got {units}."
            )
        self.units = int(units)
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.recurrent_constraint = constraints.get(recurrent_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
        self.seed = seed
        self.seed_generator = keras_random.SeedGenerator(seed)  # the dropout masks' draws
        self._sequence_masks: tuple[Any, Any] | None = None  # set while an RNN runs the cell

    @property
    def state_size(self) -> Any:
        return self.units

    @property
    def output_size(self) -> int:
        return self.units

    def get_initial_state(self, batch_size: Any = None) -> list:
        """Zeros [batch_size, size] for each of the states, in a list (Keras 3's cells)."""
        sizes = self.state_size if isinstance(self.state_size, (list, tuple)) else [self.state_size]
        return [rnn_loop.zeros(batch_size, rnn_loop.state_shape(n), self._dtype) for n in sizes]

    def _build_kernels(
        self, input_shape: tuple, bias_shape: tuple | None, bias_initializer: Any
    ) -> None:
        input_dim = input_shape[-1]
        if input_dim is None:
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: the input depth must be known,"
                f" got {input_shape}."
            )
        width = self._gates * self.units
        self.kernel = self.add_weight(
            shape=(input_dim, width), initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
            name="kernel",
        )  # fmt: skip
        self.recurrent_kernel = self.add_weight(
            shape=(self.units, width), initializer=self.recurrent_initializer,
            regularizer=self.recurrent_regularizer, constraint=self.recurrent_constraint,
            name="recurrent_kernel",
        )  # fmt: skip
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                shape=bias_shape, initializer=bias_initializer,
                regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                name="bias",
            )  # fmt: skip

    def dropout_masks(self, step_input: Any, training: bool) -> tuple[Any, Any]:
        """The (input, recurrent) dropout masks for one sequence, or None when not dropping."""
        dp_mask = rec_mask = None
        if training and 0.0 < self.dropout < 1.0:
            ones = fill_ops.ones_like(step_input)
            dp_mask = keras_random.dropout(ones, self.dropout, seed=self.seed_generator)
        if training and 0.0 < self.recurrent_dropout < 1.0:
            batch = fill_ops.shape(step_input)[0]
            ones = fill_ops.ones(join_ops.stack([batch, self.units]), dtype=step_input.dtype)
            rec_mask = keras_random.dropout(ones, self.recurrent_dropout, seed=self.seed_generator)
        return dp_mask, rec_mask

    def step(self, inputs: Any, states: list, dp_mask: Any = None, rec_mask: Any = None):
        """One step: returns (output, new states as a list)."""
        raise NotImplementedError

    def call(self, inputs: Any, states: Any, training: bool = False) -> tuple[Any, Any]:
        """Keras's cell call: `(output, new_states)` for one step, with the dropout masks of
        the sequence when an RNN runs the cell (else masks drawn for this step)."""
        as_list = isinstance(states, (list, tuple))
        states = list(states) if as_list else [states]
        masks = self._sequence_masks
        if masks is None:
            masks = self.dropout_masks(inputs, training)
        output, new_states = self.step(inputs, states, *masks)
        return output, (new_states if as_list else new_states[0])

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "units": self.units,
            "activation": activations.serialize(self.activation),
            "use_bias": self.use_bias,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
            "recurrent_regularizer": regularizers.serialize(self.recurrent_regularizer),
            "bias_regularizer": regularizers.serialize(self.bias_regularizer),
            "kernel_constraint": constraints.serialize(self.kernel_constraint),
            "recurrent_constraint": constraints.serialize(self.recurrent_constraint),
            "bias_constraint": constraints.serialize(self.bias_constraint),
            "dropout": self.dropout,
            "recurrent_dropout": self.recurrent_dropout,
            "seed": self.seed,
        }


def _masked(x: Any, mask: Any) -> Any:
    return x if mask is None else x * mask


@export("layers.SimpleRNNCell")
class SimpleRNNCell(_KerasCell):
    """h = activation(x @ kernel + bias + h_prev @ recurrent_kernel); output = h.

    Weights: `kernel` [input_dim, units], `recurrent_kernel` [units, units], `bias` [units].
    """

    def __init__(self, units: int, activation: Any = "tanh", **kwargs: Any):
        kwargs.pop("recurrent_activation", None)
        super().__init__(units, activation=activation, **kwargs)

    def build(self, input_shape: tuple) -> None:
        self._build_kernels(input_shape, (self.units,), self.bias_initializer)

    def step(self, inputs, states, dp_mask=None, rec_mask=None):
        h = matmul_ops.matmul(_masked(inputs, dp_mask), self.kernel)
        if self.bias is not None:
            h = nn_ops.bias_add(h, self.bias)
        h = h + matmul_ops.matmul(_masked(states[0], rec_mask), self.recurrent_kernel)
        h = self.activation(h)
        return h, [h]


@export("layers.LSTMCell")
class LSTMCell(_KerasCell):
    """Keras's LSTM step, gates in the order (i, f, c, o):

        z = x @ kernel + h_prev @ recurrent_kernel + bias
        i, f, g, o = split(z, 4)
        c = rec_act(f) * c_prev + rec_act(i) * act(g);   h = rec_act(o) * act(c);   output = h

    Weights: `kernel` [input_dim, 4*units], `recurrent_kernel` [units, 4*units], `bias`
    [4*units] (with `unit_forget_bias`, the forget gate's part starts at 1). State: [h, c].
    """

    _gates = 4

    def __init__(self, units: int, unit_forget_bias: bool = True, **kwargs: Any):
        super().__init__(units, **kwargs)
        self.unit_forget_bias = unit_forget_bias

    @property
    def state_size(self) -> list[int]:
        return [self.units, self.units]

    def build(self, input_shape: tuple) -> None:
        bias_init = self.bias_initializer
        if self.unit_forget_bias:
            base, units = self.bias_initializer, self.units

            def bias_init(shape: Any, dtype: Any = None) -> Any:
                ones = initializers.Ones()
                parts = [base([units], dtype), ones([units], dtype), base([2 * units], dtype)]
                return join_ops.concat(parts, 0)

        self._build_kernels(input_shape, (4 * self.units,), bias_init)

    def step(self, inputs, states, dp_mask=None, rec_mask=None):
        h_prev, c_prev = states
        z = matmul_ops.matmul(_masked(inputs, dp_mask), self.kernel)
        z = z + matmul_ops.matmul(_masked(h_prev, rec_mask), self.recurrent_kernel)
        if self.bias is not None:
            z = nn_ops.bias_add(z, self.bias)
        z_i, z_f, z_c, z_o = join_ops.split(z, 4, axis=1)
        i = self.recurrent_activation(z_i)
        f = self.recurrent_activation(z_f)
        c = f * c_prev + i * self.activation(z_c)
        o = self.recurrent_activation(z_o)
        h = o * self.activation(c)
        return h, [h, c]

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "recurrent_activation": activations.serialize(self.recurrent_activation),
            "unit_forget_bias": self.unit_forget_bias,
        }


@export("layers.GRUCell")
class GRUCell(_KerasCell):
    """Keras's GRU step, gates in the order (z, r, h):

        reset_after=True (default; bias [2, 3*units]: input bias, recurrent bias):
          x_z, x_r, x_h = split(x @ kernel + bias[0], 3)
          r_z, r_r, r_h = split(h_prev @ recurrent_kernel + bias[1], 3)
          z = rec_act(x_z + r_z);  r = rec_act(x_r + r_r);  hh = act(x_h + r * r_h)
        reset_after=False (bias [3*units]): as above without the recurrent bias, except
          hh = act(x_h + (r * h_prev) @ recurrent_kernel[:, 2*units:])
        h = z * h_prev + (1 - z) * hh;   output = h

    Weights: `kernel` [input_dim, 3*units], `recurrent_kernel` [units, 3*units], `bias`.
    """

    _gates = 3

    def __init__(self, units: int, reset_after: bool = True, **kwargs: Any):
        super().__init__(units, **kwargs)
        self.reset_after = reset_after

    def build(self, input_shape: tuple) -> None:
        bias_shape = (2, 3 * self.units) if self.reset_after else (3 * self.units,)
        self._build_kernels(input_shape, bias_shape, self.bias_initializer)

    def step(self, inputs, states, dp_mask=None, rec_mask=None):
        h_prev = states[0]
        u = self.units
        x = matmul_ops.matmul(_masked(inputs, dp_mask), self.kernel)
        h_in = _masked(h_prev, rec_mask)
        if self.reset_after:
            inner = matmul_ops.matmul(h_in, self.recurrent_kernel)
            if self.bias is not None:
                x = nn_ops.bias_add(x, self.bias[0])
                inner = nn_ops.bias_add(inner, self.bias[1])
            x_z, x_r, x_h = join_ops.split(x, 3, axis=1)
            r_z, r_r, r_h = join_ops.split(inner, 3, axis=1)
            z = self.recurrent_activation(x_z + r_z)
            r = self.recurrent_activation(x_r + r_r)
            hh = self.activation(x_h + r * r_h)
        else:
            if self.bias is not None:
                x = nn_ops.bias_add(x, self.bias)
            x_z, x_r, x_h = join_ops.split(x, 3, axis=1)
            zr = matmul_ops.matmul(h_in, self.recurrent_kernel[:, : 2 * u])
            r_z, r_r = join_ops.split(zr, 2, axis=1)
            z = self.recurrent_activation(x_z + r_z)
            r = self.recurrent_activation(x_r + r_r)
            hh = self.activation(
                x_h + matmul_ops.matmul(r * h_in, self.recurrent_kernel[:, 2 * u :])
            )
        one = core_ops.convert_to_tensor(1.0, dtype=z.dtype)
        h = z * h_prev + math_ops.subtract(one, z) * hh
        return h, [h]

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "recurrent_activation": activations.serialize(self.recurrent_activation),
            "reset_after": self.reset_after,
        }


CELLS = {cls.__name__: cls for cls in (SimpleRNNCell, LSTMCell, GRUCell)}


@contextlib.contextmanager
def sequence_dropout_masks(cell: Any, batch: Any, input_dim: int, training: bool) -> Iterator:
    """While open, the Keras cells in `cell` (itself, or those of a `StackedRNNCells`) use one
    pair of dropout masks for every step: Keras draws them once per sequence."""
    fixed = []
    for inner, depth in _cells_with_input_dims(cell, input_dim):
        if isinstance(inner, _KerasCell):
            like = fill_ops.zeros(join_ops.stack([batch, depth]), dtype=inner._dtype)
            like.set_shape([None, depth])
            inner._sequence_masks = inner.dropout_masks(like, training)
            fixed.append(inner)
    try:
        yield
    finally:
        for inner in fixed:
            inner._sequence_masks = None


def _cells_with_input_dims(cell: Any, input_dim: int) -> list[tuple[Any, int]]:
    """(cell, depth of its inputs) for `cell`, or for each cell of a stack in order."""
    if not hasattr(cell, "cells"):
        return [(cell, input_dim)]
    found = []
    for inner in cell.cells:
        found += _cells_with_input_dims(inner, input_dim)
        input_dim = output_size_of(inner)
    return found


def output_size_of(cell: Any) -> int:
    """A cell's `output_size`, else its first state size (Keras's rule)."""
    size = getattr(cell, "output_size", None)
    if size is None:
        size = cell.state_size
        while isinstance(size, (list, tuple)):
            size = size[0]
    return int(size)
