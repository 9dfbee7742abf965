"""The `fused_lstm_cell_grad` loop pass: the backward step of an LSTM cell's gates, found in a
backward while frame and run as ONE call of sluice's native kernel (`native.lstm_cell_grad`).

For the forward step of `fused_cells` (c = f * c_prev + i * g, h = o * tanh(c), each gate a
sigmoid or tanh of a slice of z), the gradient graph computes, in every backward iteration,

    dc   = dc_next + (dh * o) * (1 - tanh_c^2)                  the Tanh's and the Add's grads
    dz_s = d_s * (y_s * (1 - y_s))    or    d_s * (1 - y_s^2)    each slice's Sigmoid/Tanh grad
    with d_o = dh * tanh_c, d_i = dc * g, d_g = i * dc, d_f = c_prev * dc   (the Muls' grads)
    dz   = concat(dz_s),   dc_prev = dc * f,   db = BiasAddGrad(dz)

from the popped forward values i, f, g, o, tanh_c and c_prev. XLA lowers those ops as five
kernels per iteration (each recomputing dc from six popped rows), a concat and a reduction; the
kernel gives dz, dc_prev and db in one pass, reading the saved rows in place in the forward
loop's buffers. Every op of the formula is matched, operands in either order, so a replaced
value is exactly what the graph's ops compute. Keras's cells reach the same ops through the
general broadcasting gradient (`Reshape(DynamicSum(x, BroadcastGradientArgs(...)))`), which is
`x` itself where the saved shapes show that nothing broadcasts; the pass sees through it there.
The graph is not changed: the interpreted engine runs the ops themselves.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp
import numpy as np

from sluice.framework import native
from sluice.framework.compiler.buffers import StackBuffer
from sluice.framework.compiler.fused_cells import FusedLstmCell
from sluice.framework.compiler.loop_passes import known_value, pushes_of
from sluice.framework.compiler.rules.stacks import saved_row
from sluice.framework.control_flow.structure import loop_merge_of_body_value
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Operation, Tensor

_ROLES = ("i", "f", "g", "o", "tanh_c", "c_prev")  # the saved values, in the kernel's order


@dataclasses.dataclass(frozen=True)
class FusedLstmCellGrad:
    """One backward step of a fused cell's gates in a backward frame (see the module's doc)."""

    slices: tuple[int, int, int, int]  # the slices of z that are i, f, g and o
    dh: Tensor  # the gradient of h in this iteration
    dc_next: Tensor  # the gradient of c from the later iterations
    saved: tuple[Operation, ...]  # a StackPopV2 of each of _ROLES
    dz: Operation  # the ConcatV2 of the slices' gradients
    dc_prev: Operation | None  # Mul(dc, f): the gradient of c_prev
    bias_grad: Operation | None  # BiasAddGrad(dz)

    @property
    def replaced(self) -> tuple[Operation, ...]:
        """The ops whose values the fused call gives, in the order `native.lstm_cell_grad`
        returns them (dz, dc_prev, db); None where the graph has no such op."""
        return (self.dz, self.dc_prev, self.bias_grad)


def fused_lstm_cell_grad(
    frame_ops: list[Operation], ctx: Any, cells: list[FusedLstmCell], fixed: dict
) -> list[FusedLstmCellGrad]:
    """The backward steps in `frame_ops` (the frame of backward context `ctx`) of the forward
    `cells`. `fixed`: the frame's stack Merges -> the `StackBuffer` its forward loop left."""
    found = []
    for concat in frame_ops:
        if concat.type != "ConcatV2" or concat.control_flow_context is not ctx:
            continue
        if len(concat.inputs) != 5 or known_value(concat.inputs[4]) not in (1, -1):
            continue
        if concat.outputs[0].dtype != dtypes.float32:
            continue
        for cell in cells:
            grad = _Matcher(ctx, frame_ops, fixed).match(concat, cell)
            if grad is not None:
                found.append(grad)
                break
    return found


class _Matcher:
    """Matches one backward step's ops against the formula, binding dh, dc_next and the pops."""

    def __init__(self, ctx: Any, frame_ops: list[Operation], fixed: dict):
        self.ctx = ctx
        self.frame_ops = frame_ops
        self.fixed = fixed
        self.pops: dict[str, Operation] = {}
        self.bound: dict[str, Tensor] = {}

    def match(self, concat: Operation, cell: FusedLstmCell) -> FusedLstmCellGrad | None:
        acts = [a.outputs[0] for a in cell.activations]
        i, f, g, o = (acts[s] for s in cell.slices)
        values = {"i": i, "f": f, "g": g, "o": o}
        values.update(tanh_c=cell.squashed.outputs[0], c_prev=cell.c_prev)
        self.values = {role: _through_identities(t) for role, t in values.items()}
        roles = dict(zip(cell.slices, ("i", "f", "g", "o")))
        # each slice's gradient: its activation's gradient of the gradient d_s flowing into it
        flowing = {}
        for s in range(4):
            role = roles[s]
            flowing[role] = self._activation_grad(concat.inputs[s], role, tanh=role == "g")
            if flowing[role] is None:
                return None
        if not (
            self._bind("dh", self._times(flowing["o"], "tanh_c"))
            and self._bind("dc", self._times(flowing["i"], "g"))
            and self._bind("dc", self._times(flowing["g"], "i"))
            and self._bind("dc", self._times(flowing["f"], "c_prev"))
            and self._cell_grad(self.bound["dc"])
        ):
            return None
        if set(self.pops) != set(_ROLES) or not self._same_buffers():
            return None
        dc_prev = next(
            (
                op
                for op in self.frame_ops
                if op.type == "Mul"
                and op.control_flow_context is self.ctx
                and self._times(op.outputs[0], "f") is self.bound["dc"]
            ),
            None,
        )
        bias_grad = next(
            (
                op
                for op in self.frame_ops
                if op.type == "BiasAddGrad"
                and op.control_flow_context is self.ctx
                and self._strip(op.inputs[0]) is concat.outputs[0]
            ),
            None,
        )
        return FusedLstmCellGrad(
            cell.slices,
            self.bound["dh"],
            self.bound["dc_next"],
            tuple(self.pops[role] for role in _ROLES),
            concat,
            dc_prev,
            bias_grad,
        )

    # -- the formula's pieces --------------------------------------------------------------
    def _activation_grad(self, t: Tensor, role: str, tanh: bool) -> Tensor | None:
        """d where `t` = d * (y * (1 - y)) (a sigmoid's gradient) or d * (1 - y^2) (a tanh's),
        y the popped `role`."""
        mul = self._op(t, "Mul")
        if mul is None:
            return None
        for d, local in (mul.inputs, reversed(mul.inputs)):
            if tanh and self._one_minus(local, lambda x: self._square_of_pop(x, role)):
                return self._strip(d)
            if not tanh:
                inner = self._op(local, "Mul")
                if inner is None:
                    continue
                for y, rest in (inner.inputs, reversed(inner.inputs)):
                    if self._pop(y, role) and self._one_minus(rest, lambda x: self._pop(x, role)):
                        return self._strip(d)
        return None

    def _cell_grad(self, dc: Tensor) -> bool:
        """`dc` = dc_next + (dh * o) * (1 - tanh_c^2): the gradient of c in this iteration."""
        add = self._op(dc, "AddN", "AddV2")
        if add is None or len(add.inputs) != 2:
            return False
        for dc_next, through_h in (add.inputs, reversed(add.inputs)):
            mul = self._op(through_h, "Mul")
            if mul is None:
                continue
            for d_tanh, local in (mul.inputs, reversed(mul.inputs)):
                if self._one_minus(
                    local, lambda x: self._square_of_pop(x, "tanh_c")
                ) and self._bind("dh", self._times(d_tanh, "o")):
                    return self._bind("dc_next", dc_next)
        return False

    def _times(self, t: Tensor | None, role: str) -> Tensor | None:
        """x where `t` = x * (the popped `role`), in either order; None otherwise."""
        mul = None if t is None else self._op(t, "Mul")
        if mul is None:
            return None
        for x, y in (mul.inputs, reversed(mul.inputs)):
            if self._pop(y, role):
                return self._strip(x)
        return None

    def _one_minus(self, t: Tensor, matches: Any) -> bool:
        sub = self._op(t, "Sub")
        return sub is not None and _is_one(sub.inputs[0]) and matches(sub.inputs[1])

    def _square_of_pop(self, t: Tensor, role: str) -> bool:
        square = self._op(t, "Square")
        return square is not None and self._pop(square.inputs[0], role)

    def _pop(self, t: Tensor, role: str) -> bool:
        """Whether `t` is a pop, in this frame, of the stack the forward loop saved `role` on."""
        t = _through_identities(t)
        pop = t.op
        if (
            pop.type != "StackPopV2"
            or t.value_index != 1
            or pop.control_flow_context is not self.ctx
        ):
            return False
        pushes = pushes_of(pop)
        if not pushes or any(
            _through_identities(push.inputs[1]) is not self.values[role] for push in pushes
        ):
            return False
        self.pops.setdefault(role, pop)
        return True

    def _bind(self, name: str, t: Tensor | None) -> bool:
        if t is None:
            return False
        return self.bound.setdefault(name, t) is t

    def _op(self, t: Tensor, *kinds: str) -> Operation | None:
        op = self._strip(t).op
        return op if op.type in kinds and op.control_flow_context is self.ctx else None

    def _strip(self, t: Tensor) -> Tensor:
        """`t` without the Identities and the broadcasting gradients that change nothing here:
        `Reshape(DynamicSum(x, BroadcastGradientArgs(s0, s1)[k]), s_k)` is x where the saved
        shapes s0 and s1 broadcast to s_k."""
        while True:
            t = _through_identities(t)
            reshape = t.op
            if reshape.type != "Reshape" or reshape.inputs[0].op.type != "DynamicSum":
                return t
            total = reshape.inputs[0].op
            x, axes = total.inputs
            if axes.op.type != "BroadcastGradientArgs":
                return t
            shapes = [self._static(s) for s in axes.op.inputs]
            target = self._static(reshape.inputs[1])
            if any(s is None for s in (*shapes, target)):
                return t
            mine = tuple(int(d) for d in np.reshape(shapes[axes.value_index], -1))
            try:
                wide = np.broadcast_shapes(*(tuple(np.reshape(s, -1)) for s in shapes))
            except ValueError:
                return t
            if tuple(wide) != mine or tuple(np.reshape(target, -1)) != mine:
                return t
            t = x

    def _static(self, t: Tensor) -> Any:
        """`t`'s value known while tracing: a constant, or a pop of a stack whose forward loop
        saved the same value in every iteration (a shape)."""
        value = known_value(t)
        if value is not None:
            return value
        t = _through_identities(t)
        if t.op.type != "StackPopV2":
            return None
        saved = self.fixed.get(loop_merge_of_body_value(t.op.inputs[0], self.ctx))
        return saved.static if isinstance(saved, StackBuffer) else None

    def _same_buffers(self) -> bool:
        """Whether the six pops read float32 buffers [N > 0, M, H] of one forward loop's rows
        (one count), kept on the device: what the kernel reads in place."""
        saved = [self._buffer(self.pops[role]) for role in _ROLES]
        if any(s is None for s in saved):
            return False
        shapes = {tuple(jnp.shape(s.values)) for s in saved}
        if len(shapes) != 1 or len(next(iter(shapes))) != 3 or next(iter(shapes))[0] == 0:
            return False
        return all(s.count is saved[0].count for s in saved) and all(
            jnp.result_type(s.values) == jnp.float32 for s in saved
        )

    def _buffer(self, pop: Operation) -> StackBuffer | None:
        saved = self.fixed.get(loop_merge_of_body_value(pop.inputs[0], self.ctx))
        if not isinstance(saved, StackBuffer) or saved.static is not None or saved.on_host:
            return None
        return saved if hasattr(saved.values, "shape") else None


def fused_grad_step(grad: FusedLstmCellGrad) -> Any:
    """fn(env, iteration) -> the three values of `grad.replaced`, computed once per iteration
    (kept in env). Gradients of another shape than the saved rows' (a broadcast) take the same
    formula in XLA's ops."""
    key = ("fused_lstm_cell_grad", grad.dz)

    def step(env: dict, iteration: Any) -> list:
        if key not in env:
            dh, dc_next = env[grad.dh][0], env[grad.dc_next][0]
            saved = [env[pop.inputs[0]][0] for pop in grad.saved]
            row = jnp.clip(saved[0].count - 1 - iteration, 0, None)
            shape = tuple(saved[0].values.shape[1:])
            if tuple(jnp.shape(dh)) == shape and tuple(jnp.shape(dc_next)) == shape:
                values = [s.values for s in saved]
                env[key] = native.lstm_cell_grad(dh, dc_next, values, row, grad.slices)
            else:
                rows = [saved_row(s.values, row) for s in saved]
                env[key] = reference_grad(dh, dc_next, rows, grad.slices)
        return env[key]

    return step


def reference_grad(dh: Any, dc_next: Any, rows: list, slices: tuple) -> list:
    """What `native.lstm_cell_grad` computes, in XLA's ops, from the six saved rows."""
    i, f, g, o, tanh_c, c_prev = rows
    dc = dc_next + (dh * o) * (1 - tanh_c * tanh_c)
    pieces = {
        slices[0]: (dc * g) * (i * (1 - i)),
        slices[1]: (c_prev * dc) * (f * (1 - f)),
        slices[2]: (i * dc) * (1 - g * g),
        slices[3]: (tanh_c * dh) * (o * (1 - o)),
    }
    dz = jnp.concatenate([pieces[s] for s in range(4)], axis=1)
    return [dz, dc * f, jnp.sum(dz, axis=0)]


def _is_one(t: Tensor) -> bool:
    value = known_value(t)
    return value is not None and np.size(value) == 1 and float(np.reshape(value, -1)[0]) == 1.0


def _through_identities(t: Tensor) -> Tensor:
    while t.op.type == "Identity":
        t = t.op.inputs[0]
    return t
