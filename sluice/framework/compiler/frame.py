"""The compiled engine's view of a pruned graph: its while frames, and orders of their units.

A `Frame` holds the ops of one while frame (or of the root), its child frames, and `order`: its
units (ops, child frames, cond regions, repeats) dependencies first. `NotLowerable` says the
compiled engine cannot express a graph, so it runs interpreted.
"""

from __future__ import annotations

import collections
from typing import Any

from sluice.framework.ir import errors
from sluice.framework.ir.graph import Operation


class NotLowerable(Exception):
    """The graph uses something the compiled engine cannot express; run it interpreted.
    `quiet`: an expected case (host-only ops such as file I/O), not worth a warning."""

    def __init__(self, message: str, quiet: bool = False):
        super().__init__(message)
        self.quiet = quiet


class KernelTraceError(errors.InvalidArgumentError):
    """An op's kernel rejected the values it was traced with (their shapes or dtypes): the
    user's error, as the interpreter reports it, unless the op lies on a cond branch that may
    not run (then the region cannot be compiled, and the interpreter runs only the taken
    branch, as TF1 does)."""


class Frame:
    """The ops of one while frame (or of the root), with its child frames."""

    def __init__(self, ctx: Any, parent: Frame | None):
        self.ctx = ctx
        self.parent = parent
        self.ops: list[Operation] = []
        self.children: list[Frame] = []
        self.order: list[Any] = []  # ops and child Frames, dependencies first

    @property
    def enters(self) -> list[Operation]:
        return [op for op in self.ops if op.type == "Enter"]

    @property
    def exits(self) -> list[Operation]:
        return [op for op in self.ops if op.type == "Exit"]

    @property
    def loop_cond(self) -> Operation:
        """The LoopCond whose predicate decides whether the loop runs another iteration."""
        return next(op for op in self.ops if op.type == "LoopCond")


def topological_order(units: list, deps: dict) -> list:
    """Kahn's order of `units` given each one's dependencies among them (ties: creation order);
    shorter than `units` when the dependencies have a cycle."""
    users = collections.defaultdict(list)
    for u, ds in deps.items():
        for d in ds:
            users[d].append(u)
    remaining = {u: len(ds) for u, ds in deps.items()}
    ready = collections.deque(sorted((u for u in units if remaining[u] == 0), key=_unit_key))
    order = []
    while ready:
        u = ready.popleft()
        order.append(u)
        for v in users[u]:
            remaining[v] -= 1
            if remaining[v] == 0:
                ready.append(v)
    return order


def _unit_key(u: Any) -> int:
    return u.id if isinstance(u, Operation) else min(op.id for op in u.ops) if u.ops else 0


def all_ops(frame: Frame) -> list[Operation]:
    out = list(frame.ops)
    for child in frame.children:
        out.extend(all_ops(child))
    return out
