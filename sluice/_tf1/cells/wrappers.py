"""Cells made of cells: `MultiRNNCell` (a stack), `DropoutWrapper`, `ResidualWrapper`.

`MultiRNNCell` has its own variable scope (`multi_rnn_cell`) and calls cell i under `cell_<i>`,
so its weights are named like TF1's (`rnn/multi_rnn_cell/cell_0/basic_lstm_cell/kernel`). The
two wrappers add no scope: the wrapped cell's weights keep the names they would have alone.
"""

from __future__ import annotations

import hashlib
import numbers
from collections.abc import Callable, Sequence
from typing import Any

from sluice._export import export
from sluice._tf1.cells import nest
from sluice._tf1.cells import scopes as vs
from sluice._tf1.cells.cell_config import (
    deserialize_cell,
    function_config,
    function_from_config,
    serialize_cell,
)
from sluice._tf1.cells.lstm import LSTMStateTuple
from sluice._tf1.cells.rnn_cell import CELL_CLASSES, RNNCell, TrackableReference, size_shape
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import fill_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, unary_ops
from sluice.framework.ops.nn import nn_ops
from sluice.framework.ops.random import random_ops
from sluice.framework.variables import Variable


@export("nn.rnn_cell.MultiRNNCell", "contrib.rnn.MultiRNNCell")
class MultiRNNCell(RNNCell):
    """Cells stacked in depth: the output of cell i is the input of cell i + 1.

    Args:
      cells: the cells, bottom first.
      state_is_tuple: the state is a tuple of the cells' states; when False (deprecated in
        TF1), their concatenation along axis 1 (every cell's state must then be one size).

    Raises:
      ValueError: no cells, or tuple states with state_is_tuple=False.
    """

    def __init__(self, cells: Sequence[RNNCell], state_is_tuple: bool = True):
        super().__init__()
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        self._cells = list(cells)
        self._state_is_tuple = state_is_tuple
        if not state_is_tuple and any(nest.is_sequence(c.state_size) for c in self._cells):
            raise ValueError(
                "Some cells return tuples of states, but the flag state_is_tuple is not set. "
                f"State sizes are: {[c.state_size for c in self._cells]}"
            )

    def check_inputs(self, inputs: Any) -> None:
        self._cells[0].check_inputs(inputs)  # the bottom cell takes the inputs

    def get_config(self) -> dict:
        """The cells' configs, bottom first (as Keras' StackedRNNCells), and the state flag."""
        return {
            "cells": [serialize_cell(cell) for cell in self._cells],
            "state_is_tuple": self._state_is_tuple,
        }

    @classmethod
    def from_config(cls, config: dict) -> MultiRNNCell:
        config = dict(config)
        cells = [deserialize_cell(c, CELL_CLASSES) for c in config.pop("cells")]
        return cls(cells, **config)

    @property
    def state_size(self) -> Any:
        if self._state_is_tuple:
            return tuple(cell.state_size for cell in self._cells)
        return sum(cell.state_size for cell in self._cells)

    @property
    def output_size(self) -> Any:
        return self._cells[-1].output_size

    @property
    def variables(self) -> list[Variable]:
        return [v for cell in self._cells for v in cell.variables]

    @property
    def _checkpoint_dependencies(self) -> list[TrackableReference]:
        return [TrackableReference(f"cell-{i}", cell) for i, cell in enumerate(self._cells)]

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        if self._state_is_tuple:
            return tuple(cell.zero_state(batch_size, dtype) for cell in self._cells)
        return super().zero_state(batch_size, dtype)

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        if self._state_is_tuple and not (
            isinstance(state, (tuple, list)) and len(state) == len(self._cells)
        ):
            raise ValueError(
                f"Expected state to be a tuple of length {len(self._cells)}, but received: {state}"
            )
        cur_inp, new_states, pos = inputs, [], 0
        for i, cell in enumerate(self._cells):
            with vs.variable_scope(f"cell_{i}"):
                if self._state_is_tuple:
                    cur_state = state[i]
                else:
                    cur_state = state[:, pos : pos + cell.state_size]
                    pos += cell.state_size
                cur_inp, new_state = cell(cur_inp, cur_state)
                new_states.append(new_state)
        if self._state_is_tuple:
            return cur_inp, tuple(new_states)
        return cur_inp, join_ops.concat(new_states, 1)


class _Wrapper(RNNCell):
    """A cell that runs `cell` with something around it, in the caller's variable scope."""

    def __init__(self, cell: RNNCell, **kwargs: Any):
        super().__init__(**kwargs)
        if not isinstance(cell, RNNCell):
            raise TypeError(f"The wrapped cell must be an RNNCell, got {type(cell).__name__}.")
        self._cell = cell

    def get_config(self) -> dict:
        """The wrapped cell's config under "cell", and the wrapper's own arguments."""
        return {"cell": serialize_cell(self._cell)}

    @classmethod
    def from_config(cls, config: dict) -> RNNCell:
        config = dict(config)
        return cls(deserialize_cell(config.pop("cell"), CELL_CLASSES), **config)

    @property
    def wrapped_cell(self) -> RNNCell:
        return self._cell

    def check_inputs(self, inputs: Any) -> None:
        self._cell.check_inputs(inputs)

    @property
    def state_size(self) -> Any:
        return self._cell.state_size

    @property
    def output_size(self) -> Any:
        return self._cell.output_size

    @property
    def variables(self) -> list[Variable]:
        return self._cell.variables

    @property
    def _checkpoint_dependencies(self) -> list[TrackableReference]:
        return [TrackableReference("cell", self._cell)]

    @property
    def dtype(self) -> Any:
        return self._cell.dtype

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        return self._cell.zero_state(batch_size, dtype)

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        return self._call_wrapped(inputs, state, scope)

    def _call_wrapped(self, inputs: Any, state: Any, scope: Any) -> tuple[Any, Any]:
        raise NotImplementedError


# the config keys of a wrapper's function: (code or name, its kind, its module), TF1's spelling
_DROPOUT_FN_KEYS = ("dropout_fn", "dropout_fn_type", "dropout_fn_module")
_RESIDUAL_FN_KEYS = ("residual_fn", "residual_fn_type", "residule_fn_module")


def _is_dropped(keep_prob: Any) -> bool:
    return not isinstance(keep_prob, numbers.Real) or keep_prob < 1


def default_dropout_state_filter_visitor(substate: Any) -> Any:
    """Drops out every part of the state but an LSTM's memory `c` (TF1's default)."""
    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    return True


def _dropout_flags(visitor: Callable[[Any], Any], structure: Any) -> list[bool]:
    """One flag per leaf of `structure`: whether `visitor` lets dropout reach it (TF1's
    `get_traverse_shallow_structure`: True enters every child, a structure of bools chooses
    children one by one, False skips the whole subtree)."""
    verdict = visitor(structure)
    if not nest.is_sequence(structure):
        if not isinstance(verdict, bool):
            raise TypeError(
                f"The dropout state filter must return a bool for a leaf, got {verdict!r}."
            )
        return [verdict]
    children = _children(structure)
    if isinstance(verdict, bool):
        choices = [verdict] * len(children)
    else:
        choices = _children(verdict)
        if len(choices) != len(children) or not all(isinstance(c, bool) for c in choices):
            raise TypeError(
                f"The dropout state filter returned {verdict!r} for a state with "
                f"{len(children)} parts; expected that many bools."
            )
    flags: list[bool] = []
    for choice, child in zip(choices, children):
        if choice:
            flags.extend(_dropout_flags(visitor, child))
        else:
            flags.extend([False] * len(nest.flatten(child)))
    return flags


def _children(structure: Any) -> list:
    """The children of a tuple, list or dict, in flattening order (dicts by sorted key)."""
    if isinstance(structure, dict):
        return [structure[k] for k in sorted(structure)]
    return list(structure)


@export("nn.rnn_cell.DropoutWrapper", "contrib.rnn.DropoutWrapper")
class DropoutWrapper(_Wrapper):
    """Dropout on a cell's inputs, state and outputs, with a new mask at every step (or one
    mask for the whole sequence with `variational_recurrent`).

    Args:
      cell: the cell to wrap.
      input_keep_prob, output_keep_prob, state_keep_prob: keep probabilities (floats in (0, 1]
        or scalar Tensors); 1 means no dropout there.
      variational_recurrent: the same mask at every time step (Gal & Ghahramani); needs
        `dtype`, and `input_size` when the inputs are dropped.
      input_size: the depth(s) of the inputs, for `variational_recurrent`.
      dtype: the dtype of the masks, for `variational_recurrent`.
      seed: seeds every mask (each part of inputs, state and output gets its own seed derived
        from it, as in TF1).
      dropout_state_filter_visitor: decides which parts of the state are dropped (default:
        all but an LSTM's `c`).

    Raises:
      ValueError: a constant keep probability outside (0, 1], or a variational setup that
        lacks `dtype` or `input_size`.
    """

    def __init__(
        self,
        cell: RNNCell,
        input_keep_prob: Any = 1.0,
        output_keep_prob: Any = 1.0,
        state_keep_prob: Any = 1.0,
        variational_recurrent: bool = False,
        input_size: Any = None,
        dtype: Any = None,
        seed: int | None = None,
        dropout_state_filter_visitor: Callable | None = None,
    ):
        super().__init__(cell)
        if dropout_state_filter_visitor is not None and not callable(dropout_state_filter_visitor):
            raise TypeError("dropout_state_filter_visitor must be callable")
        self._input_size, self._variational_dtype = input_size, dtype
        probs = {
            "input_keep_prob": input_keep_prob,
            "state_keep_prob": state_keep_prob,
            "output_keep_prob": output_keep_prob,
        }
        for name, p in probs.items():
            if isinstance(p, numbers.Real) and not 0 < p <= 1:
                raise ValueError(f"Parameter {name} must be between 0 and 1: {p}")
        self._input_keep_prob = input_keep_prob
        self._state_keep_prob = state_keep_prob
        self._output_keep_prob = output_keep_prob
        self._seed = seed
        self._dropout_state_filter = (
            dropout_state_filter_visitor or default_dropout_state_filter_visitor
        )
        self._variational = variational_recurrent
        self._noise: dict[str, list[Tensor]] = {}
        if variational_recurrent:
            if dtype is None:
                raise ValueError("When variational_recurrent=True, dtype must be provided")
            sizes = {"state": cell.state_size, "output": cell.output_size}
            if _is_dropped(input_keep_prob):
                if input_size is None:
                    raise ValueError(
                        "When variational_recurrent=True and input_keep_prob < 1.0 or is "
                        "unknown, input_size must be provided"
                    )
                sizes["input"] = input_size
            for kind, size in sizes.items():
                self._noise[kind] = [
                    random_ops.random_uniform(
                        [1] + _size_dims(s), dtype=dtype, seed=self._gen_seed(kind, i)
                    )
                    for i, s in enumerate(nest.flatten(size))
                ]

    def get_config(self) -> dict:
        """The arguments; a custom state filter as TF1 writes it (`dropout_fn`: a function's
        code, `dropout_fn_type`, `dropout_fn_module`), read back by `from_config`."""
        config = {
            **super().get_config(),
            "input_keep_prob": self._input_keep_prob,
            "output_keep_prob": self._output_keep_prob,
            "state_keep_prob": self._state_keep_prob,
            "variational_recurrent": self._variational,
            "input_size": self._input_size,
            "dtype": None if self._variational_dtype is None else str(self._variational_dtype),
            "seed": self._seed,
        }
        if self._dropout_state_filter is not default_dropout_state_filter_visitor:
            config.update(function_config(self._dropout_state_filter, *_DROPOUT_FN_KEYS))
        return config

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> RNNCell:
        config = dict(config)
        if _DROPOUT_FN_KEYS[0] in config:
            fn = function_from_config(config, custom_objects, *_DROPOUT_FN_KEYS)
            del config[_DROPOUT_FN_KEYS[0]]
            config["dropout_state_filter_visitor"] = fn
        return super().from_config(config)

    def _gen_seed(self, salt_prefix: str, index: int) -> int | None:
        """TF1's per-part seed: the first 31 bits of md5(str(seed) + '<prefix>_<index>')."""
        if self._seed is None:
            return None
        digest = hashlib.md5(f"{self._seed}{salt_prefix}_{index}".encode()).hexdigest()
        return int(digest[:8], 16) & 0x7FFFFFFF

    def _dropout(self, values: Any, kind: str, keep_prob: Any, flags: list[bool]) -> Any:
        flat = nest.flatten(values)
        out = []
        for i, (v, drop) in enumerate(zip(flat, flags)):
            if not drop:
                out.append(v)
                continue
            keep = _as_dtype_of(keep_prob, v)
            if self._variational:
                mask = unary_ops.floor(math_ops.add(keep, self._noise[kind][i]))
                dropped = math_ops.multiply(math_ops.divide(v, keep), mask)
                dropped.set_shape(v.shape)
                out.append(dropped)
            else:
                out.append(nn_ops.dropout(v, keep_prob=keep, seed=self._gen_seed(kind, i)))
        return nest.pack_sequence_as(values, out)

    def _call_wrapped(self, inputs: Any, state: Any, scope: Any) -> tuple[Any, Any]:
        if _is_dropped(self._input_keep_prob):
            flags = [True] * len(nest.flatten(inputs))
            inputs = self._dropout(inputs, "input", self._input_keep_prob, flags)
        output, new_state = self._cell(inputs, state, scope=scope)
        if _is_dropped(self._state_keep_prob):
            flags = _dropout_flags(self._dropout_state_filter, new_state)
            new_state = self._dropout(new_state, "state", self._state_keep_prob, flags)
        if _is_dropped(self._output_keep_prob):
            flags = [True] * len(nest.flatten(output))
            output = self._dropout(output, "output", self._output_keep_prob, flags)
        return output, new_state


def _as_dtype_of(keep_prob: Any, value: Tensor) -> Any:
    """A keep probability Tensor cast to the dtype of the values it drops (numbers stay)."""
    if isinstance(keep_prob, numbers.Real):
        return keep_prob
    keep_prob = core_ops.convert_to_tensor(keep_prob)
    return keep_prob if keep_prob.dtype == value.dtype else fill_ops.cast(keep_prob, value.dtype)


def _size_dims(size: Any) -> list[int]:
    return size_shape(size).as_list()


@export("nn.rnn_cell.ResidualWrapper", "contrib.rnn.ResidualWrapper")
class ResidualWrapper(_Wrapper):
    """Adds the cell's inputs to its outputs: output = residual_fn(inputs, cell output).

    Args:
      cell: the cell to wrap; its output must have the inputs' structure and shapes unless
        `residual_fn` says how to combine them.
      residual_fn: `fn(inputs, outputs) -> outputs` (default: element-wise sum).
    """

    def __init__(self, cell: RNNCell, residual_fn: Callable | None = None):
        super().__init__(cell)
        self._residual_fn = residual_fn

    def get_config(self) -> dict:
        """The wrapped cell; a `residual_fn` as TF1 writes it (`residual_fn`: a function's
        code, `residual_fn_type`, and TF1's key `residule_fn_module`)."""
        config = super().get_config()
        if self._residual_fn is not None:
            config.update(function_config(self._residual_fn, *_RESIDUAL_FN_KEYS))
        return config

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> RNNCell:
        config = dict(config)
        if _RESIDUAL_FN_KEYS[0] in config:
            config["residual_fn"] = function_from_config(config, custom_objects, *_RESIDUAL_FN_KEYS)
        return super().from_config(config)

    def _call_wrapped(self, inputs: Any, state: Any, scope: Any) -> tuple[Any, Any]:
        outputs, new_state = self._cell(inputs, state, scope=scope)
        if self._residual_fn is not None:
            return self._residual_fn(inputs, outputs), new_state
        nest.assert_same_structure(inputs, outputs, "inputs and outputs of ResidualWrapper")

        def add(x: Tensor, y: Tensor) -> Tensor:
            if not x.shape.is_compatible_with(y.shape):
                raise ValueError(
                    f"ResidualWrapper: the inputs have shape {x.shape} but the cell's outputs "
                    f"{y.shape}; they must match to be added."
                )
            return math_ops.add(x, y)

        return nest.map_structure(add, inputs, outputs), new_state


@export("nn.rnn_cell.DeviceWrapper", "contrib.rnn.DeviceWrapper")
class DeviceWrapper(_Wrapper):
    """Runs the cell on one device (TF1's `tf.nn.rnn_cell.DeviceWrapper`): the cell's ops, its
    weights included when they are made on the first call, are built in `device`'s scope. A
    `MultiRNNCell` of cells each wrapped on its own device is the model-parallel layout of the
    control-flow paper's evaluation: in a `dynamic_rnn`, layer k+1 of step t runs beside layer k
    of step t+1.

    Args:
      cell: the cell to wrap.
      device: a device name or `DeviceSpec` ("/gpu:1", "/device:CPU:2").

    >>> cell = DeviceWrapper(sl.nn.rnn_cell.BasicRNNCell(4), "/cpu:0")
    >>> out, _ = cell(sl.zeros([2, 3]), cell.zero_state(2, sl.float32))
    >>> out.op.device
    '/device:CPU:0'
    """

    def __init__(self, cell: RNNCell, device: Any):
        super().__init__(cell)
        self._device = device

    def get_config(self) -> dict:
        return {**super().get_config(), "device": str(self._device)}

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        with graph_lib.device(self._device):
            return self._cell.zero_state(batch_size, dtype)

    def _call_wrapped(self, inputs: Any, state: Any, scope: Any) -> tuple[Any, Any]:
        with graph_lib.device(self._device):
            return self._cell(inputs, state, scope=scope)
