"""Batched linear algebra on the innermost two dimensions: MatrixInverse, MatrixDeterminant,
MatrixSolve, MatrixTriangularSolve, Cholesky, Qr, Svd, SelfAdjointEigV2, with the gradients of
TF1's `linalg_grad.py` (Svd's and Qr's for reduced factors; Qr's for M >= N).

Inputs are real floating tensors (float32/float64) of rank >= 2; square where the maths needs it.
Kernels are `jnp.linalg` / `jax.scipy.linalg`; like TF's CPU kernels they do not raise on a
singular matrix (the result holds Inf or NaN), except Cholesky of a matrix that is not positive
definite, which gives NaN.

>>> round(float(sl.Session().run(sl.matrix_determinant([[2.0, 0.0], [0.0, 3.0]]))), 6)
6.0
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp
import jax.scipy.linalg as jsl

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.shape_rules import require_dtype
from sluice.framework.ops.linalg.matrix_diag_ops import (
    matrix_band_part,
    matrix_diag,
    matrix_diag_part,
    matrix_set_diag,
    matrix_transpose,
)
from sluice.framework.ops.math import unary_ops
from sluice.framework.ops.math.matmul_ops import matmul


class QrOutput(NamedTuple):
    q: Tensor
    r: Tensor


class EigOutput(NamedTuple):
    e: Tensor
    v: Tensor


def _matrices(x: Tensor, what: str, square: bool = True) -> tuple:
    """(batch dims, rows, columns) of a batch of matrices; checks dtype, rank and squareness."""
    require_dtype(x, "real floating", dtypes.is_floating)
    if x.dtype not in (dtypes.float32, dtypes.float64):
        raise TypeError(f"{what} supports float32 and float64 inputs, got {x.dtype.name}")
    if x.shape.rank is None:
        return None, None, None
    if x.shape.rank < 2:
        raise ValueError(
            f"{what} needs an input of rank >= 2 (a batch of matrices), got shape {x.shape}"
        )
    *batch, m, n = x.shape.dims
    if square and m is not None and n is not None and m != n:
        raise ValueError(f"{what} needs square matrices, got shape {x.shape}")
    return list(batch), m, n


def _square_infer(what: str):
    def infer(op) -> list:
        x = op.inputs[0]
        _matrices(x, what)
        return [(x.dtype, x.shape)]

    return infer


def _adjoint(x: Tensor) -> Tensor:
    return matrix_transpose(x)  # real inputs only


# -- MatrixInverse --------------------------------------------------------------------------------
def _inverse_kernel(x, *, adjoint, **_):
    inverse = jnp.linalg.inv(x)
    return jnp.swapaxes(inverse, -1, -2) if adjoint else inverse


register_op("MatrixInverse", infer=_square_infer("matrix_inverse"), kernel=_inverse_kernel)


@register_gradient("MatrixInverse")
def _inverse_grad(op, grad):  # d(A^-1) = -A^-1 dA A^-1
    inverse = op.outputs[0]
    return [-matmul(inverse, matmul(grad, inverse, adjoint_b=True), adjoint_a=True)]


@export("matrix_inverse", "linalg.inv")
def matrix_inverse(input: Any, adjoint: bool = False, name: str | None = None) -> Tensor:
    """The inverse of each square matrix of `input` (of its adjoint when `adjoint`): TF1
    `tf.matrix_inverse`."""
    x = core_ops.convert_to_tensor(input)
    return core_ops.apply_op("MatrixInverse", [x], {"adjoint": bool(adjoint)}, name).outputs[0]


# -- MatrixDeterminant ----------------------------------------------------------------------------
def _determinant_infer(op) -> list:
    x = op.inputs[0]
    batch, _, _ = _matrices(x, "matrix_determinant")
    return [(x.dtype, TensorShape(batch))]


register_op("MatrixDeterminant", infer=_determinant_infer, kernel=jnp.linalg.det)


@register_gradient("MatrixDeterminant")
def _determinant_grad(op, grad):  # d det(A) = det(A) tr(A^-1 dA)
    a, det = op.inputs[0], op.outputs[0]
    inverse_adjoint = matrix_inverse(a, adjoint=True)
    scale = array_ops.expand_dims(array_ops.expand_dims(grad * det, -1), -1)
    return [scale * inverse_adjoint]


@export("matrix_determinant", "linalg.det")
def matrix_determinant(input: Any, name: str | None = None) -> Tensor:
    """The determinant of each square matrix of `input` (TF1 `tf.matrix_determinant`)."""
    x = core_ops.convert_to_tensor(input)
    return core_ops.apply_op("MatrixDeterminant", [x], name=name).outputs[0]


# -- MatrixSolve, MatrixTriangularSolve -----------------------------------------------------------
def _solve_infer(what: str):
    def infer(op) -> list:
        a, b = op.inputs
        if a.dtype != b.dtype:
            raise TypeError(
                f"{what}: matrix and rhs must have one dtype, got {a.dtype.name} and {b.dtype.name}"
            )
        batch, m, _ = _matrices(a, what)
        rhs_batch, rows, k = _matrices(b, what, square=False)
        if m is not None and rows is not None and m != rows:
            raise ValueError(
                f"{what}: the matrix ({a.shape}) and rhs ({b.shape}) must have the "
                "same number of rows"
            )
        known = batch is not None and rhs_batch is not None
        if known and not TensorShape(batch).is_compatible_with(TensorShape(rhs_batch)):
            raise ValueError(
                f"{what}: the batch dimensions of matrix ({a.shape}) and rhs ({b.shape}) must match"
            )
        return [(b.dtype, b.shape)]

    return infer


def _solve_kernel(a, b, *, adjoint, **_):
    return jnp.linalg.solve(jnp.swapaxes(a, -1, -2) if adjoint else a, b)


register_op("MatrixSolve", infer=_solve_infer("matrix_solve"), kernel=_solve_kernel)


@register_gradient("MatrixSolve")
def _solve_grad(op, grad):
    a, adjoint = op.inputs[0], op.get_attr("adjoint")
    grad_b = matrix_solve(a, grad, adjoint=not adjoint)
    c = op.outputs[0]
    grad_a = -matmul(c, grad_b, adjoint_b=True) if adjoint else -matmul(grad_b, c, adjoint_b=True)
    return [grad_a, grad_b]


@export("matrix_solve", "linalg.solve")
def matrix_solve(matrix: Any, rhs: Any, adjoint: bool = False, name: str | None = None) -> Tensor:
    """The X with `matrix @ X = rhs` (or `adjoint(matrix) @ X = rhs`) for each matrix in the
    batch (TF1 `tf.matrix_solve`); `rhs` has shape `[..., M, K]`."""
    a, b = core_ops.convert_to_tensor(matrix), core_ops.convert_to_tensor(rhs)
    return core_ops.apply_op("MatrixSolve", [a, b], {"adjoint": bool(adjoint)}, name).outputs[0]


def _triangular_solve_kernel(a, b, *, lower, adjoint, **_):
    batch = jnp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = jnp.broadcast_to(a, batch + a.shape[-2:])
    b = jnp.broadcast_to(b, batch + b.shape[-2:])
    return jsl.solve_triangular(a, b, trans=1 if adjoint else 0, lower=lower)


register_op(
    "MatrixTriangularSolve",
    infer=_solve_infer("matrix_triangular_solve"),
    kernel=_triangular_solve_kernel,
)


@register_gradient("MatrixTriangularSolve")
def _triangular_solve_grad(op, grad):
    a = op.inputs[0]
    lower, adjoint = op.get_attr("lower"), op.get_attr("adjoint")
    grad_b = matrix_triangular_solve(a, grad, lower=lower, adjoint=not adjoint)
    c = op.outputs[0]
    grad_a = -matmul(c, grad_b, adjoint_b=True) if adjoint else -matmul(grad_b, c, adjoint_b=True)
    band = (-1, 0) if lower else (0, -1)  # only the triangle the solve reads
    return [matrix_band_part(grad_a, *band), grad_b]


@export("matrix_triangular_solve", "linalg.triangular_solve")
def matrix_triangular_solve(
    matrix: Any, rhs: Any, lower: bool = True, adjoint: bool = False, name: str | None = None
) -> Tensor:
    """The X with `matrix @ X = rhs` for triangular matrices (TF1
    `tf.matrix_triangular_solve`): only the lower (or, with `lower=False`, upper) triangle of
    `matrix` is read."""
    a, b = core_ops.convert_to_tensor(matrix), core_ops.convert_to_tensor(rhs)
    attrs = {"lower": bool(lower), "adjoint": bool(adjoint)}
    return core_ops.apply_op("MatrixTriangularSolve", [a, b], attrs, name).outputs[0]


# -- Cholesky -------------------------------------------------------------------------------------
def _cholesky_kernel(x, **_):  # reads the lower triangle, as TF's kernel
    lower = jnp.tril(x)
    return jnp.linalg.cholesky(lower + jnp.swapaxes(jnp.tril(x, -1), -1, -2))


register_op("Cholesky", infer=_square_infer("cholesky"), kernel=_cholesky_kernel)


@register_gradient("Cholesky")
def _cholesky_grad(op, grad):
    """TF1's rule (Murray 2016): phi(L^T dL) with the diagonal halved, mapped back through L."""
    chol = op.outputs[0]
    eye = _identity_like(chol)
    chol_inverse = matrix_triangular_solve(chol, eye)
    middle = matmul(chol, grad, adjoint_a=True)
    middle = matrix_set_diag(middle, 0.5 * matrix_diag_part(middle))
    middle = matrix_band_part(middle, -1, 0)
    grad_a = matmul(matmul(chol_inverse, middle, adjoint_a=True), chol_inverse)
    return [(grad_a + _adjoint(grad_a)) * 0.5]


def _identity_like(matrices: Tensor) -> Tensor:
    """Identity matrices with the shape of the square `matrices` (known at run time)."""
    return matrix_diag(fill_ops.ones_like(matrix_diag_part(matrices)))


@export("cholesky", "linalg.cholesky")
def cholesky(input: Any, name: str | None = None) -> Tensor:
    """The lower-triangular L with `L @ L^T = input` for each symmetric positive definite matrix
    (TF1 `tf.cholesky`); only the lower triangle of `input` is read."""
    return core_ops.apply_op("Cholesky", [core_ops.convert_to_tensor(input)], name=name).outputs[0]


# -- Qr -------------------------------------------------------------------------------------------
def _qr_infer(op) -> list:
    x = op.inputs[0]
    batch, m, n = _matrices(x, "qr", square=False)
    if batch is None:
        return [(x.dtype, TensorShape(None))] * 2
    full = op.get_attr("full_matrices")
    k = None if m is None or n is None else (m if full else min(m, n))
    return [(x.dtype, TensorShape(batch + [m, k])), (x.dtype, TensorShape(batch + [k, n]))]


register_op(
    "Qr",
    infer=_qr_infer,
    kernel=lambda x, *, full_matrices, **_: tuple(
        jnp.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    ),
)


@register_gradient("Qr")
def _qr_grad(op, dq, dr):
    """TF1's rule, for matrices with at least as many rows as columns and reduced factors."""
    x = op.inputs[0]
    q, r = op.outputs
    dims = x.shape.dims[-2:] if x.shape.rank is not None else (None, None)
    if None in dims or dims[0] < dims[1] or (op.get_attr("full_matrices") and dims[0] != dims[1]):
        raise NotImplementedError(
            f"The gradient of Qr {op.name!r} is implemented for matrices with at least as many "
            f"rows as columns and full_matrices=False, got shape {x.shape}"
        )
    qdq = matmul(q, dq, adjoint_a=True)
    rdr = matmul(r, dr, adjoint_b=True)
    tril = matrix_band_part(qdq - _adjoint(qdq) + rdr - _adjoint(rdr), -1, 0)

    def solve_right(v, upper):  # v @ upper^-1
        return _adjoint(matrix_triangular_solve(upper, _adjoint(v), lower=False))

    grad_a = matmul(q, dr + solve_right(tril, r))
    grad_b = solve_right(dq - matmul(q, qdq), r)
    return [grad_a + grad_b]


@export("qr", "linalg.qr")
def qr(input: Any, full_matrices: bool = False, name: str | None = None) -> QrOutput:
    """The QR decomposition of each matrix (TF1 `tf.qr`): a namedtuple `(q, r)` with
    orthonormal columns in q and upper-triangular r, `q @ r = input`."""
    x = core_ops.convert_to_tensor(input)
    op = core_ops.apply_op("Qr", [x], {"full_matrices": bool(full_matrices)}, name)
    return QrOutput(*op.outputs)


# -- Svd ------------------------------------------------------------------------------------------
def _svd_infer(op) -> list:
    x = op.inputs[0]
    batch, m, n = _matrices(x, "svd", square=False)
    if batch is None:
        return [(x.dtype, TensorShape(None))] * 3
    k = None if m is None or n is None else min(m, n)
    if not op.get_attr("compute_uv"):
        return [
            (x.dtype, TensorShape(batch + [k])),
            (x.dtype, TensorShape([0])),
            (x.dtype, TensorShape([0])),
        ]
    full = op.get_attr("full_matrices")
    u_cols, v_cols = (m, n) if full else (k, k)
    return [
        (x.dtype, TensorShape(batch + [k])),
        (x.dtype, TensorShape(batch + [m, u_cols])),
        (x.dtype, TensorShape(batch + [n, v_cols])),
    ]


def _svd_kernel(x, *, compute_uv, full_matrices, **_):
    if not compute_uv:
        empty = jnp.zeros([0], x.dtype)
        return jnp.linalg.svd(x, compute_uv=False), empty, empty
    u, s, vh = jnp.linalg.svd(x, full_matrices=full_matrices)
    return s, u, jnp.swapaxes(vh, -1, -2)  # TF returns v, not its adjoint


register_op("Svd", infer=_svd_infer, kernel=_svd_kernel)


@register_gradient("Svd")
def _svd_grad(op, grad_s, grad_u, grad_v):
    """TF1's rule (Townsend 2016) for reduced factors; the singular values must be distinct
    (the rule divides by s[i]^2 - s[j]^2). A wide matrix is handled through its transpose."""
    a = op.inputs[0]
    s, u, v = op.outputs
    grad_s = fill_ops.zeros_like(s) if grad_s is None else grad_s
    if not op.get_attr("compute_uv"):
        _, u, v = svd(a, full_matrices=False)
        return [matmul(u * array_ops.expand_dims(grad_s, -2), v, adjoint_b=True)]
    dims = a.shape.dims[-2:] if a.shape.rank is not None else (None, None)
    if None in dims or op.get_attr("full_matrices"):
        raise NotImplementedError(
            f"The gradient of Svd {op.name!r} through u and v needs static matrix dimensions "
            f"and full_matrices=False, got shape {a.shape}"
        )
    grad_u = fill_ops.zeros_like(u) if grad_u is None else grad_u
    grad_v = fill_ops.zeros_like(v) if grad_v is None else grad_v
    transposed = dims[0] > dims[1]  # the rule below is for m <= n
    if transposed:
        u, v, grad_u, grad_v = v, u, grad_v, grad_u
    s_mat, grad_s_mat = matrix_diag(s), matrix_diag(grad_s)
    s2 = unary_ops.square(s)
    gaps = array_ops.expand_dims(s2, -2) - array_ops.expand_dims(s2, -1)
    f = matrix_set_diag(
        unary_ops.reciprocal(matrix_set_diag(gaps, fill_ops.ones_like(s))), fill_ops.zeros_like(s)
    )
    f_u = f * matmul(u, grad_u, adjoint_a=True)
    f_v = f * matmul(v, grad_v, adjoint_a=True)
    inner = grad_s_mat + matmul(f_u + _adjoint(f_u), s_mat) + matmul(s_mat, f_v + _adjoint(f_v))
    grad_a = matmul(u, matmul(inner, v, adjoint_b=True))
    if min(dims) != max(dims):  # the part of grad_v outside v's span
        gvt = _adjoint(grad_v)
        outside = gvt - matmul(matmul(gvt, v), v, adjoint_b=True)
        grad_a = grad_a + matmul(u * array_ops.expand_dims(unary_ops.reciprocal(s), -2), outside)
    return [_adjoint(grad_a) if transposed else grad_a]


@export("svd", "linalg.svd")
def svd(
    tensor: Any, full_matrices: bool = False, compute_uv: bool = True, name: str | None = None
) -> Any:
    """The singular value decomposition of each matrix (TF1 `tf.svd`): `(s, u, v)` with
    `tensor = u @ diag(s) @ adjoint(v)`, singular values descending; only `s` when
    `compute_uv=False`. Note the order (s first) and that `v` is not adjoined, as in TF1."""
    x = core_ops.convert_to_tensor(tensor)
    attrs = {"compute_uv": bool(compute_uv), "full_matrices": bool(full_matrices)}
    s, u, v = core_ops.apply_op("Svd", [x], attrs, name).outputs
    return (s, u, v) if compute_uv else s


# -- SelfAdjointEigV2 -----------------------------------------------------------------------------
def _eig_infer(op) -> list:
    x = op.inputs[0]
    batch, m, _ = _matrices(x, "self_adjoint_eig")
    if batch is None:
        return [(x.dtype, TensorShape(None)), (x.dtype, TensorShape(None))]
    return [(x.dtype, TensorShape(batch + [m])), (x.dtype, x.shape)]


def _eig_kernel(x, **_):  # reads the lower triangle; eigenvalues ascending
    e, v = jnp.linalg.eigh(x, UPLO="L", symmetrize_input=False)
    return e, v


register_op("SelfAdjointEigV2", infer=_eig_infer, kernel=_eig_kernel)


@register_gradient("SelfAdjointEigV2")
def _eig_grad(op, grad_e, grad_v):
    """TF1's rule: V (diag(dE) + F * (V^T dV)) V^T, F[i, j] = 1 / (e[j] - e[i]) off the
    diagonal; symmetrised onto the lower triangle, which is all the kernel reads."""
    e, v = op.outputs
    gaps = array_ops.expand_dims(e, -2) - array_ops.expand_dims(e, -1)
    f = matrix_set_diag(
        unary_ops.reciprocal(matrix_set_diag(gaps, fill_ops.ones_like(e))), fill_ops.zeros_like(e)
    )
    inner = matrix_diag(grad_e) + f * matmul(v, grad_v, adjoint_a=True)
    grad_a = matmul(v, matmul(inner, v, adjoint_b=True))
    grad_a = matrix_band_part(grad_a + _adjoint(grad_a), -1, 0)
    return [matrix_set_diag(grad_a, 0.5 * matrix_diag_part(grad_a))]


@export("self_adjoint_eig", "linalg.eigh")
def self_adjoint_eig(tensor: Any, name: str | None = None) -> EigOutput:
    """The eigenvalues (ascending) and eigenvectors (columns) of each symmetric matrix (TF1
    `tf.self_adjoint_eig`), as a namedtuple `(e, v)`; only the lower triangle is read."""
    x = core_ops.convert_to_tensor(tensor)
    return EigOutput(*core_ops.apply_op("SelfAdjointEigV2", [x], {"compute_v": True}, name).outputs)
