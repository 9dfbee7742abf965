"""A Repeat (K copies of one computation, see `repeats`) lowered as one `jax.lax.scan`.

The scan's body evaluates the ops of copy 1 once, with
  - what copy 1 reads from copy 0 (the carries) bound to the scan's carry,
  - what copy 1 reads from a per-copy sequence bound to that sequence's row,
  - invariants read from the enclosing frame, as the unrolled ops read them,
and returns the next carry and every output read outside the repeat, which the scan stacks.
After it, an output of copy k read outside is row k of its stack (the last copy's carries are
the final carry). A sequence that is consecutive rows of an earlier repeat's stack, in order or
reversed (a gradient's scan reading the values its forward scan saved), is read in place from
that stack, a row per copy, never copied into a sequence of its own.

When the scan cannot be traced (a value must be known while tracing, a carry changes shape, an
input is not surely live), the copies are lowered op by op, exactly as without rolling.
"""

from __future__ import annotations

import collections
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sluice.framework.compiler.evaluator import FrameEvaluator
from sluice.framework.compiler.frame import NotLowerable
from sluice.framework.compiler.liveness import is_concrete
from sluice.framework.compiler.repeat import Repeat
from sluice.framework.ir.graph import Tensor


class _CannotScan(Exception):
    """The repeat needs something a scan cannot give: lower it op by op."""


def lower_repeat(
    repeat: Repeat,
    evaluator: FrameEvaluator,
    frame: Any,
    env: dict,
    op_live: dict,
    iteration: Any,
    pushes: dict,
    only: set | None = None,
) -> None:
    """Evaluates the repeat into `env` and `op_live`: one scan, or op by op."""
    if only is None:
        try:
            _lower_as_scan(repeat, evaluator, env, op_live, iteration, pushes)
            evaluator.note_applied("roll_repeats", repeat.copies[0][0].name)
            return
        except (_CannotScan, NotLowerable, TypeError, ValueError):
            pass  # the unrolled ops below compute the same, or raise the user's error
    for op in repeat.ops:  # rows of an earlier scan that only this one's scan would have read
        for t in op.inputs:
            if t not in env and t in evaluator.rows:
                env[t] = _row(evaluator, t)
    evaluator.eval_units(repeat.ops, frame, env, op_live, iteration, pushes, only)


def _lower_as_scan(
    repeat: Repeat,
    evaluator: FrameEvaluator,
    env: dict,
    op_live: dict,
    iteration: Any,
    pushes: dict,
) -> None:
    copies = repeat.copies
    previous, template, last = copies[0], copies[1], len(copies) - 1
    members = set(repeat.ops)
    for op in template:
        if any(op_live.get(c, True) is not True for c in op.control_inputs if c not in members):
            raise _CannotScan("a control input may be dead")

    def outside(t: Tensor) -> Any:
        value, live = env[t] if t in env else _row(evaluator, t)
        if live is not True:
            raise _CannotScan(f"{t.name} may be dead")
        return value

    summed = list(repeat.sums)  # accumulated in the carry, after the carries proper
    init = [jnp.asarray(outside(t), t.dtype) for t in repeat.initial]
    init += [
        jnp.zeros(template[p].outputs[i].shape.as_list(), template[p].outputs[i].dtype)
        for p, i in summed
    ]
    # A sequence that is consecutive rows of an earlier scan's stack (a gradient's scan reads its
    # forward scan's saved values, last row first) is read in place, one row per copy; a
    # sequence of one value (see `_same_known`) is invariant: the body reads copy 1's value.
    windows, scanned, xs = [], [], []
    for column in repeat.sequences:
        direction = _rows_direction(evaluator, column)
        if direction:
            stack, first = evaluator.rows[column[0]]
            windows.append((column[1], stack, first, direction))
            continue
        values = [outside(t) for t in column]
        if not _same_known(values):
            scanned.append(column)
            xs.append(_stacked(column, values))
    # ops that read no carry and no sequence give every copy the same value: computed once, here
    hoisted = collections.ChainMap({}, env)
    hoisted_lives = collections.ChainMap({}, op_live)
    for p in repeat.invariant_positions:
        evaluator.eval_op(template[p], hoisted, hoisted_lives, iteration, pushes)
    if any(live is not True for _, live in hoisted.maps[0].values()):
        raise _CannotScan("an invariant value may be dead")
    invariant = set(repeat.invariant_positions)
    varying = [op for p, op in enumerate(template) if p not in invariant]
    carried = [previous[p].outputs[i] for p, i in repeat.carries]  # what the template reads
    passed = [template[p].outputs[i] for p, i in repeat.carries]  # what it gives the next copy
    carry_slot = {pos: n for n, pos in enumerate(repeat.carries)}
    stacked = [
        pos
        for pos, ks in repeat.outputs.items()
        if not (pos in carry_slot and ks == [last]) and pos not in repeat.sums
    ]
    returned = [template[p].outputs[i] for p, i in stacked]

    # Outputs known while tracing the body (constants, static shapes) are the same in every copy:
    # they stay known after the scan, as unrolled, instead of becoming rows of a stack.
    known: dict[tuple[int, int], Any] = {}

    def body(carry: list, row: list) -> tuple[list, dict]:
        carry, copy = carry[:-1], carry[-1]
        local = {t: (v, True) for t, v in zip(carried, carry)}
        local.update({column[1]: (v, True) for column, v in zip(scanned, row)})
        for t, stack, first, step in windows:
            row_of_copy = jax.lax.dynamic_index_in_dim(stack, first + step * copy, 0, False)
            local[t] = (row_of_copy, True)
        scope = collections.ChainMap(local, *hoisted.maps)  # the template's outputs go to `local`
        lives = collections.ChainMap({}, *hoisted_lives.maps)
        for op in varying:
            evaluator.eval_op(op, scope, lives, iteration, pushes)
        ys = {}
        for pos, t in zip(stacked, returned):
            if pos[0] in invariant:
                continue
            value = _live_value(scope, t)
            if is_concrete(value):
                known[pos] = value
            else:
                ys[pos] = jnp.asarray(value, t.dtype)
        sums = [
            jnp.asarray(total + _live_value(scope, template[p].outputs[i]), total.dtype)
            for total, (p, i) in zip(carry[len(passed) :], summed)
        ]
        passing = [jnp.asarray(_live_value(scope, t), t.dtype) for t in passed]
        return passing + sums + [copy + 1], ys

    final, stacks = jax.lax.scan(body, init + [jnp.int32(0)], xs, length=len(copies))
    for pos, total in zip(summed, final[len(passed) :]):
        adder = repeat.sums[pos]
        rest = [t for t in adder.inputs if t.op not in members]
        evaluator.replace(adder, functools.partial(_add_to, total, rest))
    for (p, i), ks in repeat.outputs.items():
        if (p, i) in repeat.sums:
            continue
        for k in ks:
            t = copies[k][p].outputs[i]
            if p in invariant:
                env[t] = hoisted[template[p].outputs[i]]
            elif (p, i) in known:
                env[t] = (known[(p, i)], True)
            elif (p, i) in stacks:
                evaluator.rows[t] = (stacks[(p, i)], k)
                if t not in repeat.rows_only:
                    env[t] = _row(evaluator, t)
            else:  # a carry read outside only after the last copy
                env[t] = (final[carry_slot[(p, i)]], True)
    for op in members:
        op_live[op] = True


def _add_to(total: Any, rest: list[Tensor], env: dict) -> Any:
    """An AddN of every copy of a summed output (`total`) and of `rest`."""
    for t in rest:
        total = total + env[t][0]
    return total


def _row(evaluator: FrameEvaluator, t: Tensor) -> tuple[Any, bool]:
    """(value, liveness) of an output of a rolled repeat: its row of the scan's stack."""
    stack, k = evaluator.rows[t]
    return stack[k], True


def _live_value(scope: Any, t: Tensor) -> Any:
    value, live = scope[t]
    if live is not True:
        raise _CannotScan(f"{t.name} may be dead")
    return value


def _same_known(values: list) -> bool:
    """One value for every copy: the same traced array (a weight every copy read, computed once
    by an earlier scan), or equal values known while tracing."""
    if all(v is values[0] for v in values):
        return True
    if not all(is_concrete(v) for v in values):
        return False
    first = np.asarray(values[0])
    return all(np.asarray(v).dtype == first.dtype and np.array_equal(v, first) for v in values[1:])


def _rows_direction(evaluator: FrameEvaluator, column: list[Tensor]) -> int:
    """1 (-1) when the column is consecutive rows of one earlier stack, first to last (last to
    first); else 0."""
    rows = [evaluator.rows.get(t) for t in column]
    if not all(rows) or any(r[0] is not rows[0][0] for r in rows):
        return 0
    first, n = rows[0][1], len(rows)
    index = [r[1] for r in rows]
    for step in (1, -1):
        if index == list(range(first, first + step * n, step)):
            return step
    return 0


def _stacked(column: list[Tensor], values: list) -> Any:
    """The per-copy values of a sequence as one array, the scan's `xs`."""
    if len({np.shape(v) for v in values}) != 1:
        raise _CannotScan("the rows of a sequence differ in shape")
    return jnp.stack([jnp.asarray(v, t.dtype) for t, v in zip(column, values)])
