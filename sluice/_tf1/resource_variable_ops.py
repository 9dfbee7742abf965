"""TF1's raw resource-variable ops (`tensorflow.python.ops.gen_resource_variable_ops`, also
reached through `resource_variable_ops`): a read or an assignment of the variable behind a
handle tensor, as TF1 code that holds `variable.handle` builds them.

The handle may have come through control flow (a cond's Switch, a loop's Enter): the variable's
dtype and shape are those of the VarHandleOp it comes from.

>>> from sluice.python.ops import resource_variable_ops
>>> v = sl.Variable(1.0, use_resource=True)
>>> assign = resource_variable_ops.assign_variable_op(v.handle, 5.0)
>>> with sl.control_dependencies([assign]):
...     read = resource_variable_ops.read_variable_op(v.handle, sl.float32)
>>> sess = sl.Session(); sess.run(v.initializer); float(sess.run(read))
5.0
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ops.core import core_ops

# ops that pass a handle on unchanged (its value is the variable's name)
_FORWARDING = ("Identity", "Switch", "Merge", "Enter", "Exit", "NextIteration")


def _variable_op(handle: Tensor) -> Operation:
    """The VarHandleOp whose handle `handle` is, through the ops that forward a handle."""
    op = handle.op
    while op.type in _FORWARDING and op.inputs:
        op = op.inputs[0].op
    if op.type != "VarHandleOp":
        raise TypeError(
            f"{handle.name} is not a variable's handle: it comes from a {op.type} op "
            f"({op.name!r}), not from a VarHandleOp."
        )
    return op


def _handle(resource: Any) -> Tensor:
    resource = getattr(resource, "handle", resource)  # a Variable stands for its handle
    if not isinstance(resource, Tensor) or resource.dtype != dtypes.resource:
        raise TypeError(f"Expected a variable's resource handle, got {resource!r}.")
    return resource


def _assign(op_type: str, resource: Any, value: Any, name: str | None) -> Operation:
    handle = _handle(resource)
    var = _variable_op(handle)
    dtype, shape = var.get_attr("dtype"), var.get_attr("shape")
    value = core_ops.convert_to_tensor(value, dtype=dtype)
    attrs = {"dtype": dtype, "shape": shape, "validate_shape": shape.rank is not None}
    g = graph_lib.graph_of([handle, value])
    return g.create_op(op_type, [handle, value], attrs, name=name or op_type)


@export(
    "python.ops.gen_resource_variable_ops.assign_variable_op",
    "python.ops.resource_variable_ops.assign_variable_op",
)
def assign_variable_op(resource: Any, value: Any, name: str | None = None) -> Operation:
    """Assigns `value` to the variable behind `resource`; returns the op (TF1's raw op)."""
    return _assign("AssignVariableOp", resource, value, name)


@export(
    "python.ops.gen_resource_variable_ops.assign_add_variable_op",
    "python.ops.resource_variable_ops.assign_add_variable_op",
)
def assign_add_variable_op(resource: Any, value: Any, name: str | None = None) -> Operation:
    """Adds `value` to the variable behind `resource`; returns the op (TF1's raw op)."""
    return _assign("AssignAddVariableOp", resource, value, name)


@export(
    "python.ops.gen_resource_variable_ops.assign_sub_variable_op",
    "python.ops.resource_variable_ops.assign_sub_variable_op",
)
def assign_sub_variable_op(resource: Any, value: Any, name: str | None = None) -> Operation:
    """Subtracts `value` from the variable behind `resource`; returns the op (TF1's raw op)."""
    return _assign("AssignSubVariableOp", resource, value, name)


@export(
    "python.ops.gen_resource_variable_ops.read_variable_op",
    "python.ops.resource_variable_ops.read_variable_op",
)
def read_variable_op(resource: Any, dtype: Any, name: str | None = None) -> Tensor:
    """The current value of the variable behind `resource` (TF1's raw op): a read ordered by
    the control dependencies around it.

    Raises:
      TypeError: `dtype` is not the variable's dtype.
    """
    handle = _handle(resource)
    var = _variable_op(handle)
    if dtypes.as_dtype(dtype) != var.get_attr("dtype"):
        raise TypeError(
            f"read_variable_op: the variable {var.name!r} holds {var.get_attr('dtype').name}, "
            f"not {dtypes.as_dtype(dtype).name}."
        )
    attrs = {"dtype": var.get_attr("dtype"), "shape": var.get_attr("shape")}
    return handle.graph.create_op(
        "ReadVariableOp", [handle], attrs, name=name or "ReadVariableOp"
    ).outputs[0]
