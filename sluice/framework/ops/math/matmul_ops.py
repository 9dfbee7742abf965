"""Matrix products: MatMul (two matrices) and BatchMatMulV2 (stacks of matrices whose batch
dimensions broadcast), behind TF1's `matmul`.

>>> sl.matmul(sl.ones([5, 2, 3]), sl.ones([3, 4])).shape
TensorShape([5, 2, 4])
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from sluice._export import export
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape, broadcast_shapes
from sluice.framework.ops.core.core_ops import apply_op
from sluice.framework.ops.core.math_rules import convert_operands, is_numeric
from sluice.framework.ops.core.shape_rules import require_dtype, require_rank, require_same_dtype
from sluice.framework.ops.math.math_grad_util import sum_to_inputs
from sluice.framework.ops.math.unary_ops import conj

TensorLike = Any


def _matrix_dims(shape: TensorShape, transposed: bool) -> tuple:
    """(rows, cols) of the innermost matrix of `shape` after the optional transpose."""
    if shape.rank is None:
        return None, None
    rows, cols = shape[-2], shape[-1]
    return (cols, rows) if transposed else (rows, cols)


def _check_inner(a: Tensor, b: Tensor, k_a: Any, k_b: Any, flags: str) -> None:
    if k_a is not None and k_b is not None and k_a != k_b:
        raise ValueError(
            f"inner dimensions must be equal, but are {k_a} and {k_b}: a has shape {a.shape}, "
            f"b has shape {b.shape} ({flags})"
        )


def _matmul_infer(op) -> list:
    a, b = op.inputs
    require_same_dtype(a, b)
    require_dtype(a, "numeric", is_numeric)
    require_rank(a, 2, "a")
    require_rank(b, 2, "b")
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    m, k_a = _matrix_dims(a.shape.with_rank(2), ta)
    k_b, n = _matrix_dims(b.shape.with_rank(2), tb)
    _check_inner(a, b, k_a, k_b, f"transpose_a={ta}, transpose_b={tb}")
    return [(a.dtype, TensorShape([m, n]))]


def _matmul_kernel(a, b, *, transpose_a: bool, transpose_b: bool, **_):
    return jnp.matmul(a.T if transpose_a else a, b.T if transpose_b else b)


register_op("MatMul", infer=_matmul_infer, kernel=_matmul_kernel)


def _product_grads(x, y, grad, flip_x: bool, flip_y: bool, flip: str) -> tuple:
    """Gradients of `f(x) @ g(y)` where f, g are `flip` ("transpose" or "adjoint") when
    `flip_x`, `flip_y` are set: e.g. dx = grad @ y^H for x @ y, y @ grad^H for x^H @ y."""

    def mm(a, b, flip_a: bool, flip_b: bool) -> Tensor:
        return matmul(a, b, **{f"{flip}_a": flip_a, f"{flip}_b": flip_b})

    gx = mm(y, grad, flip_y, True) if flip_x else mm(grad, y, False, not flip_y)
    gy = mm(grad, x, True, flip_x) if flip_y else mm(x, grad, not flip_x, False)
    return gx, gy


@register_gradient("MatMul")
def _matmul_grad(op, grad):  # transposes do not conjugate: conj the factors (TF)
    a, b = op.inputs
    flags = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    return list(_product_grads(conj(a), conj(b), grad, *flags, flip="transpose"))


def _batch_matmul_infer(op) -> list:
    x, y = op.inputs
    require_same_dtype(x, y)
    require_dtype(x, "numeric", is_numeric)
    for t, what in ((x, "x"), (y, "y")):
        if t.shape.rank is not None and t.shape.rank < 2:
            raise ValueError(f"expected {what} of rank >= 2, got shape {t.shape}")
    adj_x, adj_y = op.get_attr("adj_x"), op.get_attr("adj_y")
    m, k_x = _matrix_dims(x.shape, adj_x)
    k_y, n = _matrix_dims(y.shape, adj_y)
    _check_inner(x, y, k_x, k_y, f"adj_x={adj_x}, adj_y={adj_y}")
    if x.shape.rank is None or y.shape.rank is None:
        return [(x.dtype, TensorShape(None))]
    batch = broadcast_shapes(x.shape[:-2], y.shape[:-2])
    if batch is None:
        raise ValueError(
            f"batch dimensions {x.shape[:-2]} and {y.shape[:-2]} (of shapes {x.shape} and "
            f"{y.shape}) are not broadcastable"
        )
    return [(x.dtype, batch.concatenate([m, n]))]


def _adjoint(x):
    return jnp.conj(jnp.swapaxes(x, -1, -2))


def _batch_matmul_kernel(x, y, *, adj_x: bool, adj_y: bool, **_):
    return jnp.matmul(_adjoint(x) if adj_x else x, _adjoint(y) if adj_y else y)


register_op("BatchMatMulV2", infer=_batch_matmul_infer, kernel=_batch_matmul_kernel)


@register_gradient("BatchMatMulV2")
def _batch_matmul_grad(op, grad):  # then sum over the batch axes along which x or y broadcast
    x, y = op.inputs
    flags = op.get_attr("adj_x"), op.get_attr("adj_y")
    gx, gy = _product_grads(x, y, grad, *flags, flip="adjoint")
    return sum_to_inputs(gx, gy, x, y, core_dims=2)


@export("matmul", "linalg.matmul")
def matmul(
    a: TensorLike,
    b: TensorLike,
    transpose_a: bool = False,
    transpose_b: bool = False,
    adjoint_a: bool = False,
    adjoint_b: bool = False,
    a_is_sparse: bool = False,
    b_is_sparse: bool = False,
    name: str | None = None,
) -> Tensor:
    """The matrix product `a @ b`, optionally transposing or adjoining (conjugate-transposing)
    either factor. Rank-2 inputs give a MatMul op; inputs of higher (or unknown) rank give a
    BatchMatMulV2 op that multiplies the innermost matrices and broadcasts the batch dimensions.

    Args:
      a, b: tensors of one numeric dtype and rank >= 2.
      transpose_a, transpose_b: transpose the factor before multiplying.
      adjoint_a, adjoint_b: conjugate and transpose the factor before multiplying.
      a_is_sparse, b_is_sparse: hints only; accepted for TF1 compatibility and ignored.
      name: the op's name.

    Returns:
      A tensor of shape `batch + [rows of a, columns of b]`.

    Raises:
      ValueError: if the inner dimensions differ, the batch dimensions do not broadcast, or both
        transpose and adjoint are asked for one factor.

    >>> sl.matmul(sl.ones([2, 3]), sl.ones([4, 3]), transpose_b=True).shape
    TensorShape([2, 4])
    """
    del a_is_sparse, b_is_sparse
    if transpose_a and adjoint_a:
        raise ValueError("matmul: only one of transpose_a and adjoint_a can be True.")
    if transpose_b and adjoint_b:
        raise ValueError("matmul: only one of transpose_b and adjoint_b can be True.")
    a, b = convert_operands(a, b)
    ranks = (a.shape.rank, b.shape.rank)
    if None not in ranks and max(ranks) <= 2:
        a = conj(a) if adjoint_a else a
        b = conj(b) if adjoint_b else b
        attrs = {"transpose_a": transpose_a or adjoint_a, "transpose_b": transpose_b or adjoint_b}
        return apply_op("MatMul", [a, b], attrs, name).outputs[0]
    a = conj(a) if transpose_a else a  # BatchMatMulV2 only adjoins: conj(adjoint) = transpose
    b = conj(b) if transpose_b else b
    attrs = {"adj_x": transpose_a or adjoint_a, "adj_y": transpose_b or adjoint_b}
    return apply_op("BatchMatMulV2", [a, b], attrs, name).outputs[0]
