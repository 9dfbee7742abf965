"""Concrete tensors: a graph tensor whose value the graph fixes, computed on demand.

A tensor is *concrete* when its value cannot depend on a run: every op it comes from is a pure
kernel (not stateful, not control flow, not a placeholder, no control inputs, outside any cond
or while frame) whose inputs are concrete too, starting from constants. `sl.constant(2.0) * 3`
and `sl.expand_dims(np_array, 0)` are concrete; anything that reads a variable, draws from a
session's random stream or needs a feed is not. (A Shape, Size or Rank of a tensor whose
shape is known statically is concrete whatever that tensor is.)

`Tensor.numpy()`, `np.asarray(t)`, `float(t)`, `int(t)` and the repr use `concrete_value`, which
runs the kernels of the constant subgraph once, without a session, and keeps the value for the
tensor's lifetime. The graph and TF1's rules are unchanged: the op is in the graph, a session
runs it as before (and may feed it), and `bool(t)` still refuses (TF1's rule).

>>> import sluice as sl, numpy as np
>>> with sl.Graph().as_default():
...     t = sl.reduce_sum(sl.constant([1.0, 2.0]) * 2.0)
...     float(t), t.numpy()
(6.0, np.float32(6.0))
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from sluice.framework.ir import registry
from sluice.framework.ir.string_values import on_strings
from sluice.framework.ir.x64 import x64_scope

# never concrete, though not stateful: their value is a feed
_FED = frozenset({"Placeholder", "PlaceholderWithDefault"})
# computed from the input's static shape when it is known (the input need not be concrete)
_STATIC_SHAPE = {
    "Shape": lambda shape: shape.as_list(),
    "Size": lambda shape: shape.num_elements(),
    "Rank": lambda shape: shape.rank,
}

_VALUES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Tensor -> its value
_REASONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Operation -> reason or ""


class NotConcreteError(TypeError):
    """A tensor's value depends on a run (a feed, a variable, a random stream, control flow)."""


def _own_reason(op: Any) -> str:
    """Why `op` itself cannot be evaluated outside a run ("" if it can, given its inputs)."""
    op_def = op.op_def
    if op.type in _FED:
        return f"it depends on the {op.type} '{op.name}', which is fed when the graph runs"
    if op_def.stateful:
        return f"it depends on the stateful op '{op.name}' ({op.type}), which runs in a session"
    if op_def.control_flow or op.control_flow_context is not None:
        return f"it depends on '{op.name}' ({op.type}), inside a cond or while loop"
    if op_def.kernel is None or op_def.host_only:
        return f"it depends on '{op.name}' ({op.type}), which only a session runs"
    if op.control_inputs:
        return f"'{op.name}' ({op.type}) has control inputs, which only a session runs"
    return ""


def _static_shape_op(op: Any) -> bool:
    return op.type in _STATIC_SHAPE and op.inputs[0].shape.is_fully_defined()


def _reason(tensor: Any) -> str:
    """Why `tensor` is not concrete ("" when it is); one walk, remembered per op."""
    order, stack = set(), [tensor.op]
    while stack:  # iterative: long chains of ops do not recurse
        op = stack.pop()
        if op in _REASONS or op in order:
            continue
        order.add(op)
        if not _static_shape_op(op) and not _own_reason(op):
            stack.extend(t.op for t in op.inputs)
    for op in sorted(order, key=lambda o: o.id):  # inputs before their consumers
        reason = "" if _static_shape_op(op) else _own_reason(op)
        if not reason and not _static_shape_op(op):
            reason = next((_REASONS[t.op] for t in op.inputs if _REASONS[t.op]), "")
        _REASONS[op] = reason
    return _REASONS[tensor.op]


def is_concrete(tensor: Any) -> bool:
    """Whether `tensor`'s value is fixed by its graph (see the module docstring)."""
    return not _reason(tensor)


def concrete_value(tensor: Any) -> Any:
    """The value of the concrete `tensor` (a NumPy array, or a JAX array for large values),
    computed once by running the kernels of the ops it needs.

    Raises:
      NotConcreteError: its value depends on a run; the message names the op.
    """
    found = _VALUES.get(tensor)
    if found is not None:
        return found
    reason = _reason(tensor)
    if reason:
        raise NotConcreteError(
            f"Tensor {tensor.name} ({tensor.dtype.name}{tensor.shape}) has no value outside a "
            f"session run: {reason}. Run it with Session.run (or call a layer or model on "
            "arrays to compute values)."
        )
    order, stack, seen = [], [tensor.op], set()
    while stack:
        op = stack.pop()
        if op in seen or all(t in _VALUES for t in op.outputs):
            continue
        seen.add(op)
        order.append(op)
        if not _static_shape_op(op):
            stack.extend(t.op for t in op.inputs)
    with x64_scope():
        for op in sorted(order, key=lambda o: o.id):
            _evaluate(op)
    return _VALUES[tensor]


def _evaluate(op: Any) -> None:
    """Computes every output of `op` (its inputs have values) into `_VALUES`."""
    if _static_shape_op(op):
        value = _STATIC_SHAPE[op.type](op.inputs[0].shape)
        _VALUES[op.outputs[0]] = np.asarray(value, dtype=op.outputs[0].dtype)
        return
    if on_strings(op):
        kernel = registry.string_kernel(op.type)
    else:
        kernel = registry.get_kernel(op.type, registry.default_device_type())
    result = kernel(*[_VALUES[t] for t in op.inputs], **op.attrs)
    results = (result,) if len(op.outputs) == 1 else tuple(result)
    for t, value in zip(op.outputs, results):
        _VALUES[t] = _host(value, t.dtype)


def _host(value: Any, dtype: Any) -> Any:
    """A kernel's result in the tensor's dtype, as a NumPy array when it is small."""
    if getattr(value, "dtype", None) != dtype:
        value = np.asarray(value, dtype=dtype)
    if getattr(value, "size", 0) <= 1 << 16:
        return np.asarray(value)
    return value
