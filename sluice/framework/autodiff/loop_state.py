"""Loop bookkeeping for gradients: iteration counts, saved forward values, accumulators.

For every forward loop being differentiated, `GradLoopState` adds, as new ops only:
  * a counter loop variable in the forward loop, whose Exit is the iteration count N;
  * the backward loop (`GradWhileContext`), which counts N down to 0;
  * one stack per forward value the backward loop needs: a loop variable of the forward loop
    that pushes the value every iteration, whose final stack is a loop variable of the backward
    loop that pops it (values in a cond branch are pushed and popped under the same predicate);
  * an accumulator loop variable in the backward loop per loop constant that gets a gradient.
Every loop variable added after the fact is a chain of fresh ops (Enter, Merge, Switch on the
loop's own LoopCond, NextIteration, Exit); no op of the user's graph, nor of an earlier
`gradients` call, is changed (a Graph.mutation_version test holds sessions to it).

One kind of edit is unavoidable and made only here and in `while_loop`: a loop variable is a
cycle (Merge -> ... -> NextIteration -> Merge), so its Merge is built with a placeholder second
input and given its back edge (`Operation.update_input(1, next_iteration)`) once the
NextIteration exists. `add_loop_variable` does it within one call; a backward loop variable of
the walk is started at the first visit of its forward Switch (the Merge the body's gradient
reads) and closed at the second (`close_loop_variable`), the only edit of an op built earlier
in the walk, and always of an op the walk itself built.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from sluice.framework.control_flow.cond_context import CondContext
from sluice.framework.control_flow.context import is_within, output_context, while_context_of
from sluice.framework.control_flow.structure import (
    ASSIGN_OPS,
    is_loop_constant_enter,
    is_loop_switch,
    variable_handle_of,
)
from sluice.framework.control_flow.while_context import WhileContext
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.control.control_flow_ops import merge, switch
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops


def zeros_for(t: Tensor) -> Tensor:
    """Zeros shaped like `t`, built without reading `t` itself (a variable handle gives zeros
    shaped like the variable)."""
    if t.dtype == dtypes.resource:
        handle = variable_handle_of(t)
        shape, dtype = handle.get_attr("shape"), handle.get_attr("dtype")
        return core_ops.constant(np.zeros(shape.as_list(), dtype))
    if t.shape.is_fully_defined():
        return core_ops.constant(np.zeros(t.shape.as_list(), t.dtype))
    return fill_ops.zeros(fill_ops.shape(t), t.dtype)


def add_loop_variable(
    ctx: WhileContext, init: Tensor, body: Callable[[Tensor], tuple[Tensor, Any]], name: str
) -> tuple[Tensor, Any]:
    """Adds a loop variable to the existing loop `ctx`: Enter(init) -> Merge -> Switch on the
    loop's LoopCond -> `body` -> NextIteration -> Merge; Exit on the false side.

    `body(value)` returns (next value, extra); returns (the Exit tensor, extra)."""
    g = ctx.graph
    with g.control_dependencies(None), g.name_scope(name):
        with g.in_control_flow_context(ctx.outer_context):
            if ctx.outer_context is not None:
                init = ctx.outer_context.capture(init)
            enter = ctx.make_enter(init, is_constant=False)
        with g.in_control_flow_context(ctx):
            value = merge([enter, enter])[0]
            exit_side, body_side = switch(value, ctx.loop_cond)
            next_value, extra = body(body_side)
            nxt = core_ops.apply_op("NextIteration", [next_value], name="NextIteration").outputs[0]
            value.op.update_input(1, nxt)
            exit_value = core_ops.apply_op("Exit", [exit_side], name="Exit").outputs[0]
    return exit_value, extra


def _push(stack: Tensor, value: Tensor, swap_memory: bool) -> Tensor:
    attrs = {"elem_dtype": value.dtype, "swap_memory": swap_memory}
    return core_ops.apply_op("StackPushV2", [stack, value], attrs, name="StackPush").outputs[0]


def _pop(stack: Tensor, like: Tensor) -> tuple[Tensor, Tensor]:
    attrs = {"elem_dtype": like.dtype, "elem_shape": like.shape}
    op = core_ops.apply_op("StackPopV2", [stack], attrs, name="StackPop")
    return op.outputs[0], op.outputs[1]


def _guarded(stack: Tensor, conds: list[tuple[Tensor, int]], inner: Callable) -> tuple[Tensor, Any]:
    """Applies `inner` to the stack only on the cond branches `conds` (pred, branch) select;
    on any other path the stack passes through unchanged."""
    if not conds:
        return inner(stack)
    (pred, branch), rest = conds[0], conds[1:]
    outputs = switch(stack, pred)
    updated, extra = _guarded(outputs[branch], rest, inner)
    return merge([updated, outputs[1 - branch]])[0], extra


def _cond_chain(t: Tensor, loop: WhileContext) -> list[CondContext]:
    """The cond branches, outermost first, between `t`'s context and its loop."""
    chain = []
    ctx = output_context(t.op)
    while ctx is not None and ctx is not loop:
        if isinstance(ctx, CondContext):
            chain.append(ctx)
        ctx = ctx.outer_context
    return list(reversed(chain))


class GradLoopState:
    """The backward loop of one forward loop, for one call of `gradients`."""

    def __init__(self, forward: WhileContext, outer_grad_ctx: Any):
        if not forward.back_prop:
            raise ValueError(
                f"Cannot compute gradients through the while loop {forward.name!r}: it was built "
                "with back_prop=False, so its forward values were not kept."
            )
        self.forward = forward
        g = forward.graph
        self.switch_map: dict[Operation, Tensor] = {}  # forward loop Switch -> backward Merge
        self.closed: set[Operation] = set()
        self.n_iterations, _ = add_loop_variable(
            forward,
            _constant_in(forward.outer_context, g, 0),
            lambda i: (math_ops.add(i, core_ops.constant(1)), None),
            name="iteration_count",
        )
        with (
            g.in_control_flow_context(outer_grad_ctx),
            g.name_scope(f"{forward.name}_grad") as scope,
        ):
            self.backward = GradWhileContext(g, scope[:-1], self)
            self._build_backward_counter()

    def _build_backward_counter(self) -> None:
        bwd = self.backward
        init = self.n_iterations
        if bwd.outer_context is not None:
            init = bwd.outer_context.capture(init)
        enter = bwd.make_enter(init, is_constant=False)
        bwd.loop_enters = [enter]
        with bwd:
            count = merge([enter, enter])[0]
            bwd.pivot_for_pred = count
            positive = math_ops.greater(count, core_ops.constant(0))
            bwd.loop_cond = core_ops.apply_op("LoopCond", [positive], name="LoopCond").outputs[0]
            exit_side, body_side = switch(count, bwd.loop_cond)
            bwd.pivot_for_body = core_ops.identity(body_side)
            previous = math_ops.subtract(bwd.pivot_for_body, core_ops.constant(1))
            nxt = core_ops.apply_op("NextIteration", [previous]).outputs[0]
            count.op.update_input(1, nxt)
            core_ops.apply_op("Exit", [exit_side])

    # -- saved values --------------------------------------------------------------------------
    def saved_value(self, t: Tensor) -> Tensor:
        """`t` (a value of the forward loop) as the backward loop sees it, iteration by iteration
        in reverse: pushed on a stack in the forward loop, popped in the backward loop."""
        with t.graph.colocate_with(t.op, ignore_existing=True):  # a stack lives with its value
            return self._saved_value(t)

    def _saved_value(self, t: Tensor) -> Tensor:
        fwd, bwd = self.forward, self.backward
        conds = _cond_chain(t, fwd)
        fwd_guards = [(c.pred, c.branch) for c in conds]
        swap = fwd.swap_memory
        empty = _new_stack_in(fwd.outer_context, fwd.graph, t.dtype)
        final_stack, _ = add_loop_variable(
            fwd,
            empty,
            lambda s: _guarded(s, fwd_guards, lambda s2: (_push(s2, t, swap), None)),
            name="stack",
        )
        bwd_guards = [(bwd.capture(c.pred), c.branch) for c in conds]
        _, value = add_loop_variable(
            bwd,
            final_stack,
            lambda s: _guarded(s, bwd_guards, lambda s2: _pop(s2, t)),
            name="stack_pop",
        )
        return value

    def accumulate(self, grad: Tensor, enter: Operation) -> Tensor:
        """Sums `grad` (computed every backward iteration) in an accumulator loop variable; the
        result is the gradient of the loop constant `enter` feeds."""
        bwd, g = self.backward, self.backward.graph
        with g.in_control_flow_context(bwd.outer_context):
            init = zeros_for(enter.inputs[0])
        total, _ = add_loop_variable(
            bwd, init, lambda acc: (math_ops.add(acc, grad), None), name="accumulator"
        )
        return total

    def close_loop_variable(self, switch_op: Operation, grad: Tensor | None) -> None:
        """Second visit of a forward loop Switch: the gradient from the body closes the backward
        loop variable started at its first visit."""
        backward_merge = self.switch_map[switch_op]
        if grad is None:
            grad = zeros_for(switch_op.outputs[1])
        nxt = core_ops.apply_op("NextIteration", [grad], name="NextIteration").outputs[0]
        backward_merge.op.update_input(1, nxt)
        self.closed.add(switch_op)


def _is_invariant_read(t: Tensor, loop: WhileContext) -> bool:
    """A read of a variable whose handle is a constant of `loop` and that `loop` never assigns."""
    if t.op.type != "ReadVariableOp" or not is_loop_constant_enter(t.op.inputs[0].op, loop):
        return False
    handle = t.op.inputs[0]
    for consumer in loop.graph.get_operations():
        if consumer.type in ASSIGN_OPS and consumer.inputs[0] is handle:
            return False
    return True


def _constant_in(ctx: Any, g: Any, value: int) -> Tensor:
    with g.in_control_flow_context(ctx), g.control_dependencies(None):
        return core_ops.constant(value, name="zero")


def _new_stack_in(ctx: Any, g: Any, dtype: Any) -> Tensor:
    with g.in_control_flow_context(ctx), g.control_dependencies(None):
        return g.create_op("StackV2", [], {"elem_dtype": dtype}, name="Stack").outputs[0]


class GradWhileContext(WhileContext):
    """The backward loop's frame. A forward-loop value it uses is popped from a stack; a forward
    loop constant is used directly (as a constant of this loop too)."""

    def __init__(self, g: Any, name: str, state: GradLoopState):
        fwd = state.forward
        # The backward loop runs as often as the forward one, so it has the same bound.
        bound = fwd.maximum_iterations if isinstance(fwd.maximum_iterations, int) else None
        super().__init__(g, name, fwd.parallel_iterations, True, fwd.swap_memory, bound, fwd.unroll)
        self.grad_state = state
        self.forward_context = fwd

    def _capture_new(self, t: Tensor, consumer: str | None = None) -> Tensor:
        fwd = self.forward_context
        source = output_context(t.op)
        source_loop = while_context_of(source)
        if source_loop is fwd or (source_loop is not None and is_within(source_loop, fwd)):
            if is_loop_constant_enter(t.op, fwd):
                return self.capture(t.op.inputs[0])
            if _is_invariant_read(t, fwd):
                # A variable the loop only reads: read it again here rather than saving a copy
                # per iteration (a weight matrix would otherwise be stacked T times).
                handle = self.capture(t.op.inputs[0])
                return self.graph.create_op(
                    "ReadVariableOp", [handle], t.op.attrs, name="ReadVariableOp"
                ).outputs[0]
            if source_loop is not fwd:
                raise ValueError(
                    f"Cannot use {t.name}, a value of an inner loop, in the gradient of "
                    f"{fwd.name!r}: only the inner loop's results are visible there."
                )
            return self.grad_state.saved_value(t)
        outer = self.outer_context.capture(t, consumer) if self.outer_context is not None else t
        with (
            self.graph.in_control_flow_context(self.outer_context),
            self.graph.control_dependencies(None),
        ):
            return self._make_capture(outer)

    def shape_home(self, t: Tensor) -> Any:
        source = output_context(t.op)
        source_loop = while_context_of(source)
        if source_loop is self.forward_context:
            return source
        return None


class LoopStates:
    """The loops met by one `gradients` walk: their backward loops and their Exits."""

    def __init__(self, g: Any, ambient: Any = None):
        self.g = g
        self.ambient = ambient  # where `gradients` was called: its loops are not differentiated
        self.states: dict[WhileContext, GradLoopState] = {}
        self.exits_waiting: dict[WhileContext, int] = {}
        self.exits_ready: dict[WhileContext, list[Operation]] = {}

    def plan(self, between: set[Operation]) -> set[Operation]:
        """Finds the loops on the path; returns the Exits of their loop variables that are on
        it but whose Exit is not. Unused differentiable Exits get zero gradients, so that every
        differentiable loop variable has a backward loop variable; every such Exit is visited,
        so that the walk reaches its loop variable's Switch (a stack or a counter added by an
        earlier `gradients` call is a loop variable too, and its cycle would otherwise never
        be entered)."""
        loops = set()
        for op in between:
            ctx = op.control_flow_context
            loop = while_context_of(ctx)
            while loop is not None and not is_within(self.ambient, loop):
                loops.add(loop)
                loop = while_context_of(loop.outer_context)
        extra: set[Operation] = set()
        for loop in loops:
            exits = [x.op for x in loop.loop_exits]
            for x in exits:
                switch_op = x.inputs[0].op
                if x not in between and switch_op in between:
                    extra.add(x)
            self.exits_waiting[loop] = sum(1 for x in exits if x in between or x in extra)
            self.exits_ready[loop] = []
        return extra

    def is_loop_switch(self, op: Operation) -> bool:
        # By structure, not by the loop's Exits: a backward loop variable whose result nobody
        # takes (the gradient of an initial value not asked for) has a Switch and no Exit.
        return is_loop_switch(op)

    def exit_ready(self, op: Operation, grads: dict) -> list[Operation]:
        """Holds a loop's Exits until all of them can be visited, then releases them together."""
        loop = op.control_flow_context
        self.exits_ready[loop].append(op)
        self.exits_waiting[loop] -= 1
        if self.exits_waiting[loop] > 0:
            return []
        exits = self.exits_ready[loop]
        if not loop.back_prop:
            # As in TF1: nothing flows back through a loop built with back_prop=False, so what
            # depends on the loop only through it gets no gradient (None).
            for x in exits:
                grads.pop(x.outputs[0], None)
        if any(grads.get(x.outputs[0]) for x in exits):
            with self.g.in_control_flow_context(self.grad_context(loop.outer_context)):
                for x in exits:
                    t = x.outputs[0]
                    if not grads.get(t) and dtypes.is_differentiable(t.dtype):
                        grads[t].append(zeros_for(t))
        return exits

    def grad_context(self, ctx: Any) -> Any:
        """Where the gradient ops of the ops of forward context `ctx` are built: the top level
        for the top level, a loop's backward loop, a cond branch's gradient branch (nested in
        the backward context of the cond's own context)."""
        if ctx is None or is_within(self.ambient, ctx):
            return self.ambient  # a context enclosing the call: build there, as the forward ops
        if isinstance(ctx, CondContext):
            return ctx.gradient_branches(self.grad_context(ctx.outer_context))[ctx.branch]
        state = self.states.get(ctx)
        if state is None:
            state = GradLoopState(ctx, self.grad_context(ctx.outer_context))
            self.states[ctx] = state
        return state.backward

    def close_open_loops(self) -> None:
        """Backward loop variables whose forward body gave no gradient continue with zeros."""
        for state in self.states.values():
            for switch_op in list(state.switch_map):
                if switch_op not in state.closed:
                    with self.g.in_control_flow_context(state.backward):
                        state.close_loop_variable(switch_op, None)
