"""Gradients of the control-flow primitives (whitepaper §7).

  grad(Exit)          = Enter into the backward loop
  grad(Switch), loop  = Merge of the backward loop variable (first visit, from the Exit),
                        closed by a NextIteration of the body's gradient (second visit)
  grad(Switch), cond  = Merge of the branch's gradient and zeros guarded by the other branch
  grad(Merge), loop   = Switch on the backward loop's LoopCond (false: to the Enter, true: on)
  grad(Merge), cond   = Switch on the cond's predicate (saved per iteration inside a loop)
  grad(NextIteration) = the gradient itself
  grad(Enter)         = Exit of the backward loop; for a loop constant, an accumulator

The gradient ops of a cond branch's ops are built in a `GradCondContext` of that branch (the walk
sees to it): grad(Merge) is its entry and grad(Switch) its exit, so the gradient of a cond is a
cond region too, which the compiled engine lowers by the forward cond's rule.
"""

from __future__ import annotations

from sluice.framework.autodiff.loop_state import GradWhileContext, zeros_for
from sluice.framework.control_flow.cond_context import CondContext, GradCondContext
from sluice.framework.control_flow.context import is_within, output_context
from sluice.framework.control_flow.structure import is_loop_merge, is_loop_switch
from sluice.framework.ir.registry import not_differentiable, register_gradient
from sluice.framework.ops.control.control_flow_ops import merge, switch
from sluice.framework.ops.core import core_ops

not_differentiable("LoopCond")


def _backward_context(op) -> GradWhileContext:
    ctx = op.graph.control_flow_context
    if not isinstance(ctx, GradWhileContext):
        # As TF1: inside a loop body, gradients go to the body's inputs and loop constants,
        # never through the loop variables' initial values.
        raise ValueError(
            f"Cannot compute a gradient inside a while loop through its {op.type} op "
            f"{op.name!r}: taking the gradient with respect to or through the initial value of "
            "a loop variable is not supported there. Gradients can be computed through loop "
            "constants or with respect to the loop body's arguments."
        )
    return ctx


def _encloses_the_call(op) -> bool:
    """True when `op`'s context encloses the `gradients` call (the walk builds there)."""
    return is_within(op.graph.control_flow_context, op.control_flow_context)


@register_gradient("Exit")
def _exit_grad(op, grad):
    if isinstance(op.control_flow_context, GradWhileContext):
        # As TF1: the backward loop pops the forward values from stacks, and a pop has no
        # gradient, so a gradient through it would silently miss their dependence on x.
        raise TypeError(
            f"Second-order gradient for while loops is not supported: {op.name!r} leaves the "
            f"backward loop {op.control_flow_context.name!r} of an earlier `gradients` call. "
            "Wrap the earlier gradient in sl.stop_gradient if it is meant as a constant."
        )
    return [_backward_context(op).make_enter(grad, is_constant=False)]


@register_gradient("NextIteration")
def _next_iteration_grad(op, grad):
    return [grad]


@register_gradient("Enter")
def _enter_grad(op, grad):
    if _encloses_the_call(op):
        return [grad]  # `gradients` inside the loop body: a captured tensor is the same value
    bwd = _backward_context(op)
    if op.get_attr("is_constant"):
        return [bwd.grad_state.accumulate(grad, op)]
    return [core_ops.apply_op("Exit", [grad], name="Exit").outputs[0]]


@register_gradient("Merge")
def _merge_grad(op, grad, _index_grad):
    if is_loop_merge(op):
        exit_side, body_side = switch(grad, _backward_context(op).loop_cond)
        return [exit_side, body_side]
    branches = [output_context(t.op) for t in op.inputs]
    if not all(isinstance(ctx, CondContext) for ctx in branches):
        raise LookupError(f"Cannot differentiate Merge {op.name!r}: it does not close a cond.")
    if grad is None:
        return [None] * len(op.inputs)
    # Into each branch of the cond's gradient through a Switch on its predicate.
    gradient_branches = branches[0].gradient_branches(op.graph.control_flow_context)
    return [gradient_branches[ctx.branch].capture(grad) for ctx in branches]


@register_gradient("Switch")
def _switch_grad(op, false_grad, true_grad):
    if is_loop_switch(op):
        state = _backward_context(op).grad_state
        if op in state.switch_map:
            state.close_loop_variable(op, true_grad)
            return [None, None]
        if false_grad is None:
            return [None, None]
        backward_merge = merge([false_grad, false_grad], name="b_switch")[0]
        state.switch_map[op] = backward_merge
        return [backward_merge, None]
    ctx = op.control_flow_context
    if isinstance(ctx, CondContext):
        branch_grad = (false_grad, true_grad)[ctx.branch]
        if branch_grad is None:
            return [None, None]
        if _encloses_the_call(op):
            return [branch_grad, None]  # `gradients` inside the branch: the capture is identity
        # Out of the gradient branch through a Merge with zeros from the other branch (live
        # exactly when the other branch was taken), built where the forward Switch's input is.
        g = op.graph
        inside = g.control_flow_context
        outside = inside.outer_context if isinstance(inside, GradCondContext) else inside
        gradient_branches = ctx.gradient_branches(outside)
        with g.in_control_flow_context(outside):
            other = gradient_branches[1 - ctx.branch].capture(zeros_for(op.inputs[0]))
            branch_grad = gradient_branches[ctx.branch].capture(branch_grad)
            return [merge([branch_grad, other], name="cond_grad")[0], None]
    pred = op.inputs[1]
    false_grad = false_grad if false_grad is not None else zeros_for(op.outputs[0])
    true_grad = true_grad if true_grad is not None else zeros_for(op.outputs[1])
    return [merge([switch(false_grad, pred)[0], switch(true_grad, pred)[1]])[0], None]
