"""`keras.ops` functions that make, cut, join and rearrange arrays beyond `arrays` (Keras's
`ops/numpy.py`), composed of graph ops that `eager.keras_op` also runs at once on values.

>>> sl.ops.roll(np.arange(5), 2)
Array([3, 4, 0, 1, 2])
>>> sl.ops.diff(np.array([1, 4, 9, 16]))
Array([3, 5, 7])
>>> sl.ops.tri(2, 3, dtype="int32")
Array([[1, 0, 0],
       [1, 1, 0]], dtype=int32)
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.array import as_array
from sluice._keras.ops.arrays import eye, flip, linspace, moveaxis, split, tensordot
from sluice._keras.ops.convolution import conv
from sluice._keras.ops.eager import (
    axes_of,
    floating,
    in_graph_code,
    keras_op,
    known_rank,
    promoted,
    result_dtype,
    standard_dtype,
    tensor,
)
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import (
    array_ops,
    broadcast_ops,
    fill_ops,
    gather_ops,
    grid_ops,
    join_ops,
    unique_ops,
)
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops, segment_ops, sort_ops, unary_ops


def _c(x: Any, value: Any) -> Any:
    return tensor(value, x.dtype)


# -- making arrays --------------------------------------------------------------------------------
@keras_op("array")
def array(x: Any, dtype: Any = None) -> Any:
    """x as an array (cast to `dtype` when given)."""
    return tensor(x, None if dtype is None else standard_dtype(dtype))


@keras_op("copy")
def copy(x: Any) -> Any:
    """A copy of x."""
    return core_ops.identity(tensor(x))


@keras_op("empty")
def empty(shape: Any, dtype: Any = None) -> Any:
    """An array of `shape` (its entries are zeros here)."""
    return fill_ops.zeros(list(shape) if not isinstance(shape, int) else [shape],
                          standard_dtype(dtype))  # fmt: skip


@keras_op("empty_like")
def empty_like(x: Any, dtype: Any = None) -> Any:
    """An array of x's shape (its entries are zeros here)."""
    x = tensor(x)
    return fill_ops.zeros_like(x, dtype=standard_dtype(dtype, x.dtype))


@keras_op("tri")
def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = None) -> Any:  # noqa: N803
    """An N x M matrix with ones on and below the k-th diagonal."""
    M = N if M is None else M  # noqa: N806  (Keras's names)
    rows = array_ops.expand_dims(fill_ops.range(0, N), 1)
    cols = array_ops.expand_dims(fill_ops.range(0, M), 0)
    return fill_ops.cast(math_ops.less_equal(cols - rows, k), standard_dtype(dtype))


@keras_op("logspace")
def logspace(
    start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: float = 10,
    dtype: Any = None, axis: int = 0,
) -> Any:  # fmt: skip
    """base ** linspace(start, stop, num)."""
    exponents = linspace(start, stop, num, endpoint=endpoint, axis=axis, dtype="float64")
    values = math_ops.pow(_c(exponents, base), exponents)
    return fill_ops.cast(values, standard_dtype(dtype, result_dtype(start, stop, 1.0)))


@keras_op("geomspace")
def geomspace(
    start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None, axis: int = 0
) -> Any:
    """`num` values from start to stop, evenly spaced on a log scale (same signs)."""
    start64, stop64 = tensor(start, dtypes.float64), tensor(stop, dtypes.float64)
    sign = unary_ops.sign(start64)
    logs = linspace(unary_ops.log(unary_ops.abs(start64)), unary_ops.log(unary_ops.abs(stop64)),
                    num, endpoint=endpoint, axis=axis, dtype="float64")  # fmt: skip
    values = sign * unary_ops.exp(logs)
    return fill_ops.cast(values, standard_dtype(dtype, result_dtype(start, stop, 1.0)))


@keras_op("vander")
def vander(x: Any, N: int | None = None, increasing: bool = False) -> Any:  # noqa: N803
    """The matrix of powers of the vector x (x ** (N - 1) first unless `increasing`)."""
    x = tensor(x)
    n = x.shape[0] if N is None else N
    powers = np.arange(n) if increasing else np.arange(n)[::-1]
    return math_ops.pow(array_ops.expand_dims(x, 1), tensor(powers.copy(), x.dtype))


@keras_op("meshgrid")
def meshgrid(*x: Any, indexing: str = "xy") -> Any:
    """Coordinate grids of the vectors x ("xy": Cartesian, "ij": matrix indexing)."""
    return grid_ops.meshgrid(*promoted(*x), indexing=indexing)


# -- diagonals ------------------------------------------------------------------------------------
@keras_op("diagonal")
def diagonal(x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """The `offset` diagonal of the matrices on axes (axis1, axis2), as a last axis."""
    x = tensor(x)
    rank = known_rank(x, "diagonal")
    moved = moveaxis(x, axes_of([axis1, axis2], rank), [-2, -1])
    rows, cols = moved.shape[-2], moved.shape[-1]
    if rows is None or cols is None:
        raise ValueError(f"diagonal: the matrix dimensions of {x.shape} must be known.")
    start_row, start_col = builtins.max(-offset, 0), builtins.max(offset, 0)
    length = builtins.max(builtins.min(rows - start_row, cols - start_col), 0)
    flat = array_ops.reshape(moved, join_ops.concat([fill_ops.shape(moved)[:-2], [rows * cols]], 0))
    picks = np.array([(start_row + i) * cols + start_col + i for i in range(length)], np.int32)
    return gather_ops.gather(flat, picks, axis=rank - 2)


@keras_op("diag")
def diag(x: Any, k: int = 0) -> Any:
    """The k-th diagonal of a matrix, or a matrix with the vector x on its k-th diagonal."""
    x = tensor(x)
    rank = known_rank(x, "diag")
    if rank == 2:
        return diagonal(x, offset=k)
    if rank != 1:
        raise ValueError(f"diag: x must be 1-D or 2-D, got shape {x.shape}.")
    n = x.shape[0]
    if n is None:
        raise ValueError("diag: the length of x must be known.")
    size = n + builtins.abs(k)
    mask = eye(size, size, k=k, dtype=x.dtype)
    # entry (i + max(-k, 0), i + max(k, 0)) holds x[i]: x along the columns, shifted into place
    padded = join_ops.pad(x, [[builtins.max(k, 0), builtins.max(-k, 0)]])
    return mask * array_ops.expand_dims(padded, 0)


@keras_op("diagflat")
def diagflat(x: Any, k: int = 0) -> Any:
    """A matrix with the flattened x on its k-th diagonal."""
    return diag(array_ops.reshape(tensor(x), [-1]), k)


# -- rearranging ----------------------------------------------------------------------------------
@keras_op("roll")
def roll(x: Any, shift: Any, axis: Any = None) -> Any:
    """x with its entries moved `shift` places along `axis` (None: of the flattened x),
    wrapping around."""
    x = tensor(x)
    if axis is None:
        return array_ops.reshape(roll(array_ops.reshape(x, [-1]), shift, 0), fill_ops.shape(x))
    shifts = shift if isinstance(shift, (list, tuple)) else [shift]
    axes = axes_of(axis, known_rank(x, "roll"))
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    for s, a in zip(shifts, axes):
        size = x.shape[a]
        if size is None:
            raise ValueError(f"roll: the length of axis {a} of {x.shape} must be known.")
        if size == 0:
            continue
        s = int(s) % size
        if s:
            index = (slice(None),) * a
            x = join_ops.concat([x[index + (slice(size - s, None),)],
                                 x[index + (slice(0, size - s),)]], a)  # fmt: skip
    return x


@keras_op("rot90")
def rot90(array: Any, k: int = 1, axes: tuple = (0, 1)) -> Any:  # noqa: A002
    """The array rotated by 90 degrees k times, from the first axis toward the second."""
    x = tensor(array)
    a, b = axes_of(list(axes), known_rank(x, "rot90"))
    k %= 4
    if k == 0:
        return x
    if k == 2:
        return flip(flip(x, a), b)
    perm = list(range(x.shape.rank))
    perm[a], perm[b] = perm[b], perm[a]
    if k == 1:
        return array_ops.transpose(flip(x, b), perm)
    return flip(array_ops.transpose(x, perm), b)


@keras_op("fliplr")
def fliplr(x: Any) -> Any:
    """x reversed along its second axis."""
    return flip(x, 1)


@keras_op("flipud")
def flipud(x: Any) -> Any:
    """x reversed along its first axis."""
    return flip(x, 0)


@keras_op("array_split")
def array_split(x: Any, indices_or_sections: Any, axis: int = 0) -> Any:
    """x cut along `axis` into that many parts, the first ones one longer when the length does
    not divide (an int), or at the indices (a list)."""
    x = tensor(x)
    if not isinstance(indices_or_sections, int):
        return split(x, indices_or_sections, axis)
    size = x.shape[axis]
    if size is None:
        raise ValueError(f"array_split: the length of axis {axis} of {x.shape} must be known.")
    n = indices_or_sections
    sizes = [size // n + (1 if i < size % n else 0) for i in range(n)]
    return join_ops.split(x, sizes, axis=axis)


def _split_along(axis: int, path: str, what: str) -> Any:
    def fn(x: Any, indices_or_sections: Any) -> Any:
        x = tensor(x)
        along = 0 if axis == 1 and x.shape.rank == 1 else axis
        return split(x, indices_or_sections, along)

    fn.__name__, fn.__doc__ = path, f"x cut along its {what} axis (`split`)."
    return keras_op(path)(fn)


hsplit = _split_along(1, "hsplit", "second (first, for vectors)")
vsplit = _split_along(0, "vsplit", "first")
dsplit = _split_along(2, "dsplit", "third")


@keras_op("dstack")
def dstack(xs: Any) -> Any:
    """The arrays joined along a third axis (vectors as [1, n, 1], matrices as [m, n, 1])."""
    parts = []
    for x in promoted(*xs):
        rank = known_rank(x, "dstack")
        if rank == 1:
            x = array_ops.reshape(x, [1, -1, 1])
        elif rank == 2:
            x = array_ops.expand_dims(x, 2)
        parts.append(x)
    return join_ops.concat(parts, 2)


@keras_op("column_stack")
def column_stack(xs: Any) -> Any:
    """The arrays as columns: vectors become columns, matrices are joined along axis 1."""
    parts = [array_ops.expand_dims(x, 1) if x.shape.rank == 1 else x for x in promoted(*xs)]
    return join_ops.concat(parts, 1)


@keras_op("diff")
def diff(a: Any, n: int = 1, axis: int = -1) -> Any:
    """The n-th differences along `axis`: a[1:] - a[:-1], n times."""
    x = tensor(a)
    rank = known_rank(x, "diff")
    axis %= rank
    index = (slice(None),) * axis
    for _ in range(n):
        x = x[index + (slice(1, None),)] - x[index + (slice(None, -1),)]
    return x


@keras_op("select")
def select(condlist: Any, choicelist: Any, default: Any = 0) -> Any:
    """The entry of the first choice whose condition holds, else `default`."""
    choices = promoted(*choicelist, default)
    found = choices[-1]
    for condition, choice in reversed(list(zip(condlist, choices[:-1]))):
        condition = tensor(condition, dtypes.bool_)
        zeros = fill_ops.zeros_like(choice) + fill_ops.zeros_like(found)
        found = gather_ops.where_v2(condition, choice + zeros, found + zeros)
    return found


# -- products -------------------------------------------------------------------------------------
@keras_op("vdot")
def vdot(x1: Any, x2: Any) -> Any:
    """The dot product of the flattened x1 (conjugated) and x2."""
    a, b = promoted(x1, x2)
    if a.dtype.kind == "c":
        a = unary_ops.conj(a)
    return reduction_ops.reduce_sum(array_ops.reshape(a, [-1]) * array_ops.reshape(b, [-1]))


@keras_op("inner")
def inner(x1: Any, x2: Any) -> Any:
    """The sum over the last axes of x1 and x2 (a product for scalars)."""
    a, b = promoted(x1, x2)
    if a.shape.rank == 0 or b.shape.rank == 0:
        return a * b
    return tensordot(a, b, [[a.shape.rank - 1], [b.shape.rank - 1]])


@keras_op("kron")
def kron(x1: Any, x2: Any) -> Any:
    """The Kronecker product: blocks x1[i] * x2."""
    a, b = promoted(x1, x2)
    ra, rb = known_rank(a, "kron"), known_rank(b, "kron")
    rank = builtins.max(ra, rb)
    a = array_ops.reshape(a, [1] * (rank - ra) + a.shape.as_list())
    b = array_ops.reshape(b, [1] * (rank - rb) + b.shape.as_list())
    # a[i..] * b[j..] at [i0, j0, i1, j1, ...], then merged pairwise
    a_wide = array_ops.reshape(a, [d for s in a.shape.as_list() for d in (s, 1)])
    b_wide = array_ops.reshape(b, [d for s in b.shape.as_list() for d in (1, s)])
    product = a_wide * b_wide
    sizes = [p * q for p, q in zip(a.shape.as_list(), b.shape.as_list())]
    return array_ops.reshape(product, sizes)


@keras_op("cross")
def cross(x1: Any, x2: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Any:  # fmt: skip
    """The cross product of 3-vectors (2-vectors are given a zero third entry; two 2-vectors
    give the scalar z component) along the given axes."""
    a, b = promoted(x1, x2)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    na, nb = a.shape[-1], b.shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(f"cross: vectors must have 2 or 3 entries; got {na} and {nb}.")
    a0, a1 = a[..., 0], a[..., 1]
    b0, b1 = b[..., 0], b[..., 1]
    if na == 2 and nb == 2:
        return a0 * b1 - a1 * b0
    a2 = a[..., 2] if na == 3 else fill_ops.zeros_like(a0)
    b2 = b[..., 2] if nb == 3 else fill_ops.zeros_like(b0)
    c = join_ops.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return moveaxis(c, -1, axisc)


@keras_op("correlate")
def correlate(x1: Any, x2: Any, mode: str = "valid") -> Any:
    """The cross-correlation of two vectors, sum_n x1[n + k] * x2[n], in NumPy's modes
    "valid", "same" and "full"."""
    a, b = promoted(floating(x1), floating(x2))
    n, m = a.shape[0], b.shape[0]
    if n is None or m is None:
        raise ValueError("correlate: the lengths of x1 and x2 must be known.")
    if mode not in ("valid", "same", "full"):
        raise ValueError(f"correlate: mode must be valid, same or full, got {mode!r}.")
    if n < m:  # NumPy swaps them, and reverses the result
        return flip(correlate(b, a, mode), 0)
    pad = {"valid": (0, 0), "full": (m - 1, m - 1), "same": (m // 2, m - 1 - m // 2)}[mode]
    padded = join_ops.pad(a, [list(pad)])
    found = conv(array_ops.reshape(padded, [1, -1, 1]), array_ops.reshape(b, [-1, 1, 1]))
    return array_ops.reshape(found, [-1])


# -- indices --------------------------------------------------------------------------------------
@keras_op("nonzero")
def nonzero(x: Any) -> Any:
    """The indices of the nonzero entries, one vector per axis (their number depends on the
    values: on graph tensors, a Where op that the whole-step compiler cannot lower)."""
    x = tensor(x)
    found = gather_ops.where(math_ops.not_equal(x, _c(x, 0)))
    found = fill_ops.cast(found, dtypes.int32)
    return tuple(found[:, i] for i in range(known_rank(x, "nonzero")))


@keras_op("unravel_index")
def unravel_index(indices: Any, shape: Any) -> Any:
    """The index tuples (one array per axis of `shape`) of the flat `indices`."""
    flat = tensor(indices)
    out = []
    for size in reversed(list(shape)):
        size = tensor(int(size), flat.dtype)
        out.append(math_ops.floormod(flat, size))
        flat = math_ops.floordiv(flat, size)
    return tuple(reversed(out))


@keras_op("unique")
def unique(
    x: Any,
    sorted: bool = True,  # noqa: A002
    return_index: bool = False,
    return_inverse: bool = False,
    return_counts: bool = False,
    axis: int | None = None,
    size: int | None = None,
    fill_value: Any = None,
) -> Any:
    """The distinct values of the flattened x, ascending (in order of appearance without
    `sorted`); with `return_index` where each first occurs, with `return_inverse` the index of
    each entry among them, with `return_counts` how often each occurs (int32); with `size`,
    padded with `fill_value` (default: the smallest value) or cut to that many.

    Raises:
      NotImplementedError: `axis` (unique rows or columns).
    """
    if axis is not None:
        raise NotImplementedError("unique: `axis` is not supported; x is flattened.")
    x = array_ops.reshape(tensor(x), [-1])
    values, index, counts = unique_ops.unique_with_counts(x)
    first = segment_ops.unsorted_segment_min(
        fill_ops.range(0, fill_ops.size(x)), index, fill_ops.size(values)
    )
    if sorted:
        order = _argsort(values)
        values, counts = gather_ops.gather(values, order), gather_ops.gather(counts, order)
        first = gather_ops.gather(first, order)
        index = gather_ops.gather(_argsort(order), index)
    if size is not None:
        fill = reduction_ops.reduce_min(x) if fill_value is None else tensor(fill_value, x.dtype)
        values = _resize(values, size, fill)
        counts = _resize(counts, size, tensor(0, counts.dtype))
        first = _resize(first, size, tensor(0, first.dtype))
    found = [values]
    if return_index:
        found.append(fill_ops.cast(first, dtypes.int32))
    if return_inverse:
        found.append(fill_ops.cast(index, dtypes.int32))
    if return_counts:
        found.append(fill_ops.cast(counts, dtypes.int32))
    return found[0] if len(found) == 1 else tuple(found)


def _argsort(x: Any) -> Any:
    return sort_ops.argsort(x, axis=0, stable=True)


def _resize(v: Any, size: int, fill: Any) -> Any:
    padded = join_ops.concat([v, broadcast_ops.broadcast_to(fill, [size])], 0)
    return padded[:size]


@export("ops.get_item")
def get_item(x: Any, key: Any) -> Any:
    """x[key] (on values: an `sl.Array`)."""
    if in_graph_code((x, key)):
        return tensor(x)[key]
    return as_array(np.asarray(x)[key])


@export("ops.view")
def view(x: Any, dtype: Any = None) -> Any:
    """x's bytes read as `dtype` (`np.ndarray.view`), on values.

    Raises:
      NotImplementedError: on graph tensors (their bytes are a run's).
    """
    if in_graph_code(x):
        raise NotImplementedError("view: reinterpreting bytes is not supported on graph tensors.")
    values = np.asarray(x)
    return as_array(values if dtype is None else values.view(standard_dtype(dtype)))


@export("ops.vectorize")
def vectorize(pyfunc: Callable, *, excluded: Any = None, signature: str | None = None) -> Callable:
    """`pyfunc` (on scalars, or on the core shapes of `signature`) made to map over arrays,
    as `np.vectorize`: calls on values loop over the entries; graph tensors are refused.

    Raises:
      NotImplementedError: a call on graph tensors (each entry would be its own subgraph).
    """
    looped = np.vectorize(pyfunc, excluded=excluded or set(), signature=signature)

    def vectorized(*args: Any, **kwargs: Any) -> Any:
        if in_graph_code((args, kwargs)):
            raise NotImplementedError(
                "vectorize: calls on graph tensors are not supported; use ops.map or "
                "ops.vectorized_map."
            )
        plain = [np.asarray(a) if hasattr(a, "__array__") else a for a in args]
        return as_array(looped(*plain, **kwargs))

    return vectorized


# -- windows --------------------------------------------------------------------------------------
def _window(values: Callable[[np.ndarray, int], np.ndarray], path: str, doc: str) -> Any:
    def fn(x: int) -> Any:
        n = int(x)
        k = np.arange(n, dtype=np.float64)
        found = values(k, n) if n > 1 else np.ones(n)
        return fill_ops.cast(tensor(found), dtypes.float32)

    fn.__name__, fn.__doc__ = path, doc
    return keras_op(path)(fn)


bartlett = _window(lambda k, n: 1 - np.abs(2 * k / (n - 1) - 1), "bartlett",
                   "The Bartlett (triangular) window of M points.")  # fmt: skip
hanning = _window(lambda k, n: 0.5 - 0.5 * np.cos(2 * np.pi * k / (n - 1)), "hanning",
                  "The Hann window of M points.")  # fmt: skip
hamming = _window(lambda k, n: 0.54 - 0.46 * np.cos(2 * np.pi * k / (n - 1)), "hamming",
                  "The Hamming window of M points.")  # fmt: skip
blackman = _window(
    lambda k, n: 0.42 - 0.5 * np.cos(2 * np.pi * k / (n - 1)) + 0.08 * np.cos(
        4 * np.pi * k / (n - 1)),
    "blackman", "The Blackman window of M points.",
)  # fmt: skip


@keras_op("kaiser")
def kaiser(x: int, beta: float) -> Any:
    """The Kaiser window of M points with shape parameter beta."""
    n = int(x)
    k = np.arange(n, dtype=np.float64)
    ratio = (2 * k / (n - 1) - 1) if n > 1 else np.zeros(n)
    found = np.i0(beta * np.sqrt(np.clip(1 - ratio**2, 0, None))) / np.i0(beta)
    return fill_ops.cast(tensor(found), dtypes.float32)
