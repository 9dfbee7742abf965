"""What a `GradientTape` has recorded: its windows of op ids, what it watches, and from those the
ops that carry gradients (the rule in `sluice.framework.autodiff.tape`'s docstring)."""

from __future__ import annotations

import collections
from typing import Any

from sluice.framework.control_flow.structure import is_assign
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Operation, Tensor


class TapeRecord:
    """What one tape has recorded: its windows of op ids and what it watches."""

    def __init__(self):
        self.windows: list[list] = []  # [graph, last op id before it, last op id in it or None]
        self.watched: dict[Tensor, int] = {}  # tensor -> the last op id built before its watch
        self.variables: dict[Operation, Any] = {}  # VarHandleOp -> Variable, watched or sources
        self.watched_handles: set[Operation] = set()

    def open_window(self, g: graph_lib.Graph) -> None:
        self.windows.append([g, g.last_op_id, None])

    def close_window(self) -> None:
        window = self.windows[-1]
        window[2] = window[0].last_op_id

    def graphs(self) -> list[graph_lib.Graph]:
        """The graphs recorded in, in the order of their first window."""
        return list(dict.fromkeys(w[0] for w in self.windows))

    def watch(self, t: Tensor, variable: Any = None) -> None:
        self.watched.setdefault(t, t.graph.last_op_id)
        if variable is not None:
            self.variables[t.op] = variable
            self.watched_handles.add(t.op)

    def know(self, variable: Any) -> None:
        self.variables.setdefault(variable.handle.op, variable)

    def _window_ops(self, g: graph_lib.Graph) -> list[Operation]:
        spans = [(lo, g.last_op_id if hi is None else hi) for wg, lo, hi in self.windows if wg is g]
        return [op for op in g.get_operations() if any(lo < op.id <= hi for lo, hi in spans)]

    def _accessed(self, g: graph_lib.Graph, ops: list[Operation]) -> dict[Operation, Operation]:
        """The trainable variables that `ops` read: VarHandleOp -> the first op reading it."""
        variables = {**variables_in_collections(g), **self.variables}
        first: dict[Operation, Operation] = {}
        for op in ops:
            if is_assign(op) or op.type == "VarIsInitializedOp":
                continue
            for t in op.inputs:
                v = variables.get(t.op) if t.op.type == "VarHandleOp" else None
                if v is None or t.op in first or not getattr(v, "trainable", False):
                    continue
                if op is getattr(v, "initializer", None) or op is _snapshot_op(v):
                    continue  # the variable's own initializer and snapshot
                first[t.op] = op
        return first

    def recorded_ops(self, g: graph_lib.Graph, watch_accessed: bool) -> set[Operation]:
        """The ops of `g` this tape recorded (see the module docstring)."""
        ops = self._window_ops(g)
        seeds = {t: since for t, since in self.watched.items() if t.graph is g}
        if watch_accessed:
            for handle_op, reader in self._accessed(g, ops).items():
                t = handle_op.outputs[0]
                seeds[t] = min(seeds.get(t, reader.id - 1), reader.id - 1)
        consumers: dict[Tensor, list[Operation]] = collections.defaultdict(list)
        for op in ops:
            for t in op.inputs:
                consumers[t].append(op)
        stack = [op for t, since in seeds.items() for op in consumers[t] if op.id > since]
        recorded: set[Operation] = set()
        while stack:
            op = stack.pop()
            if op in recorded:
                continue
            recorded.add(op)
            for t in op.outputs:
                stack.extend(consumers[t])
        return recorded

    def watched_variables(self, watch_accessed: bool) -> tuple:
        found = {op: self.variables[op] for op in self.watched_handles}
        if watch_accessed:
            for g in self.graphs():
                variables = {**variables_in_collections(g), **self.variables}
                for handle_op in self._accessed(g, self._window_ops(g)):
                    found.setdefault(handle_op, variables[handle_op])
        order = {g: i for i, g in enumerate(self.graphs())}
        ranked = sorted(found, key=lambda op: (order.get(op.graph, len(order)), op.id))
        return tuple(found[op] for op in ranked)


def variables_in_collections(g: graph_lib.Graph) -> dict[Operation, Any]:
    """The Variables kept in `g`'s collections, by their VarHandleOp."""
    found = {}
    for key in g.get_all_collection_keys():
        for item in g.get_collection(key):
            handle = getattr(item, "handle", None)
            if isinstance(handle, Tensor) and handle.op.type == "VarHandleOp":
                found.setdefault(handle.op, item)
    return found


def _snapshot_op(v: Any) -> Operation | None:
    """The read a Variable makes when it is built (what `sess.run(v)` fetches)."""
    snapshot = getattr(v, "snapshot", None)
    return snapshot.op if isinstance(snapshot, Tensor) else None
