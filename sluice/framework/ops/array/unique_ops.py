"""Unique and UniqueWithCounts (`unique`, `unique_with_counts`): the distinct values of a vector
in the order they first appear, the index of each input element among them, and their counts.

The number of distinct values depends on the data, so, as `where(condition)` and
`boolean_mask`, these run where their input is known before the step: always in the interpreted
engine, and in the compiled engine when the input is a constant (a fed or computed input makes it
raise UnimplementedError there). They have no gradient, as in TF1.

>>> y, idx = sl.unique([1, 1, 2, 4, 4, 4, 7, 8, 8])
>>> [v.tolist() for v in sl.Session().run([y, idx])]
[[1, 2, 4, 7, 8], [0, 0, 1, 2, 2, 2, 3, 4, 4]]
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import INDEX_DTYPES, host_value, register_array_op
from sluice.framework.ops.core.shape_rules import require_rank


class UniqueOutput(NamedTuple):
    y: Tensor
    idx: Tensor


class UniqueWithCountsOutput(NamedTuple):
    y: Tensor
    idx: Tensor
    count: Tensor


def _unique_infer(op) -> list:
    x = op.inputs[0]
    require_rank(x, 1, "x")
    out_idx = dtypes.as_dtype(op.get_attr("out_idx"))
    if out_idx not in INDEX_DTYPES:
        raise TypeError(f"out_idx must be int32 or int64, got {out_idx.name}")
    outputs = [(x.dtype, TensorShape([None])), (out_idx, x.shape)]
    if op.type == "UniqueWithCounts":
        outputs.append((out_idx, TensorShape([None])))
    return outputs


def _first_appearance(x, out_idx) -> tuple:
    """(values, index of each element among them, counts), values in order of appearance."""
    x = host_value(x, "the input of Unique")
    values, first, inverse, counts = np.unique(
        x, return_index=True, return_inverse=True, return_counts=True
    )
    order = np.argsort(first, kind="stable")
    position = np.empty_like(order)
    position[order] = np.arange(order.size)
    return (
        values[order],
        position[inverse.reshape(-1)].astype(out_idx),
        counts[order].astype(out_idx),
    )


register_array_op(
    "Unique",
    infer=_unique_infer,
    kernel=lambda x, *, out_idx, **_: _first_appearance(x, out_idx)[:2],
    jit=False,  # the number of values depends on the data
)
register_array_op(
    "UniqueWithCounts",
    infer=_unique_infer,
    kernel=lambda x, *, out_idx, **_: _first_appearance(x, out_idx),
    jit=False,
)
not_differentiable("Unique", "UniqueWithCounts")


@export("unique")
def unique(x: Any, out_idx: Any = dtypes.int32, name: str | None = None) -> UniqueOutput:
    """The distinct values of the vector `x` in order of first appearance, and for each element
    of `x` its index among them (TF1 `tf.unique`).

    Args:
      x: a 1-D tensor.
      out_idx: the dtype of `idx` (int32 or int64).
      name: the op's name.

    Returns:
      A namedtuple `(y, idx)`: `x == gather(y, idx)`.

    Raises:
      ValueError: `x` is not a vector.
    """
    x = core_ops.convert_to_tensor(x)
    op = core_ops.apply_op("Unique", [x], {"out_idx": dtypes.as_dtype(out_idx)}, name)
    return UniqueOutput(*op.outputs)


@export("unique_with_counts")
def unique_with_counts(
    x: Any, out_idx: Any = dtypes.int32, name: str | None = None
) -> UniqueWithCountsOutput:
    """`unique` plus how many times each distinct value occurs: a namedtuple
    `(y, idx, count)` (TF1 `tf.unique_with_counts`)."""
    x = core_ops.convert_to_tensor(x)
    op = core_ops.apply_op("UniqueWithCounts", [x], {"out_idx": dtypes.as_dtype(out_idx)}, name)
    return UniqueWithCountsOutput(*op.outputs)
