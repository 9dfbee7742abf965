"""`Repeat`: the record of one repeat, K copies of P ops that run as one scan (see `repeats`,
which finds them, `repeat_uses`, which settles what their outputs are used for, and
`lowering_repeats`, which lowers them)."""

from __future__ import annotations

import collections
import dataclasses

from sluice.framework.ir.graph import Operation, Tensor


@dataclasses.dataclass(eq=False)
class Repeat:
    """K copies of P ops that run as one scan (see the module docstring).

    `copies[k][p]` is op p of copy k; every copy's ops are in position order (inputs first).
    """

    copies: list[list[Operation]]
    carries: list[tuple[int, int]]  # (op position, output index) each copy passes to the next
    initial: list[Tensor]  # what copy 0 reads for each carry, from outside
    sequences: list[list[Tensor]]  # per scanned input: its tensor for each copy
    outputs: dict[tuple[int, int], list[int]]  # (position, output) -> the copies read outside
    # positions whose ops read neither a carry nor a sequence, even through other ops of the
    # copy (a variable read, a transposed weight): one value for every copy, computed once
    invariant_positions: list[int] = dataclasses.field(default_factory=list)
    # outputs only later repeats read, each as a row of one of its sequences: they need no value
    # of their own after the scan (the later scan reads the stack)
    rows_only: set[Tensor] = dataclasses.field(default_factory=set)
    scanned_reads: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    # outputs whose every copy is read only by one AddN outside (a weight's gradient summed over
    # time steps): the scan adds them up as it goes instead of stacking them
    sums: dict[tuple[int, int], Operation] = dataclasses.field(default_factory=dict)

    @property
    def ops(self) -> list[Operation]:
        return [op for copy in self.copies for op in copy]
