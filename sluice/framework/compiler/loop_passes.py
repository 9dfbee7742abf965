"""Graph passes over while frames, applied by the compiled engine before it lowers a loop
(`SessionConfig(graph_passes=...)`; `DEFAULT_PASSES` unless told otherwise: see README,
Benchmarks).

Each pass finds a pattern in one frame and says how to compute it better; `lowering.run_loop`
applies what they find. The graph itself is never changed, so the interpreted engine (and a
session with the pass switched off) runs the very same ops: the equivalence tests compare them.

- `hoist_input_projection`: a TF1 cell's `concat([x_t, h]) @ W`, where x_t is row t of a loop
  constant X and W is loop invariant, is `x_t @ W[:n] + h @ W[n:]`. The x part of every step is
  one large matmul `X @ W[:n]` before the loop; each iteration only reads its row. A Keras
  cell's `x_t @ W` is hoisted whole. This is the input projection that cuDNN and hand-written
  RNNs hoist.
- `batch_weight_gradient`: in a backward loop, the gradient of a loop-invariant weight is
  accumulated as `acc += a_j^T @ g_j` with `a_j` popped from a forward stack. The pass leaves the
  accumulator alone in the loop, saves `g_j` per iteration instead, and after the loop computes
  the whole sum as ONE matmul over (iterations x batch): `A^T @ G`, with A the saved stack.
- `transpose_invariant_weight`: a loop's `g @ W^T` (or `W^T @ g`) with W loop invariant, such as
  the backward step of every RNN cell (`dz @ kernel^T`), multiplies by a transposed copy of W
  made once before the loop. XLA:CPU otherwise repacks the transposed weight in every
  iteration: the backward recurrent matmul took about twice as long as the forward one.
- `packed_recurrent_matmul` (CPU, float32, where sluice's native kernel is built: see
  `sluice.framework.native`): a loop's `a @ W` or `a @ W^T` with W loop invariant and `a` a few
  rows (an RNN's batch) runs sluice's own kernel on W packed into column panels once before the
  loop, both the forward `[x, h] @ kernel` and the backward `dz @ kernel^T` of every RNN cell.
  XLA:CPU's matmul library repacks W in every call. Where it applies it takes the place of
  `transpose_invariant_weight`; elsewhere (a GPU, a distribution, other dtypes, many rows) that
  pass and XLA's dot run as before. Columns nobody uses are not computed: a TF1 cell's backward
  `dz @ kernel^T` is split into the gradients of x_t and h, and when x_t's piece is unused (the
  inputs need no gradient, as in training) the kernel multiplies by the rows of h alone.

- `fused_lstm_cell` (CPU, float32, where the native kernel is built): an LSTM cell's step, its
  matmul and its gates, as one call of the native kernel (see `fused_cells`).
- `fused_lstm_cell_grad` (CPU, float32, where the native kernel is built): the backward step of
  such a cell's gates, in its gradient's loop, as one call of the native kernel reading the
  forward loop's saved rows in place (see `fused_cell_grads`).
- `unwritten_loop_buffers` (CPU, where sluice's native library is built): a loop that runs
  exactly its bound (a lax.scan) writes one row of each saved value per iteration. A scan fills
  those buffers with zeros first, tens of MB per step for an LSTM; the pass runs the loop with
  buffers taken unfilled, every row of which the loop writes before anything reads them (not a
  loop that swaps memory or holds one that does: its rows may live in host memory).

(Gate arithmetic is not a pass of ours: XLA fuses a cell's elementwise gate ops into one kernel
per iteration already; see the fusion counts of `python -m benchmarks.step_breakdown`.)
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sluice.framework import native
from sluice.framework.compiler.row_sink import RowSink
from sluice.framework.control_flow.structure import (
    constant_int,
    is_loop_constant_enter,
    loop_merge_of_body_value,
    variable_name_of,
)
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Operation, Tensor

PASSES = (
    "hoist_input_projection",
    "batch_weight_gradient",
    "transpose_invariant_weight",
    "packed_recurrent_matmul",
    "fused_lstm_cell",
    "fused_lstm_cell_grad",
    "unwritten_loop_buffers",
)
# what a session applies unless told otherwise: those that paid on every CPU we measured;
# hoisting the input projection cost 2-6% on the Intel machine and gained 1-7% on the AMD one
DEFAULT_PASSES = (
    "batch_weight_gradient",
    "transpose_invariant_weight",
    "packed_recurrent_matmul",
    "fused_lstm_cell",
    "fused_lstm_cell_grad",
    "unwritten_loop_buffers",
)
# passes that call sluice's native CPU kernels: a step on another backend or under a
# distribution drops them (see `native`)
NATIVE_PASSES = (
    "packed_recurrent_matmul",
    "fused_lstm_cell",
    "fused_lstm_cell_grad",
    "unwritten_loop_buffers",
)
# the rows (an RNN's batch) up to which `packed_recurrent_matmul` runs the native kernel
PACKED_MAX_ROWS = 128


@dataclasses.dataclass(frozen=True)
class InputProjection:
    """`matmul = concat([row, h]) @ weight` (or `row @ weight`), row = ReadRow(sequence, index)."""

    matmul: Operation
    read_row: Operation
    sequence: Tensor  # the loop constant X outside the loop: its Enter's input
    weight: Tensor  # the weight's value inside the loop (an Enter, or an invariant variable read)
    weight_handle: str | None  # the variable the weight reads, when it is a ReadVariableOp
    n_inputs: int | None  # rows of the weight that multiply x_t; None: all (no concat)


@dataclasses.dataclass(frozen=True)
class BatchedWeightGradient:
    """`add = acc + matmul(pop(stack), g, transpose_a=True)`, the accumulator's only update."""

    add: Operation
    matmul: Operation
    merge: Operation  # the accumulator's loop Merge
    stack_merge: Operation  # the loop Merge that carries the stack the pop reads


@dataclasses.dataclass(frozen=True)
class TransposedWeight:
    """`matmul = a @ weight^T` (`transposed_input` 1) or `weight^T @ b` (0), weight invariant."""

    matmul: Operation
    transposed_input: int
    weight: Tensor  # the weight's value inside the loop (an Enter, or an invariant variable read)
    weight_handle: str | None  # the variable the weight reads, when it is a ReadVariableOp


def hoist_input_projection(
    frame_ops: list[Operation], ctx: Any, written: set
) -> list[InputProjection]:
    found = []
    members = set(frame_ops)
    for op in frame_ops:
        if op.type != "MatMul" or op.get_attr("transpose_a") or op.get_attr("transpose_b"):
            continue
        lhs, weight = op.inputs[0].op, op.inputs[1]
        if lhs.type == "ReadRow":
            row, n_inputs = lhs, None
        elif (
            lhs.type == "ConcatV2"
            and lhs in members
            and len(lhs.inputs) == 3
            and constant_int(lhs.inputs[2]) in (1, -1)
            and op.inputs[0].shape.rank == 2
            and lhs.inputs[0].shape.rank == 2
            and lhs.inputs[0].shape.as_list()[-1] is not None
        ):
            row, n_inputs = lhs.inputs[0].op, lhs.inputs[0].shape.as_list()[-1]
        else:
            continue
        if row.type != "ReadRow" or not is_loop_constant_enter(row.inputs[0].op, ctx):
            continue
        sequence = row.inputs[0].op.inputs[0]
        if sequence.shape.rank != 3:
            continue
        invariant, handle = invariant_weight(weight, ctx, written)
        if not invariant:
            continue
        found.append(InputProjection(op, row, sequence, weight, handle, n_inputs))
    return found


def batch_weight_gradient(
    frame_ops: list[Operation], ctx: Any, consumers: dict
) -> list[BatchedWeightGradient]:
    found = []
    members = set(frame_ops)
    for add in frame_ops:
        if add.type != "AddV2" or add.control_flow_context is not ctx:
            continue
        acc, product = add.inputs
        matmul = product.op
        if (
            matmul.type != "MatMul"
            or not matmul.get_attr("transpose_a")
            or matmul.get_attr("transpose_b")
            or matmul not in members
            or matmul.control_flow_context is not ctx
        ):
            continue
        if consumers.get(product, []) != [add] or [
            c.type for c in consumers.get(add.outputs[0], [])
        ] != ["NextIteration"]:
            continue
        merge = loop_merge_of_body_value(acc, ctx)
        pop = matmul.inputs[0]
        if merge is None or pop.op.type != "StackPopV2" or pop.value_index != 1:
            continue
        if pop.op.control_flow_context is not ctx:
            continue  # a guarded pop (inside a cond) saves only some iterations
        stack_merge = loop_merge_of_body_value(pop.op.inputs[0], ctx)
        if stack_merge is None or merge.inputs[1].op.inputs[0] is not add.outputs[0]:
            continue
        if consumers.get(merge.outputs[0], []) and any(
            c.type != "Switch" for c in consumers[merge.outputs[0]]
        ):
            continue
        found.append(BatchedWeightGradient(add, matmul, merge, stack_merge))
    return found


def transpose_invariant_weight(
    frame_ops: list[Operation], ctx: Any, written: set
) -> list[TransposedWeight]:
    found = []
    for op in frame_ops:
        if op.type != "MatMul" or op.control_flow_context is not ctx:
            continue
        if op.get_attr("transpose_a") == op.get_attr("transpose_b"):
            continue  # neither transposed, or both (then a transposed product would be needed)
        index = 1 if op.get_attr("transpose_b") else 0
        weight = op.inputs[index]
        invariant, handle = invariant_weight(weight, ctx, written)
        if not invariant:
            continue
        found.append(TransposedWeight(op, index, weight, handle))
    return found


@dataclasses.dataclass(frozen=True)
class PackedWeight:
    """`matmul = a @ weight` (or `a @ weight^T`, `transposed`), weight loop invariant."""

    matmul: Operation
    transposed: bool
    weight: Tensor  # the weight's value inside the loop (an Enter, or an invariant variable read)
    weight_handle: str | None  # the variable the weight reads, when it is a ReadVariableOp
    columns: tuple[int, int] | None = None  # the only output columns used, when not all are


def packed_recurrent_matmul(
    frame_ops: list[Operation], ctx: Any, written: set, consumers: dict | None = None
) -> list[PackedWeight]:
    found = []
    for op in frame_ops:
        if op.type != "MatMul" or op.control_flow_context is not ctx or op.get_attr("transpose_a"):
            continue
        weight = op.inputs[1]
        if op.inputs[0].dtype != dtypes.float32 or weight.dtype != dtypes.float32:
            continue
        invariant, handle = invariant_weight(weight, ctx, written)
        if not invariant:
            continue
        columns = None if consumers is None else used_columns(op.outputs[0], consumers)
        found.append(PackedWeight(op, bool(op.get_attr("transpose_b")), weight, handle, columns))
    return found


def used_columns(product: Tensor, consumers: dict) -> tuple[int, int] | None:
    """(lo, hi) when `product`'s one use is a SplitV along its columns of which only the pieces in
    columns lo:hi have consumers (a concat's gradient where x_t's piece is unused); None when
    every column may be used or the split is not known while the graph is built."""
    users = consumers.get(product, [])
    if len(users) != 1 or users[0].type != "SplitV" or users[0].inputs[0] is not product:
        return None
    split = users[0]
    sizes, axis = known_value(split.inputs[1]), known_value(split.inputs[2])
    if sizes is None or axis is None or np.ndim(axis) != 0 or int(axis) not in (1, -1):
        return None
    sizes = np.asarray(sizes).reshape(-1)
    if len(sizes) != len(split.outputs) or (sizes < 0).any():
        return None
    used = [k for k, piece in enumerate(split.outputs) if consumers.get(piece)]
    if not used or len(used) == len(sizes) or used != list(range(used[0], used[-1] + 1)):
        return None
    edges = np.concatenate([[0], np.cumsum(sizes)])
    return int(edges[used[0]]), int(edges[used[-1] + 1])


def packed_matmul(p: PackedWeight, weight: Any) -> Any:
    """The replacement of `p.matmul`: fn(env) -> its value, by the native kernel on the weight
    packed once (here, before the loop; the barrier keeps the packing out of the loop). A left
    operand of more than PACKED_MAX_ROWS rows keeps XLA's dot."""
    n, left = weight.shape[0 if p.transposed else 1], p.matmul.inputs[0]
    lo, hi = p.columns or (0, n)
    if (lo, hi) != (0, n):  # the columns used; the others are zeros nobody reads
        weight = weight[lo:hi] if p.transposed else weight[:, lo:hi]
    panels = jax.lax.optimization_barrier(native.pack_panels(weight, transposed=p.transposed))
    weight = jnp.swapaxes(weight, 0, 1) if p.transposed else weight  # XLA's dot, many rows
    if (lo, hi) == (0, n):
        return lambda env: _panel_or_dot(env[left][0], panels, weight)
    return lambda env: jnp.pad(_panel_or_dot(env[left][0], panels, weight), ((0, 0), (lo, n - hi)))


def pretransposed_matmul(t: TransposedWeight, weight: Any) -> Any:
    """The replacement of `t.matmul`: fn(env) -> its value, multiplying by `weight^T` made once.
    The barrier keeps XLA from folding the transpose back into the loop's dot."""
    transposed = jax.lax.optimization_barrier(jnp.swapaxes(weight, 0, 1))
    other = t.matmul.inputs[1 - t.transposed_input]
    if t.transposed_input == 1:
        return lambda env: jnp.matmul(env[other][0], transposed)
    return lambda env: jnp.matmul(transposed, env[other][0])


def hoisted_matmul(p: InputProjection, sequence: Any, weight: Any, packed: bool = False) -> Any:
    """The replacement of `p.matmul`: fn(env) -> its value, from `sequence @ weight[:n]` computed
    once for all steps (here, before the loop) and the loop's own `h @ weight[n:]` (by the native
    kernel on `weight[n:]` packed once, when `packed`)."""
    steps, batch, n = sequence.shape
    dtype = p.matmul.outputs[0].dtype
    projected = jnp.matmul(jnp.reshape(sequence, (steps * batch, n)), weight[:n]).astype(dtype)
    projected = jnp.reshape(projected, (steps, batch, -1))  # every step's x_t @ W[:n], at once
    index = p.read_row.inputs[1]
    if p.n_inputs is None:  # x_t @ W: the row is all of it
        return lambda env: jax.lax.dynamic_index_in_dim(projected, env[index][0], 0, keepdims=False)
    state, recurrent = p.matmul.inputs[0].op.inputs[1], weight[n:]  # sliced once, not per step
    panels = jax.lax.optimization_barrier(native.pack_panels(recurrent)) if packed else None

    def matmul(env: dict) -> Any:
        row = jax.lax.dynamic_index_in_dim(projected, env[index][0], 0, keepdims=False)
        h = env[state][0]
        if panels is not None:
            return row + _panel_or_dot(h, panels, recurrent)
        return row + jnp.matmul(h, recurrent).astype(dtype)

    return matmul


def batched_product(saved: Any, count: Any, factors: Any, exact: bool) -> Any:
    """sum_j a_j^T @ g_j over the backward iterations j as one matmul, where backward iteration j
    popped a_j = saved row count-1-j and g_j is row j of `factors` (zeros past the last one).
    `exact`: the loop ran all its rows, so the pops are the saved rows reversed."""
    if saved.shape[0] == 0:  # a loop of zero steps saved nothing: the sum is empty
        shape = (saved.shape[-1], factors.shape[-1])
        return jnp.zeros(shape, jnp.result_type(saved.dtype, factors.dtype))
    a = jnp.flip(saved, 0)  # row i: saved row rows-1-i
    if not exact:  # shift so that row j is saved row count-1-j; rows past count meet zero factors
        a = jnp.roll(a, count - a.shape[0], axis=0)
    # contract iterations and batch together: one (k x rows*batch) @ (rows*batch x n) matmul
    return jax.lax.dot_general(a, factors, (((0, 1), (0, 1)), ((), ())))


def batched_products(saved: list, counts: list, factors: Any, exact: bool) -> list:
    """`batched_product` of each saved buffer against the same factors (a Keras cell's kernel and
    recurrent kernel, both summing `... @ dz`): ONE matmul of the buffers side by side where they
    were saved by one loop alike, then split. XLA's dot of the input's few columns against the
    long factor matrix ran at a fifth of the joined product's rate (W2: 22 against 99 GFLOP/s)."""
    same = all(
        c is counts[0] and s.shape[:-1] == saved[0].shape[:-1] and s.dtype == saved[0].dtype
        for s, c in zip(saved, counts)
    )
    if len(saved) == 1 or not same:
        return [batched_product(s, c, factors, exact) for s, c in zip(saved, counts)]
    joined = batched_product(jnp.concatenate(saved, axis=-1), counts[0], factors, exact)
    return jnp.split(joined, np.cumsum([s.shape[-1] for s in saved])[:-1].tolist(), axis=0)


def scan_into_unwritten(
    step: Any, init: Any, length: int, unroll: int, sink: RowSink | None = None
) -> tuple:
    """`jax.lax.scan(step, init, None, length)`, the per-iteration outputs written row by row into
    buffers taken unfilled (`native.unwritten_buffers`) where a scan zero-fills them first. Every
    iteration runs and writes its row of every output, so no unwritten row is ever read. A pass
    may write some rows itself through `sink` (a dict output's buffer, by its key), open while
    an iteration is traced; those buffers are carried on as the pass left them."""
    _, row_shapes = jax.eval_shape(step, init, None)
    paths, tree = jax.tree_util.tree_flatten_with_path(row_shapes)
    shapes = [jax.ShapeDtypeStruct((length, *r.shape), r.dtype) for _, r in paths]
    names = [_key_of(path) for path, _ in paths]

    def body(i: Any, carry: tuple) -> tuple:
        state, buffers = carry
        if sink is not None:
            sink.open({n: b for n, b in zip(names, buffers) if n is not None}, i)
        try:
            state, outputs = step(state, None)
        finally:
            done = sink.close() if sink is not None else {}
        written = [
            done[n] if n in done else jax.lax.dynamic_update_index_in_dim(b, row, i, 0)
            for n, b, row in zip(names, buffers, tree.flatten_up_to(outputs))
        ]
        return state, written

    state, buffers = jax.lax.fori_loop(
        0, length, body, (init, native.unwritten_buffers(shapes)), unroll=unroll
    )
    return state, jax.tree_util.tree_unflatten(tree, buffers)


def _key_of(path: tuple) -> str | None:
    """The dict key of an output that is one array under one key (a push's rows), else None."""
    if len(path) == 1 and isinstance(path[0], jax.tree_util.DictKey):
        return path[0].key
    return None


def invariant_weight(t: Tensor, ctx: Any, written: set) -> tuple[bool, str | None]:
    """Whether `t` is the same in every iteration (a loop-constant Enter, or a read of a variable
    the loop never writes), and the variable it reads, if any."""
    handle = _invariant_read(t, ctx, written)
    return handle is not None or is_loop_constant_enter(t.op, ctx), handle


def _panel_or_dot(a: Any, panels: Any, weight: Any) -> Any:
    """`a @ weight` by the native kernel on `panels = pack_panels(weight)`, or by XLA's dot when
    `a` has more than PACKED_MAX_ROWS rows."""
    if a.shape[0] > PACKED_MAX_ROWS:
        return jnp.matmul(a, weight)
    return native.panel_matmul(a, panels, weight.shape[1])


def known_value(t: Tensor) -> Any:
    """The value of `t` known while building the graph, or None: a Const, through Enters and
    Identities, or a backward loop's pop of a stack whose pushes all save one Const (the forward
    concat's axis, which the concat's gradient reads)."""
    t = _through_enters(t)
    if t.op.type == "StackPopV2":
        values = [known_value(push.inputs[1]) for push in pushes_of(t.op)]
        if not values or any(v is None or not np.array_equal(v, values[0]) for v in values):
            return None
        return values[0]
    return t.op.get_attr("value") if t.op.type == "Const" else None


def pushes_of(pop: Operation) -> list[Operation]:
    """The StackPushV2 ops whose stack `pop` reads: sluice's stacks are values carried through
    the loops (Enter, Merge, Switch, Exit, NextIteration) from the forward loop's pushes."""
    seen, todo, pushes = set(), [pop.inputs[0]], []
    while todo:
        op = todo.pop().op
        if op in seen:
            continue
        seen.add(op)
        if op.type == "StackPushV2":
            pushes.append(op)
            todo.append(op.inputs[0])
        elif op.type == "Merge":
            todo.extend(op.inputs)
        elif op.type in ("Switch", "Enter", "Exit", "Identity", "NextIteration"):
            todo.append(op.inputs[0])
    return pushes


def _through_enters(t: Tensor) -> Tensor:
    while t.op.type in ("Enter", "Identity"):
        t = t.op.inputs[0]
    return t


def _invariant_read(t: Tensor, ctx: Any, written: set) -> str | None:
    """The variable `t` reads, when it is a read of a loop-constant handle the loop never writes."""
    if t.op.type != "ReadVariableOp" or not is_loop_constant_enter(t.op.inputs[0].op, ctx):
        return None
    name = variable_name_of(t.op.inputs[0])
    return None if name is None or name in written else name
