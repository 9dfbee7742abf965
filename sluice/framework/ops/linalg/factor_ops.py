"""Eig (eigenvalues and eigenvectors of general square matrices, complex) and LuFactor (the LU
factorization with partial pivoting, LAPACK's getrf layout), for `keras.ops.eig` and
`keras.ops.lu_factor`. Neither carries a gradient here (JAX computes `eig` on the CPU only, and
its derivative through pivots is not defined): both are marked not differentiable.

>>> w, v = sl.Session().run(eig([[2.0, 0.0], [0.0, 3.0]]))
>>> w
array([2.+0.j, 3.+0.j], dtype=complex64)
>>> lu, pivots = sl.Session().run(lu_factor([[1.0, 2.0], [3.0, 4.0]]))
>>> pivots
array([1, 1], dtype=int32)
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.linalg.linalg_ops import _matrices

_COMPLEX = {np.dtype("float32"): dtypes.complex64, np.dtype("float64"): np.dtype("complex128")}


def _eig_infer(op) -> list:
    x = op.inputs[0]
    batch, m, _ = _matrices(x, "eig")
    out = _COMPLEX[np.dtype(x.dtype)]
    if batch is None:
        return [(out, TensorShape(None))] * 2
    return [(out, TensorShape(batch + [m])), (out, TensorShape(batch + [m, m]))]


def _eig_kernel(x, **_):
    w, v = jnp.linalg.eig(x)
    out = _COMPLEX[np.dtype(x.dtype)]
    return w.astype(out), v.astype(out)


register_op("Eig", infer=_eig_infer, kernel=_eig_kernel)


def _lu_infer(op) -> list:
    x = op.inputs[0]
    batch, m, n = _matrices(x, "lu_factor", square=False)
    if batch is None:
        return [(x.dtype, TensorShape(None)), (dtypes.int32, TensorShape(None))]
    k = None if m is None or n is None else min(m, n)
    return [(x.dtype, x.shape), (dtypes.int32, TensorShape(batch + [k]))]


def _lu_kernel(x, **_):
    factor = jsl.lu_factor
    for _ in range(x.ndim - 2):
        factor = jax.vmap(factor)
    lu, pivots = factor(x)
    return lu, pivots.astype(jnp.int32)


register_op("LuFactor", infer=_lu_infer, kernel=_lu_kernel)
not_differentiable("Eig", "LuFactor")


def eig(input: Any, name: str | None = None) -> tuple[Tensor, Tensor]:
    """(eigenvalues, eigenvectors as columns) of each square matrix, complex (complex64 for
    float32 input), in LAPACK's order, as `np.linalg.eig`."""
    x = core_ops.convert_to_tensor(input)
    return tuple(core_ops.apply_op("Eig", [x], name=name).outputs)


def lu_factor(input: Any, name: str | None = None) -> tuple[Tensor, Tensor]:
    """(lu, pivots) of each matrix, as `jax.scipy.linalg.lu_factor`: L (unit diagonal, below)
    and U (on and above the diagonal) in one matrix, and the row swapped with row i at step i
    (int32)."""
    x = core_ops.convert_to_tensor(input)
    return tuple(core_ops.apply_op("LuFactor", [x], name=name).outputs)
