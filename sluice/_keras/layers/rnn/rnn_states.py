"""The states a stateful RNN keeps between calls (`stateful=True`), as Keras 3 keeps them.

    layer = LSTM(8, stateful=True)      # needs a fixed batch size: sl.Input((T, F), batch_size=B)
    y = layer(x)                        # build: Variables `<layer path>/rnn_state` [B, size],
                                        #   initialised like `get_initial_state(B)`, each a
                                        #   state cell (shared by every graph the layer is
                                        #   called in, as its weights are)
                                        # call: the loop starts from their values, and every run
                                        #   that computes y (fit, evaluate, predict) writes the
                                        #   final states back into them
    layer.states                        # those Variables; layer.reset_states() zeroes them

They are neither trainable nor weights: like Keras 3, `weights`, `get_weights` and the weight
files leave them out, so saved weights are the same with and without `stateful`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._keras.layers import runtime
from sluice._tf1.cells import nest
from sluice.framework import state_cells
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.core import core_ops
from sluice.framework.variables import Variable, init_scope


def create(layer: Any, batch_size: Any) -> Any:
    """The state Variables of `layer` (an RNN), shaped like its initial states.

    Raises:
      ValueError: the batch size is not fixed.
    """
    if not isinstance(batch_size, int):
        raise ValueError(
            f"When using `stateful=True` in a RNN ({type(layer).__name__} {layer.name!r}), the "
            f"batch size must be static. Found dynamic batch size: {batch_size}. Fix it with "
            "sl.Input(shape, batch_size=...) (or batch_shape=..., or the first layer's "
            "batch_input_shape=...)."
        )
    g = layer.graph
    with g.as_default(), init_scope(g), g.name_scope(None):
        with g.name_scope(f"{layer.path}/initial_state"):
            initial = layer.get_initial_state(batch_size)
        variables = nest.map_structure(
            lambda value: Variable(value, trainable=False, name=f"{layer.path}/rnn_state"),
            initial,
        )
    for i, v in enumerate(nest.flatten(variables)):  # state cells: usable from any graph

        def initial_value(i: int = i) -> Any:  # built in the graph that first needs it
            return nest.flatten(layer.get_initial_state(batch_size))[i]

        path = v.op.get_attr("shared_name")
        state_cells.attach(v, state_cells.StateCell(path, v.dtype, v.shape, initial_value, False))
    return variables


def read(variables: Any) -> Any:
    """The current values of the state Variables (graph reads), in their structure."""
    return nest.map_structure(lambda v: v.read_value(), variables)  # a read op in any graph


def write_back(variables: Any, final_states: list, outputs: Any) -> Any:
    """`outputs`, computed only after the final states are assigned to `variables`: whatever
    fetches an output of the layer also updates its states."""
    flat = nest.flatten(variables)
    assigns = [v.assign(s, read_value=False) for v, s in zip(flat, final_states)]
    g = assigns[0].graph  # the graph being built (the states' mirrors there)
    with g.control_dependencies(assigns):
        return nest.map_structure(
            lambda t: core_ops.identity(t) if isinstance(t, Tensor) else t, outputs
        )


def reset(layer: Any, variables: Any, values: Any = None) -> None:
    """Sets the state Variables to zeros, or to `values` (arrays in the states' structure or
    a flat list), without adding ops to the graph.

    Raises:
      ValueError: `values` of the wrong count or shapes.
    """
    flat = nest.flatten(variables)
    if values is None:
        arrays = [np.zeros(v.shape.as_list(), v.dtype.name) for v in flat]
    else:
        arrays = (
            [np.asarray(a) for a in nest.flatten(values)]
            if isinstance(values, (list, tuple))
            else [np.asarray(values)]
        )
        if len(arrays) != len(flat):
            raise ValueError(
                f"Layer {layer.name!r} expects {len(flat)} states, but it received "
                f"{len(arrays)} state values."
            )
        for v, a in zip(flat, arrays):
            if a.dtype.kind not in "biuf":
                raise ValueError(
                    f"Layer {layer.name!r}: state {v.op.name} is {v.dtype.name}, the value given "
                    f"holds {a.dtype} values."
                )
            if tuple(a.shape) != tuple(v.shape.as_list()):
                raise ValueError(
                    f"Layer {layer.name!r}: state {v.op.name} has shape "
                    f"{tuple(v.shape.as_list())}, the value given has shape {tuple(a.shape)}."
                )
    runtime.runtime_for(layer.graph).write(flat, arrays)
