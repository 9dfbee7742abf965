"""How the ops around a repeat (see `repeats`) read it, and what that allows.

`Uses` answers the dependency questions that decide whether copies may run as one scan: does
anything the copies read depend on them, and is every variable they read written only before
or after all of them. `settle_outputs` then decides, for the repeats kept, which outputs the
scan sums as it goes (a weight's gradient added over the time steps by one AddN) and which need
no value of their own after the scan (rows that only a later scan reads, from the stack).
"""

from __future__ import annotations

import collections
from typing import Iterable

from sluice.framework.compiler.repeat import Repeat
from sluice.framework.control_flow.structure import VARIABLE_READS
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Operation, Tensor

READS = ("ReadVariableOp",)  # the only stateful ops a repeat may hold


def settle_outputs(chosen: list[Repeat], uses: Uses, fetched: set) -> None:
    """Fills each repeat's `sums` and `rows_only` (see `Repeat`)."""
    taken = {op for r in chosen for op in r.ops}
    scanned = sum((r.scanned_reads for r in chosen), collections.Counter())
    for r in chosen:
        r.sums = _sums(r, set(r.ops), taken, uses, fetched)
    # an AddN that adds the copies of two outputs (or repeats) is left as it is
    claims = collections.Counter(adder for r in chosen for adder in r.sums.values())
    for r in chosen:
        r.sums = {pos: adder for pos, adder in r.sums.items() if claims[adder] == 1}
        members = set(r.ops)
        for (p, i), ks in r.outputs.items():
            for k in ks:
                t = r.copies[k][p].outputs[i]
                reads = sum(1 for c in uses.consumers[t] if c not in members)
                if t not in fetched and reads == scanned[t]:
                    r.rows_only.add(t)


def _sums(
    repeat: Repeat, members: set, taken: set, uses: Uses, fetched: set
) -> dict[tuple[int, int], Operation]:
    """The outputs of `repeat` that only one AddN (outside every repeat) reads, every copy once."""
    sums = {}
    everyone = list(range(len(repeat.copies)))
    for (p, i), ks in repeat.outputs.items():
        if ks != everyone or p in repeat.invariant_positions:
            continue
        tensors = [copy[p].outputs[i] for copy in repeat.copies]
        if not tensors[0].shape.is_fully_defined() or any(t in fetched for t in tensors):
            continue
        readers = [[c for c in uses.consumers[t] if c not in members] for t in tensors]
        adder = readers[0][0] if readers[0] else None
        if (
            adder is not None
            and adder.type == "AddN"
            and adder not in taken
            and all(r == [adder] for r in readers)
        ):
            sums[(p, i)] = adder
    return sums


class Uses:
    """Who reads what among a plan's ops (data and control edges)."""

    def __init__(self, ops: Iterable[Operation]):
        self.ops = list(ops)
        self.consumers: dict[Tensor, list[Operation]] = collections.defaultdict(list)
        self.users: dict[Operation, list[Operation]] = collections.defaultdict(list)
        for op in self.ops:
            for t in op.inputs:
                self.consumers[t].append(op)
                self.users[t.op].append(op)
            for c in op.control_inputs:
                self.users[c].append(op)

    def descendants(self, sources: Iterable[Operation]) -> set[Operation]:
        seen: set[Operation] = set()
        stack = list(sources)
        while stack:
            for user in self.users.get(stack.pop(), ()):
                if user not in seen:
                    seen.add(user)
                    stack.append(user)
        return seen

    @staticmethod
    def ancestors(sources: Iterable[Operation]) -> set[Operation]:
        seen: set[Operation] = set()
        stack = list(sources)
        while stack:
            op = stack.pop()
            if op in seen:
                continue
            seen.add(op)
            stack.extend(t.op for t in op.inputs)
            stack.extend(op.control_inputs)
        return seen

    def independent(self, members: set, outside: set) -> bool:
        """Nothing the repeat reads from outside depends on the repeat."""
        return not self.descendants(members).intersection(outside)

    def writes_ordered(self, members: set, outside: set) -> bool:
        """Every op that may write a variable runs before or after the whole repeat, so its reads
        see the same values in one scan as unrolled."""
        if not any(op.type in READS for op in members):
            return True
        writers = [
            op
            for op in self.ops
            if op not in members
            and op.op_def.stateful
            and op.type not in VARIABLE_READS
            and any(t.dtype == dtypes.resource for t in op.inputs)
        ]
        if not writers:
            return True
        after = self.descendants(members)
        before = self.ancestors(outside)
        return all(w in after or w in before for w in writers)
