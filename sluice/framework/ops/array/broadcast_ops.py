"""Ops that repeat a tensor: Tile (`tile`) and BroadcastTo (`broadcast_to`).

Their gradients sum the copies: Tile's by cutting each dimension into [multiple, length],
BroadcastTo's over the broadcast axes (`math_grad_util.sum_to_inputs`, as for broadcasting
binary ops).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from sluice._export import export
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import (
    as_int_tensor,
    host_ints,
    int_values,
    register_array_op,
    require_index_dtype,
    require_vector,
)


# -- Tile, BroadcastTo ----------------------------------------------------------------------------
def _tile_infer(op) -> list:
    x, multiples = op.inputs
    require_index_dtype(multiples, "multiples")
    require_vector(multiples, "multiples")
    values = int_values(multiples)
    if values is not None and x.shape.rank is not None and len(values) != x.shape.rank:
        raise ValueError(
            f"multiples must have one entry per dimension ({x.shape.rank}), got {len(values)}"
        )
    if any(v is not None and v < 0 for v in values or ()):
        raise ValueError(f"multiples must not be negative, got {values}")
    if x.shape.rank is None:
        return [(x.dtype, TensorShape(None if values is None else [None] * len(values)))]
    values = values or [None] * x.shape.rank
    dims = [None if d is None or m is None else d * m for d, m in zip(x.shape.dims, values)]
    return [(x.dtype, TensorShape(dims))]


register_array_op(
    "Tile",
    infer=_tile_infer,
    kernel=lambda x, multiples, **_: jnp.tile(x, host_ints(multiples, "Tile's multiples")),
    host_inputs=(1,),
)
# Tile's gradient sums with a reduction, a higher family: it is in array_grads.py


@export("tile")
def tile(input: Any, multiples: Any, name: str | None = None) -> Tensor:
    """`input` repeated `multiples[i]` times along each dimension i."""
    x = core_ops.convert_to_tensor(input)
    multiples = as_int_tensor(multiples, "tile's multiples")
    return core_ops.apply_op("Tile", [x, multiples], name=name).outputs[0]


def _broadcast_to_infer(op) -> list:
    x, shape = op.inputs
    require_index_dtype(shape, "shape")
    require_vector(shape, "shape")
    target = int_values(shape)
    if target is None:
        return [(x.dtype, TensorShape(None))]
    if any(d is not None and d < 0 for d in target):
        raise ValueError(f"shape must not be negative, got {target}")
    if x.shape.rank is None:
        return [(x.dtype, TensorShape(target))]
    if x.shape.rank > len(target):
        raise ValueError(f"cannot broadcast a tensor of shape {x.shape} to the lower rank {target}")
    out = list(target)
    offset = len(target) - x.shape.rank
    for i, d in enumerate(x.shape.dims):
        t = target[offset + i]
        if d is not None and t is not None and d != 1 and d != t:
            raise ValueError(f"cannot broadcast a tensor of shape {x.shape} to shape {target}")
        if t is None and d is not None and d != 1:
            out[offset + i] = d
    return [(x.dtype, TensorShape(out))]


register_array_op(
    "BroadcastTo",
    infer=_broadcast_to_infer,
    kernel=lambda x, shape, **_: jnp.broadcast_to(x, host_ints(shape, "BroadcastTo's shape")),
    host_inputs=(1,),
)
# BroadcastTo's gradient sums with a reduction, a higher family: it is in array_grads.py


@export("broadcast_to")
def broadcast_to(input: Any, shape: Any, name: str | None = None) -> Tensor:
    """`input` broadcast (NumPy rules) to `shape`."""
    x = core_ops.convert_to_tensor(input)
    shape = as_int_tensor(shape, "broadcast_to's shape")
    return core_ops.apply_op("BroadcastTo", [x, shape], name=name).outputs[0]
