"""`static_rnn`, `static_bidirectional_rnn`, `static_state_saving_rnn`: a cell unrolled in
Python, one step per input.

Semantics, as plain Python over a list of [batch, depth] inputs (`sequence_length` given)::

    state, outputs = initial_state, []
    for t, x in enumerate(inputs):
        output, new_state = cell(x, state)           # the same weights at every step
        done = t >= sequence_length                  # [batch]
        outputs.append(where(done, 0, output))
        state = where(done, state, new_state)        # finished rows keep their last state
    return outputs, state

These are the values `dynamic_rnn` gives on the same cell under the same scope ("rnn"), so
weights built by one are found by the other. The graph grows with the number of steps: TF1 code
that builds its model this way runs unchanged; new code should prefer `dynamic_rnn`.
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._tf1.cells import nest
from sluice._tf1.cells import scopes as vs
from sluice._tf1.cells.dynamic_rnn import (
    _check_cell,
    _copy_through,
    _reverse_sequence,
    _sequence_length,
    default_state,
)
from sluice._tf1.cells.rnn_cell import size_shape, to_tensors
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import fill_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops


def _check_inputs(inputs: Any) -> list[Any]:
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(
            f"static_rnn: inputs must be a list of [batch, depth] Tensors (one per step), got "
            f"{type(inputs).__name__}."
        )
    if not inputs:
        raise ValueError("static_rnn: inputs must not be empty (no time steps to run).")
    return [nest.map_structure(core_ops.convert_to_tensor, x) for x in inputs]


def _batch_size(inputs: list[Any]) -> Any:
    """The batch size of the steps' inputs (each a Tensor or a structure): static when any
    input knows it, else a Tensor. Every input must know the sizes after its batch, as TF1's."""
    flat = [x for step in inputs for x in nest.flatten(step)]
    for x in flat:
        if x.shape.rank is not None and x.shape.rank < 1:
            raise ValueError(
                f"static_rnn: each input must have rank at least 2 ([batch, depth]); input "
                f"{x.name} has shape {x.shape}."
            )
        if x.shape.rank is not None and not TensorShape(x.shape.dims[1:]).is_fully_defined():
            raise ValueError(
                f"static_rnn: the depth of input {x.name} (shape {x.shape}: every dimension "
                "after the batch) must be known."
            )
    for x in flat:
        if x.shape.rank is not None and x.shape[0] is not None:
            return int(x.shape[0])
    return fill_ops.shape(flat[0])[0]


def _zero_output(cell: Any, batch_size: Any, dtype: Any) -> list[Tensor]:
    zeros = []
    for size in nest.flatten(cell.output_size):
        dims = size_shape(size).as_list()
        z = fill_ops.zeros([batch_size] + dims, dtype=dtype)
        z.set_shape([batch_size if isinstance(batch_size, int) else None] + dims)
        zeros.append(z)
    return zeros


@export("nn.static_rnn", "contrib.rnn.static_rnn")
def static_rnn(
    cell: Any,
    inputs: Any,
    initial_state: Any = None,
    dtype: Any = None,
    sequence_length: Any = None,
    scope: Any = None,
) -> tuple[list[Any], Any]:
    """Runs `cell` once per element of `inputs`, reusing its weights (TF1 `tf.nn.static_rnn`).

    Args:
      cell: an RNNCell.
      inputs: a non-empty list (one per time step) of [batch, depth] Tensors, or of nested
        structures of such Tensors.
      initial_state: the initial state (default: `cell.zero_state`, which needs `dtype`).
      dtype: the dtype of the state and outputs when `initial_state` is not given.
      sequence_length: optional int vector [batch]: steps at and after a row's length emit
        zeros and keep that row's state.
      scope: the variable scope (default "rnn"): weights are `<scope>/<cell name>/kernel`, ...

    Returns:
      (outputs, final_state): a list with one output per step (a structure like
      `cell.output_size`), and the state after each row's last step.

    Raises:
      TypeError: `cell` is not a cell, or `inputs` is not a list.
      ValueError: empty inputs, inputs of rank < 2 or unknown depth, a `sequence_length` that
        is not a vector of the batch size, or neither `initial_state` nor `dtype`.

    >>> cell = sl.nn.rnn_cell.BasicRNNCell(3)
    >>> xs = [sl.zeros([2, 4]) for _ in range(5)]
    >>> outputs, state = static_rnn(cell, xs, dtype=sl.float32)
    >>> len(outputs), outputs[0].shape, state.shape
    (5, TensorShape([2, 3]), TensorShape([2, 3]))
    """
    _check_cell("cell", cell)
    inputs = _check_inputs(inputs)
    with vs.variable_scope(scope or "rnn") as varscope:
        batch_size = _batch_size(inputs)
        if initial_state is not None:
            state = to_tensors(initial_state)
        else:
            if dtype is None:
                raise ValueError("static_rnn: if there is no initial_state, you must give a dtype.")
            state = default_state(cell, batch_size, dtype)
        if sequence_length is not None:
            sequence_length = _sequence_length(sequence_length, batch_size)
            out_dtype = dtype if dtype is not None else nest.flatten(state)[0].dtype
            zero_output = _zero_output(cell, batch_size, dtypes.as_dtype(out_dtype))
        outputs = []
        for t, x in enumerate(inputs):
            if t > 0:
                varscope.reuse_variables()
            output, new_state = cell(x, state)
            if sequence_length is not None:
                done = math_ops.greater_equal(t, sequence_length)
                flat_out = [
                    _copy_through(done, z, o) for z, o in zip(zero_output, nest.flatten(output))
                ]
                flat_state = [
                    _copy_through(done, s, n)
                    for s, n in zip(nest.flatten(state), nest.flatten(new_state))
                ]
                output = nest.pack_sequence_as(output, flat_out)
                new_state = nest.pack_sequence_as(new_state, flat_state)
            outputs.append(output)
            state = new_state
        return outputs, state


@export("nn.static_bidirectional_rnn", "contrib.rnn.static_bidirectional_rnn")
def static_bidirectional_rnn(
    cell_fw: Any,
    cell_bw: Any,
    inputs: Any,
    initial_state_fw: Any = None,
    initial_state_bw: Any = None,
    dtype: Any = None,
    sequence_length: Any = None,
    scope: Any = None,
) -> tuple[list[Any], Any, Any]:
    """A forward and a backward `static_rnn` over the same steps (TF1
    `tf.nn.static_bidirectional_rnn`).

    The backward cell reads each row's first `sequence_length` steps in reverse (all steps when
    no lengths are given); its outputs are reversed back, and each step's output is the
    forward and backward outputs concatenated on axis 1, the first after the batch (part by
    part when the outputs are structures), as TF1 does. Weights live under
    `<scope>/fw/<cell name>/...` and `<scope>/bw/<cell name>/...` (scope default
    "bidirectional_rnn"), as in `bidirectional_dynamic_rnn`.

    Args:
      cell_fw, cell_bw: the two cells.
      inputs, dtype, sequence_length: as in `static_rnn` (each input a Tensor or a nested
        structure of Tensors).
      initial_state_fw, initial_state_bw: the initial states of the two directions.
      scope: the variable scope.

    Returns:
      (outputs, output_state_fw, output_state_bw): outputs is a list with one
      [batch, fw_size + bw_size] Tensor per step (a structure like the cells' outputs when
      they are structures; for outputs [batch, d1, d2, ...], [batch, fw_d1 + bw_d1, d2, ...]).

    Raises:
      TypeError, ValueError: as `static_rnn`.

    >>> fw, bw = sl.nn.rnn_cell.BasicRNNCell(3), sl.nn.rnn_cell.BasicRNNCell(2)
    >>> xs = [sl.zeros([2, 4]) for _ in range(5)]
    >>> outputs, state_fw, state_bw = static_bidirectional_rnn(fw, bw, xs, dtype=sl.float32)
    >>> outputs[0].shape
    TensorShape([2, 5])
    """
    _check_cell("cell_fw", cell_fw)
    _check_cell("cell_bw", cell_bw)
    inputs = _check_inputs(inputs)
    with vs.variable_scope(scope or "bidirectional_rnn"):
        with vs.variable_scope("fw") as fw_scope:
            output_fw, state_fw = static_rnn(
                cell_fw, inputs, initial_state_fw, dtype, sequence_length, scope=fw_scope
            )
        with vs.variable_scope("bw") as bw_scope:
            reversed_inputs = _reverse_steps(inputs, sequence_length)
            tmp, state_bw = static_rnn(
                cell_bw, reversed_inputs, initial_state_bw, dtype, sequence_length, scope=bw_scope
            )
    output_bw = _reverse_steps(tmp, sequence_length)
    # Each part of each step's output joined on axis 1, the first after the batch, as TF1 does
    # (`concat([fw, bw], 1)`): the depth for [batch, depth] outputs, whatever rank they have.
    outputs = [
        nest.map_structure(lambda a, b: join_ops.concat([a, b], axis=1), fw, bw)
        for fw, bw in zip(output_fw, output_bw)
    ]
    return outputs, state_fw, state_bw


def _reverse_steps(steps: list[Any], lengths: Any) -> list[Any]:
    """The list with each row's first `lengths[b]` steps reversed (all steps when None).

    Each step may be a nested structure: every part is reversed on its own.
    """
    if lengths is None:
        return list(reversed(steps))
    # Only here is the time axis a Tensor axis: stack, reverse per row, unstack, part by part.
    flat_steps = [nest.flatten(s) for s in steps]
    flat_results: list[list[Tensor]] = [[] for _ in steps]
    for part in zip(*flat_steps):
        stacked = join_ops.stack([core_ops.convert_to_tensor(x) for x in part], axis=0)
        result = _reverse_sequence(stacked, lengths, time_major=True)
        for out, x in zip(join_ops.unstack(result, num=len(steps), axis=0), flat_results):
            x.append(out)
    return [nest.pack_sequence_as(s, flat) for s, flat in zip(steps, flat_results)]


@export("nn.static_state_saving_rnn", "contrib.rnn.static_state_saving_rnn")
def static_state_saving_rnn(
    cell: Any,
    inputs: Any,
    state_saver: Any,
    state_name: Any,
    sequence_length: Any = None,
    scope: Any = None,
) -> tuple[list[Any], Any]:
    """A `static_rnn` whose state comes from and goes back to `state_saver` (TF1
    `tf.nn.static_state_saving_rnn`): a long sequence cut into segments, each segment starting
    where the last one stopped.

    As plain Python::

        state = state_saver.state(state_name)            # one call per part of the state
        outputs, state = static_rnn(cell, inputs, initial_state=state, ...)
        saves = state_saver.save_state(state_name, state)
        return outputs, state                            # the last output and the state
                                                         # run after `saves`

    Args:
      cell: an RNNCell.
      inputs: as in `static_rnn`.
      state_saver: an object with `state(name) -> Tensor` and `save_state(name, value) ->
        Tensor or Operation` (e.g. one backed by Variables).
      state_name: a name, or a structure of names like `cell.state_size` (("c", "h") for an
        LSTM's state tuple).
      sequence_length, scope: as in `static_rnn`.

    Returns:
      (outputs, final_state) as `static_rnn`; the last output and every part of the final state
      depend on the `save_state` results, so fetching either saves the state.

    Raises:
      ValueError: `state_name` is a single name for a structured state (or the reverse), or
        has another number of names than the state has parts.

    >>> class Saver:  # keeps the state in Variables between session runs
    ...     def __init__(self): self.v = sl.Variable(sl.zeros([2, 3]), name="saved")
    ...     def state(self, name): return self.v.read_value()
    ...     def save_state(self, name, value): return self.v.assign(value)
    >>> xs = [sl.ones([2, 4]) for _ in range(3)]
    >>> outputs, state = static_state_saving_rnn(sl.nn.rnn_cell.BasicRNNCell(3), xs, Saver(), "h")
    >>> len(outputs), state.shape
    (3, TensorShape([2, 3]))
    """
    _check_cell("cell", cell)
    state_size = cell.state_size
    state_is_tuple = nest.is_sequence(state_size)
    if state_is_tuple != nest.is_sequence(state_name):
        raise ValueError(
            "static_state_saving_rnn: state_name should be the same type as cell.state_size. "
            f"state_name: {state_name!r}, cell.state_size: {state_size!r}"
        )
    if state_is_tuple:
        names = nest.flatten(state_name)
        if len(names) != len(nest.flatten(state_size)):
            raise ValueError(
                f"static_state_saving_rnn: #elems(state_name) != #elems(state_size): "
                f"{len(names)} vs. {len(nest.flatten(state_size))}"
            )
        initial_state = nest.pack_sequence_as(state_size, [state_saver.state(n) for n in names])
    else:
        names = [state_name]
        initial_state = state_saver.state(state_name)
    outputs, state = static_rnn(
        cell, inputs, initial_state=initial_state, sequence_length=sequence_length, scope=scope
    )
    flat_state = nest.flatten(state)
    saves = [state_saver.save_state(n, s) for n, s in zip(names, flat_state)]
    with graph_lib.get_default_graph().control_dependencies(saves):
        last = outputs[-1]
        outputs[-1] = nest.pack_sequence_as(
            last, [core_ops.identity(o) for o in nest.flatten(last)]
        )
        state = nest.pack_sequence_as(state, [core_ops.identity(s) for s in flat_state])
    return outputs, state
