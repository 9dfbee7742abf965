"""The time loop of a Keras RNN layer: Keras's `backend.rnn` on sluice's one while loop.

Semantics, as plain Python over inputs [batch, time, ...] and an optional mask [batch, time]
(what Keras 3's TensorFlow backend computes; `step` is the cell's call)::

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

The loop is `dynamic_rnn`'s one while loop (the mask travels as a second input, the previous
output as one more state), or, with `unroll=True`, the same step written out once per time step
(the time dimension must then be known).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sluice._tf1.cells.dynamic_rnn import dynamic_rnn
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops, join_ops

# step(input_t, flat_states) -> (output_t, new flat states): one time step of the cell
StepFunction = Callable[[Tensor, list], tuple[Tensor, list]]


class MaskedStep:
    """One time step under the TF1 cell contract that `dynamic_rnn` drives: the state is the
    tuple of the cell's flat states (and, with a mask and without `zero_output_for_mask`, the
    previous output); the input is x_t, or (x_t, mask_t) with mask_t [batch, 1] bool."""

    def __init__(
        self,
        step: StepFunction,
        state_sizes: list[int],
        output_size: int,
        masked: bool,
        zero_output_for_mask: bool,
    ):
        self.step, self.state_sizes, self.units = step, list(state_sizes), output_size
        self.masked = masked
        self.carries_output = masked and not zero_output_for_mask

    @property
    def state_size(self) -> tuple:
        return tuple(self.state_sizes) + ((self.units,) if self.carries_output else ())

    @property
    def output_size(self) -> int:
        return self.units

    def zero_state(self, batch_size: Any, dtype: Any) -> tuple:
        dims = [batch_size] if isinstance(batch_size, int) else [None]
        zeros = []
        for size in self.state_size:
            shape = join_ops.stack([batch_size, size]) if dims == [None] else dims + [size]
            zeros.append(fill_ops.zeros(shape, dtype=dtype))
            zeros[-1].set_shape(dims + [size])
        return tuple(zeros)

    def __call__(self, inputs: Any, state: tuple) -> tuple[Tensor, tuple]:
        n = len(self.state_sizes)
        states = list(state[:n])
        x_t, keep = inputs if self.masked else (inputs, None)
        output, new_states = self.step(x_t, states)
        _check_step(output, new_states, self.units, self.state_sizes)
        if keep is None:
            return output, tuple(new_states)
        new_states = [_select(keep, new, old) for new, old in zip(new_states, states)]
        if self.carries_output:
            output = _select(keep, output, state[n])
            return output, tuple(new_states) + (output,)
        return _select(keep, output, fill_ops.zeros_like(output)), tuple(new_states)


def _check_step(output: Any, new_states: list, units: int, sizes: list[int]) -> None:
    """Raises unless one step gave an output [batch, units] and states [batch, size]."""
    if len(new_states) != len(sizes):
        raise ValueError(
            f"The RNN cell returned {len(new_states)} new states for {len(sizes)} states (its "
            f"state_size is {sizes})."
        )
    expected = [("output", output, units)] + [
        (f"new state {i}", s, n) for i, (s, n) in enumerate(zip(new_states, sizes))
    ]
    for what, t, size in expected:
        shape = getattr(t, "shape", None)
        if shape is None or shape.rank != 2 or shape[-1] not in (None, size):
            raise ValueError(
                f"The RNN cell's {what} has shape {shape}; expected [batch, {size}] (from its "
                f"output_size and state_size, output {units}, states {sizes})."
            )


def _select(keep: Tensor, new: Tensor, old: Tensor) -> Tensor:
    """Rows of `new` where `keep` [batch, 1], else of `old`."""
    result = gather_ops.where_v2(keep, new, old)
    result.set_shape(old.shape.merge_with(new.shape))
    return result


def run(
    step: StepFunction,
    sequences: Tensor,
    initial_states: list,
    output_size: int,
    mask: Tensor | None = None,
    go_backwards: bool = False,
    unroll: bool = False,
    zero_output_for_mask: bool = False,
) -> tuple[Tensor, Tensor, list]:
    """Runs `step` over the time axis of `sequences` (see the module docstring).

    Args:
      step: one time step, `step(x_t, flat_states) -> (output_t, new_flat_states)`.
      sequences: the inputs [batch, time, features].
      initial_states: the flat list of initial states, each [batch, size].
      output_size: the size of one step's output.
      mask: optional bool [batch, time]: False marks a step to skip.
      go_backwards: process the time steps in reverse (outputs in processing order).
      unroll: write the steps out (needs a static time dimension) instead of a while loop.
      zero_output_for_mask: masked steps output zeros instead of the previous output.

    Returns:
      (last_output [batch, output_size], outputs [batch, time, output_size], final flat states).

    Raises:
      ValueError: `unroll` with an unknown number of time steps.
    """
    sizes = [int(s.shape[-1]) for s in initial_states]
    masked = mask is not None
    if masked:
        mask = array_ops.expand_dims(fill_ops.cast(mask, dtypes.bool_), -1)  # [batch, time, 1]
    if go_backwards:
        sequences = array_ops.reverse(sequences, [1])
        mask = array_ops.reverse(mask, [1]) if masked else None
    cell = MaskedStep(step, sizes, output_size, masked, zero_output_for_mask)
    state = tuple(initial_states)
    if cell.carries_output:
        batch = fill_ops.shape(sequences)[0]
        dims = join_ops.stack([batch, output_size])
        previous = fill_ops.zeros(dims, dtype=initial_states[0].dtype)
        previous.set_shape([sequences.shape[0], output_size])
        state += (previous,)
    inputs = (sequences, mask) if masked else sequences
    if unroll:
        outputs, final = _unrolled(cell, inputs, state)
    else:
        outputs, final = dynamic_rnn(cell, inputs, initial_state=state, scope="rnn")
    return outputs[:, -1, :], outputs, list(final[: len(sizes)])


def _unrolled(cell: MaskedStep, inputs: Any, state: tuple) -> tuple[Tensor, tuple]:
    """`cell` applied step by step in Python: the loop of `dynamic_rnn`, written out."""
    sequences = inputs[0] if isinstance(inputs, tuple) else inputs
    time = sequences.shape[1]
    if time is None:
        raise ValueError(
            "Cannot unroll a RNN if the time dimension is undefined (inputs of shape "
            f"{sequences.shape}). Give the time dimension in the Input's `shape` (or "
            "`batch_shape`), or use unroll=False."
        )
    outputs = []
    for t in range(time):
        if isinstance(inputs, tuple):
            step_input = tuple(x[:, t, :] for x in inputs)
        else:
            step_input = inputs[:, t, :]
        output, state = cell(step_input, state)
        outputs.append(output)
    return join_ops.stack(outputs, axis=1), state
