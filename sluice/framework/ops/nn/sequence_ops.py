"""Ops on batches of variable-length sequences: ReverseSequence (`reverse_sequence`: reverses the
first `seq_lengths[b]` entries of each batch row) and `sequence_mask` (composed as TF1 does:
`range(maxlen) < lengths[..., None]`); `reverse_v2` is TF1's name of `reverse`.

>>> x = sl.constant([[1, 2, 3], [4, 5, 6]])
>>> sl.Session().run(sl.reverse_sequence(x, [2, 3], seq_axis=1, batch_axis=0)).tolist()
[[2, 1, 3], [6, 5, 4]]
>>> sl.Session().run(sl.sequence_mask([1, 3], 4)).tolist()
[[True, False, False, False], [True, True, True, False]]
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import Check, register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import INDEX_DTYPES, require_vector
from sluice.framework.ops.core.shape_rules import constant_value
from sluice.framework.ops.math import math_ops, reduction_ops

reverse_v2 = array_ops.reverse


# -- ReverseSequence ------------------------------------------------------------------------------
def _reverse_sequence_infer(op) -> list:
    x, lengths = op.inputs
    seq_dim, batch_dim = op.get_attr("seq_dim"), op.get_attr("batch_dim")
    if lengths.dtype not in INDEX_DTYPES:
        raise TypeError(f"seq_lengths must be int32 or int64, got {lengths.dtype.name}")
    require_vector(lengths, "seq_lengths")
    if seq_dim == batch_dim:
        raise ValueError(f"seq_axis and batch_axis must differ, both are {seq_dim}")
    rank = x.shape.rank
    if rank is not None:
        if not (0 <= seq_dim < rank and 0 <= batch_dim < rank):
            raise ValueError(
                f"seq_axis ({seq_dim}) and batch_axis ({batch_dim}) must be in "
                f"[0, {rank}) for an input of shape {x.shape}"
            )
        batch = TensorShape([x.shape.dims[batch_dim]])
        if not lengths.shape.is_compatible_with(batch):
            raise ValueError(
                f"seq_lengths has shape {lengths.shape}, but the input has "
                f"{x.shape.dims[batch_dim]} rows along batch_axis {batch_dim}"
            )
        values, steps = constant_value(lengths), x.shape.dims[seq_dim]
        if values is not None and steps is not None and values.size and values.max() > steps:
            raise ValueError(
                f"seq_lengths contain {values.max()}, more than the {steps} steps "
                f"along seq_axis {seq_dim}"
            )
        dims = list(x.shape.dims)
        dims[batch_dim] = batch.merge_with(lengths.shape).dims[0]
        return [(x.dtype, TensorShape(dims))]
    return [(x.dtype, x.shape)]


def _reverse_sequence_kernel(x, lengths, *, seq_dim, batch_dim, **_):
    steps = x.shape[seq_dim]
    i = jnp.arange(steps)[None, :]
    n = lengths.astype(jnp.int32)[:, None]
    source = jnp.where(i < n, n - 1 - i, i)  # [batch, steps]: where each output step reads
    if batch_dim > seq_dim:
        source = source.T
    shape = [1] * x.ndim
    shape[batch_dim], shape[seq_dim] = x.shape[batch_dim], steps
    source = jnp.broadcast_to(source.reshape(shape), x.shape)
    return jnp.take_along_axis(x, source, axis=seq_dim)


def _lengths_out_of_range(x, lengths, *, seq_dim, **_):
    """(a length outside [0, steps], the first such length): TF's kernel checks this."""
    if lengths.size == 0:
        return jnp.asarray(False), jnp.asarray(0, jnp.int64)
    lengths = jnp.asarray(lengths)
    bad = (lengths < 0) | (lengths > x.shape[seq_dim])
    return jnp.any(bad), lengths[jnp.argmax(bad)].astype(jnp.int64)


def _lengths_message(op, length: int) -> str:
    steps = op.inputs[0].shape.dims[op.get_attr("seq_dim")] if op.inputs[0].shape.rank else None
    return (
        f"ReverseSequence: seq_lengths must be in [0, {steps if steps is not None else 'the'}"
        f" steps along seq_axis], got a length of {length}"
    )


register_op(
    "ReverseSequence",
    infer=_reverse_sequence_infer,
    kernel=_reverse_sequence_kernel,
    check=Check(_lengths_out_of_range, _lengths_message),
)


@register_gradient("ReverseSequence")
def _reverse_sequence_grad(op, grad):  # the reversal is its own inverse
    attrs = {"seq_dim": op.get_attr("seq_dim"), "batch_dim": op.get_attr("batch_dim")}
    return [core_ops.apply_op("ReverseSequence", [grad, op.inputs[1]], attrs).outputs[0], None]


def _pick(what: str, new: Any, new_name: str, old: Any, old_name: str) -> Any:
    if new is not None and old is not None:
        raise ValueError(f"{what}: cannot specify both '{new_name}' and '{old_name}'.")
    return new if new is not None else old


@export("reverse_sequence")
def reverse_sequence(
    input: Any,
    seq_lengths: Any,
    seq_axis: int | None = None,
    batch_axis: int | None = None,
    name: str | None = None,
    seq_dim: int | None = None,
    batch_dim: int | None = None,
) -> Tensor:
    """For each row `b` along `batch_axis`, the first `seq_lengths[b]` entries along `seq_axis`
    in reverse order; the entries after them are kept (TF1 `tf.reverse_sequence`).

    Args:
      input: a tensor.
      seq_lengths: an int32/int64 vector with one length (<= the seq_axis dimension) per row.
      seq_axis: the axis of the steps (`seq_dim` is its deprecated alias); required.
      batch_axis: the axis of the rows (default 0; `batch_dim` is its alias).
      name: the op's name.

    Raises:
      ValueError: axes out of range or equal, seq_lengths of the wrong size or too large.
    """
    seq_axis = _pick("reverse_sequence", seq_axis, "seq_axis", seq_dim, "seq_dim")
    batch_axis = _pick("reverse_sequence", batch_axis, "batch_axis", batch_dim, "batch_dim")
    if seq_axis is None:
        raise ValueError("reverse_sequence: seq_axis is required")
    x = core_ops.convert_to_tensor(input)
    lengths = core_ops.convert_to_tensor(seq_lengths, preferred_dtype=dtypes.int64)
    rank = x.shape.rank
    seq_axis, batch_axis = int(seq_axis), int(batch_axis or 0)
    if rank is not None:  # negative axes count from the end
        seq_axis, batch_axis = (a % rank if a < 0 else a for a in (seq_axis, batch_axis))
    attrs = {"seq_dim": seq_axis, "batch_dim": batch_axis}
    return core_ops.apply_op("ReverseSequence", [x, lengths], attrs, name).outputs[0]


# -- sequence_mask --------------------------------------------------------------------------------
@export("sequence_mask")
def sequence_mask(
    lengths: Any, maxlen: Any = None, dtype: Any = dtypes.bool_, name: str | None = None
) -> Tensor:
    """`mask[i..., j] = j < lengths[i...]` for j in `range(maxlen)` (TF1 `tf.sequence_mask`).

    Args:
      lengths: an integer tensor of any shape.
      maxlen: a scalar integer: the size of the new last dimension; by default the largest
        length (then the output's last dimension is known only at run time).
      dtype: the output dtype (bool by default; others get 1 and 0).
      name: the name scope.

    Returns:
      A tensor of shape `lengths.shape + [maxlen]`.

    Raises:
      ValueError: `maxlen` is not a scalar.
    """
    with graph_lib.name_scope(name, "SequenceMask", [lengths]):
        lengths = core_ops.convert_to_tensor(lengths)
        if maxlen is None:
            maxlen = reduction_ops.reduce_max(lengths)
            maxlen = math_ops.maximum(np.zeros([], maxlen.dtype), maxlen)
        else:
            maxlen = core_ops.convert_to_tensor(maxlen, preferred_dtype=lengths.dtype)
        if maxlen.shape.rank not in (None, 0):
            raise ValueError(f"maxlen must be scalar for sequence_mask, got shape {maxlen.shape}")
        row = fill_ops.range(0, maxlen, 1, dtype=maxlen.dtype)
        matrix = fill_ops.cast(array_ops.expand_dims(lengths, -1), maxlen.dtype)
        result = math_ops.less(row, matrix)
        return fill_ops.cast(result, dtypes.as_dtype(dtype))
