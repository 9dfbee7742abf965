"""Reusable inference rules and static-value helpers for op registrations."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from sluice.framework.ir import dtypes
from sluice.framework.ir.tensor_shape import TensorShape, broadcast_shapes


def same_as_input(op) -> list:
    """One output with the dtype and shape of input 0 (Identity, Neg, Tanh, ...)."""
    x = op.inputs[0]
    return [(x.dtype, x.shape)]


def floating_unary(op) -> list:
    """Like `same_as_input`, for ops defined only on floating (or complex) values."""
    x = op.inputs[0]
    require_dtype(x, "floating", lambda d: dtypes.is_floating(d) or d.kind == "c")
    return [(x.dtype, x.shape)]


def broadcast_binary(op) -> list:
    """Two inputs of one dtype, NumPy broadcasting; the output has that dtype."""
    x, y = op.inputs
    require_same_dtype(x, y)
    return [(x.dtype, broadcast_or_raise(x, y))]


def broadcast_compare(op) -> list:
    """Like `broadcast_binary` but the output is boolean (Less, Equal, ...)."""
    x, y = op.inputs
    require_same_dtype(x, y)
    return [(dtypes.bool_, broadcast_or_raise(x, y))]


def broadcast_or_raise(x, y) -> TensorShape:
    shape = broadcast_shapes(x.shape, y.shape)
    if shape is None:
        raise ValueError(
            f"shapes {x.shape} and {y.shape} are not broadcastable (NumPy rules: trailing "
            "dimensions must be equal or 1)"
        )
    return shape


def require_same_dtype(*tensors) -> None:
    first = tensors[0].dtype
    for t in tensors[1:]:
        if t.dtype != first:
            raise TypeError(
                f"expected all inputs to have the same dtype, got {first.name} and {t.dtype.name}"
            )


def require_dtype(tensor, what: str, predicate) -> None:
    if not predicate(tensor.dtype):
        raise TypeError(f"expected a {what} tensor, got {tensor.dtype.name} for {tensor.name}")


def require_rank(tensor, rank: int | Iterable[int], what: str = "input") -> None:
    ranks = (rank,) if isinstance(rank, int) else tuple(rank)
    if tensor.shape.rank is not None and tensor.shape.rank not in ranks:
        want = " or ".join(str(r) for r in ranks)
        raise ValueError(f"expected {what} of rank {want}, got shape {tensor.shape}")


def constant_value(tensor) -> np.ndarray | None:
    """The value of `tensor` if it is known while the graph is built, else None.

    Follows Const, Identity, Shape/Size/Rank of statically known shapes, Cast and Pack.
    """
    op = tensor.op
    if op.type == "Const":
        return op.get_attr("value")
    if op.type in ("Identity", "StopGradient"):
        return constant_value(op.inputs[0])
    if op.type == "Shape":
        shape = op.inputs[0].shape
        if shape.is_fully_defined():
            return np.array(shape.as_list(), dtype=tensor.dtype)
        return None
    if op.type == "Rank":
        rank = op.inputs[0].shape.rank
        return None if rank is None else np.array(rank, dtype=tensor.dtype)
    if op.type == "Size":
        n = op.inputs[0].shape.num_elements()
        return None if n is None else np.array(n, dtype=tensor.dtype)
    if op.type == "Cast":
        v = constant_value(op.inputs[0])
        return None if v is None else v.astype(tensor.dtype)
    if op.type == "Pack":
        values = [constant_value(t) for t in op.inputs]
        if any(v is None for v in values):
            return None
        return np.stack(values, axis=op.get_attr("axis"))
    return None


def partial_shape_value(tensor) -> TensorShape:
    """A shape given as a 1-D int tensor, with whatever entries are known statically."""
    value = constant_value(tensor)
    if value is not None:
        return TensorShape([int(d) for d in np.reshape(value, [-1])])
    if tensor.op.type == "Shape":
        return tensor.op.inputs[0].shape
    if tensor.op.type == "Pack":
        dims: list[Any] = []
        for t in tensor.op.inputs:
            v = constant_value(t)
            dims.append(None if v is None else int(v))
        return TensorShape(dims)
    n = tensor.shape[0] if tensor.shape.rank == 1 else None
    return TensorShape(None if n is None else [None] * n)
