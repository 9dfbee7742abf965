"""Checks of an imported graph beyond each node's own fields: the loop frames its edges cross, the
loop variables its back edges carry, and the ops whose run would touch what the file names (a
file path, a Python object of the importing process).

TF1 runs whatever an imported graph holds; sluice refuses at import the ops that would read or
write a file chosen by the graph_def's author when the graph runs (see
docs/meta_graph_format.md, "What an imported graph may do when run").
"""

from __future__ import annotations

from typing import Any

from sluice.framework.control_flow.while_context import WhileContext
from sluice.framework.graph_def.graph_def import GraphDefError
from sluice.framework.ir.graph import Operation, Tensor

_PRINT_OPS = ("Print", "PrintV2")
# Checkpoint ops read or write the path fed to their first input, a Saver's filename placeholder.
_FILE_OPS = ("SaveH5", "RestoreH5")


def check_file_inputs(op_type: str, inputs: list, where: str) -> None:
    """A checkpoint op takes its path from a placeholder (the Saver feeds it), never a value
    baked into the file."""
    if op_type in _FILE_OPS and inputs and inputs[0].op.type != "Placeholder":
        raise GraphDefError(
            f"{where}: its filename input is {inputs[0].name} "
            f"({inputs[0].op.type}), not a Saver's filename placeholder; an "
            "imported graph may not read or write files its graph_def names."
        )


def check_host_effects(op_type: str, attrs: dict, where: str) -> None:
    """Refuses the ops whose run would touch a file the graph_def names (TF1 would run them)."""
    stream = attrs.get("output_stream")
    if op_type in _PRINT_OPS and isinstance(stream, str) and stream.startswith("file://"):
        raise GraphDefError(
            f"{where}: prints to the file {stream[7:]!r}; an imported graph may "
            "not write files its graph_def names. Print to stderr or stdout, or "
            "build the print again after the import."
        )


def check_back_edge(merge: Operation, value: Tensor) -> None:
    """A loop's back edge carries the loop variable its Merge was built for (inference saw only
    the Merge's other input)."""
    out = merge.outputs[0]
    if value.dtype != out.dtype or not value.shape.is_compatible_with(out.shape):
        raise GraphDefError(
            f"Node {merge.name!r} (Merge): its back edge {value.name} is {value.dtype.name}"
            f"{value.shape}, but the loop variable is {out.dtype.name}{out.shape}."
        )


def _frame(ctx: Any) -> WhileContext | None:
    while ctx is not None and not isinstance(ctx, WhileContext):
        ctx = ctx.outer_context
    return ctx


def _output_frame(op: Operation) -> WhileContext | None:
    """The loop frame an op's outputs live in: its own, or the outer one for an Exit."""
    frame = _frame(op.control_flow_context)
    return _frame(frame.outer_context) if op.type == "Exit" and frame is not None else frame


def check_frames(ops: list[Operation]) -> None:
    """Every data edge stays in one loop frame, except an Enter's (from the outer frame in) and
    an Exit's (from the frame out): the engines rely on it and the file's contexts claim it."""
    for op in ops:
        frame = _frame(op.control_flow_context)
        want = frame
        if op.type == "Enter":
            if frame is None or op.get_attr("frame_name") != frame.name:
                raise GraphDefError(
                    f"Node {op.name!r} (Enter): frame_name {op.get_attr('frame_name')!r} is not "
                    f"the loop its context names ({getattr(frame, 'name', None)!r})."
                )
            want = _frame(frame.outer_context)
        for t in op.inputs:
            back_edge = op.type == "Merge" and t.op.type == "NextIteration"
            have = _frame(t.op.control_flow_context) if back_edge else _output_frame(t.op)
            if have is not (frame if back_edge else want):
                raise GraphDefError(
                    f"Node {op.name!r} ({op.type}) in loop frame "
                    f"{getattr(frame, 'name', None)!r} takes {t.name} from loop frame "
                    f"{getattr(have, 'name', None)!r}: its context does not match its inputs'."
                )
