"""`RNN`: any Keras cell, or a list of cells, run over time (`SimpleRNN`, `LSTM` and `GRU`, in
`recurrent_layers`, are RNNs of the built-in cells).

Each call builds ONE while loop, whatever the sequence length, with the cell's call as its body
(a user-written cell too); see `rnn_loop` for the semantics of masks, `go_backwards`, `unroll`
and `zero_output_for_mask`, which are Keras 3's. In short, for inputs [batch, time, features]:

    states = initial_state (given in the call) or the stateful layer's states or zeros
    last_output, outputs, states = loop of cell(x_t, states) over time (masked steps skipped)
    return (outputs if return_sequences else last_output) (+ the final states if return_state)

A cell, in Keras's sense, is any Layer with `call(inputs, states)` (optionally `training=`)
returning `(output, new_states)`, a `state_size` (an int, or a list of ints, one per state),
optionally an `output_size` (else the first state size) and `get_initial_state(batch_size)`.
It is built with `build((batch, features))` before the loop, so its weights live outside it.

Nested cells, as the Keras RNN guide's `NestedCell` ("RNNs with list/dict inputs, or nested
inputs"): the inputs may be a structure (tuple, list, dict) of sequences [batch, time, ...],
which the cell gets step by step in that structure (and is built with the structure of their
step shapes); a state size may be a TensorShape (a state [batch, *shape]) and sizes may nest;
`output_size` may be a structure of ints and TensorShapes, giving outputs in that structure.
Keras 3 itself refuses that example (keras-team/keras-io#2142); sluice runs it as the guide
describes, and a cell of int sizes exactly as Keras 3 does.
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice._keras.layers.rnn import rnn_loop, rnn_states
from sluice._keras.layers.rnn.rnn_cells import CELLS, sequence_dropout_masks
from sluice._keras.layers.rnn.stacked_rnn_cells import (
    StackedRNNCells,
    call_cell,
    check_cell,
    initial_state_of,
)
from sluice._keras.saving import serialization
from sluice._tf1.cells import nest, rnn_cell
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops


def _is_shape(x: Any) -> bool:
    """Whether `x` is one shape tuple ((None, 5, 3)), not a structure of them."""
    return isinstance(x, (tuple, list)) and all(d is None or isinstance(d, int) for d in x)


def _map_shapes(fn: Any, shapes: Any) -> Any:
    """`fn` applied to each shape tuple of a structure of them, kept in its structure."""
    if _is_shape(shapes):
        return fn(tuple(shapes))
    if isinstance(shapes, dict):
        return {k: _map_shapes(fn, v) for k, v in shapes.items()}
    return type(shapes)(_map_shapes(fn, v) for v in shapes)


def _flat_shapes(shapes: Any) -> list:
    if _is_shape(shapes):
        return [tuple(shapes)]
    values = shapes.values() if isinstance(shapes, dict) else shapes
    return [s for v in values for s in _flat_shapes(v)]


def output_structure(cell: Any) -> Any:
    """The cell's `output_size` (an int, a TensorShape, or a structure of them), else its first
    state size (Keras's rule)."""
    size = getattr(cell, "output_size", None)
    if size is None:
        return nest.flatten(cell.state_size)[0]
    return size


def _first_mask(mask: Any) -> Any:
    """One [batch, time] mask: the first given in a structure of masks (one per input)."""
    if mask is None or isinstance(mask, Tensor):
        return mask
    return next((m for m in nest.flatten(mask) if m is not None), None)


def deserialize_cell(config: dict, custom_objects: dict | None = None) -> Any:
    """A cell from its config: a built-in one by class name, any other (a registered or
    `custom_objects` class; `custom_objects` first, as Keras looks names up, so TF1's LSTMCell
    given there is not Keras's) through `serialization.deserialize`."""
    name = config.get("class_name") if isinstance(config, dict) else None
    custom = name in (custom_objects or {})
    if name in CELLS and not custom and config.get("registered_name") in (None, name):
        return CELLS[name].from_config(dict(config["config"]))
    return serialization.deserialize(config, custom_objects)


def copy_cell(cell: Any, dtype: Any = None) -> Any:
    """A fresh cell of the same class and configuration (no weights; a stack cell by cell),
    in `dtype` when given."""
    config = cell.get_config()
    if dtype is not None:
        config["dtype"] = dtype
    if isinstance(cell, StackedRNNCells):
        config.pop("cells")
        return StackedRNNCells([copy_cell(c, dtype) for c in cell.cells], **config)
    return type(cell).from_config(config)


def _as_tensor(value: Any, dtype: Any) -> Tensor:
    """`value` as a Tensor of `dtype` (a float Tensor of another dtype is cast, as Keras does
    with initial states)."""
    if isinstance(value, Tensor) and value.dtype != dtype:
        return fill_ops.cast(value, dtype)
    return core_ops.convert_to_tensor(value, dtype=dtype)


def _with_dtype(cell_config: dict, dtype: Any) -> dict:
    """A cell's config with the RNN's dtype (the cells of a stack too): a config read back
    with another dtype (`from_config({**config, "dtype": "float64"})`) changes the whole layer."""
    if dtype is None or not isinstance(cell_config.get("config"), dict):
        return cell_config
    inner = {**cell_config["config"], "dtype": dtype}
    if isinstance(inner.get("cells"), list):
        inner["cells"] = [
            _with_dtype(c, dtype) if isinstance(c, dict) else c for c in inner["cells"]
        ]
    return {**cell_config, "config": inner}


@export("layers.RNN")
class RNN(Layer):
    """Runs a cell over the time axis (see the module docstring).

    Args:
      cell: a cell (SimpleRNNCell, LSTMCell, GRUCell, or your own: see the module docstring),
        or a list of cells (run as a `StackedRNNCells`).
      return_sequences: return every step's output [batch, time, units], not only the last.
      return_state: also return the final states (a list: [output, *states]).
      go_backwards: process the sequence in reverse (and return the outputs in that order).
      stateful: keep the final states of each batch as the initial states of the next (needs
        a fixed batch size; see `rnn_states`); `reset_states()` zeroes them.
      unroll: write the loop out step by step (needs a known number of time steps).
      zero_output_for_mask: masked steps output zeros instead of the previous output.

    Call arguments: `sequences` [batch, time, ...] (or a tuple, list or dict of them, which the
    cell gets in that structure), `initial_state` (a list of tensors, one per state), `mask`
    [batch, time] (taken from the inputs' Keras mask when not given), `training`.

    >>> class MinimalRNNCell(sl.layers.Layer):
    ...     def __init__(self, units, **kwargs):
    ...         super().__init__(**kwargs)
    ...         self.units, self.state_size = units, units
    ...     def build(self, input_shape):
    ...         self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")
    ...         self.recurrent_kernel = self.add_weight(shape=(self.units, self.units),
    ...                                                 name="recurrent_kernel")
    ...     def call(self, inputs, states):
    ...         output = sl.ops.matmul(inputs, self.kernel) + sl.ops.matmul(
    ...             states[0], self.recurrent_kernel)
    ...         return output, [output]
    >>> y = RNN(MinimalRNNCell(32))(sl.Input((None, 5)))
    >>> y.shape
    TensorShape([None, 32])
    >>> y = RNN([MinimalRNNCell(32), MinimalRNNCell(64)], return_sequences=True)(
    ...     sl.Input((10, 5)))
    >>> y.shape
    TensorShape([None, 10, 64])
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
            cell = deserialize_cell(cell)
        if isinstance(cell, (list, tuple)):  # in the cells' dtype, which the states take
            kinds = {c.dtype for c in cell if isinstance(c, Layer)}
            dtype = kinds.pop() if len(kinds) == 1 else kwargs.get("dtype")
            cell = StackedRNNCells(cell, dtype=dtype)
        check_cell(cell)
        size = cell.state_size
        if not isinstance(size, (int, list, tuple, TensorShape)):
            raise ValueError(
                "state_size must be an integer, or a list/tuple of integers (one for each state "
                f"tensor); the cell {cell!r} has state_size={size!r}."
            )
        for leaf in nest.flatten(size) + nest.flatten(output_structure(cell)):
            rnn_loop.state_shape(leaf)  # each an int or a known TensorShape
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences = return_sequences
        self.return_state = return_state
        self.go_backwards = go_backwards
        self.stateful = stateful
        self.unroll = unroll
        self.zero_output_for_mask = zero_output_for_mask
        self.supports_masking = True
        self._state_variables: Any = None

    @property
    def units(self) -> int:
        return self.cell.units

    @property
    def state_size(self) -> list:
        """The cell's state sizes as a list (Keras's `RNN.state_size`)."""
        size = self.cell.state_size
        return list(size) if isinstance(size, (list, tuple)) else [size]

    def _flat_state_shapes(self) -> list[TensorShape]:
        """Each state's shape without the batch, in the order of the flat states."""
        return [rnn_loop.state_shape(n) for n in nest.flatten(self.state_size)]

    @property
    def states(self) -> Any:
        """The state Variables of a stateful layer (after its first call), else None."""
        return self._state_variables

    def build(self, sequences_shape: Any) -> None:
        """Builds the cell for one step's inputs: [batch, features] for sequences [batch, time,
        features] (a structure of step shapes for a structure of sequences)."""
        for shape in _flat_shapes(sequences_shape):
            if len(shape) < 3:
                raise ValueError(
                    f"{type(self).__name__} {self.name!r} expects inputs [batch, time, "
                    f"features], got shape {sequences_shape}."
                )
        if isinstance(self.cell, Layer):
            step = _map_shapes(lambda s: (s[0],) + s[2:], sequences_shape)
            self._build_sublayer(self.cell, step)
        elif rnn_cell.is_tf1_cell(self.cell):
            step = _flat_shapes(sequences_shape)[0]
            self._build_tf1_cell((step[0],) + step[2:])
        if self.stateful and self._state_variables is None:
            self._state_variables = rnn_states.create(self, _flat_shapes(sequences_shape)[0][0])

    def _build_tf1_cell(self, step_shape: tuple) -> None:
        """Builds a TF1 cell (`sl.nn.rnn_cell`) with its weights made as this layer's, named
        `<layer>/<cell name>/<weight>` (TF1's cells are Keras layers: TF1's Keras RNN builds
        them so), so the model saves, restores and trains them as any weights; the cells of a
        MultiRNNCell or a wrapper too (`rnn_cell.build_with_weights`)."""

        def make_weight(name, shape, dtype, initializer, trainable):
            return self.add_weight(
                shape=shape,
                initializer=initializer if initializer is not None else "glorot_uniform",
                dtype=dtype,
                trainable=trainable,
                name=name,
            )

        rnn_cell.build_with_weights(self.cell, step_shape, self._dtype, make_weight)

    def get_initial_state(self, batch_size: Any) -> list:
        """The initial states for `batch_size` rows: the cell's `get_initial_state`, else
        zeros, as a list with one entry per state (Keras's rule)."""
        return initial_state_of(self.cell, batch_size, self._state_dtype())

    def _state_dtype(self) -> Any:
        """The states' dtype: the cell's (Keras's `cell.compute_dtype`)."""
        return getattr(self.cell, "_dtype", None) or self._dtype

    def reset_states(self, states: Any = None) -> None:
        """Zeroes the states of a stateful layer, or sets them to `states` (arrays, one per
        state); does nothing for a layer that is not stateful or not built (as Keras 3)."""
        if self._state_variables is not None:
            rnn_states.reset(self, self._state_variables, states)

    def reset_state(self, states: Any = None) -> None:
        self.reset_states(states)

    def _initial_state(self, sequences: Tensor, initial_state: Any) -> Any:
        """The initial states in the cell's structure, checked against its state sizes
        (`sequences`: the first sequence, for the batch size)."""
        sizes = self._flat_state_shapes()
        if initial_state is None:
            if self._state_variables is not None:
                return rnn_states.read(self._state_variables)
            return self.get_initial_state(fill_ops.shape(sequences)[0])
        given = initial_state if isinstance(initial_state, (list, tuple)) else [initial_state]
        flat = nest.flatten(list(given))
        if len(flat) != len(sizes):
            raise ValueError(
                f"{type(self).__name__} {self.name!r} has {len(sizes)} states (state_size "
                f"{self.cell.state_size}); initial_state has {len(flat)}."
            )
        return nest.pack_sequence_as(self.state_size, flat)

    def call(
        self,
        sequences: Any,
        initial_state: Any = None,
        mask: Any = None,
        training: bool = False,
    ) -> Any:
        first = nest.flatten(sequences)[0]  # for the batch and time sizes
        if self.unroll and first.shape[1] is None:
            raise ValueError(
                "Cannot unroll a RNN if the time dimension is undefined "
                f"({type(self).__name__} {self.name!r}, inputs of shape {first.shape}).\n"
                "- If using a Sequential model, specify the time dimension by passing an "
                "`Input()` as your first layer.\n"
                "- If using the functional API, specify the time dimension by passing a `shape` "
                "or `batch_shape` argument to your `Input()`."
            )
        if self._state_variables is not None:
            batch = nest.flatten(self._state_variables)[0].shape[0]
            if first.shape[0] != batch:
                raise ValueError(
                    f"{type(self).__name__} {self.name!r} is stateful with a batch size of "
                    f"{batch}; it was called on inputs of shape {first.shape}. Every batch "
                    "of a stateful RNN must have that size."
                )
        dtype = self._state_dtype()
        structure = self._initial_state(first, initial_state)
        flat = [_as_tensor(s, dtype) for s in nest.flatten(structure)]
        for s, shape in zip(flat, self._flat_state_shapes()):
            if s.shape.rank is not None and (
                s.shape.rank != shape.rank + 1
                or not TensorShape(s.shape.dims[1:]).is_compatible_with(shape)
            ):
                expected = ", ".join(["batch"] + [str(d) for d in shape.as_list()])
                raise ValueError(
                    f"{type(self).__name__} {self.name!r}: an initial state has shape {s.shape}; "
                    f"expected [{expected}] (state_size {self.cell.state_size})."
                )
            s.set_shape([first.shape[0]] + shape.as_list())

        returned = []  # the structure of the cell's first output, which the results take

        def step(x_t: Any, states: list) -> tuple[Any, list]:
            output, new_states = call_cell(
                self.cell, x_t, nest.pack_sequence_as(structure, states), training
            )
            returned.append(output)
            return output, nest.flatten(new_states)

        batch = fill_ops.shape(first)[0]
        with sequence_dropout_masks(self.cell, batch, first.shape[-1], training):
            last_output, outputs, final = rnn_loop.run(
                step, sequences, flat, output_structure(self.cell), mask=_first_mask(mask),
                go_backwards=self.go_backwards, unroll=self.unroll,
                zero_output_for_mask=self.zero_output_for_mask,
            )  # fmt: skip
        if nest.is_sequence(returned[0]):  # a list or a tuple, as the cell returned it
            last_output, outputs = (
                nest.pack_sequence_as(returned[0], nest.flatten(t)) for t in (last_output, outputs)
            )
        states = final
        if dtype != self._dtype:  # a cell of another dtype: outputs in the layer's, as Keras
            last_output, outputs = (
                nest.map_structure(lambda t: fill_ops.cast(t, self._dtype), x)
                for x in (last_output, outputs)
            )
            states = [fill_ops.cast(t, self._dtype) for t in final]
        result = outputs if self.return_sequences else last_output
        if self.return_state:
            result = [result] + list(nest.pack_sequence_as(structure, states))
        if self._state_variables is not None:
            result = rnn_states.write_back(self._state_variables, final, result)
        return result

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        output_mask = _first_mask(mask) if self.return_sequences else None
        outputs = nest.map_structure(lambda _: output_mask, output_structure(self.cell))
        if self.return_state:
            return [outputs] + [nest.map_structure(lambda _: None, s) for s in self.state_size]
        return outputs

    def compute_output_shape(self, sequences_shape: Any) -> Any:
        batch, time = _flat_shapes(sequences_shape)[0][:2]
        lead = (batch, time) if self.return_sequences else (batch,)
        out = nest.map_structure(
            lambda n: lead + tuple(rnn_loop.state_shape(n).as_list()), output_structure(self.cell)
        )
        if not self.return_state:
            return out
        states = [
            nest.map_structure(lambda n: (batch,) + tuple(rnn_loop.state_shape(n).as_list()), s)
            for s in self.state_size
        ]
        return [out] + states

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
        cell = serialization.serialize(self.cell)
        return {**super().get_config(), "cell": cell, **self._rnn_config()}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> RNN:
        config = dict(config)
        if isinstance(config.get("cell"), dict):
            cell = _with_dtype(config["cell"], config.get("dtype"))
            config["cell"] = deserialize_cell(cell, custom_objects)
        return cls(**config)

    def unbuilt_copy(self, **overrides: Any) -> RNN:
        """A new, unbuilt layer of the same class and configuration with a fresh copy of the
        cell (what Bidirectional runs), `overrides` replacing arguments."""
        config = {**self.get_config(), **overrides}
        if "cell" in config:
            config["cell"] = copy_cell(self.cell, overrides.get("dtype"))
        return type(self).from_config(config)
