"""`sl.linalg`: TF1's `tf.linalg` namespace over sluice's matrix ops."""

import sluice as _sl
from sluice.framework.ops.linalg.slogdet_ops import slogdet

matmul = _sl.matmul
inv = _sl.matrix_inverse
det = _sl.matrix_determinant
solve = _sl.matrix_solve
triangular_solve = _sl.matrix_triangular_solve
cholesky = _sl.cholesky
qr = _sl.qr
svd = _sl.svd
eigh = _sl.self_adjoint_eig
eye = _sl.eye
diag = _sl.matrix_diag
diag_part = _sl.matrix_diag_part
set_diag = _sl.matrix_set_diag
band_part = _sl.matrix_band_part
transpose = _sl.matrix_transpose
matrix_transpose = _sl.matrix_transpose
trace = _sl.trace
norm = _sl.norm
einsum = _sl.einsum
tensordot = _sl.tensordot
cross = _sl.cross
l2_normalize = _sl.nn.l2_normalize

__all__ = [
    "band_part",
    "cholesky",
    "cross",
    "det",
    "diag",
    "diag_part",
    "eigh",
    "einsum",
    "eye",
    "inv",
    "l2_normalize",
    "matmul",
    "matrix_transpose",
    "norm",
    "qr",
    "set_diag",
    "slogdet",
    "solve",
    "svd",
    "tensordot",
    "trace",
    "transpose",
    "triangular_solve",
]
