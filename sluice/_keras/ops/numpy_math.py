"""`keras.ops` element-wise functions beyond `elementwise` (Keras's `ops/numpy.py` and
`ops/math.py`): bit operations, float tests and manipulations, complex parts, closeness;
graph code (composed of graph ops, or the ops of `framework/ops/math/bitwise_ops.py`) that
`eager.keras_op` also runs at once on values.

>>> sl.ops.bitwise_xor(np.array([5, 3]), 1)
Array([4, 2])
>>> sl.ops.logaddexp(np.array([0.0]), np.array([0.0])).numpy().round(6)
array([0.693147])
>>> sl.ops.isin(np.array([1, 2, 3]), [2, 5])
Array([False,  True, False])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sluice._keras.ops.eager import floating, keras_op, promoted, result_dtype, tensor
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops
from sluice.framework.ops.math import (
    bitwise_ops,
    division_ops,
    float_ops,
    math_ops,
    reduction_ops,
    trig_ops,
    unary_ops,
)


def _c(x: Any, value: Any) -> Any:
    return tensor(value, x.dtype)


def _where(condition: Any, a: Any, b: Any) -> Any:
    zeros = fill_ops.zeros_like(a) + fill_ops.zeros_like(b)
    return gather_ops.where_v2(condition, a + zeros, b + zeros)


# -- bits -----------------------------------------------------------------------------------------
def _bitwise(graph_fn: Any, paths: tuple, doc: str) -> Any:
    def fn(x: Any, y: Any) -> Any:
        return graph_fn(*promoted(x, y))

    fn.__name__, fn.__doc__ = paths[0], doc
    return keras_op(*paths)(fn)


bitwise_and = _bitwise(bitwise_ops.bitwise_and, ("bitwise_and",), "x & y, bit by bit.")
bitwise_or = _bitwise(bitwise_ops.bitwise_or, ("bitwise_or",), "x | y, bit by bit.")
bitwise_xor = _bitwise(bitwise_ops.bitwise_xor, ("bitwise_xor",), "x ^ y, bit by bit.")
left_shift = _bitwise(
    bitwise_ops.left_shift, ("left_shift", "bitwise_left_shift"), "x << y (bits moved left)."
)
right_shift = _bitwise(
    bitwise_ops.right_shift, ("right_shift", "bitwise_right_shift"), "x >> y (bits moved right)."
)
gcd = _bitwise(bitwise_ops.gcd, ("gcd",), "The greatest common divisor of |x1| and |x2|.")
lcm = _bitwise(bitwise_ops.lcm, ("lcm",), "The least common multiple of |x1| and |x2|.")


@keras_op("bitwise_invert", "bitwise_not")
def bitwise_invert(x: Any) -> Any:
    """~x, bit by bit (not, for bools)."""
    return bitwise_ops.invert(tensor(x))


@keras_op("nextafter")
def nextafter(x1: Any, x2: Any) -> Any:
    """The next float after x1 toward x2."""
    dtype = result_dtype(x1, x2, 1.0)
    return bitwise_ops.nextafter(tensor(x1, dtype), tensor(x2, dtype))


# -- floats ---------------------------------------------------------------------------------------
@keras_op("signbit")
def signbit(x: Any) -> Any:
    """Whether x's sign is negative (-0.0 included)."""
    x = tensor(x)
    if x.dtype.kind in "ub":
        return fill_ops.zeros_like(x, dtype=dtypes.bool_)
    negative = math_ops.less(x, _c(x, 0))
    if x.dtype.kind in "iu":
        return negative
    negative_zero = math_ops.logical_and(
        math_ops.equal(x, _c(x, 0)), math_ops.less(unary_ops.reciprocal(x), _c(x, 0))
    )
    return math_ops.logical_or(negative, negative_zero)


@keras_op("copysign")
def copysign(x1: Any, x2: Any) -> Any:
    """|x1| with the sign of x2."""
    dtype = result_dtype(x1, x2, 1.0)
    x1, x2 = tensor(x1, dtype), tensor(x2, dtype)
    return _where(signbit(x2), -unary_ops.abs(x1), unary_ops.abs(x1))


@keras_op("hypot")
def hypot(x1: Any, x2: Any) -> Any:
    """sqrt(x1^2 + x2^2), without overflow for large entries."""
    dtype = result_dtype(x1, x2, 1.0)
    a, b = unary_ops.abs(tensor(x1, dtype)), unary_ops.abs(tensor(x2, dtype))
    big, small = math_ops.maximum(a, b), math_ops.minimum(a, b)
    ratio = division_ops.div_no_nan(small, big)
    return big * unary_ops.sqrt(_c(big, 1.0) + ratio * ratio)


@keras_op("heaviside")
def heaviside(x1: Any, x2: Any) -> Any:
    """0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0."""
    dtype = result_dtype(x1, x2, 1.0)
    x1, x2 = tensor(x1, dtype), tensor(x2, dtype)
    positive = fill_ops.cast(math_ops.greater(x1, _c(x1, 0)), dtype)
    return _where(math_ops.equal(x1, _c(x1, 0)), x2, positive)


@keras_op("ldexp")
def ldexp(x1: Any, x2: Any) -> Any:
    """x1 * 2 ** x2 (x2 integers)."""
    x1 = floating(x1)
    return x1 * math_ops.pow(_c(x1, 2.0), fill_ops.cast(tensor(x2), x1.dtype))


@keras_op("trunc")
def trunc(x: Any) -> Any:
    """x rounded toward zero (integers as they are)."""
    x = tensor(x)
    if x.dtype.kind in "iub":
        return x
    return _where(math_ops.less(x, _c(x, 0)), unary_ops.ceil(x), unary_ops.floor(x))


@keras_op("exp2")
def exp2(x: Any) -> Any:
    """2 ** x."""
    x = floating(x)
    return unary_ops.exp(x * _c(x, math.log(2.0)))


@keras_op("deg2rad", "radians")
def deg2rad(x: Any) -> Any:
    """Degrees to radians."""
    x = floating(x)
    return x * _c(x, math.pi / 180.0)


@keras_op("rad2deg", "degrees")
def rad2deg(x: Any) -> Any:
    """Radians to degrees."""
    x = floating(x)
    return x * _c(x, 180.0 / math.pi)


@keras_op("logaddexp")
def logaddexp(x1: Any, x2: Any) -> Any:
    """log(exp(x1) + exp(x2)), computed stably."""
    dtype = result_dtype(x1, x2, 1.0)
    a, b = tensor(x1, dtype), tensor(x2, dtype)
    big = math_ops.maximum(a, b)
    return big + unary_ops.log1p(unary_ops.exp(-unary_ops.abs(a - b)))


@keras_op("logaddexp2")
def logaddexp2(x1: Any, x2: Any) -> Any:
    """log2(2 ** x1 + 2 ** x2), computed stably."""
    dtype = result_dtype(x1, x2, 1.0)
    a, b = tensor(x1, dtype), tensor(x2, dtype)
    ln2 = _c(a, math.log(2.0))
    big = math_ops.maximum(a, b)
    return big + unary_ops.log1p(unary_ops.exp(-unary_ops.abs(a - b) * ln2)) / ln2


@keras_op("cbrt")
def cbrt(x: Any) -> Any:
    """The real cube root of x."""
    x = floating(x)
    root = math_ops.pow(unary_ops.abs(x), _c(x, 1.0 / 3.0))
    return unary_ops.sign(x) * root


@keras_op("fabs")
def fabs(x: Any) -> Any:
    """|x| as floats."""
    return unary_ops.abs(floating(x))


def _nan_aware(pick: Any, path: str, doc: str) -> Any:
    def fn(x1: Any, x2: Any) -> Any:
        a, b = promoted(x1, x2)
        if a.dtype.kind != "f":
            return pick(a, b)
        a_nan, b_nan = float_ops.is_nan(a), float_ops.is_nan(b)
        return _where(a_nan, b, _where(b_nan, a, pick(a, b)))

    fn.__name__, fn.__doc__ = path, doc
    return keras_op(path)(fn)


fmax = _nan_aware(math_ops.maximum, "fmax", "The larger of x1 and x2, NaN only if both are.")
fmin = _nan_aware(math_ops.minimum, "fmin", "The smaller of x1 and x2, NaN only if both are.")


@keras_op("fmod")
def fmod(x1: Any, x2: Any) -> Any:
    """The remainder of x1 / x2 rounded toward zero (the sign of x1, as C's fmod)."""
    return division_ops.truncatemod(*promoted(x1, x2))


@keras_op("sinc")
def sinc(x: Any) -> Any:
    """sin(pi x) / (pi x), 1 at 0."""
    x = floating(x)
    zero = math_ops.equal(x, _c(x, 0))
    safe = _where(zero, _c(x, 1.0), x) * _c(x, math.pi)
    return _where(zero, _c(x, 1.0), unary_ops.sin(safe) / safe)


@keras_op("i0")
def i0(x: Any) -> Any:
    """The modified Bessel function of the first kind, order 0."""
    return bitwise_ops.i0(floating(x))


@keras_op("erfinv")
def erfinv(x: Any) -> Any:
    """The inverse error function."""
    return bitwise_ops.erfinv(floating(x))


@keras_op("divide_no_nan")
def divide_no_nan(x1: Any, x2: Any) -> Any:
    """x1 / x2, 0 where x2 is 0."""
    dtype = result_dtype(x1, x2, 1.0)
    return division_ops.div_no_nan(tensor(x1, dtype), tensor(x2, dtype))


@keras_op("nan_to_num")
def nan_to_num(
    x: Any, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None
) -> Any:
    """x with NaN replaced by `nan` and +-inf by `posinf`/`neginf` (default: the dtype's
    largest and smallest finite values)."""
    x = tensor(x)
    if x.dtype.kind != "f":
        return x
    info = np.finfo(np.dtype(x.dtype))
    big = info.max if posinf is None else posinf
    small = info.min if neginf is None else neginf
    x = _where(float_ops.is_nan(x), _c(x, nan), x)
    infinite = float_ops.is_inf(x)
    x = _where(math_ops.logical_and(infinite, math_ops.greater(x, _c(x, 0))), _c(x, big), x)
    return _where(math_ops.logical_and(infinite, math_ops.less(x, _c(x, 0))), _c(x, small), x)


@keras_op("isneginf")
def isneginf(x: Any) -> Any:
    """Whether x is -inf."""
    x = tensor(x)
    if x.dtype.kind != "f":
        return fill_ops.zeros_like(x, dtype=dtypes.bool_)
    return math_ops.logical_and(float_ops.is_inf(x), math_ops.less(x, _c(x, 0)))


@keras_op("isposinf")
def isposinf(x: Any) -> Any:
    """Whether x is +inf."""
    x = tensor(x)
    if x.dtype.kind != "f":
        return fill_ops.zeros_like(x, dtype=dtypes.bool_)
    return math_ops.logical_and(float_ops.is_inf(x), math_ops.greater(x, _c(x, 0)))


@keras_op("isclose")
def isclose(
    x1: Any, x2: Any, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False
) -> Any:
    """|x1 - x2| <= atol + rtol * |x2| (infinities equal only to themselves; NaNs equal with
    `equal_nan`)."""
    a, b = promoted(x1, x2)
    if a.dtype.kind != "f":
        a, b = floating(a), floating(b)
    close = math_ops.less_equal(unary_ops.abs(a - b), _c(a, atol) + _c(a, rtol) * unary_ops.abs(b))
    same = math_ops.equal(a, b)  # equal infinities (their difference is NaN)
    close = math_ops.logical_or(close, same)
    if equal_nan:
        both = math_ops.logical_and(float_ops.is_nan(a), float_ops.is_nan(b))
        close = math_ops.logical_or(close, both)
    return close


@keras_op("allclose")
def allclose(
    x1: Any, x2: Any, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False
) -> Any:
    """Whether `isclose` holds everywhere."""
    return reduction_ops.reduce_all(isclose(x1, x2, rtol, atol, equal_nan))


@keras_op("isin")
def isin(x1: Any, x2: Any, assume_unique: bool = False, invert: bool = False) -> Any:
    """Whether each entry of x1 is among the entries of x2 (not, with `invert`)."""
    a, b = promoted(x1, x2)
    found = reduction_ops.reduce_any(
        math_ops.equal(array_ops.expand_dims(a, -1), array_ops.reshape(b, [-1])), axis=-1
    )
    return math_ops.logical_not(found) if invert else found


# -- complex numbers ------------------------------------------------------------------------------
@keras_op("real")
def real(x: Any) -> Any:
    """The real part of x (x itself when real)."""
    x = tensor(x)
    return bitwise_ops.real(x) if x.dtype.kind == "c" else x


@keras_op("imag")
def imag(x: Any) -> Any:
    """The imaginary part of x (zeros when real)."""
    x = tensor(x)
    return bitwise_ops.imag(x) if x.dtype.kind == "c" else fill_ops.zeros_like(x)


@keras_op("conj", "conjugate")
def conj(x: Any) -> Any:
    """The complex conjugate of x (x itself when real)."""
    x = tensor(x)
    return unary_ops.conj(x) if x.dtype.kind == "c" else x


@keras_op("angle")
def angle(x: Any) -> Any:
    """The angle of x in the complex plane, in (-pi, pi]."""
    x = tensor(x)
    if x.dtype.kind == "c":
        return trig_ops.atan2(bitwise_ops.imag(x), bitwise_ops.real(x))
    x = floating(x)
    return trig_ops.atan2(fill_ops.zeros_like(x), x)


@keras_op("isreal")
def isreal(x: Any) -> Any:
    """Whether each entry has no imaginary part."""
    x = tensor(x)
    if x.dtype.kind != "c":
        return fill_ops.ones_like(x, dtype=dtypes.bool_)
    return math_ops.equal(bitwise_ops.imag(x), tensor(0.0, bitwise_ops.imag(x).dtype))
