"""The `fused_lstm_cell` loop pass: an LSTM cell's step found in a while frame and run as ONE
call of sluice's native kernel (`native.lstm_cell`), matmul and gates together.

A TF1 `BasicLSTMCell`/`LSTMCell` (without peepholes or projection) and a Keras `LSTMCell` both
build, inside the loop,

    z = BiasAdd(concat([x, h]) @ W, b)      or   BiasAdd(x @ W + h @ U, b)   (Keras)
    s0, s1, s2, s3 = Split(z, 4, axis=1)
    each slice, plus an optional scalar (TF1's forget_bias), through Sigmoid or (one) Tanh
    c = f * c_prev + i * g,   h = o * Tanh(c)

with W, U and b loop invariant. XLA lowers the gate arithmetic after the matmul as about seven
kernels per iteration on one thread; the native kernel applies it per panel while the product
is in cache, on both threads that share the product. The pass gives the seven values the
graph's ops compute (the four activations, c, tanh(c) and h: what the stack pushes save and
the next iteration reads); the ops it leaves (the matmul, the split, the products in c) then
have no reader and XLA drops them. In a loop that runs exactly its bound (a scan), the values
the gradient's stacks save (the gates and tanh(c)) go straight into the loop's buffers of saved
rows (`row_sink`): without it each is written to an array of its own, then copied into its
buffer by one more XLA kernel per value and iteration. The graph is not changed: the
interpreted engine runs the ops themselves, and the equivalence tests compare the two.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sluice.framework import native
from sluice.framework.compiler.loop_passes import (
    PACKED_MAX_ROWS,
    invariant_weight,
    known_value,
)
from sluice.framework.compiler.row_sink import RowSink
from sluice.framework.control_flow.structure import constant_int
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Operation, Tensor

_ACTIVATIONS = ("Sigmoid", "Tanh")
_SHAPE_READERS = ("Shape", "ShapeN", "Size", "Rank")


@dataclasses.dataclass(frozen=True)
class FusedLstmCell:
    """One LSTM step of a frame (see the module's docstring)."""

    matmuls: tuple[Operation, ...]  # a @ W, or x @ W and h @ U
    lefts: tuple[Tensor, ...]  # the matmuls' left operands, joined along K: concat([x, h])
    weights: tuple[Tensor, ...]  # their invariant weights, stacked along K: [W; U]
    weight_handles: tuple[str | None, ...]  # the variables the weights read, where they do
    bias: Tensor
    bias_handle: str | None
    activations: tuple[Operation, ...]  # the Sigmoid/Tanh of slices 0..3, in z's order
    offsets: tuple[float, ...]  # the scalar added to each slice first (0.0 where none)
    slices: tuple[int, int, int, int]  # the slices that are i, f, g and o
    c_prev: Tensor
    cell: Operation  # c = f * c_prev + i * g
    squashed: Operation  # tanh(c)
    output: Operation  # h = o * tanh(c)

    @property
    def replaced(self) -> tuple[Operation, ...]:
        """The ops whose values the fused call gives, in the order `native.lstm_cell` returns."""
        return (*self.activations, self.cell, self.squashed, self.output)


def fused_lstm_cell(
    frame_ops: list[Operation], ctx: Any, written: set, consumers: dict
) -> list[FusedLstmCell]:
    found = []
    for split in frame_ops:
        if split.type == "Split" and split.control_flow_context is ctx:
            cell = _match(split, ctx, written, consumers)
            if cell is not None:
                found.append(cell)
    return found


def _match(split: Operation, ctx: Any, written: set, consumers: dict) -> FusedLstmCell | None:
    z = split.inputs[1]
    if split.get_attr("num_split") != 4 or constant_int(split.inputs[0]) not in (1, -1):
        return None
    if z.shape.rank != 2 or z.dtype != dtypes.float32 or not _read_only_by(z, split, consumers):
        return None
    bias_add = z.op
    if bias_add.type != "BiasAdd" or bias_add.control_flow_context is not ctx:
        return None
    pre, bias = bias_add.inputs
    bias_invariant, bias_handle = invariant_weight(bias, ctx, written)
    products = _products(pre, ctx, written, consumers)
    if not bias_invariant or products is None or not _read_only_by(pre, bias_add, consumers):
        return None
    gates = [_gate(piece, ctx, consumers) for piece in split.outputs]
    if any(g is None for g in gates):
        return None
    activations = tuple(act for act, _ in gates)
    candidates = [s for s, act in enumerate(activations) if act.type == "Tanh"]
    if len(candidates) != 1:
        return None
    roles = _roles(activations, candidates[0], ctx, consumers)
    if roles is None:
        return None
    slices, c_prev, cell, squashed, output = roles
    matmuls, lefts, weights, handles = zip(*products)
    return FusedLstmCell(
        matmuls,
        lefts,
        weights,
        handles,
        bias,
        bias_handle,
        activations,
        tuple(offset for _, offset in gates),
        slices,
        c_prev,
        cell,
        squashed,
        output,
    )


def _products(pre: Tensor, ctx: Any, written: set, consumers: dict) -> list | None:
    """[(matmul, left, weight, handle)] of `pre = a @ W` or `pre = x @ W + h @ U`, weights
    invariant, float32 and 2-D, products read by nothing else; None otherwise."""
    terms = [pre]
    if pre.op.type == "AddV2" and pre.op.control_flow_context is ctx:
        terms = list(pre.op.inputs)
        if not all(_read_only_by(t, pre.op, consumers) for t in terms):
            return None
    products = []
    for t in terms:
        matmul = t.op
        if matmul.type != "MatMul" or matmul.control_flow_context is not ctx:
            return None
        if matmul.get_attr("transpose_a") or matmul.get_attr("transpose_b"):
            return None
        left, weight = matmul.inputs
        if left.shape.rank != 2 or weight.shape.rank != 2 or weight.dtype != dtypes.float32:
            return None
        invariant, handle = invariant_weight(weight, ctx, written)
        if not invariant:
            return None
        products.append((matmul, left, weight, handle))
    return products


def _read_only_by(t: Tensor, op: Operation, consumers: dict) -> bool:
    """Whether `op` is the one reader of `t`'s value: others may read its shape only (a Keras
    cell's add reads its terms' shapes for its gradient). The ops the pass leaves are still
    computed; this keeps XLA from having to keep them (a matmul computed twice)."""
    users = consumers.get(t, [])
    return op in users and all(u is op or u.type in _SHAPE_READERS for u in users)


def _gate(piece: Tensor, ctx: Any, consumers: dict) -> tuple[Operation, float] | None:
    """(the Sigmoid/Tanh of `piece`, the scalar added to it first), read by nothing else."""
    users = consumers.get(piece, [])
    if len(users) != 1 or users[0].control_flow_context is not ctx:
        return None
    op, offset = users[0], 0.0
    if op.type == "AddV2":
        other = op.inputs[1] if op.inputs[0] is piece else op.inputs[0]
        value = known_value(other)
        if value is None or np.ndim(value) != 0 or other.dtype != dtypes.float32:
            return None
        offset = float(np.float32(value))
        users = consumers.get(op.outputs[0], [])
        if len(users) != 1 or users[0].control_flow_context is not ctx:
            return None
        op = users[0]
    return (op, offset) if op.type in _ACTIVATIONS else None


def _roles(activations: tuple, candidate: int, ctx: Any, consumers: dict) -> tuple | None:
    """(slices (i, f, g, o), c_prev, c's Add, tanh(c)'s Tanh, h's Mul) where the activations
    make c = f * c_prev + i * g and h = o * tanh(c); None where they do not."""
    outputs = {act.outputs[0]: s for s, act in enumerate(activations)}
    g = activations[candidate].outputs[0]
    for product in _users(g, "Mul", ctx, consumers):
        i_value = _other(product, g)
        i = outputs.get(i_value)
        if i is None or i == candidate:
            continue
        for cell in _users(product.outputs[0], "AddV2", ctx, consumers):
            forget_product = _other(cell, product.outputs[0]).op
            if forget_product.type != "Mul" or forget_product.control_flow_context is not ctx:
                continue
            f = next((outputs[t] for t in forget_product.inputs if t in outputs), None)
            if f is None or f in (i, candidate):
                continue
            c_prev = _other(forget_product, activations[f].outputs[0])
            if c_prev in outputs or c_prev.dtype != dtypes.float32:
                continue
            (o,) = {0, 1, 2, 3} - {i, f, candidate}
            for squashed in _users(cell.outputs[0], "Tanh", ctx, consumers):
                for output in _users(squashed.outputs[0], "Mul", ctx, consumers):
                    if _other(output, squashed.outputs[0]) is activations[o].outputs[0]:
                        return (i, f, candidate, o), c_prev, cell, squashed, output
    return None


def _users(t: Tensor, kind: str, ctx: Any, consumers: dict) -> list[Operation]:
    """The ops of type `kind` in the frame that read `t`."""
    return [
        op
        for op in dict.fromkeys(consumers.get(t, []))
        if op.type == kind and op.control_flow_context is ctx
    ]


def _other(op: Operation, t: Tensor) -> Tensor:
    """The input of the two-input `op` that is not `t` (`t` itself when both are)."""
    return op.inputs[1] if op.inputs[0] is t else op.inputs[0]


def inputs_ready(cell: FusedLstmCell, position: dict) -> bool:
    """Whether the fused call's inputs have values when the first op it replaces is evaluated:
    each made by an op earlier in the frame's order (`position`: op -> index), a loop variable
    (a Switch's output) or a loop constant (an Enter's), bound before the body runs, through
    Identities."""
    first = min(position.get(op, -1) for op in cell.replaced)
    for t in (*cell.lefts, cell.c_prev):
        while position.get(t.op, -1) >= first and t.op.type == "Identity":
            t = t.op.inputs[0]
        if t.op.type not in ("Switch", "Enter") and not 0 <= position.get(t.op, first) < first:
            return False
    return True


def saving_pushes(cell: FusedLstmCell, ctx: Any, consumers: dict) -> dict[int, str]:
    """{j: the name of a StackPushV2 in the frame that saves `cell.replaced[j]`'s value}: the
    values the gradient's loop pops (the gates and tanh(c)), which the kernel can write straight
    into the loop's buffers of saved rows (see `row_sink`)."""
    pushes = {}
    for j, op in enumerate(cell.replaced):
        for user in consumers.get(op.outputs[0], []):
            saves = user.type == "StackPushV2" and user.inputs[1] is op.outputs[0]
            if saves and user.control_flow_context is ctx:
                pushes[j] = user.name
                break
    return pushes


def fused_step(
    cell: FusedLstmCell,
    weights: list,
    bias: Any,
    sink: RowSink | None = None,
    pushes: dict[int, str] | None = None,
) -> Any:
    """fn(env) -> the seven values of `cell.replaced`, computed once per iteration (kept in env),
    from the weights and bias read before the loop and packed there once. A batch of more than
    PACKED_MAX_ROWS rows, or a c_prev of another shape than [batch, units], runs the same
    arithmetic in XLA's ops. Where `sink` is open, the values `pushes` save are written as rows
    of the loop's buffers by the kernel itself."""
    weight = weights[0] if len(weights) == 1 else jnp.concatenate(weights, axis=0)
    panels, packed_bias = native.pack_gate_panels(weight, bias)
    panels, packed_bias = jax.lax.optimization_barrier((panels, packed_bias))
    key = ("fused_lstm_cell", cell.cell)

    def step(env: dict) -> list:
        if key not in env:
            lefts = [_value(t, env) for t in cell.lefts]
            a = lefts[0] if len(lefts) == 1 else jnp.concatenate(lefts, axis=1)
            c_prev = _value(cell.c_prev, env)
            rows = a.shape[0]
            if rows > PACKED_MAX_ROWS or tuple(c_prev.shape) != (rows, weight.shape[1] // 4):
                # many rows, or a c_prev that broadcasts: XLA's ops, as the graph's would
                env[key] = reference_step(a, weight, bias, c_prev, cell.slices, cell.offsets)
            else:
                env[key] = _native_step(a, panels, packed_bias, c_prev, cell, sink, pushes or {})
        return env[key]

    return step


def _native_step(
    a: Any, panels: Any, bias: Any, c_prev: Any, cell: FusedLstmCell, sink: Any, pushes: dict
) -> list:
    """The kernel's step; the rows `pushes` save go into the sink's buffers where it is open
    (each value is then read back from its row, for the ops that the pass leaves unread)."""
    buffers = {}
    for j, name in pushes.items():
        buffer = None if sink is None else sink.buffer(name)
        if buffer is not None and tuple(buffer.shape[1:]) == tuple(c_prev.shape):
            if buffer.dtype == jnp.float32:
                buffers[j] = buffer
    rows = (sink.index, buffers) if buffers else None
    values = native.lstm_cell(a, panels, bias, c_prev, cell.slices, cell.offsets, rows=rows)
    for j in buffers:
        sink.wrote(pushes[j], values[j])
        values[j] = jax.lax.dynamic_index_in_dim(values[j], sink.index, 0, keepdims=False)
    return values


def reference_step(
    a: Any, weight: Any, bias: Any, c_prev: Any, slices: tuple, offsets: tuple
) -> list:
    """What `native.lstm_cell` computes, in XLA's ops."""
    pieces = jnp.split(a @ weight + bias, 4, axis=1)
    acts = [
        jnp.tanh(z + offset) if s == slices[2] else jax.nn.sigmoid(z + offset)
        for s, (z, offset) in enumerate(zip(pieces, offsets))
    ]
    i, f, g, o = (acts[s] for s in slices)
    cell = c_prev * f + i * g
    squashed = jnp.tanh(cell)
    return [*acts, cell, squashed, squashed * o]


def _value(t: Tensor, env: dict) -> Any:
    """`t`'s value in this iteration: an Identity not evaluated yet has its input's."""
    while t not in env and t.op.type == "Identity":
        t = t.op.inputs[0]
    return env[t][0]
