"""dynamic_size TensorArrays written in a compiled while loop.

In the interpreter such an array grows by a row per write (`TensorArrayGrowWriteV3` reads its
index on the host). A lax loop carries one shape, so the compiled engine sizes the array before
the loop instead: when the loop surely runs `bound` iterations (a counter `t` from 0 by 1 to a
bound known while tracing, as `t < n` gives it) and every growing write in its body writes at
that counter, the array after the loop has max(rows before, bound) rows, exactly what the
interpreter grows it to. The buffer is padded with zero rows to that size before the loop and
each write becomes an in-place row update at the traced index. Any other growing write in a
loop (another index, a scatter, a loop without such a bound) raises NotLowerable: the session
runs the graph interpreted and says so once.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from sluice.framework.compiler.frame import Frame, NotLowerable
from sluice.framework.control_flow.structure import is_loop_merge, is_loop_switch, is_unit_counter
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ops.state import tensor_array_ops

_GROWING = ("TensorArrayGrowWriteV3", "TensorArrayGrowScatterV3")
# ops a buffer passes through within one iteration, back to its loop Merge
_PASSES = ("Identity", "Switch", "TensorArrayWriteV3", "TensorArrayGrowWriteV3")


def _loop_value(t: Tensor, frame: Frame) -> Tensor | None:
    """The loop Merge output of `frame` behind `t` (through Identities and the loop Switch)."""
    while t.op.type == "Identity":
        t = t.op.inputs[0]
    if is_loop_switch(t.op):
        t = t.op.inputs[0]
    return t if is_loop_merge(t.op) and t.op.control_flow_context is frame.ctx else None


def _buffer_merge(t: Tensor, frame: Frame) -> Operation | None:
    """The loop Merge whose value the buffer `t` is, after this iteration's writes."""
    while t.op.type in _PASSES and not is_loop_merge(t.op):
        if is_loop_switch(t.op):
            t = t.op.inputs[0]
            break
        t = t.op.inputs[0]
    return t.op if is_loop_merge(t.op) and t.op.control_flow_context is frame.ctx else None


def growing_arrays(frame: Frame, bound: int | None, exact: bool) -> dict[Operation, list]:
    """The loop Merges of dynamic_size arrays that grow in `frame`, each with its writes.

    Raises:
      NotLowerable: a growing write the compiled loop cannot size beforehand."""
    found: dict[Operation, list] = {}
    for op in frame.ops:
        if op.type not in _GROWING:
            continue
        index = _loop_value(op.inputs[1], frame)
        merge = _buffer_merge(op.inputs[0], frame)
        if (
            op.type != "TensorArrayGrowWriteV3"
            or not exact
            or index is None
            or not is_unit_counter(index, frame.ctx)
            or merge is None
        ):
            raise NotLowerable(
                f"{op.type} op '{op.name}' grows a dynamic_size TensorArray in while loop "
                f"{frame.ctx.name!r}: the compiled engine sizes such an array beforehand only "
                "when the loop runs exactly a bound known while tracing (t < n, t counting from "
                "0 by 1) and each write is at that counter t"
            )
        found.setdefault(merge, []).append(op)
    return found


def presize(value: Any, bound: int) -> Any:
    """`value` (a buffer entering the loop) padded with zero rows to `bound` rows."""
    if value is None or value.shape[0] >= bound:
        return value
    pad = jnp.zeros((bound - value.shape[0],) + tuple(value.shape[1:]), value.dtype)
    return jnp.concatenate([value, pad], axis=0)


def write_in_place(op: Operation):
    """The growing write `op` as an in-place row update of its presized buffer."""

    def compute(env: dict) -> Any:
        buffer, index, value = (env[t][0] for t in op.inputs)
        return tensor_array_ops.write_kernel(buffer, index, value)

    return compute
