"""The time loop of a Keras RNN layer: Keras's `backend.rnn` on sluice's one while loop.

Semantics, as plain Python over inputs [batch, time, ...] (or a nested structure of such
sequences, sliced alike) and an optional mask [batch, time] (what Keras 3's TensorFlow backend
computes; `step` is the cell's call)::

    if go_backwards:
        inputs, mask = inputs[:, ::-1], mask[:, ::-1]      # padding included, as Keras does
    states, previous = initial_states, zeros
    for t in range(time):
        output, new_states = step(inputs[:, t], states)
        if mask is not None:                    # per row, a masked step changes nothing:
            output = where(mask[:, t], output, previous)          # the previous output again
            new_states = where(mask[:, t], new_states, states)    # the states kept
            if zero_output_for_mask:
                output = where(mask[:, t], output, 0)
        outputs[:, t], states, previous = output, new_states, output
    return outputs[:, -1], outputs, states             # last_output, outputs, final states

Outputs and states may be nested structures too (the cell's `output_size` and `state_size`),
each leaf [batch, *shape]; `where` then picks whole rows. The loop is `dynamic_rnn`'s one while
loop (the mask travels as a second input, the previous output as more states), or, with
`unroll=True`, the same step written out once per time step (the time dimension must then be
known).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

from sluice._tf1.cells import nest
from sluice._tf1.cells.dynamic_rnn import dynamic_rnn
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops, join_ops

# step(inputs_t, flat_states) -> (output_t, new flat states): one time step of the cell
StepFunction = Callable[[Any, list], tuple[Any, list]]


class MaskedStep:
    """One time step under the TF1 cell contract that `dynamic_rnn` drives: the state is the
    tuple of the cell's flat states (and, with a mask and without `zero_output_for_mask`, the
    previous output's leaves); the input is x_t (nested like the sequences), or (x_t, mask_t)
    with mask_t [batch, 1] bool.

    `state_shapes` are the flat states' shapes without the batch; `output_size` is the cell's
    output structure, a TensorShape (without the batch) per leaf."""

    def __init__(
        self,
        step: StepFunction,
        state_shapes: list[TensorShape],
        output_size: Any,
        masked: bool,
        zero_output_for_mask: bool,
    ):
        self.step, self.state_shapes, self.units = step, list(state_shapes), output_size
        self.masked = masked
        self.carries_output = masked and not zero_output_for_mask

    @property
    def state_size(self) -> tuple:
        carried = tuple(nest.flatten(self.units)) if self.carries_output else ()
        return tuple(self.state_shapes) + carried

    @property
    def output_size(self) -> Any:
        return self.units

    def zero_state(self, batch_size: Any, dtype: Any) -> tuple:
        return tuple(zeros(batch_size, shape, dtype) for shape in self.state_size)

    def __call__(self, inputs: Any, state: tuple) -> tuple[Any, tuple]:
        n = len(self.state_shapes)
        states = list(state[:n])
        x_t, keep = inputs if self.masked else (inputs, None)
        output, new_states = self.step(x_t, states)
        _check_step(output, new_states, self.units, self.state_shapes)
        flat = nest.flatten(output)  # packed again below like output_size (a list or a tuple)
        if keep is None:
            return nest.pack_sequence_as(self.units, flat), tuple(new_states)
        new_states = [_select(keep, new, old) for new, old in zip(new_states, states)]
        if self.carries_output:
            flat = [_select(keep, new, old) for new, old in zip(flat, state[n:])]
            return nest.pack_sequence_as(self.units, flat), tuple(new_states) + tuple(flat)
        flat = [_select(keep, t, fill_ops.zeros_like(t)) for t in flat]
        return nest.pack_sequence_as(self.units, flat), tuple(new_states)


def state_shape(size: Any) -> TensorShape:
    """One state's (or output's) size in a cell's `state_size` (`output_size`) as its shape
    without the batch: an int n is [n]; a TensorShape (a state of any rank, as Keras's guide
    writes `tf.TensorShape([rows, cols])`) is itself, and must be fully known."""
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        return TensorShape([int(size)])
    if isinstance(size, TensorShape) and size.is_fully_defined():
        return size
    raise ValueError(
        f"An RNN cell's state_size and output_size hold ints or fully known TensorShapes "
        f"(nested in lists or tuples); got {size!r}."
    )


def zeros(batch_size: Any, shape: TensorShape, dtype: Any) -> Tensor:
    """Zeros [batch_size, *shape] (`batch_size` an int or a scalar Tensor)."""
    dims = shape.as_list()
    if isinstance(batch_size, int):
        return fill_ops.zeros([batch_size] + dims, dtype=dtype)
    result = fill_ops.zeros(join_ops.stack([batch_size] + dims), dtype=dtype)
    result.set_shape([None] + dims)
    return result


def _describe(shape: TensorShape) -> str:
    return "[" + ", ".join(["batch"] + [str(d) for d in shape.as_list()]) + "]"


def _check_step(output: Any, new_states: list, units: Any, shapes: list[TensorShape]) -> None:
    """Raises unless one step gave outputs shaped like `units` and states like `shapes` (each
    with the batch first)."""
    sizes = [_describe(s) for s in shapes]
    if len(new_states) != len(shapes):
        raise ValueError(
            f"The RNN cell returned {len(new_states)} new states for {len(shapes)} states (its "
            f"state_size gives states of shapes {', '.join(sizes)})."
        )
    flat_units, flat_out = nest.flatten(units), nest.flatten(output)
    if len(flat_out) != len(flat_units):
        raise ValueError(
            f"The RNN cell returned {len(flat_out)} outputs; its output_size gives "
            f"{len(flat_units)} ({', '.join(_describe(u) for u in flat_units)})."
        )
    expected = [(f"output {i}", t, u) for i, (t, u) in enumerate(zip(flat_out, flat_units))]
    expected += [(f"new state {i}", t, u) for i, (t, u) in enumerate(zip(new_states, shapes))]
    for what, t, size in expected:
        shape = getattr(t, "shape", None)
        if (
            shape is None
            or shape.rank != size.rank + 1
            or not TensorShape(shape.dims[1:]).is_compatible_with(size)
        ):
            raise ValueError(
                f"The RNN cell's {what} has shape {shape}; expected {_describe(size)} (from its "
                f"output_size and state_size: outputs {[_describe(u) for u in flat_units]}, "
                f"states {sizes})."
            )


def _select(keep: Tensor, new: Tensor, old: Tensor) -> Tensor:
    """Rows of `new` where `keep` [batch, 1], else of `old` (of any rank >= 1)."""
    rank = old.shape.rank
    if rank != 2:
        keep = array_ops.reshape(keep, [-1] + [1] * (rank - 1))
    result = gather_ops.where_v2(keep, new, old)
    result.set_shape(old.shape.merge_with(new.shape))
    return result


def run(
    step: StepFunction,
    sequences: Any,
    initial_states: list,
    output_size: Any,
    mask: Tensor | None = None,
    go_backwards: bool = False,
    unroll: bool = False,
    zero_output_for_mask: bool = False,
) -> tuple[Any, Any, list]:
    """Runs `step` over the time axis of `sequences` (see the module docstring).

    Args:
      step: one time step, `step(x_t, flat_states) -> (output_t, new_flat_states)`, x_t nested
        like `sequences`.
      sequences: the inputs [batch, time, ...], or a nested structure of them.
      initial_states: the flat list of initial states, each [batch, *shape] (shape known).
      output_size: the structure of one step's output: an int or a TensorShape (without the
        batch) per leaf.
      mask: optional bool [batch, time]: False marks a step to skip.
      go_backwards: process the time steps in reverse (outputs in processing order).
      unroll: write the steps out (needs a static time dimension) instead of a while loop.
      zero_output_for_mask: masked steps output zeros instead of the previous output.

    Returns:
      (last_output, outputs, final flat states): last_output [batch, *shape] and outputs
      [batch, time, *shape], nested like `output_size`.

    Raises:
      ValueError: `unroll` with an unknown number of time steps.
    """
    shapes = [TensorShape(s.shape.dims[1:]) for s in initial_states]
    units = nest.map_structure(state_shape, output_size)
    masked = mask is not None
    if masked:
        mask = array_ops.expand_dims(fill_ops.cast(mask, dtypes.bool_), -1)  # [batch, time, 1]
    if go_backwards:
        sequences = nest.map_structure(lambda x: array_ops.reverse(x, [1]), sequences)
        mask = array_ops.reverse(mask, [1]) if masked else None
    cell = MaskedStep(step, shapes, units, masked, zero_output_for_mask)
    state = tuple(initial_states)
    first = nest.flatten(sequences)[0]
    if cell.carries_output:
        batch = fill_ops.shape(first)[0]
        for shape in nest.flatten(units):
            previous = zeros(batch, shape, initial_states[0].dtype)
            previous.set_shape([first.shape[0]] + shape.as_list())
            state += (previous,)
    if unroll:
        outputs, final = _unrolled(cell, sequences, mask, state)
    else:
        inputs = (sequences, mask) if masked else sequences
        outputs, final = dynamic_rnn(cell, inputs, initial_state=state, scope="rnn")
    last_output = nest.map_structure(lambda o: o[:, -1], outputs)
    return last_output, outputs, list(final[: len(shapes)])


def _unrolled(cell: MaskedStep, sequences: Any, mask: Any, state: tuple) -> tuple[Any, tuple]:
    """`cell` applied step by step in Python: the loop of `dynamic_rnn`, written out."""
    first = nest.flatten(sequences)[0]
    time = first.shape[1]
    if time is None:
        raise ValueError(
            "Cannot unroll a RNN if the time dimension is undefined (inputs of shape "
            f"{first.shape}). Give the time dimension in the Input's `shape` (or "
            "`batch_shape`), or use unroll=False."
        )
    outputs = []
    for t in range(time):
        step_input = nest.map_structure(lambda x, t=t: x[:, t], sequences)
        if mask is not None:
            step_input = (step_input, mask[:, t])
        output, state = cell(step_input, state)
        outputs.append(nest.flatten(output))
    stacked = [join_ops.stack(list(leaf), axis=1) for leaf in zip(*outputs)]
    return nest.pack_sequence_as(cell.output_size, stacked), state
