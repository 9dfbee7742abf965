"""Elementwise functions of one tensor: Neg, Abs, Sign, Square, Round, Floor, Ceil, Conj,
Reciprocal, Sqrt, Rsqrt, Exp, Expm1, Log, Log1p, Sin, Cos, Tan, Tanh, Sigmoid, Erf.

Each op keeps its input's dtype and shape (Abs of a complex tensor gives its real magnitude).
Transcendental functions take floating (or complex) tensors only, as in TensorFlow.

>>> sl.sigmoid(sl.constant([0.0, 2.0])).dtype
sl.float32
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable, register_gradient, register_op
from sluice.framework.ops.array import (
    array_ops,  # a module reference: array_ops imports this module
)
from sluice.framework.ops.core.core_ops import apply_op, convert_to_tensor
from sluice.framework.ops.core.math_rules import is_inexact, is_numeric, is_real, unary_rule
from sluice.framework.ops.core.shape_rules import require_dtype

TensorLike = Any

_numeric = unary_rule("numeric", is_numeric)
_real = unary_rule("real numeric", is_real)
_inexact = unary_rule("floating", is_inexact)
_real_floating = unary_rule("real floating", dtypes.is_floating)


def _abs_infer(op) -> list:
    x = op.inputs[0]
    require_dtype(x, "numeric", is_numeric)
    return [(np.zeros((), x.dtype).real.dtype, x.shape)]  # |complex64| is float32


def _unary(op_type: str, x: TensorLike, name: str | None) -> Tensor:
    return apply_op(op_type, [convert_to_tensor(x)], name=name).outputs[0]


# Each op's gradient follows its registration. Complex gradients follow TF: grad * conj(f'(x)),
# written with conj(x) or conj(y) (conj returns real tensors unchanged, adding no op). Where TF
# does, a gradient reads the output y rather than x, so a loop saves y only. The gradients use the
# Tensor operators (`grad * y`), which math_ops installs when the op package is imported.
register_op("Neg", infer=_numeric, kernel=jnp.negative, select_safe=True)


@register_gradient("Neg")
def _neg_grad(op, grad):
    return [-grad]


register_op("Abs", infer=_abs_infer, kernel=jnp.abs, select_safe=True)


@register_gradient("Abs")
def _abs_grad(op, grad):  # sign(x) is x / |x| for complex x
    x = op.inputs[0]
    return [array_ops.cast(grad, x.dtype) * sign(x)]


register_op("Sign", infer=_numeric, kernel=jnp.sign, select_safe=True)


@register_gradient("Sign")
def _sign_grad(op, grad):  # zero almost everywhere (TF gives zeros, not None)
    return [array_ops.zeros_like(grad)]


register_op("Square", infer=_numeric, kernel=jnp.square, select_safe=True)


@register_gradient("Square")
def _square_grad(op, grad):
    return [grad * (2 * conj(op.inputs[0]))]


# Piecewise constant: no gradient (None), as in TF.
register_op("Round", infer=_real, kernel=jnp.round, select_safe=True)  # halves to even, like TF
register_op("Floor", infer=_real_floating, kernel=jnp.floor, select_safe=True)
register_op("Ceil", infer=_real_floating, kernel=jnp.ceil, select_safe=True)
not_differentiable("Round", "Floor", "Ceil")
register_op("Conj", infer=_numeric, kernel=jnp.conj)


@register_gradient("Conj")
def _conj_grad(op, grad):
    return [conj(grad)]


register_op("Reciprocal", infer=_inexact, kernel=jnp.reciprocal)


@register_gradient("Reciprocal")
def _reciprocal_grad(op, grad):
    return [grad * -square(conj(op.outputs[0]))]


register_op("Sqrt", infer=_inexact, kernel=jnp.sqrt)


@register_gradient("Sqrt")
def _sqrt_grad(op, grad):
    return [grad * 0.5 / conj(op.outputs[0])]


register_op("Rsqrt", infer=_inexact, kernel=lax.rsqrt)


@register_gradient("Rsqrt")
def _rsqrt_grad(op, grad):  # d/dx x^(-1/2) = -1/2 * y^3
    y = conj(op.outputs[0])
    return [grad * (-0.5 * y * square(y))]


register_op("Exp", infer=_inexact, kernel=jnp.exp)


@register_gradient("Exp")
def _exp_grad(op, grad):
    return [grad * conj(op.outputs[0])]


register_op("Expm1", infer=_inexact, kernel=jnp.expm1)


@register_gradient("Expm1")
def _expm1_grad(op, grad):
    return [grad * exp(conj(op.inputs[0]))]


register_op("Log", infer=_inexact, kernel=jnp.log)


@register_gradient("Log")
def _log_grad(op, grad):
    return [grad / conj(op.inputs[0])]


register_op("Log1p", infer=_inexact, kernel=jnp.log1p)


@register_gradient("Log1p")
def _log1p_grad(op, grad):
    return [grad / (1 + conj(op.inputs[0]))]


register_op("Sin", infer=_inexact, kernel=jnp.sin, select_safe=True)


@register_gradient("Sin")
def _sin_grad(op, grad):
    return [grad * cos(conj(op.inputs[0]))]


register_op("Cos", infer=_inexact, kernel=jnp.cos, select_safe=True)


@register_gradient("Cos")
def _cos_grad(op, grad):
    return [grad * -sin(conj(op.inputs[0]))]


register_op("Tan", infer=_inexact, kernel=jnp.tan)


@register_gradient("Tan")
def _tan_grad(op, grad):  # sec^2(x)
    return [grad / square(cos(conj(op.inputs[0])))]


register_op("Tanh", infer=_inexact, kernel=jnp.tanh, select_safe=True)


@register_gradient("Tanh")
def _tanh_grad(op, grad):
    return [grad * (1 - square(conj(op.outputs[0])))]


register_op("Sigmoid", infer=_inexact, kernel=jax.nn.sigmoid, select_safe=True)


@register_gradient("Sigmoid")
def _sigmoid_grad(op, grad):
    y = conj(op.outputs[0])
    return [grad * (y * (1 - y))]


register_op("Erf", infer=_real_floating, kernel=lax.erf, select_safe=True)


@register_gradient("Erf")
def _erf_grad(op, grad):  # 2 / sqrt(pi) * exp(-x^2)
    x = op.inputs[0]
    return [grad * float(2 / np.sqrt(np.pi)) * exp(-square(x))]


@export("negative", "math.negative")
def negative(x: TensorLike, name: str | None = None) -> Tensor:
    """`-x` elementwise."""
    return _unary("Neg", x, name)


@export("abs", "math.abs")
def abs(x: TensorLike, name: str | None = None) -> Tensor:
    """`|x|` elementwise; the magnitude (a real tensor) for complex `x`."""
    return _unary("Abs", x, name)


@export("sign", "math.sign")
def sign(x: TensorLike, name: str | None = None) -> Tensor:
    """-1, 0 or 1 by the sign of `x`, elementwise."""
    return _unary("Sign", x, name)


@export("square", "math.square")
def square(x: TensorLike, name: str | None = None) -> Tensor:
    """`x * x` elementwise."""
    return _unary("Square", x, name)


@export("round", "math.round")
def round(x: TensorLike, name: str | None = None) -> Tensor:
    """`x` rounded to the nearest integer, halves to even (banker's rounding)."""
    return _unary("Round", x, name)


@export("floor", "math.floor")
def floor(x: TensorLike, name: str | None = None) -> Tensor:
    """The largest integer not greater than `x`, elementwise."""
    return _unary("Floor", x, name)


@export("ceil", "math.ceil")
def ceil(x: TensorLike, name: str | None = None) -> Tensor:
    """The smallest integer not less than `x`, elementwise."""
    return _unary("Ceil", x, name)


@export("conj", "math.conj")
def conj(x: TensorLike, name: str | None = None) -> Tensor:
    """The complex conjugate of `x`; real tensors are returned unchanged (no op is added)."""
    x = convert_to_tensor(x)
    return _unary("Conj", x, name) if x.dtype.kind == "c" else x


@export("reciprocal", "math.reciprocal")
def reciprocal(x: TensorLike, name: str | None = None) -> Tensor:
    """`1 / x` elementwise."""
    return _unary("Reciprocal", x, name)


@export("sqrt", "math.sqrt")
def sqrt(x: TensorLike, name: str | None = None) -> Tensor:
    """The square root of `x`, elementwise."""
    return _unary("Sqrt", x, name)


@export("rsqrt", "math.rsqrt")
def rsqrt(x: TensorLike, name: str | None = None) -> Tensor:
    """`1 / sqrt(x)` elementwise."""
    return _unary("Rsqrt", x, name)


@export("exp", "math.exp")
def exp(x: TensorLike, name: str | None = None) -> Tensor:
    """`e ** x` elementwise."""
    return _unary("Exp", x, name)


@export("expm1", "math.expm1")
def expm1(x: TensorLike, name: str | None = None) -> Tensor:
    """`e ** x - 1` elementwise, accurate for small `x`."""
    return _unary("Expm1", x, name)


@export("log", "math.log")
def log(x: TensorLike, name: str | None = None) -> Tensor:
    """The natural logarithm of `x`, elementwise."""
    return _unary("Log", x, name)


@export("log1p", "math.log1p")
def log1p(x: TensorLike, name: str | None = None) -> Tensor:
    """`log(1 + x)` elementwise, accurate for small `x`."""
    return _unary("Log1p", x, name)


@export("sin", "math.sin")
def sin(x: TensorLike, name: str | None = None) -> Tensor:
    """The sine of `x`, elementwise."""
    return _unary("Sin", x, name)


@export("cos", "math.cos")
def cos(x: TensorLike, name: str | None = None) -> Tensor:
    """The cosine of `x`, elementwise."""
    return _unary("Cos", x, name)


@export("tan", "math.tan")
def tan(x: TensorLike, name: str | None = None) -> Tensor:
    """The tangent of `x`, elementwise."""
    return _unary("Tan", x, name)


@export("tanh", "math.tanh", "nn.tanh")
def tanh(x: TensorLike, name: str | None = None) -> Tensor:
    """The hyperbolic tangent of `x`, elementwise."""
    return _unary("Tanh", x, name)


@export("sigmoid", "math.sigmoid", "nn.sigmoid")
def sigmoid(x: TensorLike, name: str | None = None) -> Tensor:
    """`1 / (1 + exp(-x))` elementwise."""
    return _unary("Sigmoid", x, name)


@export("erf", "math.erf")
def erf(x: TensorLike, name: str | None = None) -> Tensor:
    """The Gauss error function of `x`, elementwise."""
    return _unary("Erf", x, name)
