"""Elementwise binary math (arithmetic with NumPy broadcasting, AddN, comparisons, logic) and
the Python operators of `Tensor` (`x + 1`, `a @ b`, `x < y`, `~mask`).

Binary ops take inputs of one dtype; a Python or NumPy value given next to a Tensor takes the
Tensor's dtype, as in TF1. Sibling modules, whose wrappers are re-exported here so that this
module holds TF1's `math_ops` names: `unary_ops` (Exp, Tanh, ...), `matmul_ops` (MatMul,
BatchMatMulV2), `reduction_ops` (Sum, Mean, ArgMax, Cumsum, ...); `math_rules` holds the dtype
rules they share, `math_grad_util` the gradients of broadcasting (`sum_to_inputs`). Each op's
gradient, or its `not_differentiable` mark, follows its registration.

>>> x = sl.placeholder(sl.float32, [None, 3])
>>> y = x * 2.0 + 1.0  # Mul, then AddV2; both Python floats become float32 constants
>>> y.shape
TensorShape([None, 3])
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable, register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops
from sluice.framework.ops.core.core_ops import apply_op, convert_to_tensor, identity
from sluice.framework.ops.core.math_rules import (
    binary_rule,
    convert_operands,
    is_inexact,
    is_numeric,
    is_real,
    is_value,
    unary_rule,
)
from sluice.framework.ops.core.shape_rules import require_dtype, require_same_dtype
from sluice.framework.ops.math.math_grad_util import sum_to_inputs
from sluice.framework.ops.math.matmul_ops import matmul
from sluice.framework.ops.math.reduction_ops import (  # noqa: F401  (re-exported)
    argmax,
    argmin,
    cumsum,
    reduce_all,
    reduce_any,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_sum,
)
from sluice.framework.ops.math.unary_ops import (  # noqa: F401  (re-exported)
    abs,
    ceil,
    conj,
    cos,
    erf,
    exp,
    expm1,
    floor,
    log,
    log1p,
    negative,
    reciprocal,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sqrt,
    square,
    tan,
    tanh,
)

TensorLike = Any

_numeric = binary_rule("numeric", is_numeric)
_real = binary_rule("real numeric", is_real)
_inexact = binary_rule("floating", is_inexact)
_real_compare = binary_rule("real numeric", is_real, dtypes.bool_)
_equality = binary_rule("value", is_value, dtypes.bool_)
_logical = binary_rule("bool", dtypes.is_bool)
_logical_not = unary_rule("bool", dtypes.is_bool)


def _binary(op_type: str, x: TensorLike, y: TensorLike, name: str | None) -> Tensor:
    return apply_op(op_type, convert_operands(x, y), name=name).outputs[0]


# -- binary arithmetic --------------------------------------------------------------------------
# Each gradient is computed for the broadcast shape, then `sum_to_inputs` sums it to the shape of
# each input. Complex gradients follow TF: grad * conj(d output / d input).
register_op("AddV2", infer=_numeric, kernel=jnp.add, select_safe=True)


@register_gradient("AddV2")
def _add_grad(op, grad):
    return sum_to_inputs(grad, grad, *op.inputs)


register_op("Sub", infer=_numeric, kernel=jnp.subtract, select_safe=True)


@register_gradient("Sub")
def _sub_grad(op, grad):
    return sum_to_inputs(grad, -grad, *op.inputs)


register_op("Mul", infer=_numeric, kernel=jnp.multiply, select_safe=True)


@register_gradient("Mul")
def _mul_grad(op, grad):
    x, y = op.inputs
    return sum_to_inputs(grad * conj(y), conj(x) * grad, x, y)


register_op("RealDiv", infer=_inexact, kernel=jnp.divide)


@register_gradient("RealDiv")
def _real_div_grad(op, grad):
    x, y = op.inputs
    cx, cy = conj(x), conj(y)
    return sum_to_inputs(grad / cy, grad * (-cx / cy / cy), x, y)


register_op("FloorDiv", infer=_real, kernel=jnp.floor_divide)
not_differentiable("FloorDiv")  # piecewise constant; TF gives None
register_op("FloorMod", infer=_real, kernel=jnp.mod)  # result has the sign of y


@register_gradient("FloorMod")
def _floor_mod_grad(op, grad):  # x mod y = x - floordiv(x, y) * y
    x, y = op.inputs
    return sum_to_inputs(grad, grad * -floordiv(x, y), x, y)


register_op("Pow", infer=_numeric, kernel=jnp.power)


@register_gradient("Pow")
def _pow_grad(op, grad):
    """d/dx = y * x^(y-1); d/dy = z * log(x), taken as 0 where x <= 0 (where x^y has no real
    logarithm, as in TF), so x = 0 gives no NaN."""
    x, y = op.inputs
    if not dtypes.is_differentiable(x.dtype):  # integers get None
        return [None, None]
    cx, cy, z = conj(x), conj(y), conj(op.outputs[0])
    gx = grad * cy * pow(cx, cy - 1)
    positive = array_ops.cast(cx, dtypes.bool_) if x.dtype.kind == "c" else cx > 0
    log_x = array_ops.where_v2(positive, log(array_ops.where_v2(positive, cx, 1)), 0)
    return sum_to_inputs(gx, grad * z * log_x, x, y)


def _select_grads(x_wins: Tensor, grad: Tensor, x: Tensor, y: Tensor) -> list:
    """The gradient goes to x where `x_wins`, to y elsewhere (Maximum, Minimum)."""
    gx = array_ops.where_v2(x_wins, grad, 0)
    gy = array_ops.where_v2(x_wins, 0, grad)
    return sum_to_inputs(gx, gy, x, y)


register_op("Maximum", infer=_real, kernel=jnp.maximum, select_safe=True)


@register_gradient("Maximum")
def _maximum_grad(op, grad):  # ties go to x, as in TF
    x, y = op.inputs
    return _select_grads(x >= y, grad, x, y)


register_op("Minimum", infer=_real, kernel=jnp.minimum, select_safe=True)


@register_gradient("Minimum")
def _minimum_grad(op, grad):
    x, y = op.inputs
    return _select_grads(x <= y, grad, x, y)


register_op(
    "SquaredDifference", infer=_real, kernel=lambda x, y: jnp.square(x - y), select_safe=True
)


@register_gradient("SquaredDifference")
def _squared_difference_grad(op, grad):
    x, y = op.inputs
    gx = grad * 2 * (x - y)
    return sum_to_inputs(gx, -gx, x, y)


@export("add", "math.add")
def add(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """`x + y` elementwise, with NumPy broadcasting (an AddV2 op, named "Add" by default as
    TF1's `tf.add`; the `+` operator names it "add")."""
    return _binary("AddV2", x, y, name or "Add")


@export("sub", "subtract", "math.subtract")
def subtract(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """`x - y` elementwise, with NumPy broadcasting."""
    return _binary("Sub", x, y, name)


sub = subtract


@export("multiply", "math.multiply")
def multiply(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """`x * y` elementwise, with NumPy broadcasting."""
    return _binary("Mul", x, y, name)


@export("realdiv")
def realdiv(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """`x / y` for floating (or complex) `x` and `y` of one dtype (op RealDiv)."""
    return _binary("RealDiv", x, y, name)


# TF1 `__truediv__`: integers are divided as floats wide enough to hold them.
_TRUEDIV_FLOAT = {
    np.dtype(np.int8): dtypes.float32,
    np.dtype(np.uint8): dtypes.float32,
    np.dtype(np.int16): dtypes.float32,
    np.dtype(np.uint16): dtypes.float32,
    np.dtype(np.int32): dtypes.float64,
    np.dtype(np.uint32): dtypes.float64,
    np.dtype(np.int64): dtypes.float64,
    np.dtype(np.uint64): dtypes.float64,
}


@export("divide", "truediv", "math.divide", "math.truediv")
def truediv(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """Python 3 division `x / y`: integer inputs are first cast to floating point
    (int8/int16/uint8/uint16 to float32, int32/int64 to float64), as in TF1.

    Raises:
      TypeError: if `x` and `y` have different dtypes.
    """
    x, y = convert_operands(x, y)
    if x.dtype != y.dtype:
        raise TypeError(
            f"truediv: x and y must have the same dtype, got {x.dtype.name} and {y.dtype.name}"
        )
    float_dtype = _TRUEDIV_FLOAT.get(x.dtype)
    if float_dtype is not None:
        x, y = array_ops.cast(x, float_dtype), array_ops.cast(y, float_dtype)
    return _binary("RealDiv", x, y, name)


divide = truediv


@export("div")
def div(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """TF1 `div` (Python 2 division): floor division for integers, true division otherwise."""
    x, y = convert_operands(x, y)
    return _binary("RealDiv" if is_inexact(x.dtype) else "FloorDiv", x, y, name)


@export("floordiv", "math.floordiv")
def floordiv(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """`x // y` elementwise: division rounded towards negative infinity."""
    return _binary("FloorDiv", x, y, name)


@export("floormod", "mod", "math.floormod", "math.mod")
def floormod(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """`x % y` elementwise, with the sign of `y` (Python's `%`): `x == floordiv(x, y) * y + r`."""
    return _binary("FloorMod", x, y, name)


mod = floormod


@export("pow", "math.pow")
def pow(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """`x ** y` elementwise, with NumPy broadcasting."""
    return _binary("Pow", x, y, name)


@export("maximum", "math.maximum")
def maximum(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """The larger of `x` and `y`, elementwise."""
    return _binary("Maximum", x, y, name)


@export("minimum", "math.minimum")
def minimum(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """The smaller of `x` and `y`, elementwise."""
    return _binary("Minimum", x, y, name)


@export("squared_difference", "math.squared_difference")
def squared_difference(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """`(x - y) ** 2` elementwise, with NumPy broadcasting."""
    return _binary("SquaredDifference", x, y, name)


# -- AddN ---------------------------------------------------------------------------------------
def _add_n_infer(op) -> list:
    if not op.inputs:
        raise ValueError("expected at least one input")
    require_same_dtype(*op.inputs)
    require_dtype(op.inputs[0], "numeric", is_numeric)
    shape = TensorShape(None)
    for t in op.inputs:
        if not shape.is_compatible_with(t.shape):
            raise ValueError(f"all inputs must have the same shape, got {shape} and {t.shape}")
        shape = shape.merge_with(t.shape)
    return [(op.inputs[0].dtype, shape)]


def _add_n_kernel(*inputs):
    total = inputs[0]
    for x in inputs[1:]:
        total = jnp.add(total, x)
    return total


register_op("AddN", infer=_add_n_infer, kernel=_add_n_kernel, select_safe=True)


@register_gradient("AddN")
def _add_n_grad(op, grad):
    return [grad] * len(op.inputs)


@export("add_n", "math.add_n")
def add_n(inputs: list, name: str | None = None) -> Tensor:
    """The elementwise sum of a list of tensors of one dtype and shape (no broadcasting).

    Raises:
      ValueError: if `inputs` is empty or the shapes differ.
    """
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise ValueError("add_n: inputs must be a non-empty list of tensors of one dtype, shape.")
    inputs = convert_operands(*inputs)
    if len(inputs) == 1:
        return identity(inputs[0], name=name) if name else inputs[0]
    return apply_op("AddN", inputs, name=name).outputs[0]


# -- comparisons and logic ----------------------------------------------------------------------
register_op("Less", infer=_real_compare, kernel=jnp.less, select_safe=True)
register_op("LessEqual", infer=_real_compare, kernel=jnp.less_equal, select_safe=True)
register_op("Greater", infer=_real_compare, kernel=jnp.greater, select_safe=True)
register_op("GreaterEqual", infer=_real_compare, kernel=jnp.greater_equal, select_safe=True)
register_op("Equal", infer=_equality, kernel=jnp.equal, select_safe=True)
register_op("NotEqual", infer=_equality, kernel=jnp.not_equal, select_safe=True)
register_op("LogicalAnd", infer=_logical, kernel=jnp.logical_and, select_safe=True)
register_op("LogicalOr", infer=_logical, kernel=jnp.logical_or, select_safe=True)
register_op("LogicalNot", infer=_logical_not, kernel=jnp.logical_not, select_safe=True)
not_differentiable("Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual")
not_differentiable("LogicalAnd", "LogicalOr", "LogicalNot")


@export("less", "math.less")
def less(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """`x < y` elementwise, as a bool tensor."""
    return _binary("Less", x, y, name)


@export("less_equal", "math.less_equal")
def less_equal(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """`x <= y` elementwise, as a bool tensor."""
    return _binary("LessEqual", x, y, name)


@export("greater", "math.greater")
def greater(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """`x > y` elementwise, as a bool tensor."""
    return _binary("Greater", x, y, name)


@export("greater_equal", "math.greater_equal")
def greater_equal(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """`x >= y` elementwise, as a bool tensor."""
    return _binary("GreaterEqual", x, y, name)


@export("equal", "math.equal")
def equal(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """`x == y` elementwise, as a bool tensor (`Tensor.__eq__` stays identity, as in TF1)."""
    return _binary("Equal", x, y, name)


@export("not_equal", "math.not_equal")
def not_equal(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """`x != y` elementwise, as a bool tensor."""
    return _binary("NotEqual", x, y, name)


@export("logical_and", "math.logical_and")
def logical_and(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """`x AND y` for bool tensors, with broadcasting."""
    return _binary("LogicalAnd", x, y, name)


@export("logical_or", "math.logical_or")
def logical_or(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """`x OR y` for bool tensors, with broadcasting."""
    return _binary("LogicalOr", x, y, name)


@export("logical_not", "math.logical_not")
def logical_not(x: TensorLike, name: str | None = None) -> Tensor:
    """`NOT x` for a bool tensor."""
    return apply_op("LogicalNot", [convert_to_tensor(x)], name=name).outputs[0]


@export("logical_xor", "math.logical_xor")
def logical_xor(x: TensorLike, y: TensorLike, name: str = "LogicalXor") -> Tensor:
    """`x XOR y` for bool tensors, built as `(x OR y) AND NOT (x AND y)` as in TF1."""
    x, y = convert_operands(x, y)
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)), name=name)


# -- Python operators on Tensor -----------------------------------------------------------------
def _operator(fn, name: str, reflected: bool = False):
    """A Tensor method for a binary Python operator; `reflected` for `__radd__` and friends.
    Its op is named `name` as in TF1 (`x + y` is "add", `tf.add(x, y)` is "Add")."""

    def method(self: Tensor, other: TensorLike) -> Tensor:
        if getattr(type(other), "defers_tensor_operators", False):
            return NotImplemented  # a SparseTensor's own operator runs (`dense * sp`)
        return fn(other, self, name=name) if reflected else fn(self, other, name=name)

    return method


_BINARY_OPERATORS = {
    "add": add,
    "sub": subtract,
    "mul": multiply,
    "truediv": truediv,
    "floordiv": floordiv,
    "mod": floormod,
    "pow": pow,
    "matmul": matmul,
    "and": logical_and,  # and/or/xor/invert are logical: they take bool tensors
    "or": logical_or,
    "xor": logical_xor,
}
for _name, _fn in _BINARY_OPERATORS.items():
    Tensor.override_operator(f"__{_name}__", _operator(_fn, _name))
    Tensor.override_operator(f"__r{_name}__", _operator(_fn, _name, reflected=True))
for _name, _fn in {"lt": less, "le": less_equal, "gt": greater, "ge": greater_equal}.items():
    Tensor.override_operator(f"__{_name}__", _operator(_fn, None))  # == and != stay identity
Tensor.override_operator("__neg__", negative)
Tensor.override_operator("__abs__", abs)
Tensor.override_operator("__invert__", logical_not)
