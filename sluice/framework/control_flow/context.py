"""Control-flow contexts: which cond branch or while frame an op belongs to.

While a branch or loop body is built, its context is the graph's current context. Every op built
then records it, and every input coming from outside is captured: a cond branch routes it
through its own Switch on the predicate, a while frame through an Enter with is_constant=True.
Ops with nothing inside the context to wait for get a control edge from the context's pivot, so
they run once per branch taken or per iteration, never unconditionally.
"""

from __future__ import annotations

import logging
from typing import Any

from sluice.framework.ir.graph import Operation, Tensor

_logger = logging.getLogger("sluice")


def output_context(op: Operation) -> Any:
    """The context where `op`'s outputs live (an Exit's outputs leave its loop)."""
    ctx = op.control_flow_context
    if op.type == "Exit" and ctx is not None:
        return ctx.outer_context
    return ctx


def is_within(ctx: Any, ancestor: Any) -> bool:
    """True when `ctx` is `ancestor` or nested inside it (None is the top level)."""
    while ctx is not None:
        if ctx is ancestor:
            return True
        ctx = ctx.outer_context
    return ancestor is None


def while_context_of(ctx: Any) -> Any:
    """The innermost while loop enclosing context `ctx` (None at the top level)."""
    return None if ctx is None else ctx.get_while_context()


def may_use_in(t: Tensor, ctx: Any) -> bool:
    """Whether a value `t` may be used in context `ctx`: `t` is in no while loop, or in `ctx`'s
    loop or one enclosing it."""
    source_loop = while_context_of(output_context(t.op))
    return source_loop is None or is_within(ctx, source_loop)


def check_loop_input(t: Tensor, ctx: Any, consumer: str | None = None) -> None:
    """Raises ValueError unless a value `t` may be used in context `ctx` (TF1's
    `CheckInputFromValidContext`): `t`'s while loop (if any) must be `ctx`'s loop or enclose it;
    values leave a loop only through its Exits. `consumer` names the op being built, for the
    message (TF1's text); what each side's loop is goes to the info log."""
    if may_use_in(t, ctx):
        return
    source_loop = while_context_of(output_context(t.op))
    user_loop = while_context_of(ctx)
    source, user = t.op.name, consumer or "an op built here"
    if user_loop is None:
        error = f"Cannot use {source!r} as input to {user!r} because {source!r} is in a while loop."
        hint = f"{source!r} is in the while loop {source_loop.name!r}: pass it out of the loop "
        hint += "as a loop variable instead."
    else:
        error = f"Cannot use {source!r} as input to {user!r} because they are in different "
        error += "while loops."
        hint = f"{source!r} is in the while loop {source_loop.name!r}, which does not enclose "
        hint += f"this one ({user_loop.name!r}): values leave a loop only as its results."
    _logger.info("%s\n\n%s", error, hint)
    raise ValueError(f"{error} See info log for more details. ({hint})")


class ControlFlowContext:
    """Base class: capture of external tensors, nesting and the pivot rule."""

    def __init__(self, graph: Any, outer_context: Any):
        self.graph = graph
        self.outer_context = outer_context
        self._captured: dict[Tensor, Tensor] = {}
        self._saved: list[Any] = []

    # -- nesting -------------------------------------------------------------------------------
    def enter(self) -> None:
        self._saved.append(self.graph.control_flow_context)
        self.graph.control_flow_context = self

    def exit(self) -> None:
        self.graph.control_flow_context = self._saved.pop()

    def __enter__(self) -> "ControlFlowContext":
        self.enter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.exit()

    def get_while_context(self) -> "ControlFlowContext | None":
        ctx = self
        while ctx is not None and not ctx.is_while:
            ctx = ctx.outer_context
        return ctx

    def output_while_context(self, op: Operation) -> "ControlFlowContext | None":
        ctx = output_context(op)
        return None if ctx is None else ctx.get_while_context()

    is_while = False

    # -- what a session may feed and fetch (asked by Graph.is_fetchable/is_feedable) -----------
    def may_fetch(self, op: Operation) -> bool:
        """Whether `op`, built in this context, may be fetched: not inside a while loop, where it
        has a value per iteration (a loop's Exit is outside, its result). A cond branch's value
        may be (TF1 refuses it; sluice fetches it when the branch is taken and raises when not)."""
        return self.output_while_context(op) is None

    def may_feed(self, t: Tensor) -> bool:
        """Whether `t`, made by an op of this context, may be fed: as TF1, not inside a while
        loop (a value per iteration, an Enter's too); a cond branch's values may."""
        return self.output_while_context(t.op) is None

    def contains(self, t: Tensor) -> bool:
        return is_within(output_context(t.op), self)

    def check_use_at_top_level(self, t: Tensor, consumer: str) -> None:
        """Called by the graph for an op built outside every context whose input `t` was built
        in this one: allowed for a cond branch's value (as in TF1), not for a loop's."""
        check_loop_input(t, None, consumer)

    # -- capture -------------------------------------------------------------------------------
    @property
    def captured(self) -> dict[Tensor, Tensor]:
        """Each outside tensor captured so far -> the tensor that stands for it here."""
        return dict(self._captured)

    def record_capture(self, outside: Tensor, inside: Tensor) -> None:
        """Records that `outside` is seen as `inside` here (an imported graph_def's captures)."""
        self._captured[outside] = inside

    def capture(self, t: Tensor, consumer: str | None = None) -> Tensor:
        """`t` as seen inside this context (itself if it was built here). `consumer`: the name
        of the op that takes it, for the error when `t` may not be used here."""
        if self.contains(t):
            return t
        found = self._captured.get(t)
        if found is not None:
            return found
        inside = self._capture_new(t, consumer)
        self._captured[t] = inside
        return inside

    def _capture_new(self, t: Tensor, consumer: str | None = None) -> Tensor:
        source_ctx = output_context(t.op)
        if not is_within(self.outer_context, source_ctx):
            # As in TF1, a value of another cond branch may be used (it is dead unless that
            # branch ran); a value of a while loop only inside that loop.
            check_loop_input(t, self, consumer)
        outer = self.outer_context.capture(t, consumer) if self.outer_context is not None else t
        with (
            self.graph.in_control_flow_context(self.outer_context),
            self.graph.control_dependencies(None),
        ):
            return self._make_capture(outer)

    def _make_capture(self, t: Tensor) -> Tensor:
        raise NotImplementedError

    # -- per-op bookkeeping --------------------------------------------------------------------
    def control_pivot(self) -> Tensor:
        raise NotImplementedError

    def add_op(self, op: Operation) -> None:
        """Called by the graph after `op` is built in this context."""
        internal_controls = [c for c in op.control_inputs if is_within(output_context(c), self)]
        if self._needs_pivot(op, internal_controls):
            op.add_control_input(self.control_pivot().op)
        while_ctx = self.get_while_context()
        if while_ctx is not None:
            while_ctx.reroute_external_controls(op, self)

    def _needs_pivot(self, op: Operation, internal_controls: list) -> bool:
        return not op.inputs and not internal_controls

    def shape_home(self, t: Tensor) -> "ControlFlowContext | None":
        """Where a Shape/Size/Rank of `t` should be built (None: here). A backward loop builds
        them in the forward loop, so the small result is saved instead of `t` itself."""
        return None
