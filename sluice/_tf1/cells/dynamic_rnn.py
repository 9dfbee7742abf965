"""`dynamic_rnn` and `bidirectional_dynamic_rnn`: a cell run over time as ONE while loop.

Semantics, as plain Python over time-major inputs (`sequence_length` given)::

    state, outputs = initial_state, zeros([time, batch, output_size])
    for t in range(min(time, max(1, max(sequence_length)))):
        output, new_state = cell(inputs[t], state)
        done = t >= sequence_length                      # [batch]
        outputs[t] = where(done, 0, output)
        state = where(done, state, new_state)            # finished rows keep their last state
    return outputs, state

How the loop is built: the loop variables are (t, one output buffer per output of the cell, the
state). The cell reads `x_t = read_row(inputs, t)` from the time-major inputs, a loop constant;
each step writes its output into a preallocated [time, batch, units] buffer with
`write_row(buffer, t, output)` (in place inside a compiled loop). Every loop variable keeps a
fixed shape, so the compiled engine traces the loop once, `maximum_iterations` is the static
time length when it is known, and the graph has the same size for any sequence length.
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._tf1.cells import nest
from sluice._tf1.cells import scopes as vs
from sluice._tf1.cells.rnn_cell import _zero_state_tensors, size_shape, state_dtype, to_tensors
from sluice.framework.control_flow.tensor_array import is_tensor_array
from sluice.framework.control_flow.while_loop import while_loop
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops
from sluice.framework.ops.state import buffer_ops


def _check_cell(name: str, cell: Any) -> None:
    """TF1's assert_like_rnncell: output_size, state_size, zero_state or get_initial_state (a
    Keras cell), and callable."""
    missing = [a for a in ("output_size", "state_size") if not hasattr(cell, a)]
    if not (hasattr(cell, "zero_state") or hasattr(cell, "get_initial_state")):
        missing.append("zero_state or get_initial_state")
    if missing or not callable(cell):
        raise TypeError(
            f"The argument {name!r} ({cell!r}) is not an RNNCell: it lacks "
            f"{missing or ['__call__']}."
        )


def default_state(cell: Any, batch_size: Any, dtype: Any) -> Any:
    """The state a TF1 RNN starts from when it is given none: `cell.zero_state`; for a Keras
    cell (which has none), zeros shaped by its `state_size`, nested alike, as TF1's Keras
    cells' `get_initial_state` gives them (a Keras SimpleRNNCell's is one Tensor)."""
    if hasattr(cell, "zero_state"):
        return cell.zero_state(batch_size, dtype)
    return _zero_state_tensors(cell.state_size, batch_size, dtype)


def _transpose_batch_time(x: Tensor) -> Tensor:
    """[batch, time, ...] <-> [time, batch, ...]."""
    rank = x.shape.rank
    if rank is None:
        raise ValueError(f"The rank of input {x.name} must be known, to swap batch and time.")
    if rank < 2:
        raise ValueError(f"Expected input tensor {x.name} to have rank at least 2, got {rank}.")
    y = array_ops.transpose(x, [1, 0] + list(range(2, rank)))
    y.set_shape([x.shape[1], x.shape[0]] + list(x.shape.dims[2:]))
    return y


def _batch_size(flat_input: list[Tensor]) -> Any:
    """The batch size of time-major inputs: static when any input knows it, else a Tensor."""
    for x in flat_input:
        if x.shape.rank is not None and x.shape.rank >= 2 and x.shape[1] is not None:
            return int(x.shape[1])
    return fill_ops.shape(flat_input[0])[1]


@export("nn.dynamic_rnn", "nn.rnn_cell.dynamic_rnn", "contrib.rnn.dynamic_rnn")
def dynamic_rnn(
    cell: Any,
    inputs: Any,
    sequence_length: Any = None,
    initial_state: Any = None,
    dtype: Any = None,
    parallel_iterations: int | None = None,
    swap_memory: bool = False,
    time_major: bool = False,
    scope: Any = None,
    unroll: int = 1,
) -> tuple[Any, Any]:
    """Runs `cell` over the time dimension of `inputs` in one while loop (TF1 `tf.nn.dynamic_rnn`).

    Args:
      cell: an RNNCell.
      inputs: a [batch, time, depth] Tensor ([time, batch, depth] when `time_major`), or a
        nested structure of such Tensors sharing batch and time.
      sequence_length: optional int vector [batch]: steps at and after a row's length emit
        zeros and keep that row's state.
      initial_state: the initial state (default: `cell.zero_state`, which needs `dtype`).
      dtype: the dtype of the state and outputs when `initial_state` is not given.
      parallel_iterations: iterations that may run at once (default 32).
      swap_memory: lets the values saved for the gradient move to host memory.
      time_major: the layout of `inputs` and outputs.
      scope: the variable scope (default "rnn"): weights are `<scope>/<cell name>/kernel`, ...
      unroll: (sluice) iterations per step of the compiled loop, which is a `lax.scan` when the
        time length is static and there is no `sequence_length`; never changes results.

    Returns:
      (outputs, final_state): outputs shaped like the inputs' batch and time with the cell's
      output size last (a structure like `cell.output_size`), and the state after each row's
      last step.

    Raises:
      TypeError: `cell` is not a cell.
      ValueError: inputs of rank < 3 or unknown depth, inconsistent batch or time sizes, a
        `sequence_length` that is not a vector of the batch size, or neither `initial_state`
        nor `dtype`.

    >>> cell = sl.cells.BasicLSTMCell(8)
    >>> x = sl.placeholder(sl.float32, [4, 10, 3])
    >>> outputs, state = dynamic_rnn(cell, x, dtype=sl.float32)
    >>> outputs.shape, state.h.shape
    (TensorShape([4, 10, 8]), TensorShape([4, 8]))
    """
    _check_cell("cell", cell)
    with vs.variable_scope(scope or "rnn"):
        flat_input = [core_ops.convert_to_tensor(x) for x in nest.flatten(inputs)]
        if not flat_input:
            raise ValueError("dynamic_rnn: inputs must contain at least one Tensor.")
        if hasattr(cell, "check_inputs"):  # duck-typed cells need not have it
            cell.check_inputs(nest.pack_sequence_as(inputs, flat_input))
        if not time_major:
            flat_input = [_transpose_batch_time(x) for x in flat_input]
        batch_size = _batch_size(flat_input)
        if sequence_length is not None:
            sequence_length = _sequence_length(sequence_length, batch_size)
        if initial_state is not None:
            state = initial_state
        else:
            if dtype is None:
                raise ValueError("If there is no initial_state, you must give a dtype.")
            state = default_state(cell, batch_size, dtype)
        state = to_tensors(state)
        inputs = nest.pack_sequence_as(inputs, flat_input)
        outputs, final_state = _dynamic_rnn_loop(
            cell,
            inputs,
            state,
            parallel_iterations or 32,
            swap_memory,
            sequence_length,
            dtype,
            unroll,
        )
        if not time_major:
            outputs = nest.map_structure(_transpose_batch_time, outputs)
        return outputs, final_state


def _sequence_length(sequence_length: Any, batch_size: Any) -> Tensor:
    sequence_length = fill_ops.cast(sequence_length, dtypes.int32)
    shape = sequence_length.shape
    if shape.rank not in (None, 1):
        raise ValueError(
            f"sequence_length must be a vector of length batch_size, but saw shape: {shape}"
        )
    if isinstance(batch_size, int) and shape.rank == 1 and shape[0] not in (None, batch_size):
        raise ValueError(
            f"sequence_length has {shape[0]} entries but the batch size is {batch_size}."
        )
    return core_ops.identity(sequence_length, name="sequence_length")


def _check_input_shapes(flat_input: list[Tensor]) -> tuple[Any, Any]:
    """The static (time, batch) sizes shared by every time-major input."""
    shapes = []
    for x in flat_input:
        if x.shape.rank is None or x.shape.rank < 3:
            raise ValueError(f"Shape {x.shape} of input {x.name} must have rank at least 3.")
        if not TensorShape(list(x.shape.dims[2:])).is_fully_defined():
            raise ValueError(
                "Input size (depth of inputs) must be accessible via shape inference, but saw "
                f"value None (input {x.name} of shape {x.shape})."
            )
        shapes.append(x.shape)
    time, batch = shapes[0][0], shapes[0][1]
    for s in shapes[1:]:
        if s[0] != time:
            raise ValueError(
                "Time steps is not the same for all the elements in the input in "
                f"a batch: {[str(s) for s in shapes]}."
            )
        if s[1] != batch:
            raise ValueError(
                "Batch_size is not the same for all the elements in the input: "
                f"{[str(s) for s in shapes]}."
            )
    return time, batch


def _dynamic_rnn_loop(
    cell,
    inputs,
    state,
    parallel_iterations: int,
    swap_memory: bool,
    sequence_length: Tensor | None,
    dtype: Any,
    unroll: int = 1,
) -> tuple[Any, Any]:
    flat_input = nest.flatten(inputs)
    const_time, const_batch = _check_input_shapes(flat_input)
    time_steps = const_time if const_time is not None else fill_ops.shape(flat_input[0])[0]
    batch_size = _batch_size(flat_input)
    out_dtype = dtypes.as_dtype(dtype) if dtype is not None else state_dtype(state)
    flat_output_size = [size_shape(s).as_list() for s in nest.flatten(cell.output_size)]

    def zeros(leading: list, size: list) -> Tensor:
        z = fill_ops.zeros(leading + size, dtype=out_dtype)
        z.set_shape([d if isinstance(d, int) else None for d in leading] + size)
        return z

    flat_zero_output = [zeros([batch_size], s) for s in flat_output_size]
    buffers = tuple(zeros([time_steps, batch_size], s) for s in flat_output_size)
    if sequence_length is not None:
        max_length = reduction_ops.reduce_max(sequence_length)
        loop_bound = math_ops.minimum(time_steps, math_ops.maximum(1, max_length))
    else:
        loop_bound = time_steps
    time = core_ops.constant(0, dtype=dtypes.int32, name="time")

    def time_step(t, buffers, state):
        flat_x = []
        for x in flat_input:
            x_t = buffer_ops.read_row(x, t)
            x_t.set_shape(x.shape[1:])
            flat_x.append(x_t)
        output, new_state = cell(nest.pack_sequence_as(inputs, flat_x), state)
        nest.assert_same_structure(cell.output_size, output, "cell's output_size and output")
        nest.assert_same_structure(state, new_state, "cell's state and new state")
        flat_out, flat_state = nest.flatten(output), nest.flatten(new_state)
        if sequence_length is not None:
            done = math_ops.greater_equal(t, sequence_length)
            flat_out = [_copy_through(done, z, o) for z, o in zip(flat_zero_output, flat_out)]
            flat_state = [
                _copy_through(done, s, n) for s, n in zip(nest.flatten(state), flat_state)
            ]
        written = tuple(
            buffer_ops.write_row(buf, t, o, write_once=True) for buf, o in zip(buffers, flat_out)
        )
        return t + 1, written, nest.pack_sequence_as(state, flat_state)

    _, buffers, final_state = while_loop(
        lambda t, *_: math_ops.less(t, loop_bound),
        time_step,
        (time, buffers, state),
        parallel_iterations=parallel_iterations,
        swap_memory=swap_memory,
        maximum_iterations=time_steps,
        name="while",
        unroll=unroll,
    )
    for buf, size in zip(buffers, flat_output_size):
        buf.set_shape([const_time, const_batch] + size)
    outputs = nest.pack_sequence_as(cell.output_size, list(buffers))
    return outputs, final_state


def _copy_through(done: Tensor, old: Any, new: Any) -> Any:
    """Rows of `old` where `done`, else of `new` (a scalar or a TensorArray in the state is
    always `new`, as in TF1)."""
    if is_tensor_array(new) or new.shape.rank == 0:
        return new
    result = gather_ops.where(done, old, new)
    result.set_shape(old.shape)
    return result


def _reverse_sequence(x: Tensor, lengths: Tensor | None, time_major: bool) -> Tensor:
    """`x` with the first `lengths[b]` steps of each row b reversed (all steps when None)."""
    time_axis = 0 if time_major else 1
    if lengths is None:
        return array_ops.reverse(x, [time_axis])
    batch_major = _transpose_batch_time(x) if time_major else x
    steps = fill_ops.range(fill_ops.shape(batch_major)[1])  # [T]
    lengths = array_ops.expand_dims(fill_ops.cast(lengths, dtypes.int32), 1)  # [B, 1]
    reversed_steps = math_ops.subtract(math_ops.subtract(lengths, 1), steps)  # [B, T]
    index = gather_ops.where_v2(math_ops.less(steps, lengths), reversed_steps, steps)
    result = gather_ops.gather(batch_major, index, axis=1, batch_dims=1)
    result.set_shape(batch_major.shape)
    return _transpose_batch_time(result) if time_major else result


@export(
    "nn.bidirectional_dynamic_rnn",
    "nn.rnn_cell.bidirectional_dynamic_rnn",
    "contrib.rnn.bidirectional_dynamic_rnn",
)
def bidirectional_dynamic_rnn(
    cell_fw: Any,
    cell_bw: Any,
    inputs: Any,
    sequence_length: Any = None,
    initial_state_fw: Any = None,
    initial_state_bw: Any = None,
    dtype: Any = None,
    parallel_iterations: int | None = None,
    swap_memory: bool = False,
    time_major: bool = False,
    scope: Any = None,
) -> tuple[tuple, tuple]:
    """A forward and a backward `dynamic_rnn` over the same inputs (TF1
    `tf.nn.bidirectional_dynamic_rnn`).

    The backward cell reads each row's first `sequence_length` steps in reverse; its outputs
    are reversed back, so both outputs are aligned with the inputs. Weights live under
    `<scope>/fw/<cell name>/...` and `<scope>/bw/<cell name>/...` (scope default
    "bidirectional_rnn").

    Args:
      cell_fw, cell_bw: the two cells.
      inputs, sequence_length, dtype, parallel_iterations, swap_memory, time_major: as in
        `dynamic_rnn`.
      initial_state_fw, initial_state_bw: the initial states of the two directions.
      scope: the variable scope.

    Returns:
      ((output_fw, output_bw), (output_state_fw, output_state_bw)).
    """
    _check_cell("cell_fw", cell_fw)
    _check_cell("cell_bw", cell_bw)
    with vs.variable_scope(scope or "bidirectional_rnn"):
        with vs.variable_scope("fw") as fw_scope:
            output_fw, state_fw = dynamic_rnn(
                cell_fw,
                inputs,
                sequence_length,
                initial_state_fw,
                dtype,
                parallel_iterations,
                swap_memory,
                time_major,
                scope=fw_scope,
            )
        with vs.variable_scope("bw") as bw_scope:
            inputs_reversed = nest.map_structure(
                lambda x: _reverse_sequence(
                    core_ops.convert_to_tensor(x), sequence_length, time_major
                ),
                inputs,
            )
            tmp, state_bw = dynamic_rnn(
                cell_bw,
                inputs_reversed,
                sequence_length,
                initial_state_bw,
                dtype,
                parallel_iterations,
                swap_memory,
                time_major,
                scope=bw_scope,
            )
    output_bw = nest.map_structure(lambda x: _reverse_sequence(x, sequence_length, time_major), tmp)
    return (output_fw, output_bw), (state_fw, state_bw)
