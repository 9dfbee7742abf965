"""The whitepaper's control-flow primitives: Switch, Merge, Enter, Exit, NextIteration, LoopCond.

They have no kernels: each engine implements their rules on tagged values (value, is_dead, tag).
  Switch(data, pred) -> (output_false, output_true): data goes to the side `pred` selects; the
      other output is dead. A dead data or predicate makes both outputs dead.
  Merge(inputs...) -> (output, value_index): forwards the first live input; dead only when every
      input it expects is dead. A loop's Merge expects its Enter input in iteration 0 and its
      NextIteration input afterwards.
  Enter(data; frame_name, is_constant, parallel_iterations): passes data into a child frame
      (iteration 0), or to every iteration when is_constant.
  Exit(data): passes data from a frame to its parent; a dead Exit is forwarded only when the frame
      finishes without a live one.
  NextIteration(data): passes data to the next iteration of the same frame; dead values stop.
  LoopCond(pred): the loop predicate, marking the loop's Switches.
"""

from __future__ import annotations

from typing import Any

from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.shape_rules import same_as_input
from sluice.framework.ops.math.indexed_slices import IndexedSlices, as_indexed_slices_list


def _require_bool_scalar(tensor, role: str) -> None:
    if tensor.dtype != dtypes.bool_:
        raise TypeError(
            f"the {role} must be a bool tensor, got {tensor.dtype.name} ({tensor.name})"
        )
    if tensor.shape.rank not in (None, 0):
        raise ValueError(f"the {role} must be a scalar, got shape {tensor.shape} ({tensor.name})")


def _switch_infer(op) -> list:
    data, pred = op.inputs
    _require_bool_scalar(pred, "predicate")
    return [(data.dtype, data.shape), (data.dtype, data.shape)]


def _merge_infer(op) -> list:
    first = op.inputs[0]
    shape = first.shape
    for t in op.inputs[1:]:
        if t.dtype != first.dtype:
            raise TypeError(
                "all inputs of a Merge must have one dtype,"
                f" got {first.dtype.name} and {t.dtype.name}"
            )
        shape = shape.most_specific_compatible_shape(t.shape)
    return [(first.dtype, shape), (dtypes.int32, TensorShape([]))]


def _loop_cond_infer(op) -> list:
    _require_bool_scalar(op.inputs[0], "loop predicate")
    return [(dtypes.bool_, TensorShape([]))]


register_op("Switch", infer=_switch_infer, kernel=None, control_flow=True, select_safe=True)
register_op("Merge", infer=_merge_infer, kernel=None, control_flow=True, select_safe=True)
register_op("Enter", infer=same_as_input, kernel=None, control_flow=True)
register_op("Exit", infer=same_as_input, kernel=None, control_flow=True)
register_op("NextIteration", infer=same_as_input, kernel=None, control_flow=True)
register_op("LoopCond", infer=_loop_cond_infer, kernel=None, control_flow=True)

CONTROL_FLOW_OP_TYPES = frozenset(["Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond"])


# -- builders used by the control-flow contexts, cond, while_loop and their gradients --------
def switch(data: Any, pred: Tensor, name: str | None = None) -> tuple[Any, Any]:
    """Switch primitive: (output_false, output_true); the side not selected by `pred` is dead.

    IndexedSlices are switched as TF1 does: values, indices and dense_shape each through a
    Switch of their own, giving an IndexedSlices on each side."""
    if isinstance(data, IndexedSlices):
        values = switch(data.values, pred, name=name)
        indices = switch(data.indices, pred, name="indices")
        shape = (
            (None, None)
            if data.dense_shape is None
            else switch(data.dense_shape, pred, name="dense_shape")
        )
        return tuple(IndexedSlices(values[i], indices[i], shape[i]) for i in (0, 1))
    op = core_ops.apply_op("Switch", [data, pred], name=name or "Switch")
    return op.outputs[0], op.outputs[1]


def merge(inputs: list[Any], name: str | None = None) -> tuple[Any, Tensor]:
    """Merge primitive: (output, value_index) of the first live input.

    As TF1: when any input is IndexedSlices, the Tensors among them are taken as IndexedSlices
    of all their rows (int64 indices if the index dtypes differ), and values, indices and
    dense_shape go through a Merge each, giving an IndexedSlices."""
    if not any(isinstance(x, IndexedSlices) for x in inputs):
        op = core_ops.apply_op("Merge", inputs, name=name or "Merge")
        return op.outputs[0], op.outputs[1]
    inputs = as_indexed_slices_list(inputs)
    with_shape = [x.dense_shape is not None for x in inputs]
    if any(with_shape) and not all(with_shape):
        raise ValueError(
            "Either all merged IndexedSlices must have a dense_shape, or they must "
            "all have no dense_shape."
        )
    values, _ = merge([x.values for x in inputs], name=name)
    indices, chosen = merge([x.indices for x in inputs], name="indices")
    shape = (
        merge([x.dense_shape for x in inputs], name="dense_shape")[0] if all(with_shape) else None
    )
    return IndexedSlices(values, indices, shape), chosen
