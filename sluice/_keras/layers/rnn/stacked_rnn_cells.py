"""`StackedRNNCells`: several RNN cells run as one, each on the previous one's output (what
`RNN([cell_1, cell_2])` makes); all of them step inside the RNN's one while loop."""

from __future__ import annotations

import inspect
from typing import Any

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice._keras.layers.rnn import rnn_loop
from sluice._keras.layers.rnn.rnn_cells import output_size_of
from sluice._keras.saving import serialization
from sluice._tf1.cells import nest, rnn_cell


def check_cell(cell: Any, what: str = "cell") -> None:
    """Raises unless `cell` is an RNN cell in Keras's sense: `call` and `state_size`."""
    if not callable(getattr(cell, "call", None)):
        raise ValueError(
            f"Argument `{what}` should have a `call(inputs, states)` method returning "
            f"(output, new_states). Received: {what}={cell!r}"
        )
    if getattr(cell, "state_size", None) is None:
        raise ValueError(
            f"The RNN {what} should have a `state_size` attribute (single integer or list of "
            f"integers, one integer per RNN state). Received: {what}={cell!r}"
        )


def call_cell(cell: Any, inputs: Any, states: Any, training: bool) -> tuple[Any, Any]:
    """`cell(inputs, states)` as Keras calls a cell: through `__call__` for a Layer, with
    `training=` when its `call` takes it."""
    kwargs = {}
    if isinstance(cell, Layer):
        if "training" in cell._call_arguments():
            kwargs["training"] = training
        return cell(inputs, states, **kwargs)
    if rnn_cell.is_tf1_cell(cell) and isinstance(states, (list, tuple)) and len(states) == 1:
        states = states[0]  # a TF1 cell of one state takes it alone, as in TF1's Keras RNN
    return cell.call(inputs, states)


def initial_state_of(cell: Any, batch_size: Any, dtype: Any) -> list:
    """A cell's initial states as a list (nested for a stack): `cell.get_initial_state`
    when it has one, else zeros [batch, *shape] for each state size, nested as the state
    sizes are (Keras's rule, for sizes that are ints or TensorShapes)."""
    make = getattr(cell, "get_initial_state", None)
    if make is not None:
        # a TF1 cell's takes the dtype too, as TF1's Keras RNN passes it
        takes_dtype = "dtype" in inspect.signature(make).parameters
        states = make(batch_size=batch_size, **({"dtype": dtype} if takes_dtype else {}))
        return list(states) if isinstance(states, (list, tuple)) else [states]
    sizes = cell.state_size
    sizes = list(sizes) if isinstance(sizes, (list, tuple)) else [sizes]
    return [
        nest.map_structure(lambda n: rnn_loop.zeros(batch_size, rnn_loop.state_shape(n), dtype), n)
        for n in sizes
    ]


@export("layers.StackedRNNCells")
class StackedRNNCells(Layer):
    """A stack of RNN cells that behaves as one cell: each cell steps on the output of the one
    before it; the states are the list of the cells' states.

    Args:
      cells: the cells, first to last (Layers with `call(inputs, states)` and `state_size`).

    >>> cells = [sl.layers.LSTMCell(8), sl.layers.GRUCell(4)]
    >>> y = sl.layers.RNN(StackedRNNCells(cells))(sl.Input((5, 3)))
    >>> y.shape
    TensorShape([None, 4])
    """

    def __init__(self, cells: list, **kwargs: Any):
        super().__init__(**kwargs)
        if not isinstance(cells, (list, tuple)) or not cells:
            raise ValueError(f"StackedRNNCells needs a non-empty list of cells, got {cells!r}.")
        for cell in cells:
            check_cell(cell, "cells")
        self.cells = list(cells)

    @property
    def state_size(self) -> list:
        return [cell.state_size for cell in self.cells]

    @property
    def output_size(self) -> int:
        return output_size_of(self.cells[-1])

    def get_initial_state(self, batch_size: Any = None) -> list:
        """Each cell's initial state: a Tensor for a one-state cell, else a list."""
        states = []
        for cell in self.cells:
            cell_states = initial_state_of(cell, batch_size, self._dtype)
            one = not isinstance(cell.state_size, (list, tuple)) and len(cell_states) == 1
            states.append(cell_states[0] if one else cell_states)
        return states

    def build(self, input_shape: tuple) -> None:
        for cell in self.cells:
            if isinstance(cell, Layer):
                self._build_sublayer(cell, tuple(input_shape))
            input_shape = (input_shape[0], output_size_of(cell))

    def call(self, inputs: Any, states: Any, training: bool = False) -> tuple[Any, Any]:
        if len(states) != len(self.cells):
            raise ValueError(
                f"StackedRNNCells {self.name!r} has {len(self.cells)} cells; got states for "
                f"{len(states)}."
            )
        new_states = []
        for cell, cell_states in zip(self.cells, states):
            as_list = isinstance(cell_states, (list, tuple))
            inputs, cell_new = call_cell(
                cell, inputs, list(cell_states) if as_list else [cell_states], training
            )
            cell_new = nest.flatten(cell_new)
            new_states.append(cell_new if as_list or len(cell_new) != 1 else cell_new[0])
        return inputs, new_states

    def get_config(self) -> dict:
        cells = [serialization.serialize(cell) for cell in self.cells]
        return {**super().get_config(), "cells": cells}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> StackedRNNCells:
        config = dict(config)
        cells = [serialization.deserialize(c, custom_objects) for c in config.pop("cells")]
        return cls(cells, **config)
