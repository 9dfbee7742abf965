"""Variable ops (resource semantics): a handle op, reads and assignments.

Each read is its own op, created where the value is used, so a read placed after an assignment by
`control_dependencies` sees the new value (TF1 resource variables). Gradients flow from every read
to the handle, where they are summed.
"""

from __future__ import annotations

from sluice.framework.ir import dtypes
from sluice.framework.ir.registry import not_differentiable, register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape


def _handle_infer(op) -> list:
    return [(dtypes.resource, TensorShape([]))]


register_op(
    "VarHandleOp",
    infer=_handle_infer,
    kernel=lambda ctx, *, shared_name, **_: shared_name,
    stateful=True,
)
not_differentiable("VarHandleOp")


def _require_handle(op) -> None:
    handle = op.inputs[0]
    if handle.dtype != dtypes.resource:
        raise TypeError(f"input 0 must be a variable handle, got a {handle.dtype.name} tensor")


def _read_infer(op) -> list:
    _require_handle(op)
    return [(op.get_attr("dtype"), op.get_attr("shape"))]


register_op(
    "ReadVariableOp",
    infer=_read_infer,
    kernel=lambda ctx, handle, **_: ctx.read_variable(handle),
    stateful=True, select_safe=True,
)


@register_gradient("ReadVariableOp")
def _read_variable_grad(op, grad):
    return [grad]


def _assign_infer(op) -> list:
    _require_handle(op)
    value = op.inputs[1]
    dtype, shape = op.get_attr("dtype"), op.get_attr("shape")
    if value.dtype != dtype:
        raise TypeError(f"cannot assign a {value.dtype.name} value to a {dtype.name} variable")
    if op.get_attr("validate_shape") and not shape.is_compatible_with(value.shape):
        raise ValueError(
            f"cannot assign a value of shape {value.shape} to a variable of shape {shape} "
            "(pass validate_shape=False to change the variable's shape)"
        )
    return [(dtype, shape if op.get_attr("validate_shape") else value.shape)]


def _assign_kernel(ctx, handle, value, **_):
    ctx.write_variable(handle, value)
    return value


def _assign_add_kernel(ctx, handle, value, **_):
    new = ctx.read_variable(handle) + value
    ctx.write_variable(handle, new)
    return new


def _assign_sub_kernel(ctx, handle, value, **_):
    new = ctx.read_variable(handle) - value
    ctx.write_variable(handle, new)
    return new


register_op("AssignVariableOp", infer=_assign_infer, kernel=_assign_kernel, stateful=True)
register_op("AssignAddVariableOp", infer=_assign_infer, kernel=_assign_add_kernel, stateful=True)
register_op("AssignSubVariableOp", infer=_assign_infer, kernel=_assign_sub_kernel, stateful=True)
not_differentiable("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp")


def _is_initialized_infer(op) -> list:
    _require_handle(op)
    return [(dtypes.bool_, TensorShape([]))]


register_op(
    "VarIsInitializedOp",
    infer=_is_initialized_infer,
    kernel=lambda ctx, handle: ctx.has_variable(handle),
    stateful=True,
)
not_differentiable("VarIsInitializedOp")
