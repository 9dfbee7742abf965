"""Inverse trigonometric and hyperbolic functions: Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh,
Atanh (one floating or complex input) and Atan2 (two real floating inputs that broadcast).

Each gradient follows TF1's `math_grad.py`, conjugated for complex inputs like the ops of
`unary_ops`, and is registered beside its op.

>>> round(float(sl.Session().run(sl.atan2(1.0, 1.0))), 6)
0.785398
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import register_gradient, register_op
from sluice.framework.ops.core.core_ops import apply_op, convert_to_tensor
from sluice.framework.ops.core.math_rules import (
    binary_rule,
    convert_operands,
    is_inexact,
    unary_rule,
)
from sluice.framework.ops.math.math_grad_util import sum_to_inputs
from sluice.framework.ops.math.unary_ops import conj, reciprocal, rsqrt, square

_inexact = unary_rule("floating", is_inexact)


def _unary(op_type: str, x: Any, name: str | None) -> Tensor:
    return apply_op(op_type, [convert_to_tensor(x)], name=name).outputs[0]


register_op("Asin", infer=_inexact, kernel=jnp.arcsin)


@register_gradient("Asin")
def _asin_grad(op, grad):  # 1 / sqrt(1 - x^2)
    return [grad * rsqrt(1 - square(conj(op.inputs[0])))]


register_op("Acos", infer=_inexact, kernel=jnp.arccos)


@register_gradient("Acos")
def _acos_grad(op, grad):
    return [-grad * rsqrt(1 - square(conj(op.inputs[0])))]


register_op("Atan", infer=_inexact, kernel=jnp.arctan, select_safe=True)


@register_gradient("Atan")
def _atan_grad(op, grad):  # 1 / (1 + x^2)
    return [grad * reciprocal(1 + square(conj(op.inputs[0])))]


register_op("Sinh", infer=_inexact, kernel=jnp.sinh)


@register_gradient("Sinh")
def _sinh_grad(op, grad):
    return [grad * cosh(conj(op.inputs[0]))]


register_op("Cosh", infer=_inexact, kernel=jnp.cosh)


@register_gradient("Cosh")
def _cosh_grad(op, grad):
    return [grad * sinh(conj(op.inputs[0]))]


register_op("Asinh", infer=_inexact, kernel=jnp.arcsinh, select_safe=True)


@register_gradient("Asinh")
def _asinh_grad(op, grad):  # 1 / cosh(asinh(x)): reads the output, as TF1
    return [grad / cosh(conj(op.outputs[0]))]


register_op("Acosh", infer=_inexact, kernel=jnp.arccosh)


@register_gradient("Acosh")
def _acosh_grad(op, grad):  # 1 / sinh(acosh(x))
    return [grad / sinh(conj(op.outputs[0]))]


register_op("Atanh", infer=_inexact, kernel=jnp.arctanh)


@register_gradient("Atanh")
def _atanh_grad(op, grad):  # 1 / (1 - x^2)
    return [grad * reciprocal(1 - square(conj(op.inputs[0])))]


register_op("Atan2", infer=binary_rule("real floating", dtypes.is_floating), kernel=jnp.arctan2)


@register_gradient("Atan2")
def _atan2_grad(op, grad):
    """d atan2(y, x) = (x dy - y dx) / (x^2 + y^2); summed over broadcast axes per input."""
    y, x = op.inputs
    scaled = grad / (square(x) + square(y))
    return sum_to_inputs(x * scaled, -y * scaled, y, x)


@export("asin", "math.asin")
def asin(x: Any, name: str | None = None) -> Tensor:
    """The arcsine of `x` (in [-1, 1]), elementwise, in [-pi/2, pi/2]."""
    return _unary("Asin", x, name)


@export("acos", "math.acos")
def acos(x: Any, name: str | None = None) -> Tensor:
    """The arccosine of `x` (in [-1, 1]), elementwise, in [0, pi]."""
    return _unary("Acos", x, name)


@export("atan", "math.atan")
def atan(x: Any, name: str | None = None) -> Tensor:
    """The arctangent of `x`, elementwise, in (-pi/2, pi/2)."""
    return _unary("Atan", x, name)


@export("sinh", "math.sinh")
def sinh(x: Any, name: str | None = None) -> Tensor:
    """The hyperbolic sine of `x`, elementwise."""
    return _unary("Sinh", x, name)


@export("cosh", "math.cosh")
def cosh(x: Any, name: str | None = None) -> Tensor:
    """The hyperbolic cosine of `x`, elementwise."""
    return _unary("Cosh", x, name)


@export("asinh", "math.asinh")
def asinh(x: Any, name: str | None = None) -> Tensor:
    """The inverse hyperbolic sine of `x`, elementwise."""
    return _unary("Asinh", x, name)


@export("acosh", "math.acosh")
def acosh(x: Any, name: str | None = None) -> Tensor:
    """The inverse hyperbolic cosine of `x` (>= 1), elementwise."""
    return _unary("Acosh", x, name)


@export("atanh", "math.atanh")
def atanh(x: Any, name: str | None = None) -> Tensor:
    """The inverse hyperbolic tangent of `x` (in (-1, 1)), elementwise."""
    return _unary("Atanh", x, name)


@export("atan2", "math.atan2")
def atan2(y: Any, x: Any, name: str | None = None) -> Tensor:
    """The angle of the point (x, y), `arctan(y / x)` with the quadrant from the signs of both,
    elementwise in [-pi, pi]; note the order `(y, x)`, as in TF1 and NumPy."""
    return apply_op("Atan2", convert_operands(y, x), name=name).outputs[0]
