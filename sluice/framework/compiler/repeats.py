"""Repeats: the copies of one computation that a Python loop built, found in a pruned graph.

An unrolled recurrence (TF1's `static_rnn`, or `legacy_seq2seq.rnn_decoder` calling
`cell(x_t, state)` once per time step) holds N copies of the same ops, each reading the state the
copy before it computed; its gradient holds N copies too. Lowered op by op, XLA compiles every
copy on its own: a 2-layer LSTM over 50 steps is about 10,000 HLO ops and half a minute of LLVM
on a CPU. `find_repeats` finds such copies, and the compiled engine lowers each run of them as
one `lax.scan` (`lowering_repeats`), which XLA compiles once whatever N is.

The rule, as plain Python::

    ops = the frame's pure ops and variable reads, in creation order (a Python loop creates
          its copies one after another)
    for each period P at which the ops' signatures (type, attrs, dtypes, shapes) repeat:
        for each run of copies ops[a + k*P : a + (k+1)*P], k = 0 .. K-1:
            it is a Repeat when input i of op p of copy k comes, for every k, from
              - copy k itself, op p' < p                  ("self")
              - copy k - 1, op p'                         ("carry": copy 0 reads it from outside)
              - outside, one tensor (or equal constants) for all copies  ("invariant")
              - outside, one tensor per copy, one type    ("sequence": scanned over)
            and nothing it reads from outside depends on it, and every variable it reads is
            written only before or after all of it
    keep disjoint repeats of at least MIN_COPIES copies of MIN_PERIOD ops, trying first the
    periods whose runs cover the most ops (the shortest of equals: a period before its multiples)

What the check guarantees is exactly what a scan needs, so lowering a Repeat as a scan computes
what the unrolled ops compute; creation order only proposes the copies.
"""

from __future__ import annotations

import collections
from typing import Any, Iterable

import numpy as np

from sluice.framework.compiler.repeat import Repeat
from sluice.framework.compiler.repeat_uses import READS, Uses, settle_outputs
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Operation, Tensor

MIN_COPIES = 4  # fewer copies compile fast enough unrolled
MIN_PERIOD = 4  # ops per copy: a scan of one or two ops costs more than it saves
# Periods tried are at most this many comparisons of the signature sequence (n ops x P periods)
_PERIOD_WORK = 4_000_000
_CANDIDATE_PERIODS = 24  # the periods with the most repeating signatures are verified

_SELF, _CARRY, _EXT = "self", "carry", "ext"


def find_repeats(units: list, all_ops: Iterable[Operation], fed: set, fetched: set) -> list[Repeat]:
    """The repeats among the plain ops of `units` (a frame's order); `all_ops` are every op of
    the plan (for the dependency checks), `fetched` the tensors the step returns."""
    candidates = [u for u in units if isinstance(u, Operation) and _rollable(u, fed)]
    candidates.sort(key=lambda op: op.id)
    if len(candidates) < MIN_COPIES * MIN_PERIOD:
        return []
    codes = _signature_codes(candidates)
    uses = Uses(all_ops)
    chosen: list[Repeat] = []
    taken: set[Operation] = set()  # copies never share an op
    for period, runs in _candidate_runs(codes):
        for start, count in runs:
            copies = [
                candidates[start + k * period : start + (k + 1) * period] for k in range(count)
            ]
            for free in _stretches_without(copies, taken):
                for r in _repeats_in_run(free, uses, fed, fetched):
                    chosen.append(r)
                    taken.update(r.ops)
    settle_outputs(chosen, uses, fetched)
    return chosen


def _stretches_without(copies: list[list[Operation]], taken: set) -> list[list[list[Operation]]]:
    """The longest stretches of consecutive copies with no op in `taken`, of MIN_COPIES or more."""
    stretches, current = [], []
    for copy in copies + [None]:
        if copy is not None and not taken.intersection(copy):
            current.append(copy)
            continue
        if len(current) >= MIN_COPIES:
            stretches.append(current)
        current = []
    return stretches


def _rollable(op: Operation, fed: set) -> bool:
    d = op.op_def
    if d.control_flow or d.host_only or d.kernel is None or d.check is not None:
        return False
    if not d.jit and not d.host_inputs:  # an output shape that depends on values (Where)
        return False
    if d.stateful and op.type not in READS:
        return False
    # a handle output would be a Python string inside the scan
    return op.control_flow_context is None and not any(
        t in fed or t.dtype == dtypes.resource for t in op.outputs
    )


# -- periods -----------------------------------------------------------------------------------
def _signature_codes(ops: list[Operation]) -> np.ndarray:
    codes: dict[tuple, int] = {}
    return np.array([codes.setdefault(_signature(op), len(codes)) for op in ops], np.int64)


def _signature(op: Operation) -> tuple:
    return (
        op.type,
        _frozen(op.attrs),
        tuple((t.dtype, t.shape.dims) for t in op.outputs),
        tuple((t.dtype, t.shape.dims) for t in op.inputs),
        len(op.control_inputs),
    )


def _frozen(value: Any) -> Any:
    """A hashable stand-in for an attr value: equal for equal values (small arrays by content)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, np.ndarray):
        if value.nbytes <= 4096:
            return ("array", value.dtype.str, value.shape, value.tobytes())
        return ("object", id(value))
    try:
        hash(value)
    except TypeError:
        return ("object", id(value))
    return value


def _candidate_runs(codes: np.ndarray) -> list[tuple[int, list[tuple[int, int]]]]:
    """(period, its runs) for the periods whose runs cover the most ops, most first; of periods
    that cover as many (a period and its multiples), the shortest first: more, smaller copies."""
    runs = [(p, _runs(codes, p)) for p in _candidate_periods(codes)]
    return sorted(runs, key=lambda pr: (-sum(count * pr[0] for _, count in pr[1]), pr[0]))


def _candidate_periods(codes: np.ndarray) -> list[int]:
    """The periods at which the most signatures repeat, most first."""
    n = len(codes)
    longest = min(n // MIN_COPIES, max(MIN_PERIOD * 16, _PERIOD_WORK // n))
    scores = [
        (int(np.count_nonzero(codes[:-p] == codes[p:])), p) for p in range(MIN_PERIOD, longest + 1)
    ]
    scores = [s for s in scores if s[0] >= (MIN_COPIES - 1) * s[1]]
    scores.sort(key=lambda s: (-s[0], s[1]))
    return [p for _, p in scores[:_CANDIDATE_PERIODS]]


def _runs(codes: np.ndarray, period: int) -> list[tuple[int, int]]:
    """(first index, number of copies) of each run of at least MIN_COPIES copies of `period`
    signatures."""
    same = np.concatenate([[False], codes[:-period] == codes[period:], [False]])
    edges = np.flatnonzero(np.diff(same.astype(np.int8)))
    runs = []
    for start, stop in zip(edges[::2], edges[1::2]):
        count = (stop - start) // period + 1
        if count >= MIN_COPIES:
            runs.append((int(start), int(count)))
    return runs


# -- checking a run of copies ------------------------------------------------------------------
def _repeats_in_run(
    copies: list[list[Operation]], uses: Uses, fed: set, fetched: set
) -> list[Repeat]:
    """The repeats among consecutive `copies` whose ops have the same signatures."""
    where = {op: (k, p) for k, copy in enumerate(copies) for p, op in enumerate(copy)}
    found = []
    first = 0
    while len(copies) - first >= MIN_COPIES:
        template = _describe(copies[first + 1], first + 1, first, where)
        end = first + 2
        while end < len(copies) and _describe(copies[end], end, first, where) == template:
            end += 1
        head = _describe(copies[first], first, first, where)
        if template is None or end - first < MIN_COPIES or not _fits_first(head, template):
            first += 1
            continue
        repeat = _make_repeat(copies[first:end], template, uses, fed, fetched)
        if repeat is None:
            break  # what failed (a dependency, a type) fails for fewer copies too
        found.append(repeat)
        first = end
    return found


def _describe(copy: list[Operation], k: int, first: int, where: dict) -> tuple | None:
    """Where each input of copy k comes from: (SELF | CARRY, position, output) or EXT, then each
    control input the same way; None when one comes from two or more copies back."""
    out: list[Any] = []
    for op in copy:
        for t in op.inputs:
            out.append(_source(t.op, t.value_index, k, first, where))
        for c in op.control_inputs:
            out.append(_source(c, -1, k, first, where))
    return None if None in out else tuple(out)


def _source(op: Operation, index: int, k: int, first: int, where: dict) -> Any:
    at = where.get(op)
    if at is None or at[0] < first:
        return _EXT
    back = k - at[0]
    if back == 0:
        return (_SELF, at[1], index)
    return (_CARRY, at[1], index) if back == 1 else None


def _fits_first(head: tuple | None, template: tuple) -> bool:
    """Copy 0 reads from outside what later copies carry, and the same from itself."""
    if head is None or len(head) != len(template):
        return False
    return all(h == t if t != _EXT and t[0] == _SELF else h == _EXT for h, t in zip(head, template))


def _make_repeat(
    copies: list[list[Operation]], template: tuple, uses: Uses, fed: set, fetched: set
) -> Repeat | None:
    """The Repeat of `copies` (consistent with `template`), or None when its outside inputs
    cannot be scanned, depend on it, or race with a variable write."""
    initial: dict[tuple[int, int], Tensor] = {}
    varying: set[int] = set()  # positions that read a carry or a sequence, at any distance
    sequences: dict[Tensor, list[Tensor]] = {}  # keyed by copy 1's tensor, as the scan binds it
    invariants: set[Tensor] = set()
    scanned_reads: collections.Counter = collections.Counter()  # tensor -> reads as a row
    outside: set[Operation] = set()  # ops outside the repeat that it reads (data or control)
    slot = iter(template)
    for p, op in enumerate(copies[0]):
        for i, t in enumerate(op.inputs):
            kind = next(slot)
            if kind != _EXT and kind[0] == _SELF:
                if kind[1] in varying:
                    varying.add(p)
                continue
            if kind != _EXT:  # a carry: copy 0 reads its initial value
                if initial.setdefault(kind[1:], t) is not t or _host_input(op, i):
                    return None
                outside.add(t.op)
                varying.add(p)
                continue
            column = [copy[p].inputs[i] for copy in copies]
            outside.update(x.op for x in column)
            if all(x is t for x in column) or _equal_constants(column):
                invariants.add(column[1])  # the scan's body reads copy 1's
            elif t.dtype == dtypes.resource or _host_input(op, i):
                return None
            elif sequences.setdefault(column[1], column) != column:
                return None
            else:
                varying.add(p)
                scanned_reads.update(column)
        for i, c in enumerate(op.control_inputs):
            kind = next(slot)
            if kind == _EXT:
                outside.update(copy[p].control_inputs[i] for copy in copies)
    if invariants.intersection(sequences):
        return None
    members = {op for copy in copies for op in copy}
    if not uses.independent(members, outside) or not uses.writes_ordered(members, outside):
        return None
    outputs: dict[tuple[int, int], list[int]] = collections.defaultdict(list)
    for k, copy in enumerate(copies):
        for p, op in enumerate(copy):
            for t in op.outputs:
                if t in fetched or any(c not in members for c in uses.consumers[t]):
                    outputs[(p, t.value_index)].append(k)
    invariant_positions = [p for p in range(len(copies[0])) if p not in varying]
    return Repeat(
        copies,
        list(initial),
        list(initial.values()),
        list(sequences.values()),
        dict(outputs),
        invariant_positions,
        scanned_reads=scanned_reads,
    )


def _equal_constants(column: list[Tensor]) -> bool:
    """Each copy reads its own Const, all of one value (an axis each copy built for itself)."""
    if any(t.op.type != "Const" for t in column):
        return False
    first = _frozen(column[0].op.attrs)
    return all(_frozen(t.op.attrs) == first for t in column[1:])


def _host_input(op: Operation, index: int) -> bool:
    """Input `index` of `op` must be known while tracing (a shape, an axis): never scanned."""
    n = len(op.inputs)
    return any(h % n == index for h in op.op_def.host_inputs) if n else False
