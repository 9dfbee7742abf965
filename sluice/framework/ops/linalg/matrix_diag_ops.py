"""Diagonals and bands of matrices: Diag and DiagPart (`diag`, `diag_part`: a rank-k tensor and
the rank-2k "diagonal" tensor it spans), MatrixDiag, MatrixDiagPart, MatrixSetDiag and
MatrixBandPart (batched over leading dimensions, main diagonal only), and the compositions
`eye`, `matrix_transpose` and `trace`. Gradients are TF1's (`array_grad.py`): each op's
gradient is its partner op.

>>> sl.Session().run(sl.matrix_band_part(sl.ones([3, 3]), 0, -1)).tolist()
[[1.0, 1.0, 1.0], [0.0, 1.0, 1.0], [0.0, 0.0, 1.0]]
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import INDEX_DTYPES
from sluice.framework.ops.core.shape_rules import require_rank
from sluice.framework.ops.math import math_ops, reduction_ops


def _apply(op_type: str, inputs: list, name: str | None = None) -> Tensor:
    return core_ops.apply_op(
        op_type, [core_ops.convert_to_tensor(x) for x in inputs], name=name
    ).outputs[0]


# -- Diag, DiagPart -------------------------------------------------------------------------------
def _diag_infer(op) -> list:
    x = op.inputs[0]
    if x.shape.rank == 0:
        raise ValueError("diag needs a diagonal of rank >= 1, got a scalar")
    if x.shape.rank is None:
        return [(x.dtype, TensorShape(None))]
    return [(x.dtype, TensorShape(list(x.shape.dims) * 2))]


def _diag_kernel(x, **_):
    n = x.size
    return jnp.diag(x.reshape(-1)).reshape(x.shape * 2) if n else jnp.zeros(x.shape * 2, x.dtype)


register_op("Diag", infer=_diag_infer, kernel=_diag_kernel)


@register_gradient("Diag")
def _diag_grad(op, grad):
    return [diag_part(grad)]


def _diag_part_infer(op) -> list:
    x = op.inputs[0]
    rank = x.shape.rank
    if rank is None:
        return [(x.dtype, TensorShape(None))]
    if rank == 0 or rank % 2:
        raise ValueError(f"diag_part needs an input of even rank >= 2, got shape {x.shape}")
    half = TensorShape(x.shape.dims[: rank // 2])
    if not half.is_compatible_with(TensorShape(x.shape.dims[rank // 2 :])):
        raise ValueError(f"diag_part needs an input of shape D + D, got {x.shape}")
    return [(x.dtype, half.merge_with(TensorShape(x.shape.dims[rank // 2 :])))]


def _diag_part_kernel(x, **_):
    half = x.shape[: x.ndim // 2]
    n = int(np.prod(half))
    return jnp.diagonal(x.reshape(n, n)).reshape(half)


register_op("DiagPart", infer=_diag_part_infer, kernel=_diag_part_kernel)


@register_gradient("DiagPart")
def _diag_part_grad(op, grad):
    return [diag(grad)]


@export("diag")
def diag(diagonal: Any, name: str | None = None) -> Tensor:
    """The rank-2k tensor with `diagonal` (rank k) on its diagonal and zeros elsewhere (TF1
    `tf.diag`): `output[i1..ik, i1..ik] = diagonal[i1..ik]`."""
    return _apply("Diag", [diagonal], name)


@export("diag_part")
def diag_part(input: Any, name: str | None = None) -> Tensor:
    """The inverse of `diag`: `output[i1..ik] = input[i1..ik, i1..ik]` for an input of shape
    D + D (TF1 `tf.diag_part`)."""
    return _apply("DiagPart", [input], name)


# -- MatrixDiag, MatrixDiagPart, MatrixSetDiag ----------------------------------------------------
def _matrix_diag_infer(op) -> list:
    x = op.inputs[0]
    if x.shape.rank == 0:
        raise ValueError("matrix_diag needs a diagonal of rank >= 1, got a scalar")
    if x.shape.rank is None:
        return [(x.dtype, TensorShape(None))]
    return [(x.dtype, TensorShape(list(x.shape.dims) + list(x.shape.dims[-1:])))]


def _matrix_diag_kernel(x, **_):
    n = x.shape[-1]
    return x[..., None] * jnp.eye(n, dtype=x.dtype)


register_op("MatrixDiag", infer=_matrix_diag_infer, kernel=_matrix_diag_kernel)


@register_gradient("MatrixDiag")
def _matrix_diag_grad(op, grad):
    return [matrix_diag_part(grad)]


def _matrix_rank_at_least_2(x: Tensor, what: str) -> None:
    if x.shape.rank is not None and x.shape.rank < 2:
        raise ValueError(f"{what} needs an input of rank >= 2, got shape {x.shape}")


def _diagonal_length(m, n):
    return None if m is None or n is None else min(m, n)


def _matrix_diag_part_infer(op) -> list:
    x = op.inputs[0]
    _matrix_rank_at_least_2(x, "matrix_diag_part")
    if x.shape.rank is None:
        return [(x.dtype, TensorShape(None))]
    *batch, m, n = x.shape.dims
    return [(x.dtype, TensorShape(batch + [_diagonal_length(m, n)]))]


register_op(
    "MatrixDiagPart",
    infer=_matrix_diag_part_infer,
    kernel=lambda x, **_: jnp.diagonal(x, axis1=-2, axis2=-1),
)


@register_gradient("MatrixDiagPart")
def _matrix_diag_part_grad(op, grad):
    x = op.inputs[0]
    dims = x.shape.dims[-2:] if x.shape.rank is not None else [None, None]
    if None not in dims and dims[0] == dims[1]:
        return [matrix_diag(grad)]
    return [matrix_set_diag(fill_ops.zeros_like(x), grad)]


def _matrix_set_diag_infer(op) -> list:
    x, d = op.inputs
    if x.dtype != d.dtype:
        raise TypeError(
            f"input and diagonal must have one dtype, got {x.dtype.name} and {d.dtype.name}"
        )
    _matrix_rank_at_least_2(x, "matrix_set_diag")
    if x.shape.rank is None:
        return [(x.dtype, x.shape)]
    *batch, m, n = x.shape.dims
    expected = TensorShape(batch + [_diagonal_length(m, n)])
    if not d.shape.is_compatible_with(expected):
        raise ValueError(
            f"diagonal must have shape {expected} for an input of shape {x.shape}, got {d.shape}"
        )
    return [(x.dtype, x.shape)]


def _matrix_set_diag_kernel(x, d, **_):
    m, n = x.shape[-2:]
    k = min(m, n)
    on_diagonal = jnp.eye(m, n, dtype=bool)
    padded = jnp.zeros(x.shape[:-1], x.dtype).at[..., :k].set(d)  # [..., m]: row i gets d[i]
    return jnp.where(on_diagonal, padded[..., :, None], x)


register_op("MatrixSetDiag", infer=_matrix_set_diag_infer, kernel=_matrix_set_diag_kernel)


@register_gradient("MatrixSetDiag")
def _matrix_set_diag_grad(op, grad):
    return [matrix_set_diag(grad, fill_ops.zeros_like(op.inputs[1])), matrix_diag_part(grad)]


@export("matrix_diag", "linalg.diag")
def matrix_diag(diagonal: Any, name: str | None = None) -> Tensor:
    """A batch of square matrices with `diagonal[..., i]` at `[..., i, i]` and zeros elsewhere
    (TF1 `tf.matrix_diag`, main diagonal)."""
    return _apply("MatrixDiag", [diagonal], name)


@export("matrix_diag_part", "linalg.diag_part")
def matrix_diag_part(input: Any, name: str | None = None) -> Tensor:
    """The main diagonal of each matrix in the batch `input` (shape `[..., M, N]`), of length
    min(M, N) (TF1 `tf.matrix_diag_part`)."""
    return _apply("MatrixDiagPart", [input], name)


@export("matrix_set_diag", "linalg.set_diag")
def matrix_set_diag(input: Any, diagonal: Any, name: str | None = None) -> Tensor:
    """`input` with the main diagonal of each matrix replaced by `diagonal` (TF1
    `tf.matrix_set_diag`)."""
    x = core_ops.convert_to_tensor(input)
    d = (
        diagonal
        if isinstance(diagonal, Tensor)
        else core_ops.convert_to_tensor(diagonal, preferred_dtype=x.dtype)
    )  # a Python diagonal takes the input's dtype, as TF1
    return core_ops.apply_op("MatrixSetDiag", [x, d], name=name).outputs[0]


# -- MatrixBandPart -------------------------------------------------------------------------------
def _band_part_infer(op) -> list:
    x, lower, upper = op.inputs
    _matrix_rank_at_least_2(x, "matrix_band_part")
    for t, what in ((lower, "num_lower"), (upper, "num_upper")):
        if t.dtype not in INDEX_DTYPES:
            raise TypeError(f"{what} must be an int32 or int64 scalar, got {t.dtype.name}")
        require_rank(t, 0, what)
    return [(x.dtype, x.shape)]


def _band_part_kernel(x, lower, upper, **_):
    m, n = x.shape[-2:]
    i = jnp.arange(m)[:, None]
    j = jnp.arange(n)[None, :]
    keep = ((lower < 0) | (i - j <= lower)) & ((upper < 0) | (j - i <= upper))
    return jnp.where(keep, x, jnp.zeros((), x.dtype))


register_op("MatrixBandPart", infer=_band_part_infer, kernel=_band_part_kernel)


@register_gradient("MatrixBandPart")
def _band_part_grad(op, grad):
    return [core_ops.apply_op("MatrixBandPart", [grad, *op.inputs[1:]]).outputs[0], None, None]


@export("matrix_band_part", "linalg.band_part")
def matrix_band_part(input: Any, num_lower: Any, num_upper: Any, name: str | None = None) -> Tensor:
    """Each matrix of `input` with the entries outside a band set to zero (TF1
    `tf.matrix_band_part`): entry (i, j) is kept when `i - j <= num_lower` and
    `j - i <= num_upper`, a negative bound keeping that whole triangle. `(0, -1)` is the upper
    triangle, `(-1, 0)` the lower, `(0, 0)` the diagonal."""
    x = core_ops.convert_to_tensor(input)
    lower = core_ops.convert_to_tensor(num_lower, preferred_dtype=dtypes.int64)
    upper = core_ops.convert_to_tensor(num_upper, dtype=lower.dtype)
    return core_ops.apply_op("MatrixBandPart", [x, lower, upper], name=name).outputs[0]


# -- compositions ---------------------------------------------------------------------------------
@export("eye", "linalg.eye")
def eye(
    num_rows: Any,
    num_columns: Any = None,
    batch_shape: Any = None,
    dtype: Any = dtypes.float32,
    name: str | None = None,
) -> Tensor:
    """A (batch of) identity matrix: ones on the main diagonal of `[*batch_shape, num_rows,
    num_columns]` (TF1 `tf.eye`; `num_columns` defaults to `num_rows`). Sizes are Python ints or
    int32 scalar tensors.

    Raises:
      ValueError: a negative size known when the graph is built.
    """
    dtype = dtypes.as_dtype(dtype)
    num_columns = num_rows if num_columns is None else num_columns
    batch = [] if batch_shape is None else list(batch_shape)
    for v in [num_rows, num_columns] + batch:
        if not isinstance(v, Tensor) and int(v) < 0:
            raise ValueError(f"eye: sizes must be non-negative, got {v}")
    if num_rows is num_columns or (
        not isinstance(num_rows, Tensor)
        and not isinstance(num_columns, Tensor)
        and int(num_rows) == int(num_columns)
    ):
        return matrix_diag(fill_ops.ones(batch + [num_rows], dtype), name=name)
    if isinstance(num_rows, Tensor) or isinstance(num_columns, Tensor):
        rows, columns = (
            core_ops.convert_to_tensor(v, dtype=dtypes.int32) for v in (num_rows, num_columns)
        )
        length = math_ops.minimum(rows, columns)
    else:
        length = min(int(num_rows), int(num_columns))
    zeros = fill_ops.zeros(batch + [num_rows, num_columns], dtype)
    return matrix_set_diag(zeros, fill_ops.ones(batch + [length], dtype), name=name)


@export("matrix_transpose", "linalg.matrix_transpose", "linalg.transpose")
def matrix_transpose(a: Any, name: str = "matrix_transpose", conjugate: bool = False) -> Tensor:
    """Each matrix of the batch `a` transposed: the last two dimensions swapped (TF1
    `tf.matrix_transpose`); `conjugate` also conjugates complex values.

    Raises:
      ValueError: the rank of `a` is unknown or below 2.
    """
    a = core_ops.convert_to_tensor(a)
    rank = a.shape.rank
    if rank is None or rank < 2:
        raise ValueError(f"matrix_transpose needs an input of known rank >= 2, got shape {a.shape}")
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    return array_ops.transpose(a, perm, name=name, conjugate=conjugate)


@export("trace", "linalg.trace")
def trace(x: Any, name: str | None = None) -> Tensor:
    """The sum of the main diagonal of each matrix in the batch `x` (TF1 `tf.trace`)."""
    return reduction_ops.reduce_sum(matrix_diag_part(x), [-1], name=name)
