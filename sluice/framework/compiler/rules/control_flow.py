"""Lowering rules of the control-flow primitives (TF1's whitepaper ops).

Switch and Merge are lowered op by op, on liveness flags: a Switch passes its value to both
outputs, each live on its side of the predicate; a Merge gives its live input (selected with
`jnp.where` when which one is live is known only at run time) and the input's index. Enter, Exit,
NextIteration and LoopCond, and a loop's own Merges and Switches, are lowered with their loop:
`Lowering.run_loop` binds them around one `lax.while_loop` or `lax.scan` (see
`loop_analysis.lowered_with_loop`), so a rule meeting one alone says the loop was not found.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from sluice.framework.compiler.frame import NotLowerable
from sluice.framework.compiler.liveness import is_concrete, live_and, live_not, live_or, select
from sluice.framework.compiler.rules.context import OpContext
from sluice.framework.ir import registry


def _switch(ctx: OpContext) -> list:
    (value, in_live), (pred, pred_live) = ctx.inputs
    base = live_and(in_live, pred_live)
    p = bool(pred) if is_concrete(pred) and np.ndim(pred) == 0 else pred
    return [(value, live_and(base, live_not(p))), (value, live_and(base, p))]


def _merge(ctx: OpContext) -> list:
    outs = merge(ctx.inputs)
    ctx.live = outs[0][1]  # live when any input is: a control edge from it is not dead
    return outs


def merge(inputs: list) -> list:
    """[(value, liveness), (index, liveness)] of a Merge of `inputs` ((value, liveness) pairs):
    the first input known to be live, else a select over the ones that may be."""
    candidates = [(i, v, v_live) for i, (v, v_live) in enumerate(inputs) if v_live is not False]
    if not candidates:
        return [(None, False), (None, False)]
    for i, v, v_live in candidates:
        if v_live is True:
            return [(v, True), (np.int32(i), True)]
    kinds = {
        tuple((np.shape(x), _dtype_of(x)) for x in jax.tree_util.tree_leaves(v))
        for _, v, _ in candidates
    }
    if len(kinds) > 1:  # e.g. a cond choosing between two summaries (payloads of two sizes)
        raise NotLowerable(
            "a cond's branches give values of different shapes or dtypes "
            f"({', '.join(sorted(map(str, kinds)))}), which one jitted step "
            "cannot select between"
        )
    last, value, live = candidates[-1]
    index: Any = np.int32(last)
    for i, v, v_live in reversed(candidates[:-1]):
        value = select(v_live, v, value)
        index = select(v_live, np.int32(i), index)
        live = live_or(v_live, live)
    return [(value, live), (index, live)]


def _dtype_of(x: Any) -> np.dtype:
    """The dtype of an array, a tracer or a Python scalar (NumPy's `result_type` of a tracer
    is a deprecated implicit conversion)."""
    return np.dtype(x.dtype) if hasattr(x, "dtype") else np.result_type(x)


def _with_its_loop(ctx: OpContext) -> list:
    op = ctx.op
    raise NotLowerable(
        f"{op.type} op {op.name} is lowered with its while loop (Lowering.run_loop), "
        "which the compiled engine did not find around it"
    )


registry.register_lowering("Switch", _switch, dead_inputs=True)
registry.register_lowering("Merge", _merge, dead_inputs=True)
for _op_type in ("Enter", "Exit", "NextIteration", "LoopCond"):
    registry.register_lowering(_op_type, _with_its_loop, dead_inputs=True)
