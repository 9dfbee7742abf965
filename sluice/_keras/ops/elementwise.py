"""`keras.ops` element-wise functions and reductions (Keras's `ops/numpy.py`), as graph code that
`eager.keras_op` also runs at once on values.

>>> sl.ops.power(np.array([1.0, 2.0, 3.0]), 2)
Array([1., 4., 9.])
>>> sl.ops.greater(np.arange(3), 1)
Array([False, False,  True])
>>> sl.ops.var(np.array([1.0, 2.0, 3.0, 4.0]))
Array(1.25)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._keras.ops.eager import (
    axes_of,
    floating,
    keras_op,
    promoted,
    result_dtype,
    tensor,
)
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import array_ops, broadcast_ops, fill_ops, gather_ops
from sluice.framework.ops.math import (
    composite_reductions,
    float_ops,
    math_ops,
    reduction_ops,
    special_math_ops,
    trig_ops,
    unary_ops,
)

_LN2, _LN10 = float(np.log(2.0)), float(np.log(10.0))


# -- on one array -------------------------------------------------------------------------------
def _real(graph_fn: Any, path: str, doc: str, *aliases: str) -> Any:
    """A function of reals: integers and bools are computed in `floatx()` (Keras's rule)."""

    def fn(x: Any) -> Any:
        return graph_fn(floating(x))

    fn.__name__, fn.__doc__ = path, doc
    return keras_op(path, *aliases)(fn)


def _same_dtype(graph_fn: Any, path: str, doc: str, *aliases: str) -> Any:
    def fn(x: Any) -> Any:
        return graph_fn(tensor(x))

    fn.__name__, fn.__doc__ = path, doc
    return keras_op(path, *aliases)(fn)


sqrt = _real(unary_ops.sqrt, "sqrt", "The square root of x.")
exp = _real(unary_ops.exp, "exp", "e ** x.")
expm1 = _real(unary_ops.expm1, "expm1", "e ** x - 1, exact near 0.")
log = _real(unary_ops.log, "log", "The natural logarithm of x.")
log1p = _real(unary_ops.log1p, "log1p", "log(1 + x), exact near 0.")
log2 = _real(lambda x: unary_ops.log(x) / _like(x, _LN2), "log2", "The base-2 logarithm of x.")
log10 = _real(lambda x: unary_ops.log(x) / _like(x, _LN10), "log10", "The base-10 logarithm.")
sin = _real(unary_ops.sin, "sin", "sin(x).")
cos = _real(unary_ops.cos, "cos", "cos(x).")
tan = _real(unary_ops.tan, "tan", "tan(x).")
tanh = _real(unary_ops.tanh, "tanh", "tanh(x).")
sinh = _real(trig_ops.sinh, "sinh", "sinh(x).")
cosh = _real(trig_ops.cosh, "cosh", "cosh(x).")
arcsin = _real(trig_ops.asin, "arcsin", "The inverse sine of x.")
arccos = _real(trig_ops.acos, "arccos", "The inverse cosine of x.")
arctan = _real(trig_ops.atan, "arctan", "The inverse tangent of x.")
arcsinh = _real(trig_ops.asinh, "arcsinh", "The inverse hyperbolic sine of x.")
arccosh = _real(trig_ops.acosh, "arccosh", "The inverse hyperbolic cosine of x.")
arctanh = _real(trig_ops.atanh, "arctanh", "The inverse hyperbolic tangent of x.")
reciprocal = _real(unary_ops.reciprocal, "reciprocal", "1 / x.")
rsqrt = _real(unary_ops.rsqrt, "rsqrt", "1 / sqrt(x).")
erf = _real(unary_ops.erf, "erf", "The error function of x.")
erfc = _real(special_math_ops.erfc, "erfc", "1 - erf(x), exact for large x.")
floor = _real(unary_ops.floor, "floor", "The largest integer <= x (as a float, as Keras).")
ceil = _real(unary_ops.ceil, "ceil", "The smallest integer >= x (as a float, as Keras).")
negative = _same_dtype(unary_ops.negative, "negative", "-x.")
abs = _same_dtype(unary_ops.abs, "abs", "|x|.", "absolute")  # noqa: A001  (Keras's name)
square = _same_dtype(unary_ops.square, "square", "x ** 2.")
sign = _same_dtype(unary_ops.sign, "sign", "-1, 0 or 1: the sign of x.")


def _float_test(graph_fn: Any, path: str, doc: str) -> Any:
    def fn(x: Any) -> Any:
        x = tensor(x)
        if not dtypes.is_floating(x.dtype):  # integers and bools: every value is finite
            answer = tensor(path == "isfinite", dtypes.bool_)
            return broadcast_ops.broadcast_to(answer, fill_ops.shape(x))
        return graph_fn(x)

    fn.__name__, fn.__doc__ = path, doc
    return keras_op(path)(fn)


isnan = _float_test(float_ops.is_nan, "isnan", "Whether x is NaN, element-wise.")
isinf = _float_test(float_ops.is_inf, "isinf", "Whether x is +-inf, element-wise.")
isfinite = _float_test(float_ops.is_finite, "isfinite", "Whether x is finite, element-wise.")


def _like(x: Any, value: float) -> Any:
    return tensor(value, x.dtype)


@keras_op("round")
def round(x: Any, decimals: int = 0) -> Any:  # noqa: A001  (Keras's name)
    """x rounded to `decimals` decimals, halves to even (integers: kept for decimals >= 0)."""
    x = tensor(x)
    if x.dtype.kind in "iub":
        if decimals >= 0:
            return x
        scale = 10.0 ** (-decimals)
        f = fill_ops.cast(x, dtypes.float64) / tensor(scale, dtypes.float64)
        return fill_ops.cast(unary_ops.round(f) * tensor(scale, dtypes.float64), x.dtype)
    if decimals == 0:
        return unary_ops.round(x)
    scale = _like(x, 10.0**decimals)
    return unary_ops.round(x * scale) / scale


@keras_op("logical_not")
def logical_not(x: Any) -> Any:
    """not x, element-wise (x is read as booleans)."""
    return math_ops.logical_not(tensor(x, dtypes.bool_))


# -- on two arrays (broadcast, in their common dtype) -------------------------------------------
def _binary(graph_fn: Any, path: str, doc: str, *aliases: str) -> Any:
    def fn(x1: Any, x2: Any) -> Any:
        return graph_fn(*promoted(x1, x2))

    fn.__name__, fn.__doc__ = path, doc
    return keras_op(path, *aliases)(fn)


add = _binary(math_ops.add, "add", "x1 + x2.")
subtract = _binary(math_ops.subtract, "subtract", "x1 - x2.")
multiply = _binary(math_ops.multiply, "multiply", "x1 * x2.")
maximum = _binary(math_ops.maximum, "maximum", "The larger of x1 and x2.")
minimum = _binary(math_ops.minimum, "minimum", "The smaller of x1 and x2.")
floor_divide = _binary(math_ops.floordiv, "floor_divide", "floor(x1 / x2).")
mod = _binary(math_ops.floormod, "mod", "The remainder of floor(x1 / x2), sign of x2.")
equal = _binary(math_ops.equal, "equal", "x1 == x2.")
not_equal = _binary(math_ops.not_equal, "not_equal", "x1 != x2.")
greater = _binary(math_ops.greater, "greater", "x1 > x2.")
greater_equal = _binary(math_ops.greater_equal, "greater_equal", "x1 >= x2.")
less = _binary(math_ops.less, "less", "x1 < x2.")
less_equal = _binary(math_ops.less_equal, "less_equal", "x1 <= x2.")


@keras_op("power")
def power(x1: Any, x2: Any) -> Any:
    """x1 ** x2."""
    return math_ops.pow(*promoted(x1, x2))


@keras_op("divide", "true_divide")
def divide(x1: Any, x2: Any) -> Any:
    """x1 / x2, in a float dtype (integers divide as `floatx()`, as Keras)."""
    dtype = result_dtype(x1, x2, 1.0)
    return math_ops.truediv(tensor(x1, dtype), tensor(x2, dtype))


@keras_op("arctan2")
def arctan2(x1: Any, x2: Any) -> Any:
    """The angle of the point (x2, x1), in (-pi, pi]."""
    dtype = result_dtype(x1, x2, 1.0)
    return trig_ops.atan2(tensor(x1, dtype), tensor(x2, dtype))


def _logical(graph_fn: Any, path: str, doc: str) -> Any:
    def fn(x1: Any, x2: Any) -> Any:
        return graph_fn(tensor(x1, dtypes.bool_), tensor(x2, dtypes.bool_))

    fn.__name__, fn.__doc__ = path, doc
    return keras_op(path)(fn)


logical_and = _logical(math_ops.logical_and, "logical_and", "x1 and x2, element-wise.")
logical_or = _logical(math_ops.logical_or, "logical_or", "x1 or x2, element-wise.")
logical_xor = _logical(math_ops.logical_xor, "logical_xor", "x1 xor x2, element-wise.")


@keras_op("where")
def where(condition: Any, x1: Any = None, x2: Any = None) -> Any:
    """x1 where `condition` holds, else x2 (broadcast against each other).

    Raises:
      NotImplementedError: x1 and x2 left out (NumPy's nonzero form).
    """
    if x1 is None or x2 is None:
        raise NotImplementedError(
            "sl.ops.where needs x1 and x2; the one-argument form (indices of the true entries) "
            "is not supported."
        )
    return gather_ops.where_v2(tensor(condition, dtypes.bool_), *promoted(x1, x2))


@keras_op("clip")
def clip(x: Any, x_min: Any, x_max: Any) -> Any:
    """x limited to [x_min, x_max] (a bool x is clipped as int32, as Keras)."""
    x = tensor(x)
    if x.dtype == dtypes.bool_:
        x = fill_ops.cast(x, dtypes.int32)
    low, high = tensor(x_min, x.dtype), tensor(x_max, x.dtype)
    return math_ops.minimum(math_ops.maximum(x, low), high)


# -- reductions -----------------------------------------------------------------------------------
def _summed(x: Any) -> Any:
    """x in the dtype Keras sums and multiplies it in: bools and narrow ints as int32 (uint32
    for unsigned), wider types as they are."""
    x = tensor(x)
    if x.dtype == dtypes.bool_ or (x.dtype.kind in "iu" and x.dtype.itemsize < 4):
        return fill_ops.cast(x, dtypes.as_dtype("uint32" if x.dtype.kind == "u" else "int32"))
    return x


def _reduction(graph_fn: Any, prepare: Any, path: str, what: str) -> Any:
    def fn(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        x = prepare(x)
        return graph_fn(x, axis=axes_of(axis, x.shape.rank), keepdims=keepdims)

    fn.__name__, fn.__doc__ = path, f"The {what} of x along `axis` (None: all axes)."
    return keras_op(path)(fn)


def _as_bool(x: Any) -> Any:
    return tensor(x, dtypes.bool_)


sum = _reduction(reduction_ops.reduce_sum, _summed, "sum", "sum")  # noqa: A001
mean = _reduction(reduction_ops.reduce_mean, floating, "mean", "mean")
all = _reduction(reduction_ops.reduce_all, _as_bool, "all", "logical and")  # noqa: A001
any = _reduction(reduction_ops.reduce_any, _as_bool, "any", "logical or")  # noqa: A001
logsumexp = _reduction(
    composite_reductions.reduce_logsumexp, floating, "logsumexp", "log of the summed exp"
)


@keras_op("prod")
def prod(x: Any, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Any:
    """The product of x along `axis` (None: all axes), in `dtype` when given."""
    x = _summed(x) if dtype is None else tensor(x, dtype)
    return reduction_ops.reduce_prod(x, axis=axes_of(axis, x.shape.rank), keepdims=keepdims)


def _extreme(graph_fn: Any, pick: Any, path: str, what: str) -> Any:
    def fn(x: Any, axis: Any = None, keepdims: bool = False, initial: Any = None) -> Any:
        x = tensor(x)
        found = graph_fn(x, axis=axes_of(axis, x.shape.rank), keepdims=keepdims)
        return found if initial is None else pick(found, tensor(initial, x.dtype))

    fn.__name__ = path
    fn.__doc__ = f"The {what} of x along `axis` (None: all axes), and `initial` if given."
    return keras_op(path)(fn)


max = _extreme(reduction_ops.reduce_max, math_ops.maximum, "max", "maximum")  # noqa: A001
min = _extreme(reduction_ops.reduce_min, math_ops.minimum, "min", "minimum")  # noqa: A001


@keras_op("var")
def var(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The variance of x along `axis`: the mean squared deviation from the mean."""
    x = floating(x)
    axes = axes_of(axis, x.shape.rank)
    deviation = x - reduction_ops.reduce_mean(x, axis=axes, keepdims=True)
    return reduction_ops.reduce_mean(unary_ops.square(deviation), axis=axes, keepdims=keepdims)


@keras_op("std")
def std(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The standard deviation of x along `axis`: sqrt(var(x))."""
    return unary_ops.sqrt(var(x, axis=axis, keepdims=keepdims))


def _arg(graph_fn: Any, path: str, what: str) -> Any:
    def fn(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        x = tensor(x)
        if axis is None:
            found = graph_fn(array_ops.reshape(x, [-1]), axis=0, output_type=dtypes.int32)
            if keepdims:
                return array_ops.reshape(found, [1] * (x.shape.rank or 0))
            return found
        found = graph_fn(x, axis=axis, output_type=dtypes.int32)
        return array_ops.expand_dims(found, axis) if keepdims else found

    fn.__name__ = path
    fn.__doc__ = f"The index of the {what} entry along `axis` (None: of the flattened x), int32."
    return keras_op(path)(fn)


argmax = _arg(reduction_ops.argmax, "argmax", "largest")
argmin = _arg(reduction_ops.argmin, "argmin", "smallest")


def _running(graph_fn: Any, path: str, what: str) -> Any:
    def fn(x: Any, axis: Any = None, dtype: Any = None) -> Any:
        x = _summed(x) if dtype is None else tensor(x, dtype)
        if axis is None:
            x, axis = array_ops.reshape(x, [-1]), 0
        return graph_fn(x, axis=axis)

    fn.__name__ = path
    fn.__doc__ = f"The running {what} along `axis` (None: of the flattened x)."
    return keras_op(path)(fn)


cumsum = _running(reduction_ops.cumsum, "cumsum", "sum")
cumprod = _running(composite_reductions.cumprod, "cumprod", "product")


@keras_op("count_nonzero")
def count_nonzero(x: Any, axis: Any = None) -> Any:
    """How many entries along `axis` are not zero (int32)."""
    x = tensor(x)
    nonzero = math_ops.not_equal(x, tensor(0, x.dtype))
    counts = fill_ops.cast(nonzero, dtypes.int32)
    return reduction_ops.reduce_sum(counts, axis=axes_of(axis, counts.shape.rank))
