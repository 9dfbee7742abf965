"""`raw_rnn`: TF1's `tf.nn.raw_rnn`, an RNN whose inputs, state and emitted outputs are chosen
step by step by a user function `loop_fn` (decoders that feed back their own outputs).

Semantics, as plain Python (TF 1.15)::

    time = 0
    finished, next_input, initial_state, emit_structure, loop_state = loop_fn(
        time, None, None, None)                      # (time, cell_output, cell_state, loop_state)
    emit_ta = TensorArray(dynamic_size=True, ...)    # one per part of the emitted structure
    state = initial_state
    while not all(finished):
        (output, cell_state) = cell(next_input, state)
        (next_finished, next_input, next_state, emit, loop_state) = loop_fn(
            time + 1, output, cell_state, loop_state)
        # Rows already finished emit zeros and keep their state.
        emit = where(finished, zeros, emit)
        next_state = where(finished, state, next_state)
        emit_ta = emit_ta.write(time, emit)
        finished = finished | next_finished
        state, time = next_state, time + 1
    return (emit_ta, state, loop_state)

The loop is one `while_loop`; `loop_fn` runs inside its body (and once before it, for time 0),
so it may read a `TensorArray` of inputs or use `sl.cond`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sluice._export import export
from sluice._tf1.cells import nest
from sluice._tf1.cells import scopes as vs
from sluice._tf1.cells.dynamic_rnn import _check_cell, _copy_through
from sluice._tf1.cells.rnn_cell import size_shape, to_tensors
from sluice.framework.control_flow.tensor_array import TensorArray
from sluice.framework.control_flow.while_loop import while_loop
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops, fill_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops


@export("nn.raw_rnn")
def raw_rnn(
    cell: Any,
    loop_fn: Callable,
    parallel_iterations: int | None = None,
    swap_memory: bool = False,
    scope: Any = None,
) -> tuple[Any, Any, Any]:
    """Runs `cell` in a `while_loop` driven by `loop_fn` (see the module docstring).

    Args:
      cell: an RNNCell.
      loop_fn: `loop_fn(time, cell_output, cell_state, loop_state) -> (elements_finished,
        next_input, next_cell_state, emit_output, next_loop_state)`. At time 0 the outputs and
        states given are None, and it returns the initial state and, as `emit_output`, the
        structure of what is emitted (None: `cell.output_size`). `elements_finished` is a bool
        [batch] vector; `next_loop_state` None keeps the previous loop state.
      parallel_iterations, swap_memory: passed to the `while_loop` (default 32 iterations).
      scope: the variable scope (default "rnn").

    Returns:
      (emit_ta, final_state, final_loop_state): `emit_ta` a TensorArray (a structure of them,
      like the emitted structure) whose `stack()` is [time, batch, ...]; `final_loop_state` is
      None when `loop_fn` gave no loop state at time 0.

    Raises:
      TypeError: `cell` is not a cell, or `loop_fn` is not callable.
      ValueError: inputs of different static batch sizes, or an initial state not shaped like
        `cell.state_size`.

    >>> cell = sl.nn.rnn_cell.BasicRNNCell(3)
    >>> inputs = sl.TensorArray(sl.float32, size=4).unstack(sl.ones([4, 2, 5]))
    >>> def loop_fn(time, cell_output, cell_state, loop_state):
    ...     state = cell.zero_state(2, sl.float32) if cell_output is None else cell_state
    ...     finished = sl.fill([2], time >= 4)
    ...     x = sl.cond(time >= 4, lambda: sl.zeros([2, 5]), lambda: inputs.read(time))
    ...     return finished, x, state, cell_output, None
    >>> outputs_ta, final_state, _ = raw_rnn(cell, loop_fn)
    >>> sl.Session().run(sl.global_variables_initializer())
    >>> outputs_ta.stack().shape.as_list()[1:], final_state.shape
    ([2, 3], TensorShape([2, 3]))
    """
    _check_cell("cell", cell)
    if not callable(loop_fn):
        raise TypeError(f"raw_rnn: loop_fn must be a callable, got {loop_fn!r}.")
    parallel_iterations = parallel_iterations or 32
    with vs.variable_scope(scope or "rnn"):
        time = core_ops.constant(0, dtype=dtypes.int32)
        # time, cell_output, cell_state, loop_state (passed by position, as TF1 does)
        finished, next_input, initial_state, emit_structure, loop_state = loop_fn(
            time, None, None, None
        )
        init_loop_state = loop_state
        if loop_state is None:  # the while_loop needs a loop variable in its place
            loop_state = core_ops.constant(0, dtype=dtypes.int32)
        next_input = nest.map_structure(core_ops.convert_to_tensor, next_input)
        flat_input = nest.flatten(next_input)
        static_batch = _static_batch_size(flat_input)
        batch_size = static_batch if static_batch is not None else fill_ops.shape(flat_input[0])[0]
        try:
            nest.assert_same_structure(initial_state, cell.state_size)
        except (TypeError, ValueError) as e:
            raise ValueError(
                f"raw_rnn: the initial state from loop_fn does not have the structure of "
                f"cell.state_size ({cell.state_size!r}): {e}"
            ) from None
        state = to_tensors(initial_state)
        flat_state = nest.flatten(state)
        finished = core_ops.convert_to_tensor(finished)

        if emit_structure is not None:
            flat_emit = [core_ops.convert_to_tensor(e) for e in nest.flatten(emit_structure)]
            flat_emit_size = [_emit_size(e) for e in flat_emit]
            flat_emit_dtypes = [e.dtype for e in flat_emit]
        else:
            emit_structure = cell.output_size
            flat_emit_size = [(size_shape(s), size_shape(s)) for s in nest.flatten(emit_structure)]
            flat_emit_dtypes = [flat_state[0].dtype] * len(flat_emit_size)
        flat_emit_ta = [
            TensorArray(dtype=dtype_i, size=0, dynamic_size=True,
                        element_shape=TensorShape([static_batch]).concatenate(static_i),
                        tensor_array_name=f"rnn_output_{i}")
            for i, (dtype_i, (_, static_i)) in enumerate(zip(flat_emit_dtypes, flat_emit_size))
        ]  # fmt: skip
        emit_ta = nest.pack_sequence_as(emit_structure, flat_emit_ta)
        flat_zero_emit = [
            _zeros(batch_size, size_i, dtype_i)
            for (size_i, _), dtype_i in zip(flat_emit_size, flat_emit_dtypes)
        ]
        zero_emit = nest.pack_sequence_as(emit_structure, flat_zero_emit)

        def condition(unused_time, elements_finished, *_):
            return math_ops.logical_not(reduction_ops.reduce_all(elements_finished))

        def body(time, elements_finished, current_input, emit_ta, state, loop_state):
            next_output, cell_state = cell(current_input, state)
            nest.assert_same_structure(state, cell_state)
            nest.assert_same_structure(cell.output_size, next_output)
            next_time = time + 1
            next_finished, next_input, next_state, emit_output, next_loop_state = loop_fn(
                next_time, next_output, cell_state, loop_state
            )
            nest.assert_same_structure(state, next_state)
            nest.assert_same_structure(current_input, next_input)
            nest.assert_same_structure(emit_ta, emit_output)
            loop_state = loop_state if next_loop_state is None else next_loop_state

            def copy_some_through(current: Any, candidate: Any) -> Any:
                def copy(cur_i: Any, cand_i: Any) -> Any:
                    return _copy_through(elements_finished, cur_i, to_tensors(cand_i))

                return nest.map_structure(copy, current, candidate)

            emit_output = copy_some_through(zero_emit, emit_output)
            next_state = copy_some_through(state, next_state)
            emit_ta = nest.map_structure(
                lambda ta, emit: ta.write(time, emit), emit_ta, emit_output
            )
            elements_finished = math_ops.logical_or(
                elements_finished, core_ops.convert_to_tensor(next_finished)
            )
            return (next_time, elements_finished, next_input, emit_ta, next_state, loop_state)

        returned = while_loop(
            condition, body,
            loop_vars=[time, finished, next_input, emit_ta, state, loop_state],
            parallel_iterations=parallel_iterations, swap_memory=swap_memory,
        )  # fmt: skip
        emit_ta, final_state, final_loop_state = returned[-3:]
        if init_loop_state is None:
            final_loop_state = None
        return emit_ta, final_state, final_loop_state


def _static_batch_size(flat_input: list) -> int | None:
    batch = None
    for x in flat_input:
        dim = x.shape[0] if x.shape.rank else None
        if dim is None:
            continue
        if batch is not None and batch != dim:
            raise ValueError(
                f"raw_rnn: the inputs from loop_fn have different batch sizes ({batch} and "
                f"{dim}; {x.name} has shape {x.shape})."
            )
        batch = int(dim)
    return batch


def _emit_size(emit: Tensor) -> tuple[Any, TensorShape]:
    """The per-row shape of an emitted Tensor, as TF1 takes it from loop_fn's emit at time 0
    (its shape without the batch): (the shape, or its run-time value where it is partly
    unknown; what is known of it)."""
    if emit.shape.is_fully_defined():
        return emit.shape, emit.shape
    return fill_ops.shape(emit), emit.shape


def _zeros(batch_size: Any, size: Any, dtype: Any) -> Tensor:
    """Zeros of shape [batch_size] + size (a TensorShape, or a shape Tensor)."""
    if isinstance(size, TensorShape):
        return fill_ops.zeros([batch_size] + size.as_list(), dtype=dtype)
    batch = array_ops.reshape(core_ops.convert_to_tensor(batch_size, dtype=size.dtype), [1])
    return fill_ops.zeros(join_ops.concat([batch, size], 0), dtype=dtype)
