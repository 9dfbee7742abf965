"""Cond contexts: the branches of a cond and of a cond's gradient (whitepaper §3, §7).

A `CondContext` is one branch: every tensor it captures from outside goes through its own
Switch on the predicate, so the branch's ops run only when it is taken. A `GradCondContext` holds
the gradient ops of a forward branch, as a branch of its own on the same predicate.
"""

from __future__ import annotations

from typing import Any

from sluice.framework.control_flow.context import ControlFlowContext
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ops.control.control_flow_ops import switch
from sluice.framework.ops.core import core_ops


class CondContext(ControlFlowContext):
    """One branch of a cond: captures go through Switch(x, pred), output `branch` (1 = true)."""

    def __init__(
        self,
        graph: Any,
        pred: Tensor,
        pivot: Tensor | None,
        branch: int,
        name: str,
        gradients: dict | None = None,
    ):
        super().__init__(graph, graph.control_flow_context)
        self.pred = pred
        self.pivot = pivot
        self.branch = branch
        self.name = name
        # Shared by both branches of the cond: backward context -> its (false, true) gradient
        # branches (see `gradient_branches`).
        self._gradients = {} if gradients is None else gradients

    def _make_capture(self, t: Tensor) -> Tensor:
        outputs = switch(t, self.pred)
        outputs[0].op.control_flow_context = self  # its output lives in this branch
        return outputs[self.branch]

    def control_pivot(self) -> Tensor:
        return self.pivot

    def reroute_external_controls(self, op: Operation, inner: Any) -> None:  # pragma: no cover
        raise AssertionError("only while contexts reroute control edges")

    @property
    def gradient_table(self) -> dict:
        """Backward context -> its (false, true) gradient branches; one dict shared by both
        branches of the cond (a graph_def names the cond by it)."""
        return self._gradients

    def record_gradient_branches(
        self, outer: Any, pair: tuple[GradCondContext, GradCondContext]
    ) -> None:
        """Records the gradient branches built in `outer` (an imported graph_def's)."""
        self._gradients[outer] = pair

    def gradient_branches(self, outer: Any) -> tuple[GradCondContext, GradCondContext]:
        """The (false, true) branches that hold this cond's gradient ops when they are built in
        the backward context `outer` (None: the top level); made on first use, then shared by
        every gradient built there."""
        pair = self._gradients.get(outer)
        if pair is None:
            g = self.graph
            with g.in_control_flow_context(outer), g.control_dependencies(None):
                pred = core_ops.identity(self.pred, name="grad_pred_id")  # captured into `outer`
                shared: dict = {}
                pair = tuple(
                    GradCondContext(g, pred, branch, f"{self.name}_grad", shared)
                    for branch in (0, 1)
                )
            self._gradients[outer] = pair
        return pair


class GradCondContext(CondContext):
    """One branch of a cond's gradient: the gradient ops of the forward branch's ops, built as a
    branch of their own on the same predicate, so that they run only when the forward branch ran.

    It is a cond like the forward one: the gradient enters through the Switch that grad(Merge)
    builds on the predicate (a capture of this context) and leaves through the Merge that
    grad(Switch) builds with zeros from the other branch. Any other tensor from outside (a
    forward value, a value popped from a stack in a backward loop) comes in through a Switch
    too, and an op with no input waits on the pivot, which is built when first needed. The
    compiled engine lowers it by the forward cond's rule (`lowering_cond`); the interpreted one
    sees the same dead tensors as if the gradient ops read their inputs directly.
    """

    def __init__(self, graph: Any, pred: Tensor, branch: int, name: str, gradients: dict):
        super().__init__(graph, pred, None, branch, name, gradients)

    def _capture_new(self, t: Tensor, consumer: str | None = None) -> Tensor:
        # A forward value is no value of an enclosing context, as the base class requires:
        # the enclosing backward context brings it in (a backward loop pops it from a stack)
        # with the graph in that context, and a Switch brings it into the branch.
        g = self.graph
        with g.in_control_flow_context(self.outer_context), g.control_dependencies(None):
            outer = self.outer_context.capture(t, consumer) if self.outer_context is not None else t
            return self._make_capture(outer)

    def control_pivot(self) -> Tensor:
        if self.pivot is None:
            g = self.graph
            with g.in_control_flow_context(self.outer_context), g.control_dependencies(None):
                side = switch(self.pred, self.pred)[self.branch]
                self.pivot = core_ops.identity(side, name="switch_t" if self.branch else "switch_f")
        return self.pivot

    def shape_home(self, t: Tensor) -> Any:
        return self.outer_context.shape_home(t) if self.outer_context is not None else None
