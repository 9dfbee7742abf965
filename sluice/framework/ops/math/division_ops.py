"""Division variants of TF1 beyond `/` and `//`: DivNoNan (`div_no_nan`, 0 where the divisor is
0), TruncateDiv and TruncateMod (C's rounding toward zero), `floor_div` (the FloorDiv op under
its generated name) and `scalar_mul`.

All broadcast with NumPy rules and take two inputs of one dtype, as the binary math ops do.

>>> sl.Session().run(sl.div_no_nan([1.0, 2.0], [0.0, 4.0])).tolist()
[0.0, 0.5]
>>> sl.Session().run(sl.truncatediv([-7, 7], [2, 2])).tolist()
[-3, 3]
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from sluice._export import export
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable, register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.core.core_ops import apply_op, convert_to_tensor
from sluice.framework.ops.core.math_rules import binary_rule, convert_operands, is_inexact, is_real
from sluice.framework.ops.math.indexed_slices import IndexedSlices
from sluice.framework.ops.math.math_grad_util import sum_to_inputs


def _binary(op_type: str, x: Any, y: Any, name: str | None) -> Tensor:
    return apply_op(op_type, convert_operands(x, y), name=name).outputs[0]


def _is_integer(dtype) -> bool:
    return dtype.kind in "iu"


def _div_no_nan_kernel(x, y, **_):
    zero = y == 0
    return jnp.where(zero, jnp.zeros((), x.dtype), x / jnp.where(zero, jnp.ones((), y.dtype), y))


register_op("DivNoNan", infer=binary_rule("floating", is_inexact), kernel=_div_no_nan_kernel)


@register_gradient("DivNoNan")
def _div_no_nan_grad(op, grad):  # TF1: zero gradients wherever y == 0
    x, y = op.inputs
    return sum_to_inputs(div_no_nan(grad, y), grad * div_no_nan(div_no_nan(-x, y), y), x, y)


def _truncate_div_kernel(x, y, **_):
    quotient = jnp.floor_divide(x, y)
    # floor and truncation differ by one where the signs differ and the division is inexact
    inexact = (jnp.remainder(x, y) != 0) & ((x < 0) != (y < 0))
    return jnp.where(inexact, quotient + 1, quotient)


# TruncateDiv has integer kernels only on TF's CPU; TF1 registers no gradient for either op
# (their results are integers, or piecewise linear with jumps): here they give None.
register_op("TruncateDiv", infer=binary_rule("integer", _is_integer), kernel=_truncate_div_kernel)
register_op(
    "TruncateMod",
    infer=binary_rule("real numeric", is_real),
    kernel=lambda x, y, **_: jnp.fmod(x, y),  # the remainder has the sign of x
)
not_differentiable("TruncateDiv", "TruncateMod")


@export("div_no_nan", "math.divide_no_nan")
def div_no_nan(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`x / y` elementwise, or 0 where `y` is 0 (even where x is 0, NaN or Inf): TF1
    `tf.div_no_nan`. Its gradient is 0 where `y` is 0.

    Args:
      x, y: floating (or complex) tensors of one dtype that broadcast.
      name: the op's name.

    Raises:
      TypeError: the dtypes differ or are not floating.
    """
    return _binary("DivNoNan", x, y, name)


@export("truncatediv")
def truncatediv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`x / y` rounded toward zero for integer tensors (C's division): `-7 / 5 = -1`."""
    return _binary("TruncateDiv", x, y, name)


@export("truncatemod")
def truncatemod(x: Any, y: Any, name: str | None = None) -> Tensor:
    """The remainder of truncated division (C's `fmod`): it has the sign of `x`."""
    return _binary("TruncateMod", x, y, name)


@export("floor_div")
def floor_div(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`x // y` elementwise, rounding toward negative infinity (the FloorDiv op)."""
    return _binary("FloorDiv", x, y, name)


@export("scalar_mul", "math.scalar_mul")
def scalar_mul(scalar: Any, x: Any, name: str | None = None) -> Any:
    """`scalar * x` (TF1 `tf.scalar_mul`); an IndexedSlices `x` gets its values scaled.

    Args:
      scalar: a scalar (rank-0) tensor or number; it takes `x`'s dtype.
      x: a Tensor or IndexedSlices.
      name: the name of the multiplication.

    Raises:
      ValueError: `scalar` is not a scalar.
    """
    values = x.values if isinstance(x, IndexedSlices) else convert_to_tensor(x)
    scalar = convert_to_tensor(scalar, dtype=values.dtype)
    if scalar.shape.rank is not None and scalar.shape != TensorShape([]):
        raise ValueError(
            f"scalar_mul: only scalar multiply works, got a scalar of shape {scalar.shape}"
        )
    scaled = apply_op("Mul", [scalar, values], name=name).outputs[0]
    if isinstance(x, IndexedSlices):
        return IndexedSlices(scaled, x.indices, x.dense_shape)
    return scaled
