"""Integer and bit-level element-wise ops for `keras.ops`: BitwiseAnd, BitwiseOr, BitwiseXor,
Invert, LeftShift, RightShift, Gcd, Lcm (integers and bools, broadcast, no gradient), NextAfter
(the next float toward a value, no gradient), Real and Imag (the parts of complex values, with
gradients), and Erfinv, BesselI0 and Igamma (floats, with gradients; Igamma's for x only).
Each op's shape rule, JAX kernel and gradient sit together.

>>> sl.Session().run(bitwise_and([12, 10], [10, 10])).tolist()
[8, 10]
>>> float(sl.Session().run(erfinv(0.5)))
0.4769362...
"""

from __future__ import annotations

import math
from typing import Any

import jax.numpy as jnp
import jax.scipy.special as jss
import numpy as np

from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable, register_gradient, register_op
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core.core_ops import apply_op, convert_to_tensor
from sluice.framework.ops.core.math_rules import binary_rule, convert_operands, unary_rule
from sluice.framework.ops.core.shape_rules import require_dtype
from sluice.framework.ops.math import special_math_ops, unary_ops


def _integral(dtype: Any) -> bool:
    return dtype.kind in "iub"


def _floating(dtype: Any) -> bool:
    return dtypes.is_floating(dtype)


_BINARY = {
    "BitwiseAnd": jnp.bitwise_and,
    "BitwiseOr": jnp.bitwise_or,
    "BitwiseXor": jnp.bitwise_xor,
    "LeftShift": jnp.left_shift,
    "RightShift": jnp.right_shift,
    "Gcd": jnp.gcd,
    "Lcm": jnp.lcm,
}
for _name, _fn in _BINARY.items():
    register_op(_name, infer=binary_rule("integer or bool", _integral), kernel=_fn)
register_op("Invert", infer=unary_rule("integer or bool", _integral), kernel=jnp.invert)
register_op("NextAfter", infer=binary_rule("floating", _floating), kernel=jnp.nextafter)
not_differentiable(*_BINARY, "Invert", "NextAfter")


def _binary(op_type: str, x: Any, y: Any) -> Tensor:
    return apply_op(op_type, convert_operands(x, y)).outputs[0]


def bitwise_and(x: Any, y: Any) -> Tensor:
    return _binary("BitwiseAnd", x, y)


def bitwise_or(x: Any, y: Any) -> Tensor:
    return _binary("BitwiseOr", x, y)


def bitwise_xor(x: Any, y: Any) -> Tensor:
    return _binary("BitwiseXor", x, y)


def left_shift(x: Any, y: Any) -> Tensor:
    return _binary("LeftShift", x, y)


def right_shift(x: Any, y: Any) -> Tensor:
    return _binary("RightShift", x, y)


def gcd(x: Any, y: Any) -> Tensor:
    return _binary("Gcd", x, y)


def lcm(x: Any, y: Any) -> Tensor:
    return _binary("Lcm", x, y)


def nextafter(x: Any, y: Any) -> Tensor:
    return _binary("NextAfter", x, y)


def invert(x: Any) -> Tensor:
    return apply_op("Invert", [convert_to_tensor(x)]).outputs[0]


# -- the parts of complex numbers ----------------------------------------------------------------
def _part_infer(op) -> list:
    x = op.inputs[0]
    require_dtype(x, "complex", lambda d: d.kind == "c")
    real = np.dtype("float64") if x.dtype == np.dtype("complex128") else dtypes.float32
    return [(real, x.shape)]


register_op("Real", infer=_part_infer, kernel=jnp.real)
register_op("Imag", infer=_part_infer, kernel=jnp.imag)


def _complex(real: Tensor, imag: Tensor) -> Tensor:
    kind = np.dtype("complex128") if real.dtype == np.dtype("float64") else dtypes.complex64
    unit = convert_to_tensor(np.asarray(1j, kind))
    return fill_ops.cast(real, kind) + fill_ops.cast(imag, kind) * unit


@register_gradient("Real")
def _real_grad(op, grad):  # d real(z): the gradient enters the real part
    return [_complex(grad, grad * 0)]


@register_gradient("Imag")
def _imag_grad(op, grad):
    return [_complex(grad * 0, grad)]


def real(x: Any) -> Tensor:
    return apply_op("Real", [convert_to_tensor(x)]).outputs[0]


def imag(x: Any) -> Tensor:
    return apply_op("Imag", [convert_to_tensor(x)]).outputs[0]


# -- special functions ----------------------------------------------------------------------------
register_op("Erfinv", infer=unary_rule("floating", _floating), kernel=jss.erfinv)


@register_gradient("Erfinv")
def _erfinv_grad(op, grad):  # d erfinv(x) = sqrt(pi) / 2 * exp(erfinv(x)^2)
    y = op.outputs[0]
    half_root_pi = convert_to_tensor(math.sqrt(math.pi) / 2, y.dtype)
    return [grad * half_root_pi * unary_ops.exp(unary_ops.square(y))]


register_op("BesselI0", infer=unary_rule("floating", _floating), kernel=jss.i0)
register_op("BesselI1", infer=unary_rule("floating", _floating), kernel=jss.i1)
not_differentiable("BesselI1")


@register_gradient("BesselI0")
def _i0_grad(op, grad):  # I0' = I1
    return [grad * apply_op("BesselI1", [op.inputs[0]]).outputs[0]]


def erfinv(x: Any) -> Tensor:
    return apply_op("Erfinv", [convert_to_tensor(x)]).outputs[0]


def i0(x: Any) -> Tensor:
    return apply_op("BesselI0", [convert_to_tensor(x)]).outputs[0]


register_op("Igamma", infer=binary_rule("floating", _floating), kernel=jss.gammainc)


@register_gradient("Igamma")
def _gammainc_grad(op, grad):  # d/dx P(a, x) = x^(a - 1) exp(-x) / Gamma(a); none for a
    a, x = op.inputs
    log_density = (a - 1) * unary_ops.log(x) - x - special_math_ops.lgamma(a)
    return [None, grad * unary_ops.exp(log_density)]


def gammainc(a: Any, x: Any) -> Tensor:
    """The regularized lower incomplete gamma function P(a, x)."""
    return _binary("Igamma", a, x)
