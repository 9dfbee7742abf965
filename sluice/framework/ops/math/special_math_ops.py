"""Special functions: Lgamma, Digamma, Polygamma, Erfc, Rint (elementwise ops with TF1's
gradients) and `log_sigmoid` (composed as TF1 does: `-softplus(-x)`, accurate for large |x|).

>>> round(float(sl.Session().run(sl.log_sigmoid([0.0]))[0]), 6)
-0.693147
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy import special

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable, register_gradient, register_op
from sluice.framework.ops.core.core_ops import apply_op, convert_to_tensor
from sluice.framework.ops.core.math_rules import binary_rule, convert_operands, unary_rule
from sluice.framework.ops.math import unary_ops
from sluice.framework.ops.math.math_grad_util import sum_to_inputs

_real_floating = unary_rule("real floating", dtypes.is_floating)


def _unary(op_type: str, x: Any, name: str | None) -> Tensor:
    return apply_op(op_type, [convert_to_tensor(x)], name=name).outputs[0]


register_op("Lgamma", infer=_real_floating, kernel=lax.lgamma)


@register_gradient("Lgamma")
def _lgamma_grad(op, grad):
    return [grad * digamma(op.inputs[0])]


register_op("Digamma", infer=_real_floating, kernel=lax.digamma)


@register_gradient("Digamma")
def _digamma_grad(op, grad):  # the trigamma function, polygamma(1, x)
    x = op.inputs[0]
    return [grad * polygamma(np.ones([], x.dtype), x)]


def _polygamma_kernel(a, x, **_):
    """NaN for an order that is not a non-negative integer, as TF's kernel."""
    a, x = jnp.broadcast_arrays(a, x)
    order = jnp.maximum(jnp.round(a), 0).astype(jnp.int32)
    value = special.polygamma(order, x).astype(x.dtype)
    return jnp.where((a == jnp.round(a)) & (a >= 0), value, jnp.nan)


register_op(
    "Polygamma", infer=binary_rule("real floating", dtypes.is_floating), kernel=_polygamma_kernel
)


@register_gradient("Polygamma")
def _polygamma_grad(op, grad):  # d/dx polygamma(n, x) = polygamma(n + 1, x); none for n (TF1)
    a, x = op.inputs
    return sum_to_inputs(None, grad * polygamma(a + 1, x), a, x)


register_op("Erfc", infer=_real_floating, kernel=lax.erfc, select_safe=True)


@register_gradient("Erfc")
def _erfc_grad(op, grad):  # -2 / sqrt(pi) * exp(-x^2)
    x = op.inputs[0]
    return [grad * (-1.1283791670955126) * unary_ops.exp(-unary_ops.square(x))]


register_op("Rint", infer=_real_floating, kernel=jnp.round, select_safe=True)  # halves to even
not_differentiable("Rint")


@export("lgamma", "math.lgamma")
def lgamma(x: Any, name: str | None = None) -> Tensor:
    """`log(|Gamma(x)|)` elementwise."""
    return _unary("Lgamma", x, name)


@export("digamma", "math.digamma")
def digamma(x: Any, name: str | None = None) -> Tensor:
    """The derivative of `lgamma`, `Psi(x)`, elementwise."""
    return _unary("Digamma", x, name)


@export("polygamma", "math.polygamma")
def polygamma(a: Any, x: Any, name: str | None = None) -> Tensor:
    """The polygamma function: the `a`-th derivative of `digamma` at `x`, elementwise (`a` a
    non-negative integer held in a float tensor of x's dtype, as TF1's `tf.polygamma`)."""
    return apply_op("Polygamma", convert_operands(a, x), name=name).outputs[0]


@export("erfc", "math.erfc")
def erfc(x: Any, name: str | None = None) -> Tensor:
    """`1 - erf(x)` elementwise, accurate where erf(x) is near 1."""
    return _unary("Erfc", x, name)


@export("rint", "math.rint")
def rint(x: Any, name: str | None = None) -> Tensor:
    """`x` rounded to the nearest integer, halves to even: `rint(-1.5) = -2`, `rint(0.5) = 0`."""
    return _unary("Rint", x, name)


@export("log_sigmoid", "math.log_sigmoid")
def log_sigmoid(x: Any, name: str | None = None) -> Tensor:
    """`log(1 / (1 + exp(-x)))` elementwise, computed as `-softplus(-x)` (TF1
    `tf.log_sigmoid`), so it neither overflows nor loses precision for large |x|."""
    x = convert_to_tensor(x)
    # Softplus is an nn op, a higher family than this one: built by its type, as `softplus` does
    softplus = apply_op("Softplus", [unary_ops.negative(x)]).outputs[0]
    return unary_ops.negative(softplus, name=name)
