"""`cond`: a two-way branch built from Switch and Merge (whitepaper §3)."""

from __future__ import annotations

from typing import Any, Callable

import jax
import numpy as np

from sluice.framework.ir import dtypes
from sluice.framework.control_flow.context import ControlFlowContext
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ops import core_ops


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
        super().__init__(graph, graph._get_control_flow_context())
        self.pred = pred
        self.pivot = pivot
        self.branch = branch
        self.name = name
        # Shared by both branches of the cond: backward context -> its (false, true) gradient
        # branches (see `gradient_branches`).
        self._gradients = {} if gradients is None else gradients

    def _make_capture(self, t: Tensor) -> Tensor:
        outputs = switch(t, self.pred)
        outputs[0].op._control_flow_context = self  # its output lives in this branch
        return outputs[self.branch]

    def control_pivot(self) -> Tensor:
        return self.pivot

    def reroute_external_controls(self, op: Operation, inner: Any) -> None:  # pragma: no cover
        raise AssertionError("only while contexts reroute control edges")

    def gradient_branches(self, outer: Any) -> tuple[GradCondContext, GradCondContext]:
        """The (false, true) branches that hold this cond's gradient ops when they are built in
        the backward context `outer` (None: the top level); made on first use, then shared by
        every gradient built there."""
        pair = self._gradients.get(outer)
        if pair is None:
            g = self.graph
            with g._in_control_flow_context(outer), g.control_dependencies(None):
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

    def _capture_new(self, t: Tensor) -> Tensor:
        # A forward value is no value of an enclosing context, as the base class requires:
        # the enclosing backward context brings it in (a backward loop pops it from a stack)
        # with the graph in that context, and a Switch brings it into the branch.
        g = self.graph
        with g._in_control_flow_context(self.outer_context), g.control_dependencies(None):
            outer = self.outer_context.capture(t) if self.outer_context is not None else t
            return self._make_capture(outer)

    def control_pivot(self) -> Tensor:
        if self.pivot is None:
            g = self.graph
            with g._in_control_flow_context(self.outer_context), g.control_dependencies(None):
                side = switch(self.pred, self.pred)[self.branch]
                self.pivot = core_ops.identity(side, name="switch_t" if self.branch else "switch_f")
        return self.pivot

    def shape_home(self, t: Tensor) -> Any:
        return self.outer_context.shape_home(t) if self.outer_context is not None else None


def switch(data: Tensor, pred: Tensor, name: str | None = None) -> tuple[Tensor, Tensor]:
    """Switch primitive: (output_false, output_true); the side not selected by `pred` is dead."""
    op = core_ops.apply_op("Switch", [data, pred], name=name or "Switch")
    return op.outputs[0], op.outputs[1]


def merge(inputs: list[Tensor], name: str | None = None) -> tuple[Tensor, Tensor]:
    """Merge primitive: (output, value_index) of the first live input."""
    op = core_ops.apply_op("Merge", inputs, name=name or "Merge")
    return op.outputs[0], op.outputs[1]


def cond(
    pred: Any,
    true_fn: Callable[[], Any] | None = None,
    false_fn: Callable[[], Any] | None = None,
    strict: bool = False,
    name: str | None = None,
) -> Any:
    """Returns `true_fn()` if `pred` is true else `false_fn()`, as graph ops.

    Semantics, as plain Python (only the taken branch's ops run)::

        def cond(pred, true_fn, false_fn):
            return true_fn() if pred else false_fn()

    Both functions are called once, while the graph is built; each builds its ops in its own
    branch context. Tensors a branch uses from outside go through a Switch, so the branch's ops
    run only when it is taken. Note: ops created *outside* the branch functions always run, even
    when only one branch uses them (`y = sl.square(x); sl.cond(p, lambda: y, ...)` computes `y`
    whatever `p` is) -- create them inside the function to make them conditional.

    Args:
      pred: a scalar bool Tensor.
      true_fn, false_fn: callables returning the same nested structure of Tensors (or
        Operations) with matching dtypes.
      strict: when False, a result that is a one-element list or tuple is unpacked.
      name: name scope for the ops.

    Returns:
      The merged results, in the structure the branches return.

    Raises:
      TypeError: `pred` is a Python bool or not a bool scalar, a function is not callable, or the branches
        return different dtypes.
      ValueError: the branches return different structures.

    >>> x, y = sl.constant(2.0), sl.constant(5.0)
    >>> z = sl.cond(x < y, lambda: x + 1.0, lambda: y * y)   # 3.0 when run
    """
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("sl.cond: true_fn and false_fn must both be callables.")
    if isinstance(pred, (bool, np.bool_)):
        # As TF1: a Python bool is known while building; `true_fn() if pred else false_fn()`
        # says what is meant without building both branches.
        raise TypeError("sl.cond: pred must not be a Python bool; use a bool Tensor.")
    pred = core_ops.convert_to_tensor(pred)
    g = pred.graph
    if pred.dtype != dtypes.bool_:
        raise TypeError(f"sl.cond: pred must be a bool tensor, got {pred.dtype.name} ({pred.name}).")
    if pred.shape.rank not in (None, 0):
        raise ValueError(f"sl.cond: pred must be a scalar, got shape {pred.shape} ({pred.name}).")
    with g.name_scope(name or "cond") as scope:
        p_false, p_true = switch(pred, pred)
        pivot_true = core_ops.identity(p_true, name="switch_t")
        pivot_false = core_ops.identity(p_false, name="switch_f")
        pred_id = core_ops.identity(pred, name="pred_id")
        results, gradients = [], {}
        for branch, fn, pivot in ((1, true_fn, pivot_true), (0, false_fn, pivot_false)):
            ctx = CondContext(g, pred_id, pivot, branch, scope[:-1], gradients)
            with ctx:
                original = fn()
                results.append(_branch_outputs(original, ctx))
        (true_leaves, true_tree, true_orig), (false_leaves, false_tree, _) = results
        if true_tree != false_tree:
            raise ValueError(
                "sl.cond: true_fn and false_fn must return the same structure, got "
                f"{true_tree} and {false_tree}.")
        merged: list[Any] = []
        for i, (t, f) in enumerate(zip(true_leaves, false_leaves)):
            if t.dtype != f.dtype:
                raise TypeError(
                    f"sl.cond: output {i} has dtype {t.dtype.name} in true_fn but {f.dtype.name} in "
                    "false_fn; both branches must return matching dtypes.")
            value, _ = merge([f, t], name="Merge")
            merged.append(value.op if _returns_op(true_orig, i) else value)
    out = jax.tree_util.tree_unflatten(true_tree, merged)
    if not strict and isinstance(out, (list, tuple)) and len(out) == 1 and not hasattr(out, "_fields"):
        return out[0]
    return out


def _branch_outputs(original: Any, ctx: CondContext) -> tuple[list[Tensor], Any, list]:
    """Each branch result as a Tensor built inside the branch (so it is dead when not taken)."""
    if original is None:
        raise ValueError("sl.cond: a branch function returned None; it must return its results.")
    leaves, tree = jax.tree_util.tree_flatten(original, is_leaf=_is_output_leaf)
    tensors = []
    for leaf in leaves:
        if isinstance(leaf, Operation):
            with ctx.graph.control_dependencies([leaf]):
                tensors.append(core_ops.identity(ctx.pivot))
        else:
            tensors.append(core_ops.identity(core_ops.convert_to_tensor(leaf)))
    return tensors, tree, leaves


def _returns_op(leaves: list, index: int) -> bool:
    return isinstance(leaves[index], Operation)


def _is_output_leaf(x: Any) -> bool:
    return isinstance(x, (Tensor, Operation)) or hasattr(x, "_as_tensor")
