"""`keras.ops.linalg` (Keras's `ops/linalg.py`, also at `sl.ops.<name>`), and `logdet` and
`slogdet`: decompositions, solves and inverses of (batches of) matrices over the engine's
linear-algebra ops, as graph code that `eager.keras_op` also runs at once on values. Results
are JAX's (`jnp.linalg`, `jax.scipy.linalg`): `svd` returns `(u, s, vh)`, `qr` `(q, r)`,
`eigh` ascending eigenvalues.

>>> sl.ops.solve(np.array([[2.0, 0.0], [0.0, 4.0]]), np.array([2.0, 2.0]))
Array([1. , 0.5])
>>> round(float(sl.ops.det(np.array([[1.0, 2.0], [3.0, 4.0]]))), 6)
-2.0
>>> int(sl.ops.matrix_rank(np.ones((3, 3))))
1
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._keras.ops.eager import floating, keras_op, known_rank, promoted, tensor
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.linalg import factor_ops, linalg_ops, matrix_diag_ops, slogdet_ops
from sluice.framework.ops.math import math_ops, matmul_ops, reduction_ops


def _matrix(x: Any, what: str) -> Any:
    """x as a float batch of matrices (float32 or float64, as the engine's ops take)."""
    x = floating(x)
    if x.dtype not in (dtypes.float32, dtypes.float64):
        x = fill_ops.cast(x, dtypes.float32)
    if known_rank(x, what) < 2:
        raise ValueError(f"{what}: expected an input of rank >= 2, got shape {x.shape}.")
    return x


def _adjoint(x: Any) -> Any:
    return matrix_diag_ops.matrix_transpose(x)


def _eye_like(x: Any) -> Any:
    n = fill_ops.shape(x)[-1]
    return matrix_diag_ops.eye(n, dtype=x.dtype) + fill_ops.zeros_like(x)


@keras_op("cholesky", "linalg.cholesky")
def cholesky(x: Any, upper: bool = False) -> Any:
    """The Cholesky factor L of each symmetric positive definite matrix (L @ L.T = x), or its
    transpose U (U.T @ U = x) with `upper`."""
    factor = linalg_ops.cholesky(_matrix(x, "cholesky"))
    return _adjoint(factor) if upper else factor


@keras_op("cholesky_inverse", "linalg.cholesky_inverse")
def cholesky_inverse(x: Any, upper: bool = False) -> Any:
    """The inverse of A from its Cholesky factor x (A = x @ x.T, or x.T @ x with `upper`)."""
    x = _matrix(x, "cholesky_inverse")
    inverse = linalg_ops.matrix_triangular_solve(x, _eye_like(x), lower=not upper)
    if upper:
        return matmul_ops.matmul(inverse, _adjoint(inverse))
    return matmul_ops.matmul(_adjoint(inverse), inverse)


@keras_op("det", "linalg.det")
def det(x: Any) -> Any:
    """The determinant of each square matrix."""
    return linalg_ops.matrix_determinant(_matrix(x, "det"))


@keras_op("eig", "linalg.eig")
def eig(x: Any) -> Any:
    """(eigenvalues, eigenvectors as columns) of each square matrix, complex (CPU only, no
    gradient)."""
    return factor_ops.eig(_matrix(x, "eig"))


@keras_op("eigh", "linalg.eigh")
def eigh(x: Any) -> Any:
    """(eigenvalues ascending, eigenvectors as columns) of each symmetric matrix (its lower
    triangle is read)."""
    found = linalg_ops.self_adjoint_eig(_matrix(x, "eigh"))
    return found.e, found.v


@keras_op("inv", "linalg.inv")
def inv(x: Any) -> Any:
    """The inverse of each square matrix."""
    return linalg_ops.matrix_inverse(_matrix(x, "inv"))


@keras_op("lu_factor", "linalg.lu_factor")
def lu_factor(x: Any) -> Any:
    """(lu, pivots) of each matrix, as `jax.scipy.linalg.lu_factor` (no gradient)."""
    return factor_ops.lu_factor(_matrix(x, "lu_factor"))


@keras_op("qr", "linalg.qr")
def qr(x: Any, mode: str = "reduced") -> Any:
    """(q, r) with q @ r = x: q's columns orthonormal, r upper triangular; `mode` "reduced"
    (q is M x K, K = min(M, N)) or "complete" (q is M x M).

    Raises:
      ValueError: another mode.
    """
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}.")
    found = linalg_ops.qr(_matrix(x, "qr"), full_matrices=mode == "complete")
    return found.q, found.r


def _solve_args(a: Any, b: Any, what: str) -> tuple:
    """a as a matrix batch, b as a matrix batch (a vector b gets a column), and whether b was
    a vector (NumPy's rule: b of a's rank less one)."""
    a, b = promoted(floating(a), floating(b))
    a = _matrix(a, what)
    b = fill_ops.cast(b, a.dtype) if b.dtype != a.dtype else b
    vector = known_rank(b, what) == a.shape.rank - 1
    return a, (array_ops.expand_dims(b, -1) if vector else b), vector


@keras_op("solve", "linalg.solve")
def solve(a: Any, b: Any) -> Any:
    """The x with a @ x = b, for square a (b a matrix, or a vector of a's rank less one)."""
    a, b, vector = _solve_args(a, b, "solve")
    x = linalg_ops.matrix_solve(a, b)
    return array_ops.squeeze(x, [-1]) if vector else x


@keras_op("solve_triangular", "linalg.solve_triangular")
def solve_triangular(a: Any, b: Any, lower: bool = False) -> Any:
    """The x with a @ x = b, reading only a's upper (or, with `lower`, lower) triangle."""
    a, b, vector = _solve_args(a, b, "solve_triangular")
    x = linalg_ops.matrix_triangular_solve(a, b, lower=lower)
    return array_ops.squeeze(x, [-1]) if vector else x


@keras_op("svd", "linalg.svd")
def svd(x: Any, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    """(u, s, vh) with x = u @ diag(s) @ vh, singular values descending (u and vh square with
    `full_matrices`); only s without `compute_uv`."""
    x = _matrix(x, "svd")
    if not compute_uv:
        return linalg_ops.svd(x, compute_uv=False)
    s, u, v = linalg_ops.svd(x, full_matrices=full_matrices)
    return u, s, _adjoint(v)


def _dims(x: Any, what: str) -> tuple[int, int]:
    m, n = x.shape[-2], x.shape[-1]
    if m is None or n is None:
        raise ValueError(f"{what}: the matrix dimensions of {x.shape} must be known.")
    return m, n


def _pinv(x: Any, rcond: float) -> Any:
    """The pseudo-inverse from the reduced SVD, singular values <= rcond * the largest cut."""
    s, u, v = linalg_ops.svd(x, full_matrices=False)
    cutoff = reduction_ops.reduce_max(s, axis=-1, keepdims=True) * fill_ops.cast(rcond, s.dtype)
    keep = fill_ops.cast(math_ops.greater(s, cutoff), s.dtype)
    inverse = keep / math_ops.maximum(s, fill_ops.ones_like(s) * _tiny(s.dtype))
    return matmul_ops.matmul(v * array_ops.expand_dims(inverse, -2), _adjoint(u))


def _tiny(dtype: Any) -> float:
    return float(np.finfo(np.dtype(dtype)).tiny)


def _eps(dtype: Any) -> float:
    return float(np.finfo(np.dtype(dtype)).eps)


@keras_op("pinv", "linalg.pinv")
def pinv(x: Any, rcond: float | None = None) -> Any:
    """The Moore-Penrose pseudo-inverse of each matrix; singular values at most `rcond` times
    the largest count as zero (default, as JAX: 10 * max(M, N) * eps)."""
    x = _matrix(x, "pinv")
    m, n = _dims(x, "pinv")
    return _pinv(x, 10 * max(m, n) * _eps(x.dtype) if rcond is None else rcond)


@keras_op("lstsq", "linalg.lstsq")
def lstsq(a: Any, b: Any, rcond: float | None = None) -> Any:
    """The x minimising |a @ x - b| (the least-norm one), for b a matrix or vector; singular
    values of a at most `rcond` times the largest count as zero (default max(M, N) * eps)."""
    a, b, vector = _solve_args(a, b, "lstsq")
    m, n = _dims(a, "lstsq")
    x = matmul_ops.matmul(_pinv(a, max(m, n) * _eps(a.dtype) if rcond is None else rcond), b)
    return array_ops.squeeze(x, [-1]) if vector else x


@keras_op("matrix_rank", "linalg.matrix_rank")
def matrix_rank(x: Any, tol: float | None = None) -> Any:
    """How many singular values of each matrix exceed `tol` (default: the largest times
    max(M, N) * eps), int32."""
    x = _matrix(x, "matrix_rank")
    s = linalg_ops.svd(x, compute_uv=False)
    if tol is None:
        m, n = _dims(x, "matrix_rank")
        limit = reduction_ops.reduce_max(s, axis=-1, keepdims=True) * fill_ops.cast(
            max(m, n) * _eps(x.dtype), s.dtype
        )
    else:
        limit = fill_ops.cast(tol, s.dtype)
    return reduction_ops.reduce_sum(fill_ops.cast(math_ops.greater(s, limit), dtypes.int32), -1)


@keras_op("matrix_power", "linalg.matrix_power")
def matrix_power(x: Any, n: int) -> Any:
    """x multiplied by itself `n` times (n = 0: the identity; n < 0: powers of the inverse),
    by repeated squaring."""
    x = floating(x) if int(n) < 0 else _as_matrix_any(x)
    n = int(n)
    if n < 0:
        x, n = linalg_ops.matrix_inverse(_matrix(x, "matrix_power")), -n
    if n == 0:
        return _eye_like(x)
    result, square = None, x
    while n:
        if n & 1:
            result = square if result is None else matmul_ops.matmul(result, square)
        n >>= 1
        if n:
            square = matmul_ops.matmul(square, square)
    return result


def _as_matrix_any(x: Any) -> Any:  # integers stay integers for n >= 0
    t = tensor(x)
    if known_rank(t, "matrix_power") < 2:
        raise ValueError(f"matrix_power: expected an input of rank >= 2, got shape {t.shape}.")
    return t


@keras_op("slogdet")
def slogdet(x: Any) -> Any:
    """(sign, log |det|) of each square matrix."""
    found = slogdet_ops.slogdet(_matrix(x, "slogdet"))
    return found.sign, found.log_abs_determinant


@keras_op("logdet")
def logdet(x: Any) -> Any:
    """log |det| of each square matrix (Keras's `logdet`, computed as slogdet's second part)."""
    return slogdet_ops.slogdet(_matrix(x, "logdet")).log_abs_determinant
