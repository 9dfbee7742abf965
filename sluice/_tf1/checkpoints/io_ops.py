"""The `SaveH5` and `RestoreH5` ops: write and read one h5 checkpoint of a list of variables.

    SaveH5(filename, global_step, handles...)      attrs: names (, slices)
    RestoreH5(filename, handles...)                attrs: names, dtypes, shapes, allow_extra
                                                          (, slices)

A part of a partitioned variable is a slice of the full tensor named by its checkpoint name: its
entry of `slices` is (full_shape, offset, shape), () for a whole variable. Save writes each full
tensor once, assembled from its parts (one name appears once per part); restore reads the full
tensor and writes each part its slice, so any partitioning restores from any other (`dtypes`
and `shapes` then hold the full tensor's). Graphs built before `slices` existed have no such
attr: every variable is whole.

`filename` is the UTF-8 path as a uint8 vector (from before sluice had strings), fed by `Saver`.
Both kernels are stateful (they read or write the session's variables and its random-number
counters) and do host file I/O, so the compiled engine leaves them to the interpreter. Restore
verifies the whole file before writing any variable.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from sluice._tf1.checkpoints import h5_format
from sluice.framework.ir import dtypes, errors
from sluice.framework.ir.registry import not_differentiable, register_op
from sluice.framework.placement import processes

_OP_ERRORS = {
    "not_found": errors.NotFoundError,
    "invalid": errors.InvalidArgumentError,
    "data_loss": errors.DataLossError,
    "unimplemented": errors.UnimplementedError,
}


def as_op_error(err: h5_format.CheckpointError, op: Any = None) -> errors.OpError:
    """The `sl.errors` class for a checkpoint problem."""
    return _OP_ERRORS[err.kind](None, op, err.message)


def encode_path(path: str) -> np.ndarray:
    return np.frombuffer(path.encode("utf-8"), np.uint8)


def _decode_path(value: Any) -> str:
    return np.asarray(value).astype(np.uint8).tobytes().decode("utf-8")


def _random_counts(ctx: Any) -> dict:
    counts = getattr(ctx, "random_counts", None)
    if counts is None:
        raise errors.UnimplementedError(
            None, ctx.op, "This session keeps no random-number counters to save or restore."
        )
    return counts


def _check_inputs(op, leading: list[tuple[str, Any, int]]) -> None:
    for i, (what, dtype, rank) in enumerate(leading):
        t = op.inputs[i]
        if t.dtype != dtype or t.shape.rank not in (None, rank):
            raise TypeError(
                f"input {i} ({what}) must be a rank-{rank} {dtype.name} tensor, got "
                f"{t.dtype.name}{t.shape}"
            )
    handles = op.inputs[len(leading) :]
    if len(handles) != len(op.get_attr("names")):
        raise ValueError(f"{len(op.get_attr('names'))} names for {len(handles)} variable handles")
    for t in handles:
        if t.dtype != dtypes.resource:
            raise TypeError(f"expected variable handles after the leading inputs, got {t.name}")


def _save_infer(op) -> list:
    _check_inputs(op, [("filename", dtypes.uint8, 1), ("global_step", dtypes.int64, 0)])
    return []


def _region(offset: tuple, shape: tuple) -> tuple:
    return tuple(slice(o, o + n) for o, n in zip(offset, shape))


def _save_kernel(ctx, filename, global_step, *handles, names, slices=None, **_):
    path = _decode_path(filename)
    arrays: dict[str, np.ndarray] = {}
    for name, handle, part in zip(names, handles, slices or [()] * len(names)):
        value = np.asarray(ctx.read_variable(handle))
        if value.dtype.kind == "O":  # before anything is written: no unrestorable file
            raise errors.UnimplementedError(
                None,
                ctx.op,
                f"Saver cannot save the string variable {name!r}: sluice's checkpoints hold "
                "numbers only. Leave it out of the Saver's var_list.",
            )
        if not part:
            arrays[name] = value
            continue
        full_shape, offset, shape = part
        if name not in arrays:  # the Saver checked that the parts tile the full tensor
            arrays[name] = np.zeros(full_shape, value.dtype)
        arrays[name][_region(offset, shape)] = value
    step = int(global_step)
    counts = {op_name: int(count) for op_name, count in _random_counts(ctx).items()}
    if not processes.is_chief():  # the values are gathered on every process; one writes them
        return ()
    h5_format.write_checkpoint(path, arrays, None if step < 0 else step, counts)
    return ()


register_op("SaveH5", infer=_save_infer, kernel=_save_kernel, stateful=True, host_only=True)


def _restore_infer(op) -> list:
    _check_inputs(op, [("filename", dtypes.uint8, 1)])
    return []


def _restore_kernel(ctx, filename, *handles, names, dtypes, shapes, allow_extra, slices=None, **_):
    path = _decode_path(filename)
    expected = {name: (dtype, shape) for name, dtype, shape in zip(names, dtypes, shapes)}
    try:
        checkpoint = h5_format.read_checkpoint(path, expected, allow_extra=allow_extra)
    except h5_format.CheckpointError as err:
        raise as_op_error(err, ctx.op) from None
    for name, handle, part in zip(names, handles, slices or [()] * len(names)):
        value = checkpoint.arrays[name]
        if part:
            value = value[_region(part[1], part[2])]
        ctx.write_variable(handle, jnp.asarray(value))
    counts = _random_counts(ctx)
    counts.clear()
    counts.update(checkpoint.random_counts)
    return ()


register_op(
    "RestoreH5", infer=_restore_infer, kernel=_restore_kernel, stateful=True, host_only=True
)
not_differentiable("SaveH5", "RestoreH5")
