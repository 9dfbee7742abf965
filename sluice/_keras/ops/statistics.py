"""`keras.ops` statistics and searches (Keras's `ops/numpy.py`): quantiles and medians, the
NaN-ignoring reductions, averages, correlation, histograms and bin counts, sorted searches;
graph code composed of graph ops that `eager.keras_op` also runs at once on values.

>>> sl.ops.median(np.array([3.0, 1.0, 2.0, 10.0]))
Array(2.5)
>>> sl.ops.nanmean(np.array([1.0, np.nan, 3.0]))
Array(2.)
>>> sl.ops.searchsorted(np.array([1, 3, 5]), np.array([0, 3, 6]))
Array([0, 1, 3], dtype=int32)
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from sluice._keras.ops.arrays import linspace, moveaxis, take_along_axis
from sluice._keras.ops.eager import (
    axes_of,
    floating,
    keras_op,
    known_rank,
    promoted,
    result_dtype,
    tensor,
)
from sluice._keras.ops.elementwise import cumprod, cumsum
from sluice.framework.ir import concrete, dtypes
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops, join_ops
from sluice.framework.ops.linalg import matrix_diag_ops
from sluice.framework.ops.math import (
    float_ops,
    math_ops,
    matmul_ops,
    reduction_ops,
    segment_ops,
    sort_ops,
    unary_ops,
)


def _c(x: Any, value: Any) -> Any:
    return tensor(value, x.dtype)


def _where(condition: Any, a: Any, b: Any) -> Any:
    zeros = fill_ops.zeros_like(a) + fill_ops.zeros_like(b)
    return gather_ops.where_v2(condition, a + zeros, b + zeros)


# -- quantiles ------------------------------------------------------------------------------------
_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _last(x: Any, axis: Any) -> tuple[Any, list[int]]:
    """x with the axes `axis` (None: all) merged into one last axis, and those axes."""
    rank = known_rank(x, "quantile")
    axes = list(range(rank)) if axis is None else sorted(axes_of(axis, rank))
    kept = [a for a in range(rank) if a not in axes]
    moved = array_ops.transpose(x, kept + axes) if axes != list(range(rank - len(axes), rank)) \
        else x  # fmt: skip
    shape = fill_ops.shape(moved)
    merged = join_ops.concat([shape[: len(kept)], [-1]], 0)
    return array_ops.reshape(moved, merged), axes


def _quantile(x: Any, q: Any, axis: Any, method: str, keepdims: bool, skip_nan: bool) -> Any:
    if method not in _METHODS:
        raise ValueError(f"quantile: method must be one of {_METHODS}, got {method!r}.")
    x = floating(x)
    q = tensor(q, x.dtype)
    scalar_q = q.shape.rank == 0
    qs = array_ops.reshape(q, [-1])
    values, axes = _last(x, axis)
    ordered = sort_ops.sort(values, axis=-1)  # NaNs sort last
    n = fill_ops.cast(fill_ops.shape(values)[-1], x.dtype)
    if skip_nan:
        valid = math_ops.logical_not(float_ops.is_nan(values))
        n = reduction_ops.reduce_sum(fill_ops.cast(valid, x.dtype), axis=-1, keepdims=True)
    position = qs * (n - _c(x, 1.0))  # [..., len(q)] (or [len(q)])
    position = position + fill_ops.zeros_like(ordered[..., :1])
    low, high = unary_ops.floor(position), unary_ops.ceil(position)
    last = math_ops.maximum(n - _c(x, 1.0), _c(x, 0.0))

    def at(p: Any) -> Any:
        index = fill_ops.cast(math_ops.minimum(math_ops.maximum(p, _c(x, 0.0)), last),
                              dtypes.int32)  # fmt: skip
        return take_along_axis(ordered, index, axis=-1)

    if method == "lower":
        found = at(low)
    elif method == "higher":
        found = at(high)
    elif method == "nearest":
        found = at(unary_ops.round(position))
    elif method == "midpoint":
        found = (at(low) + at(high)) * _c(x, 0.5)
    else:
        weight = position - low
        found = at(low) * (_c(x, 1.0) - weight) + at(high) * weight
    if skip_nan:
        empty = math_ops.equal(n + fill_ops.zeros_like(found), _c(x, 0.0))
        found = _where(empty, _c(x, np.nan), found)
    found = moveaxis(found, -1, 0)  # the quantiles first, as NumPy
    if keepdims:
        for a in axes:
            found = array_ops.expand_dims(found, a + 1)
    return array_ops.squeeze(found, [0]) if scalar_q else found


def _quantile_op(path: str, scale: float, skip_nan: bool, what: str) -> Any:
    def fn(x: Any, q: Any, axis: Any = None, method: str = "linear", keepdims: bool = False) -> Any:
        q = q if scale == 1 else np.asarray(q, np.float64) / scale
        return _quantile(x, q, axis, method, keepdims, skip_nan)

    fn.__name__ = path
    fn.__doc__ = (
        f"The {what} `q` of x along `axis` (None: all), interpolated by `method` (linear, "
        "lower, higher, midpoint, nearest), as NumPy; an array q gives the quantiles first."
    )
    return keras_op(path)(fn)


quantile = _quantile_op("quantile", 1, False, "quantiles (in [0, 1])")
percentile = _quantile_op("percentile", 100, False, "percentiles (in [0, 100])")
nanquantile = _quantile_op("nanquantile", 1, True, "quantiles, NaNs ignored,")
nanpercentile = _quantile_op("nanpercentile", 100, True, "percentiles, NaNs ignored,")


@keras_op("median")
def median(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The median of x along `axis` (None: all)."""
    return _quantile(x, 0.5, axis, "linear", keepdims, False)


@keras_op("nanmedian")
def nanmedian(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The median of x along `axis`, NaNs ignored."""
    return _quantile(x, 0.5, axis, "linear", keepdims, True)


# -- NaN-ignoring reductions ----------------------------------------------------------------------
def _filled(x: Any, value: float) -> Any:
    return _where(float_ops.is_nan(x), _c(x, value), x) if x.dtype.kind == "f" else x


def _count(x: Any, axes: Any, keepdims: bool) -> Any:
    valid = fill_ops.cast(math_ops.logical_not(float_ops.is_nan(x)), x.dtype)
    return reduction_ops.reduce_sum(valid, axis=axes, keepdims=keepdims)


@keras_op("nansum")
def nansum(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The sum of x along `axis`, NaNs counted as 0."""
    x = tensor(x)
    return reduction_ops.reduce_sum(_filled(x, 0.0), axis=axes_of(axis, x.shape.rank),
                                    keepdims=keepdims)  # fmt: skip


@keras_op("nanprod")
def nanprod(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The product of x along `axis`, NaNs counted as 1."""
    x = tensor(x)
    return reduction_ops.reduce_prod(_filled(x, 1.0), axis=axes_of(axis, x.shape.rank),
                                     keepdims=keepdims)  # fmt: skip


@keras_op("nanmean")
def nanmean(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The mean of the entries of x along `axis` that are not NaN."""
    x = floating(x)
    axes = axes_of(axis, x.shape.rank)
    total = reduction_ops.reduce_sum(_filled(x, 0.0), axis=axes, keepdims=keepdims)
    return total / _count(x, axes, keepdims)


@keras_op("nanvar")
def nanvar(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The variance of the entries of x along `axis` that are not NaN."""
    x = floating(x)
    axes = axes_of(axis, x.shape.rank)
    deviation = x - nanmean(x, axis=axis, keepdims=True)
    squares = reduction_ops.reduce_sum(_filled(deviation * deviation, 0.0), axis=axes,
                                       keepdims=keepdims)  # fmt: skip
    return squares / _count(x, axes, keepdims)


@keras_op("nanstd")
def nanstd(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The standard deviation of the entries of x along `axis` that are not NaN."""
    return unary_ops.sqrt(nanvar(x, axis=axis, keepdims=keepdims))


def _nan_extreme(reduce: Any, fill: float, path: str, what: str) -> Any:
    def fn(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        x = tensor(x)
        axes = axes_of(axis, x.shape.rank)
        found = reduce(_filled(x, fill), axis=axes, keepdims=keepdims)
        if x.dtype.kind != "f":
            return found
        none = math_ops.equal(_count(x, axes, keepdims), _c(x, 0.0))
        return _where(none, _c(x, np.nan), found)

    fn.__name__, fn.__doc__ = path, f"The {what} of x along `axis`, NaNs ignored (all NaN: NaN)."
    return keras_op(path)(fn)


nanmax = _nan_extreme(reduction_ops.reduce_max, -np.inf, "nanmax", "maximum")
nanmin = _nan_extreme(reduction_ops.reduce_min, np.inf, "nanmin", "minimum")


def _nan_arg(reduce: Any, fill: float, path: str, what: str) -> Any:
    def fn(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        x = tensor(x)
        values = _filled(x, fill)
        if axis is None:
            found = reduce(array_ops.reshape(values, [-1]), axis=0, output_type=dtypes.int32)
            return array_ops.reshape(found, [1] * x.shape.rank) if keepdims else found
        found = reduce(values, axis=axis, output_type=dtypes.int32)
        return array_ops.expand_dims(found, axis) if keepdims else found

    fn.__name__, fn.__doc__ = path, f"The index of the {what} entry along `axis`, NaNs ignored."
    return keras_op(path)(fn)


nanargmax = _nan_arg(reduction_ops.argmax, -np.inf, "nanargmax", "largest")
nanargmin = _nan_arg(reduction_ops.argmin, np.inf, "nanargmin", "smallest")


@keras_op("nancumsum")
def nancumsum(x: Any, axis: Any = None, dtype: Any = None) -> Any:
    """The running sum along `axis` (None: of the flattened x), NaNs counted as 0."""
    return cumsum(_filled(tensor(x), 0.0), axis=axis, dtype=dtype)


@keras_op("nancumprod")
def nancumprod(x: Any, axis: Any = None, dtype: Any = None) -> Any:
    """The running product along `axis` (None: of the flattened x), NaNs counted as 1."""
    return cumprod(_filled(tensor(x), 1.0), axis=axis, dtype=dtype)


# -- averages and spreads -------------------------------------------------------------------------
@keras_op("amax")
def amax(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The maximum of x along `axis` (None: all)."""
    x = tensor(x)
    return reduction_ops.reduce_max(x, axis=axes_of(axis, x.shape.rank), keepdims=keepdims)


@keras_op("amin")
def amin(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The minimum of x along `axis` (None: all)."""
    x = tensor(x)
    return reduction_ops.reduce_min(x, axis=axes_of(axis, x.shape.rank), keepdims=keepdims)


@keras_op("ptp")
def ptp(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """max - min of x along `axis` (None: all)."""
    return amax(x, axis, keepdims) - amin(x, axis, keepdims)


@keras_op("average")
def average(x: Any, axis: int | None = None, weights: Any = None) -> Any:
    """The mean of x along `axis` (None: all), weighted by `weights` (x's shape, or a vector
    along `axis`)."""
    dtype = result_dtype(x, 1.0) if weights is None else result_dtype(x, weights, 1.0)
    x = tensor(x, dtype)
    axes = axes_of(axis, x.shape.rank)
    if weights is None:
        return reduction_ops.reduce_mean(x, axis=axes)
    w = tensor(weights, dtype)
    if w.shape.rank == 1 and x.shape.rank != 1:
        shape = [1] * x.shape.rank
        shape[axes[0]] = -1
        w = array_ops.reshape(w, shape)
    w = w + fill_ops.zeros_like(x)
    return reduction_ops.reduce_sum(x * w, axis=axes) / reduction_ops.reduce_sum(w, axis=axes)


@keras_op("corrcoef")
def corrcoef(x: Any) -> Any:
    """The correlation coefficients of the variables in the rows of x."""
    x = floating(x)
    if x.shape.rank == 1:
        x = array_ops.expand_dims(x, 0)
    centred = x - reduction_ops.reduce_mean(x, axis=1, keepdims=True)
    covariance = matmul_ops.matmul(centred, centred, transpose_b=True)
    variances = matrix_diag_ops.matrix_diag_part(covariance)
    scale = unary_ops.sqrt(array_ops.expand_dims(variances, 1) * variances)
    found = covariance / scale
    return math_ops.minimum(math_ops.maximum(found, _c(found, -1.0)), _c(found, 1.0))


@keras_op("trapezoid")
def trapezoid(y: Any, x: Any = None, dx: float = 1.0, axis: int = -1) -> Any:
    """The integral of y along `axis` by the trapezoid rule, at the points x (or dx apart)."""
    y = floating(y)
    rank = known_rank(y, "trapezoid")
    axis %= rank
    index = (slice(None),) * axis
    heights = (y[index + (slice(1, None),)] + y[index + (slice(None, -1),)]) * _c(y, 0.5)
    if x is None:
        return reduction_ops.reduce_sum(heights, axis=axis) * _c(y, dx)
    x = tensor(x, y.dtype)
    if x.shape.rank == 1 and rank != 1:
        shape = [1] * rank
        shape[axis] = -1
        x = array_ops.reshape(x, shape)
    steps_index = (slice(None),) * (axis if x.shape.rank == rank else 0)
    widths = x[steps_index + (slice(1, None),)] - x[steps_index + (slice(None, -1),)]
    return reduction_ops.reduce_sum(heights * widths, axis=axis)


# -- counting and searching -----------------------------------------------------------------------
@keras_op("searchsorted")
def searchsorted(sorted_sequence: Any, values: Any, side: str = "left") -> Any:
    """Where each value would go in the ascending 1-D `sorted_sequence` to keep it sorted
    (before equal entries with side="left", after them with "right"), int32.

    Raises:
      ValueError: a sorted_sequence that is not 1-D, or another side.
    """
    seq, v = promoted(sorted_sequence, values)
    if known_rank(seq, "searchsorted") != 1:
        raise ValueError(
            f"searchsorted: sorted_sequence must be 1-D, got shape {seq.shape}; map over rows "
            "with ops.vectorized_map."
        )
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}.")
    compare = math_ops.less if side == "left" else math_ops.less_equal
    before = compare(seq, array_ops.expand_dims(v, -1))
    return reduction_ops.reduce_sum(fill_ops.cast(before, dtypes.int32), axis=-1)


@keras_op("digitize")
def digitize(x: Any, bins: Any) -> Any:
    """The index of the bin of each entry: i with bins[i - 1] <= x < bins[i] for ascending
    bins (bins[i - 1] > x >= bins[i] for descending ones), int32."""
    x, edges = promoted(x, bins)
    column = array_ops.expand_dims(x, -1)
    rising = reduction_ops.reduce_sum(
        fill_ops.cast(math_ops.less_equal(edges, column), dtypes.int32), axis=-1
    )
    falling = reduction_ops.reduce_sum(
        fill_ops.cast(math_ops.greater(edges, column), dtypes.int32), axis=-1
    )
    descending = math_ops.greater(edges[0], edges[-1])  # decided when the graph runs
    return _where(descending, falling, rising)


def _length(ids: Any, minlength: int) -> Any:
    """max(ids) + 1, at least `minlength`: an int when the ids are known now."""
    largest = reduction_ops.reduce_max(ids) + 1
    if concrete.is_concrete(largest):
        return builtins.max(int(largest), int(minlength))
    return math_ops.maximum(largest, tensor(int(minlength), ids.dtype))


@keras_op("bincount")
def bincount(x: Any, weights: Any = None, minlength: int = 0, sparse: bool = False) -> Any:
    """How often each non-negative integer occurs in x (or the sum of its `weights`), up to
    max(x) + 1 or `minlength` entries; a 2-D x counts each row.

    Raises:
      NotImplementedError: sparse.
    """
    if sparse:
        raise NotImplementedError("bincount: sparse tensors are not supported.")
    ids = tensor(x, dtypes.int32)
    rank = known_rank(ids, "bincount")
    if weights is None:
        data = fill_ops.ones_like(ids)
    else:
        data = tensor(weights)
    n = _length(ids, minlength)
    if rank == 1:
        return segment_ops.unsorted_segment_sum(data, ids, n)
    rows = fill_ops.shape(ids)[0]
    offsets = array_ops.expand_dims(fill_ops.range(0, rows) * n, 1)
    counts = segment_ops.unsorted_segment_sum(data, ids + offsets, rows * n)
    return array_ops.reshape(counts, join_ops.concat([[rows], [n]], 0))


@keras_op("histogram")
def histogram(x: Any, bins: int = 10, range: Any = None) -> Any:  # noqa: A002
    """(counts, edges): `bins` equal bins over `range` (default: x's min and max), the last one
    closed; entries outside are not counted."""
    x = floating(array_ops.reshape(tensor(x), [-1]))
    if range is None:
        low, high = reduction_ops.reduce_min(x), reduction_ops.reduce_max(x)
    else:
        low, high = _c(x, range[0]), _c(x, range[1])
    edges = linspace(low, high, bins + 1)
    width = (high - low) / _c(x, float(bins))
    index = fill_ops.cast(unary_ops.floor((x - low) / width), dtypes.int32)
    index = math_ops.minimum(index, bins - 1)  # the last edge belongs to the last bin
    inside = math_ops.logical_and(math_ops.greater_equal(x, low), math_ops.less_equal(x, high))
    index = _where(inside, index, tensor(-1, dtypes.int32))  # negative ids are dropped
    counts = segment_ops.unsorted_segment_sum(fill_ops.ones_like(index), index, bins)
    return counts, edges


@keras_op("argpartition")
def argpartition(x: Any, kth: int, axis: int = -1) -> Any:
    """Indices that put x's kth smallest entry along `axis` in place, smaller ones before and
    larger ones after (here: the stable sorting order, one such arrangement)."""
    x = tensor(x)
    if axis is None:
        x, axis = array_ops.reshape(x, [-1]), 0
    return sort_ops.argsort(x, axis=axis, stable=True)
