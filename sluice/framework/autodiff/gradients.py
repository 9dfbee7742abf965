"""`gradients`: reverse-mode autodiff that adds the backward graph to the same graph.

The walk is small and knows no op: it finds the ops between `xs` and `ys`, visits them from the
ys backwards once all their consumers have been visited, sums fan-out gradients with AddN and
calls each op's registered gradient function. Loops and conds are handled by the control-flow
gradient rules (`control_flow_grad`) and the loop bookkeeping (`loop_state`); the walk only
(1) runs each op's rule in the backward context of the op's loop or cond branch, (2) releases a
loop's Exits together, giving unused ones zero gradients, and (3) visits a loop Switch twice:
once from its Exit (which starts the backward loop variable) and once from the loop body (which
closes it).
"""

from __future__ import annotations

import collections
from typing import Any

from sluice._export import export

# importing the rules registers the control-flow gradients
from sluice.framework.autodiff import control_flow_grad  # noqa: F401
from sluice.framework.autodiff.custom_gradient import gradient_function
from sluice.framework.autodiff.gradient_options import (
    UnconnectedGradients,
    as_unconnected_gradients,
    check_aggregation_method,
)
from sluice.framework.autodiff.loop_state import GradWhileContext, LoopStates, zeros_for
from sluice.framework.control_flow.context import output_context
from sluice.framework.ir import dtypes, registry
from sluice.framework.ir.graph import Operation, Tensor, graph_of
from sluice.framework.ops.array import fill_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import indexed_slices, math_ops
from sluice.framework.ops.math.indexed_slices import IndexedSlices


@export("gradients")
def gradients(
    ys: Any,
    xs: Any,
    grad_ys: Any = None,
    name: str = "gradients",
    colocate_gradients_with_ops: bool = False,
    gate_gradients: bool = False,
    aggregation_method: Any = None,
    stop_gradients: Any = None,
    unconnected_gradients: str = "none",
) -> list[Tensor | None]:
    """Symbolic derivatives of `sum(ys)` with respect to each of `xs` (TF1 `tf.gradients`).

    Args:
      ys: a Tensor or list of Tensors to differentiate.
      xs: a Tensor, Variable, or list of them.
      grad_ys: gradients flowing into `ys` (default: ones); Tensors or IndexedSlices.
      name: name scope of the backward ops.
      colocate_gradients_with_ops: build the gradient ops of each op in its colocation group,
        so they run on the forward op's device (as TF1).
      stop_gradients: Tensors treated as constants (no gradient flows through them).
      aggregation_method: None or an `sl.AggregationMethod` (all sum alike); others raise
        ValueError.
      unconnected_gradients: `sl.UnconnectedGradients.NONE` ("none": None for an x with no
        path to ys) or `ZERO` ("zero": zeros shaped like x).

    Returns:
      One Tensor per x, or None where no differentiable path leads from x to ys.

    >>> x = sl.constant(3.0)
    >>> (dx,) = sl.gradients(x * x, [x])
    >>> print(sl.Session().run(dx))
    6.0
    """
    ys = [core_ops.convert_to_tensor(y) for y in _as_list(ys)]
    xs = [_source(x, graph_of(ys)) for x in _as_list(xs)]
    g = graph_of(ys + xs)
    grad_ys = _as_list(grad_ys) if grad_ys is not None else [None] * len(ys)
    if len(grad_ys) != len(ys):
        raise ValueError(f"gradients: {len(grad_ys)} grad_ys for {len(ys)} ys.")
    for y, gy in zip(ys, grad_ys):
        if gy is None and y.dtype.is_complex:  # TF1's words, which scripts match
            raise TypeError(
                f"Gradients of complex tensors must set grad_ys (y.dtype = tf.{y.dtype.name})"
            )
        if y.dtype == dtypes.string:  # TF1 fails making the default grad_ys of ones
            raise TypeError(
                f"gradients: {y.name} is a string tensor, and strings carry no gradient."
            )
    check_aggregation_method(aggregation_method)  # every method sums alike (AddN)
    unconnected_gradients = as_unconnected_gradients(unconnected_gradients)
    stop_ops = {
        core_ops.convert_to_tensor(t).op
        for t in (_as_list(stop_gradients) if stop_gradients is not None else [])
    }
    # Called inside a loop body or cond branch (the ambient context), the gradient is built
    # there too: the walk differentiates only the loops and conds nested in it.
    ambient = g.control_flow_context
    try:
        with g.name_scope(name), g.control_dependencies(None):
            result = _Walk(g, ys, xs, grad_ys, stop_ops, ambient, colocate_gradients_with_ops).run()
    finally:
        g.control_flow_context = ambient
    if unconnected_gradients is UnconnectedGradients.ZERO:
        with g.name_scope(name):
            result = [zeros_for(x) if r is None else r for x, r in zip(xs, result)]
    return result


# Gradient rules that take an IndexedSlices as it is (TF1's return it unchanged); every other rule
# gets it dense, converted where the gradient lives (at a loop or cond boundary: outside it).
_PASSES_INDEXED_SLICES = frozenset({"Identity", "ReadVariableOp"})


def _source(x: Any, g: Any) -> Tensor:
    """What to differentiate for `x`: a variable's handle (a Keras weight's mirror in `g`, the
    graph of ys, when it is used there from another graph), else `x` as a tensor."""
    if hasattr(x, "graph_variable"):
        x = x.graph_variable(g)
    return x.handle if hasattr(x, "handle") else core_ops.convert_to_tensor(x)


def _as_list(x: Any) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _blocks_gradients(op: Operation) -> bool:
    return gradient_function(op) == registry.NOT_DIFFERENTIABLE


def _carries_gradient(t: Tensor) -> bool:
    return (
        dtypes.is_differentiable(t.dtype) or t.dtype == dtypes.resource and t.op.type != "StackV2"
    )


class _Walk:
    """One call of `gradients`: plan (which ops, how many consumers each), then visit."""

    def __init__(
        self,
        g,
        ys: list[Tensor],
        xs: list[Tensor],
        grad_ys: list,
        stop_ops: set,
        ambient: Any = None,
        colocate: bool = False,
    ):
        self.g = g
        self.colocate = colocate
        self.ys, self.xs, self.grad_ys = ys, xs, grad_ys
        self.stop_ops = stop_ops
        self.ambient = ambient
        self.grads: dict[Tensor, list[Tensor]] = collections.defaultdict(list)
        self.loops = LoopStates(g, ambient)
        self.queue: collections.deque[Operation] = collections.deque()

    # -- planning ------------------------------------------------------------------------------
    def _between(self) -> set[Operation]:
        """Ops on a path from xs to ys along tensors that can carry a gradient (a bool or int
        tensor, such as a loop predicate, cuts the path, as in TF), less those no gradient can
        reach (`_receiving`)."""
        consumers: dict[Tensor, list[Operation]] = collections.defaultdict(list)
        for op in self.g.get_operations():
            for t in op.inputs:
                consumers[t].append(op)
        xs_ops = {x.op for x in self.xs}
        reached: set[Operation] = set()
        stack = list(xs_ops)
        while stack:
            op = stack.pop()
            if op in reached or op in self.stop_ops and op not in xs_ops:
                continue
            reached.add(op)
            for t in op.outputs:
                if _carries_gradient(t):
                    stack.extend(consumers[t])
        # As TF1's _PendingCount: the path goes on through ops without a gradient (StopGradient,
        # a stack pop), so that an x behind one, inside a loop, still gets its zeros.
        between: set[Operation] = set()
        stack = [y.op for y in self.ys]
        while stack:
            op = stack.pop()
            if op in between or op not in reached:
                continue
            between.add(op)
            if op not in self.stop_ops:
                stack.extend(t.op for t in op.inputs)
        return self._receiving(between)

    def _receiving(self, between: set[Operation]) -> set[Operation]:
        """The ops of `between` that a gradient can reach from the ys: through ops that have a
        gradient, and from a loop's Exit that gets one to every differentiable Exit of that loop
        whose loop variable is on the path (those get zeros, as TF1's unused exits, and carry
        them back through the Switch, Merge and Enter to the initial value: TF1's zero gradient
        for an x whose only use in the loop is held in stop_gradient).

        What lies behind a StopGradient or a stack pop and nowhere else is left out: it would
        get None anyway, and its cycles (the backward loops of earlier calls, held in
        stop_gradient by a later expression) would keep the walk waiting for ops never visited.
        """
        receiving: set[Operation] = set()
        stack = [y.op for y in self.ys if y.op in between]
        while stack:
            op = stack.pop()
            if op in receiving:
                continue
            receiving.add(op)
            if op.type == "Exit":
                for x in op.control_flow_context.loop_exits:
                    if dtypes.is_differentiable(x.dtype) and (
                        x.op in between or x.op.inputs[0].op in between
                    ):
                        stack.append(x.op)
            if op not in self.stop_ops and not _blocks_gradients(op):
                stack.extend(t.op for t in op.inputs if t.op in between)
        return receiving

    def _pending_counts(self, between: set[Operation]) -> dict[Operation, int]:
        pending = collections.Counter()
        for op in between:
            if op in self.stop_ops:
                continue
            for t in op.inputs:
                if t.op in between:
                    pending[t.op] += 1
        return pending

    # -- visiting ------------------------------------------------------------------------------
    def run(self) -> list[Tensor | None]:
        between = self._between()
        between |= self.loops.plan(between)  # unused loop exits whose loop is differentiated
        self.between = between
        self.pending = self._pending_counts(between)
        for y, gy in zip(self.ys, self.grad_ys):
            if y.op not in between:
                continue
            if gy is None:
                gy = fill_ops.ones_like(y, name="grad_ys")
            elif isinstance(gy, IndexedSlices):
                # As TF1: taken as it is (an Identity passes it on; other rules densify it).
                if gy.dtype != y.dtype:
                    raise TypeError(
                        f"gradients: grad_ys for {y.name} is IndexedSlices of {gy.dtype.name}, "
                        f"but {y.name} is {y.dtype.name}."
                    )
            else:
                gy = core_ops.convert_to_tensor(gy, dtype=y.dtype)
            self.grads[y].append(gy)
        for op in sorted(between, key=lambda op: op.id):
            if self.pending[op] == 0:
                self._ready(op)
        xs_ops = {x.op for x in self.xs}
        visited: set[Operation] = set()
        while self.queue:
            op = self.queue.popleft()
            visited.add(op)
            if op not in self.stop_ops and not (op in xs_ops and op.type == "Placeholder"):
                self._visit(op)
            self._release_inputs(op)
        self._check_nothing_was_dropped(visited)
        self.loops.close_open_loops()
        results = []
        for x in self.xs:
            self._enter_context_of(x.op, for_output=True)
            results.append(self._aggregate(x))
        self.g.control_flow_context = self.ambient
        return results

    def _check_nothing_was_dropped(self, visited: set[Operation]) -> None:
        """A gradient that reached an op the walk never visited would be silently lost: make
        that an error (it would be a defect of the walk, never of the user's graph)."""
        for op in sorted(self.between - visited, key=lambda op: op.id):
            if op not in self.stop_ops and any(self.grads.get(t) for t in op.outputs):
                raise RuntimeError(
                    f"gradients: internal error: the backward walk never reached op {op.name!r} "
                    f"({op.type}), which has a gradient; the result would be wrong."
                )

    def _ready(self, op: Operation) -> None:
        if op.type == "Exit":
            released = self.loops.exit_ready(op, self.grads)
            self.queue.extend(released)
        else:
            self.queue.append(op)

    def _release_inputs(self, op: Operation) -> None:
        if op in self.stop_ops:
            return
        for t in op.inputs:
            src = t.op
            if src not in self.between:
                continue
            self.pending[src] -= 1
            if self.pending[src] == 0:
                self._ready(src)
            elif self.pending[src] > 0 and self.loops.is_loop_switch(src):
                self.queue.append(src)  # a loop Switch's first visit, from its Exit

    def _visit(self, op: Operation) -> None:
        if not any(self.grads.get(t) for t in op.outputs):
            return  # nothing flows back here: build nothing (no backward loop either)
        if self.colocate:
            with self.g.colocate_with(op, ignore_existing=True):
                self._build_gradient(op)
        else:
            self._build_gradient(op)

    def _build_gradient(self, op: Operation) -> None:
        self._enter_context_of(op, for_output=True)  # an Exit's gradients live outside its loop
        out_grads = [self._aggregate(t) for t in op.outputs]
        if (
            op.type not in _PASSES_INDEXED_SLICES
            and gradient_function(op) != registry.NOT_DIFFERENTIABLE
        ):
            out_grads = [indexed_slices.dense(gr) for gr in out_grads]
        self._enter_context_of(op, for_output=False)
        if self.loops.is_loop_switch(op) and not isinstance(
            self.g.control_flow_context, GradWhileContext
        ):
            # `gradients` called inside this loop's body reached a loop variable's Switch
            self._no_gradient_through_initial_value(op)
        grad_fn = gradient_function(op)  # the gradient_override_map's, else the op type's
        if grad_fn == registry.NOT_DIFFERENTIABLE:
            return
        if grad_fn is None:
            raise LookupError(
                f"No gradient defined for operation '{op.name}' (op type: {op.type})."
            )
        if not op.op_def.control_flow:
            out_grads = [
                gr if gr is not None or not _carries_gradient(t) else zeros_for(t)
                for t, gr in zip(op.outputs, out_grads)
            ]
        with self.g.name_scope(f"{op.name}_grad"), self.g.original_op(op):
            in_grads = grad_fn(op, *out_grads)
        in_grads = list(in_grads) if isinstance(in_grads, (list, tuple)) else [in_grads]
        if len(in_grads) != len(op.inputs):
            raise ValueError(
                f"The gradient function of {op.type} returned {len(in_grads)} gradients for op "
                f"'{op.name}', which has {len(op.inputs)} inputs."
            )
        for t, gr in zip(op.inputs, in_grads):
            if gr is None or not _carries_gradient(t):
                continue
            if not isinstance(gr, IndexedSlices):
                gr = core_ops.convert_to_tensor(gr)
            if gr.dtype != t.dtype and t.dtype != dtypes.resource:
                raise TypeError(
                    f"The gradient function of {op.type} ('{op.name}') returned a {gr.dtype.name} "
                    f"gradient for input {t.name} of dtype {t.dtype.name}."
                )
            self.grads[t].append(gr)

    def _no_gradient_through_initial_value(self, switch: Operation) -> None:
        """Raises TF1's error for a gradient taken inside a loop body that would have to pass
        through a loop variable's initial value, naming the nearest x behind it."""
        xs_ops = {x.op for x in self.xs}
        target, queue, seen = None, collections.deque([switch]), set()
        while queue:
            op = queue.popleft()
            if op in seen:
                continue
            seen.add(op)
            if op in xs_ops:
                target = op
                break
            queue.extend(t.op for t in op.inputs)
        raise ValueError(
            "Cannot compute gradient inside while loop with respect to op "
            f"'{(target or switch).name}'. We do not support taking the gradient wrt or through "
            "the initial value of a loop variable. Gradients can be computed through loop "
            "invariants or wrt the input parameters to the loop body."
        )

    def _aggregate(self, t: Tensor) -> Tensor | IndexedSlices | None:
        parts = self.grads.get(t)
        if not parts:
            return None
        if len(parts) > 1:
            with self.g.name_scope(f"{t.op.name}_grad"):
                parts[:] = [self._sum_by_device(parts) if self.colocate else _sum_parts(parts)]
        return parts[0]

    def _sum_by_device(self, parts: list) -> Tensor | IndexedSlices:
        """TF1's _MultiDeviceAddN: the parts on each device summed there (colocated with the
        first of them), then those sums where the walk builds (the op's colocation group)."""
        by_device: dict[str, list] = collections.defaultdict(list)
        for p in parts:
            by_device[_tensor_of(p).op.device].append(p)
        sums = []
        for device in sorted(by_device):
            group = by_device[device]
            with self.g.colocate_with(_tensor_of(group[0]).op, ignore_existing=True):
                sums.append(_sum_parts(group) if len(group) > 1 else group[0])
        return sums[0] if len(sums) == 1 else _sum_parts(sums)

    def _enter_context_of(self, op: Operation, for_output: bool) -> None:
        """Makes the graph build in the backward context matching `op`'s forward context: its
        loop's backward loop, or its cond branch's gradient branch."""
        ctx = output_context(op) if for_output else op.control_flow_context
        self.g.control_flow_context = self.loops.grad_context(ctx)


def _tensor_of(part: Tensor | IndexedSlices) -> Tensor:
    return part.values if isinstance(part, IndexedSlices) else part


def _sum_parts(parts: list) -> Tensor | IndexedSlices:
    """The sum of fan-out gradients, as TF1: slices only stay slices (values and indices
    concatenated, int64 indices when their dtypes differ); with a dense part, all are dense."""
    if not all(isinstance(p, IndexedSlices) for p in parts):
        return math_ops.add_n([indexed_slices.dense(p) for p in parts])
    indices = [p.indices for p in parts]
    if len({i.dtype for i in indices}) > 1:
        indices = [fill_ops.cast(i, dtypes.int64) for i in indices]
    return IndexedSlices(
        join_ops.concat([p.values for p in parts], 0),
        join_ops.concat(indices, 0),
        parts[0].dense_shape,
    )
