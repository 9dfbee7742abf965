"""`ReadVariableOrInitialValue`: TF1's `Variable.initialized_value()` as one op.

TF 1.15 builds `cond(is_variable_initialized(v), v.read_value, lambda: v.initial_value)`: the
variable's value once it has one, else its initial value, without assigning it. Ops cannot
build a cond (and the variable module sits below control flow), so the choice is this op's
kernel: whether the session holds a value for the handle is known when the step is built.
"""

from __future__ import annotations

from sluice.framework.ir.registry import register_gradient, register_op


def _infer(op) -> list:
    handle, initial = op.inputs
    dtype, shape = op.get_attr("dtype"), op.get_attr("shape")
    if initial.dtype != dtype:
        raise TypeError(
            f"ReadVariableOrInitialValue '{op.name}': the initial value is {initial.dtype.name}, "
            f"the variable {dtype.name}."
        )
    return [(dtype, shape if shape.rank is not None else initial.shape)]


def _kernel(ctx, handle, initial, **_):
    return ctx.read_variable(handle) if ctx.has_variable(handle) else initial


register_op("ReadVariableOrInitialValue", infer=_infer, kernel=_kernel, stateful=True)


@register_gradient("ReadVariableOrInitialValue")
def _read_or_initial_grad(op, grad):
    # As a read: the gradient goes to the variable (the initial value is a constant of the
    # variable's construction, which TF1 code differentiates only through the variable).
    return [grad, None]
