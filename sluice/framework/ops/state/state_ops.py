"""Variable ops (resource semantics): a handle op, reads, assignments, sparse (scatter) updates
and the report of uninitialised variables.

Each read is its own op, created where the value is used, so a read placed after an assignment by
`control_dependencies` sees the new value (TF1 resource variables). Gradients flow from every read
to the handle, where they are summed.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from sluice.framework.ir import dtypes, errors
from sluice.framework.ir.registry import (
    not_differentiable,
    register_gradient,
    register_op,
    register_string_kernel,
)
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.core.array_util import INDEX_DTYPES, maybe_host_value
from sluice.framework.ops.core.shape_rules import constant_value


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
    stateful=True,
    select_safe=True,
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


def _checked(ctx, value, shape, validate_shape):
    """`value`, after checking its run-time shape against the variable's: a value fed through a
    partly unknown shape passes the graph-time check and must not reshape (or, for assign_add,
    broadcast into) a variable of fixed shape."""
    if validate_shape and not shape.is_compatible_with(TensorShape(list(np.shape(value)))):
        raise errors.InvalidArgumentError(
            None,
            ctx.op,
            f"{ctx.op.type} '{ctx.op.name}': cannot assign a value of shape "
            f"{list(np.shape(value))} to a variable of shape {shape} (pass validate_shape=False "
            "to change the variable's shape)",
        )
    return value


def _assign_kernel(ctx, handle, value, shape, validate_shape, **_):
    value = _checked(ctx, value, shape, validate_shape)
    ctx.write_variable(handle, value)
    return value


def _assign_add_kernel(ctx, handle, value, shape, validate_shape, **_):
    new = ctx.read_variable(handle) + _checked(ctx, value, shape, validate_shape)
    ctx.write_variable(handle, new)
    return new


def _assign_sub_kernel(ctx, handle, value, shape, validate_shape, **_):
    new = ctx.read_variable(handle) - _checked(ctx, value, shape, validate_shape)
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


# -- sparse updates: ResourceScatterUpdate/Add/Sub ------------------------------------------------
# `variable[indices[i], ...] (=, +=, -=) updates[i, ...]`; updates has the shape indices.shape +
# variable.shape[1:], or is a scalar applied at every index. Duplicate indices accumulate for add
# and sub; for update one of them wins. The output is the variable's new value.
def _scatter_infer(op) -> list:
    _require_handle(op)
    _, indices, updates = op.inputs
    dtype, shape = op.get_attr("dtype"), op.get_attr("shape")
    if indices.dtype not in INDEX_DTYPES:
        raise TypeError(f"indices must be int32 or int64, got {indices.dtype.name}")
    if updates.dtype != dtype:
        raise TypeError(f"cannot scatter {updates.dtype.name} updates into a {dtype.name} variable")
    if shape.rank == 0:
        raise ValueError("cannot scatter into a scalar variable: it has no first dimension")
    if shape.rank is not None and indices.shape.rank is not None and updates.shape.rank != 0:
        expected = TensorShape(indices.shape.dims + shape.dims[1:])
        if not expected.is_compatible_with(updates.shape):
            raise ValueError(
                f"updates must have shape indices.shape + variable.shape[1:] = {expected} (or be "
                f"a scalar), got {updates.shape}"
            )
    rows, value = (shape.dims[0] if shape.rank else None), constant_value(indices)
    if rows is not None and value is not None:
        _require_in_range(np.asarray(value), rows)
    return [(dtype, shape)]


def _require_in_range(indices: np.ndarray, rows: int) -> None:
    bad = indices[(indices < 0) | (indices >= rows)]
    if bad.size:
        raise ValueError(f"indices contain {bad.flat[0]}, which is not in [0, {rows})")


def _scatter_kernel(combine):
    def kernel(ctx, handle, indices, updates, **_):
        old = jnp.asarray(ctx.read_variable(handle))
        concrete = maybe_host_value(indices)
        if concrete is not None:
            _require_in_range(concrete, old.shape[0])
        # a traced out-of-range index changes nothing (TF's GPU behaviour): negatives go past
        # the end, where mode="drop" leaves them out
        indices = jnp.where(indices < 0, old.shape[0], indices)
        new = combine(old.at[indices], updates)
        ctx.write_variable(handle, new)
        return new

    return kernel


for _name, _combine in (
    ("ResourceScatterUpdate", lambda at, u: at.set(u, mode="drop")),
    ("ResourceScatterAdd", lambda at, u: at.add(u, mode="drop")),
    ("ResourceScatterSub", lambda at, u: at.add(-u, mode="drop")),
):
    register_op(_name, infer=_scatter_infer, kernel=_scatter_kernel(_combine), stateful=True)
not_differentiable("ResourceScatterUpdate", "ResourceScatterAdd", "ResourceScatterSub")


# -- ReportUninitializedVariables -----------------------------------------------------------------
# The names come back as a 1-D string tensor (NumPy bytes, from the host), as in TF1.
def _report_infer(op) -> list:
    for i, handle in enumerate(op.inputs):
        if handle.dtype != dtypes.resource:
            raise TypeError(
                f"input {i} must be a variable handle, got a {handle.dtype.name} tensor"
            )
    return [(dtypes.string, TensorShape([None]))]


def _report_kernel(ctx, *handles, **_):
    names = [h.encode() for h in handles if not ctx.has_variable(h)]
    return np.array(names, dtype=object).reshape(len(names))


register_op(
    "ReportUninitializedVariables",
    infer=_report_infer,
    kernel=_report_kernel,
    stateful=True,
    host_only=True,
)
register_string_kernel("ReportUninitializedVariables", _report_kernel)
not_differentiable("ReportUninitializedVariables")
