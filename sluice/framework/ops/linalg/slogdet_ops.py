"""LogMatrixDeterminant: the sign and log |det| of each square matrix (TF1 `tf.linalg.slogdet`).

log |det| stays finite where det itself under- or overflows (a 500x500 matrix of 0.1 * I has
det 1e-500). Its gradient is TF1's: d log|det A| = tr(A^-1 dA), so the input gets
`grad * A^-T`; the sign carries no gradient. A singular matrix gives sign 0 and log |det| -inf.

>>> sign, logdet = sl.Session().run(sl.linalg.slogdet([[-2.0, 0.0], [0.0, 3.0]]))
>>> float(sign), round(float(logdet), 6)
(-1.0, 1.791759)
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp

from sluice._export import export
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.linalg.linalg_ops import _matrices, matrix_inverse


class SlogdetOutput(NamedTuple):
    sign: Tensor
    log_abs_determinant: Tensor


def _slogdet_infer(op) -> list:
    x = op.inputs[0]
    batch, _, _ = _matrices(x, "slogdet")
    shape = TensorShape(batch)
    return [(x.dtype, shape), (x.dtype, shape)]


def _slogdet_kernel(x, **_):
    sign, logdet = jnp.linalg.slogdet(x)
    return sign.astype(x.dtype), logdet.astype(x.dtype)


register_op("LogMatrixDeterminant", infer=_slogdet_infer, kernel=_slogdet_kernel)


@register_gradient("LogMatrixDeterminant")
def _slogdet_grad(op, unused_grad_sign, grad_logdet):  # d log|det A| = tr(A^-1 dA)
    inverse_adjoint = matrix_inverse(op.inputs[0], adjoint=True)
    scale = array_ops.expand_dims(array_ops.expand_dims(grad_logdet, -1), -1)
    return [scale * inverse_adjoint]


@export("linalg.slogdet")
def slogdet(input: Any, name: str | None = None) -> SlogdetOutput:
    """`(sign, log_abs_determinant)` of each square matrix of `input`, both of the batch shape.

    Args:
      input: a float32/float64 Tensor of shape `[..., M, M]`.
      name: a name for the operation.

    Returns:
      A namedtuple `(sign, log_abs_determinant)`; det = sign * exp(log_abs_determinant).
    """
    x = core_ops.convert_to_tensor(input)
    sign, logdet = core_ops.apply_op("LogMatrixDeterminant", [x], name=name).outputs
    return SlogdetOutput(sign, logdet)
