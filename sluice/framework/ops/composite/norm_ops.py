"""`norm`: vector and matrix norms, composed of reductions as TF1's `linalg_ops.norm` composes
them (the spectral norm from Svd's singular values). Gradients follow from the ops used.

>>> float(sl.Session().run(sl.norm([3.0, 4.0])))
5.0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.linalg.linalg_ops import svd
from sluice.framework.ops.math import math_ops, reduction_ops, unary_ops

_VECTOR_ORDERS = ("euclidean", 1, 2, np.inf)
_MATRIX_ORDERS = ("euclidean", "fro", 1, 2, np.inf)


def _axes(axis: Any, rank: int | None) -> tuple[list | None, bool]:
    """(the axes, whether it is a matrix norm); raises ValueError for a bad axis."""
    if axis is None:
        return None, False
    if isinstance(axis, (list, tuple)):
        if len(axis) == 2:
            if (
                not all(isinstance(a, int) for a in axis)
                or (rank is not None and axis[0] % rank == axis[1] % rank)
                or axis[0] == axis[1]
            ):
                raise ValueError(
                    f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}"
                )
            return list(axis), True
        if len(axis) == 1:
            axis = axis[0]
        else:
            raise ValueError(
                f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}"
            )
    if not isinstance(axis, (int, np.integer)):
        raise ValueError(
            f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}"
        )
    return [int(axis)], False


@export("norm", "linalg.norm")
def norm(
    tensor: Any,
    ord: Any = "euclidean",
    axis: Any = None,
    keepdims: bool | None = None,
    name: str | None = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """The norm of `tensor` over `axis` (TF1 `tf.norm`).

    Args:
      tensor: a floating tensor.
      ord: "euclidean" (default), "fro" (matrices), 1, 2, np.inf, or any p > 0 for vectors.
      axis: None (the whole tensor as one vector), an int (vectors along it), or a pair of ints
        (matrices over those two axes).
      keepdims: keep the reduced axes with length 1; `keep_dims` is its TF1 alias.
      name: the name scope.

    Raises:
      ValueError: an `ord` or `axis` that is not supported, as TF1 raises it.
    """
    if keepdims is not None and keep_dims is not None:
        raise ValueError("norm: cannot specify both 'keepdims' and 'keep_dims'.")
    keepdims = bool(keepdims if keepdims is not None else keep_dims)
    x = core_ops.convert_to_tensor(tensor)
    axes, is_matrix = _axes(axis, x.shape.rank)
    if is_matrix:
        if ord not in _MATRIX_ORDERS:
            raise ValueError(
                f"'ord' must be a supported matrix norm in {list(_MATRIX_ORDERS)}, got {ord}"
            )
    else:
        supported = ord in _VECTOR_ORDERS or (
            isinstance(ord, (int, float)) and not isinstance(ord, bool) and ord > 0
        )
        if not supported:
            raise ValueError(f"'ord' must be a supported vector norm, got {ord}")
    with graph_lib.name_scope(name, "norm", [x]):
        if is_matrix:
            result = _matrix_norm(x, ord, axes)
        elif ord in ("euclidean", 2):
            result = unary_ops.sqrt(reduction_ops.reduce_sum(x * x, axes, keepdims=True))
        elif ord == 1:
            result = reduction_ops.reduce_sum(unary_ops.abs(x), axes, keepdims=True)
        elif ord == np.inf:
            result = reduction_ops.reduce_max(unary_ops.abs(x), axes, keepdims=True)
        else:
            p = np.asarray(ord, x.dtype)
            total = reduction_ops.reduce_sum(math_ops.pow(unary_ops.abs(x), p), axes, keepdims=True)
            result = math_ops.pow(total, np.asarray(1.0 / ord, x.dtype))
        if not keepdims:
            result = array_ops.squeeze(result, axes)
        return result


def _matrix_norm(x: Tensor, ord: Any, axes: list) -> Tensor:
    """A matrix norm over `axes` (rows, columns), kept as length-1 axes."""
    rows, columns = axes
    if ord in ("euclidean", "fro"):
        return unary_ops.sqrt(reduction_ops.reduce_sum(x * x, axes, keepdims=True))
    if ord == 1:  # the largest column sum
        sums = reduction_ops.reduce_sum(unary_ops.abs(x), rows, keepdims=True)
        return reduction_ops.reduce_max(sums, columns, keepdims=True)
    if ord == np.inf:  # the largest row sum
        sums = reduction_ops.reduce_sum(unary_ops.abs(x), columns, keepdims=True)
        return reduction_ops.reduce_max(sums, rows, keepdims=True)
    rank = x.shape.rank
    if rank is None:
        raise ValueError("norm: the spectral norm (ord=2) needs an input of known rank")
    rows, columns = rows % rank, columns % rank
    perm = [k for k in range(rank) if k not in (rows, columns)] + [rows, columns]
    moved = array_ops.transpose(x, perm)
    largest = reduction_ops.reduce_max(svd(moved, compute_uv=False), -1)
    for k in sorted((rows, columns)):
        largest = array_ops.expand_dims(largest, k)
    return largest
