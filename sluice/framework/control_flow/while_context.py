"""While contexts: one loop's frame (whitepaper §4).

A tensor a loop body captures from outside becomes a loop constant (an Enter with is_constant);
an op that reads only loop constants waits on the loop's pivot, so it runs every iteration;
a control edge from outside reaches the frame through a loop-constant token. Every Exit the loop
gets, also of a loop variable added later (a gradient's counter or stacks), is recorded in
`loop_exits`. The builder records the loop's own iteration counter (`counter`) when it has
`maximum_iterations`.
"""

from __future__ import annotations

from typing import Any

from sluice.framework.control_flow.context import ControlFlowContext, is_within, output_context
from sluice.framework.control_flow.structure import is_loop_constant_enter
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ops.core import core_ops


class WhileContext(ControlFlowContext):
    """One while loop's frame: captures become loop-constant Enters of `frame_name`."""

    is_while = True

    def __init__(
        self,
        graph: Any,
        name: str,
        parallel_iterations: int,
        back_prop: bool,
        swap_memory: bool,
        maximum_iterations: Any,
        unroll: int = 1,
    ):
        super().__init__(graph, graph.control_flow_context)
        self.name = name
        self.unroll = unroll  # iterations per step of the compiled loop (when it is a scan)
        self.parallel_iterations = parallel_iterations
        self.back_prop = back_prop
        self.swap_memory = swap_memory
        self.maximum_iterations = maximum_iterations  # int when static, a Tensor, or None
        self.pivot_for_pred: Tensor | None = None
        self.pivot_for_body: Tensor | None = None
        self.loop_cond: Tensor | None = None
        self.loop_enters: list[Tensor] = []
        self.loop_exits: list[Tensor] = []
        # the builder's own iteration counter (a Merge output), when it has maximum_iterations
        self.counter: Tensor | None = None
        self._control_tokens: dict[frozenset, Tensor] = {}

    def _make_capture(self, t: Tensor) -> Tensor:
        return self.make_enter(t, is_constant=True)

    def add_op(self, op: Operation) -> None:
        super().add_op(op)
        if op.type == "Exit":
            # Every Exit, also of a loop variable added later (an iteration counter, a stack,
            # an accumulator): a gradient walk releases a loop only when all its Exits are seen.
            self.loop_exits.append(op.outputs[0])

    def make_enter(self, t: Tensor, is_constant: bool) -> Tensor:
        """An Enter of `t` (built in the outer context) that belongs to this frame."""
        attrs = {
            "frame_name": self.name,
            "is_constant": is_constant,
            "parallel_iterations": self.parallel_iterations,
        }
        with self.graph.in_control_flow_context(self.outer_context):
            op = core_ops.apply_op("Enter", [t], attrs, name="Enter")
        op.control_flow_context = self
        return op.outputs[0]

    def control_pivot(self) -> Tensor:
        return self.pivot_for_body if self.pivot_for_body is not None else self.pivot_for_pred

    def _needs_pivot(self, op: Operation, internal_controls: list) -> bool:
        # An op that reads only loop constants would otherwise run once per frame, not per
        # iteration, and never see the loop end.
        if internal_controls or op.type == "Enter":
            return False
        return all(is_loop_constant_enter(t.op, self) for t in op.inputs)

    @property
    def control_tokens(self) -> dict[frozenset, Tensor]:
        """Each set of outside control inputs -> the loop-constant token that stands for it."""
        return dict(self._control_tokens)

    def record_control_token(self, external: frozenset, token: Tensor) -> None:
        """Records the token for a set of outside control inputs (an imported graph_def's)."""
        self._control_tokens[external] = token

    def reroute_external_controls(self, op: Operation, inner: ControlFlowContext) -> None:
        """A control edge from outside the frame cannot reach an op inside it directly: it goes
        through a loop-constant Enter of a token that depends on the outside ops."""
        if op.type == "Enter" and op.control_flow_context is self:
            return
        external = [c for c in op.control_inputs if not _is_within_frame(c, self)]
        if not external:
            return
        for c in external:
            op.remove_control_input(c)
        key = frozenset(external)
        token = self._control_tokens.get(key)
        if token is None:
            with (
                self.graph.in_control_flow_context(self.outer_context),
                self.graph.control_dependencies(None),
                self.graph.control_dependencies(external),
            ):
                outside = core_ops.constant(0, name="control_token")
            token = self.capture(outside)
            self._control_tokens[key] = token
        inside = inner.capture(token) if inner is not self else token
        op.add_control_input(inside.op)


def _is_within_frame(op: Operation, ctx: WhileContext) -> bool:
    out = output_context(op)
    return out is not None and is_within(out.get_while_context(), ctx)
