"""`keras.ops` functions that make, reshape, index and sort arrays, and the linear algebra ones
(Keras's `ops/numpy.py` and `ops/linalg.py`), as graph code that `eager.keras_op` also runs at
once on values.

>>> sl.ops.arange(4)
Array([0, 1, 2, 3], dtype=int32)
>>> [a.shape for a in sl.ops.split(np.zeros((6, 2)), [1, 4])]
[(1, 2), (3, 2), (2, 2)]
>>> sl.ops.take_along_axis(np.array([[3, 1], [2, 4]]), np.array([[1], [0]]), axis=1)
Array([[1],
       [2]])
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.ops.eager import (
    axes_of,
    floating,
    keras_op,
    known_rank,
    promoted,
    result_dtype,
    standard_dtype,
    tensor,
)
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import (
    array_ops,
    broadcast_ops,
    fill_ops,
    gather_ops,
    join_ops,
    slicing_ops,
)
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.linalg import linalg_ops, matrix_diag_ops
from sluice.framework.ops.math import (
    einsum_ops,
    math_ops,
    matmul_ops,
    reduction_ops,
    sort_ops,
    unary_ops,
)
from sluice.framework.variables import Variable


# -- making arrays --------------------------------------------------------------------------------
def _shape(shape: Any) -> Any:
    """A shape as a list of dimensions, each an int or a scalar tensor (`ops.shape(x)[0]`), or
    a 1-D shape tensor as it is."""
    if isinstance(shape, (list, tuple)):
        return list(shape)
    if isinstance(shape, Tensor):
        return shape if shape.shape.ndims == 1 else [shape]
    return [shape] if isinstance(shape, int) or np.ndim(shape) == 0 else list(shape)


@keras_op("zeros")
def zeros(shape: Any, dtype: Any = None) -> Any:
    """An array of zeros (`floatx()` unless `dtype`)."""
    return fill_ops.zeros(_shape(shape), standard_dtype(dtype))


@keras_op("ones")
def ones(shape: Any, dtype: Any = None) -> Any:
    """An array of ones (`floatx()` unless `dtype`)."""
    return fill_ops.ones(_shape(shape), standard_dtype(dtype))


@keras_op("full")
def full(shape: Any, fill_value: Any, dtype: Any = None) -> Any:
    """An array filled with `fill_value` (its dtype unless `dtype`)."""
    value = tensor(fill_value, dtype and standard_dtype(dtype))
    return broadcast_ops.broadcast_to(value, _shape(shape))


@keras_op("zeros_like")
def zeros_like(x: Any, dtype: Any = None) -> Any:
    """Zeros of x's shape (and dtype unless `dtype`)."""
    x = tensor(x)
    return fill_ops.zeros_like(x, dtype=standard_dtype(dtype, x.dtype))


@keras_op("ones_like")
def ones_like(x: Any, dtype: Any = None) -> Any:
    """Ones of x's shape (and dtype unless `dtype`)."""
    x = tensor(x)
    return fill_ops.ones_like(x, dtype=standard_dtype(dtype, x.dtype))


@keras_op("full_like")
def full_like(x: Any, fill_value: Any, dtype: Any = None) -> Any:
    """`fill_value` in x's shape (and dtype unless `dtype`)."""
    x = tensor(x)
    value = tensor(fill_value, standard_dtype(dtype, x.dtype))
    return broadcast_ops.broadcast_to(value, fill_ops.shape(x))


@keras_op("arange")
def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None) -> Any:
    """Evenly spaced values in [start, stop) (`arange(n)`: 0..n-1); int32 for integers."""
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    dtype = result_dtype(start, stop, step) if dtype is None else standard_dtype(dtype)
    if dtype.kind in "iu":
        return fill_ops.range(tensor(start, dtype), tensor(stop, dtype), tensor(step, dtype))
    wide = dtypes.float64  # a float range counted in float64, then cast (as NumPy counts)
    values = fill_ops.range(tensor(start, wide), tensor(stop, wide), tensor(step, wide))
    return fill_ops.cast(values, dtype)


@keras_op("linspace")
def linspace(
    start: Any,
    stop: Any,
    num: int = 50,
    endpoint: bool = True,
    retstep: bool = False,
    dtype: Any = None,
    axis: int = 0,
) -> Any:
    """`num` evenly spaced values from `start` to `stop` (included unless `endpoint=False`);
    with `retstep`, also the step. Array `start` and `stop` give one sequence per entry along
    `axis`."""
    dtype = standard_dtype(dtype, result_dtype(start, stop, 1.0))
    wide = dtypes.float64
    start, stop = tensor(start, wide), tensor(stop, wide)
    count = num if endpoint else num + 1
    steps = fill_ops.cast(fill_ops.range(0, num), wide)
    step = (stop - start) / tensor(builtins.max(count - 1, 1), wide)
    rank = start.shape.rank or 0
    shape = [num] + [1] * builtins.max(rank, stop.shape.rank or 0)
    values = array_ops.reshape(steps, shape) * step + start
    if endpoint and num > 1:  # the end exactly, not start + (num - 1) * step
        values = join_ops.concat([values[:-1], array_ops.expand_dims(stop + 0 * start, 0)], 0)
    if axis != 0:
        values = moveaxis(values, 0, axis)
    values = fill_ops.cast(values, dtype)
    return (values, fill_ops.cast(step, dtype)) if retstep else values


@keras_op("eye")
def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None) -> Any:  # noqa: N803
    """An N x M matrix with ones on the k-th diagonal."""
    dtype = standard_dtype(dtype)
    M = N if M is None else M  # noqa: N806  (Keras's names)
    rows = array_ops.expand_dims(fill_ops.range(0, N), 1)
    cols = array_ops.expand_dims(fill_ops.range(0, M), 0)
    return fill_ops.cast(math_ops.equal(cols - rows, tensor(k, dtypes.int32)), dtype)


@keras_op("identity")
def identity(n: int, dtype: Any = None) -> Any:
    """The n x n identity matrix."""
    return matrix_diag_ops.eye(n, dtype=standard_dtype(dtype))


def _band(x: Any, k: int, lower: bool) -> Any:
    x = tensor(x)
    rank = known_rank(x, "tril/triu")
    if rank < 2:
        raise ValueError(f"tril/triu need at least 2 dimensions, got shape {x.shape}.")
    rows = array_ops.expand_dims(fill_ops.range(0, fill_ops.shape(x)[-2]), 1)
    cols = array_ops.expand_dims(fill_ops.range(0, fill_ops.shape(x)[-1]), 0)
    offset, k = cols - rows, tensor(k, dtypes.int32)
    keep = math_ops.less_equal(offset, k) if lower else math_ops.greater_equal(offset, k)
    return gather_ops.where_v2(keep, x, fill_ops.zeros_like(x))


@keras_op("tril")
def tril(x: Any, k: int = 0) -> Any:
    """x with the entries above the k-th diagonal zeroed (of its last two axes)."""
    return _band(x, k, lower=True)


@keras_op("triu")
def triu(x: Any, k: int = 0) -> Any:
    """x with the entries below the k-th diagonal zeroed (of its last two axes)."""
    return _band(x, k, lower=False)


# -- shapes ---------------------------------------------------------------------------------------
@keras_op("reshape")
def reshape(x: Any, newshape: Any) -> Any:
    """x with shape `newshape` (one entry may be -1)."""
    return array_ops.reshape(tensor(x), _shape(newshape))


@keras_op("ravel")
def ravel(x: Any) -> Any:
    """x flattened to one axis."""
    return array_ops.reshape(tensor(x), [-1])


@keras_op("transpose")
def transpose(x: Any, axes: Any = None) -> Any:
    """x with its axes permuted (None: reversed)."""
    return array_ops.transpose(tensor(x), None if axes is None else list(axes))


@keras_op("expand_dims")
def expand_dims(x: Any, axis: Any) -> Any:
    """x with new axes of size 1 at `axis` (an int or a tuple)."""
    x = tensor(x)
    if not isinstance(axis, (list, tuple)):
        return array_ops.expand_dims(x, axis)
    rank = known_rank(x, "expand_dims") + len(axis)
    for a in sorted(a % rank for a in axis):
        x = array_ops.expand_dims(x, a)
    return x


@keras_op("squeeze")
def squeeze(x: Any, axis: Any = None) -> Any:
    """x without its axes of size 1 (or only those in `axis`)."""
    x = tensor(x)
    return array_ops.squeeze(x, None if axis is None else axes_of(axis, x.shape.rank))


@keras_op("swapaxes")
def swapaxes(x: Any, axis1: int, axis2: int) -> Any:
    """x with axes `axis1` and `axis2` exchanged."""
    x = tensor(x)
    perm = list(builtins.range(known_rank(x, "swapaxes")))
    a, b = axes_of([axis1, axis2], len(perm))
    perm[a], perm[b] = perm[b], perm[a]
    return array_ops.transpose(x, perm)


@keras_op("moveaxis")
def moveaxis(x: Any, source: Any, destination: Any) -> Any:
    """x with the axes `source` moved to the positions `destination` (the others in order)."""
    x = tensor(x)
    rank = known_rank(x, "moveaxis")
    source, destination = axes_of(source, rank), axes_of(destination, rank)
    if len(source) != len(destination):
        raise ValueError(
            f"moveaxis: `source` {source} and `destination` {destination} must have the same "
            "number of elements."
        )
    perm = [a for a in builtins.range(rank) if a not in source]
    for d, s in sorted(zip(destination, source)):
        perm.insert(d, s)
    return array_ops.transpose(x, perm)


@keras_op("broadcast_to")
def broadcast_to(x: Any, shape: Any) -> Any:
    """x broadcast to `shape`."""
    return broadcast_ops.broadcast_to(tensor(x), _shape(shape))


@keras_op("flip")
def flip(x: Any, axis: Any = None) -> Any:
    """x with the order of its entries reversed along `axis` (None: every axis)."""
    x = tensor(x)
    axes = axes_of(axis, x.shape.rank)
    if axes is None:
        axes = list(builtins.range(known_rank(x, "flip")))
    return array_ops.reverse(x, axes) if axes else x


@keras_op("concatenate")
def concatenate(xs: Any, axis: int = 0) -> Any:
    """The arrays `xs` joined along `axis` (in their common dtype)."""
    return join_ops.concat(promoted(*xs), axis)


@keras_op("stack")
def stack(x: Any, axis: int = 0) -> Any:
    """The arrays `x` stacked along a new `axis` (in their common dtype)."""
    return join_ops.stack(promoted(*x), axis=axis)


@keras_op("hstack")
def hstack(xs: Any) -> Any:
    """The arrays `xs` joined along their second axis (their first, for vectors)."""
    xs = promoted(*xs)
    return join_ops.concat(xs, 0 if xs[0].shape.rank == 1 else 1)


@keras_op("vstack")
def vstack(xs: Any) -> Any:
    """The arrays `xs` (vectors as rows) joined along their first axis."""
    xs = [array_ops.reshape(x, [1, -1]) if x.shape.rank == 1 else x for x in promoted(*xs)]
    return join_ops.concat(xs, 0)


@keras_op("append")
def append(x1: Any, x2: Any, axis: int | None = None) -> Any:
    """x2 after x1 along `axis` (None: both flattened)."""
    x1, x2 = promoted(x1, x2)
    if axis is None:
        x1, x2, axis = array_ops.reshape(x1, [-1]), array_ops.reshape(x2, [-1]), 0
    return join_ops.concat([x1, x2], axis)


@keras_op("slice")
def slice(inputs: Any, start_indices: Any, shape: Any) -> Any:  # noqa: A001  (Keras's name)
    """The block of `inputs` that starts at `start_indices` and has `shape`."""
    return slicing_ops.slice(tensor(inputs), start_indices, _shape(shape))


@export("ops.ndim")
def ndim(x: Any) -> int:
    """The number of axes of x."""
    if isinstance(x, (Tensor, Variable)):
        return known_rank(core_ops.convert_to_tensor(x), "ndim")
    return int(np.ndim(x))


@export("ops.size")
def size(x: Any) -> Any:
    """The number of entries of x (an int when it is known, else a scalar int32 tensor)."""
    if isinstance(x, (Tensor, Variable)):
        n = x.shape.num_elements()
        return n if n is not None else fill_ops.size(core_ops.convert_to_tensor(x))
    return int(np.size(x))


@keras_op("split")
def split(x: Any, indices_or_sections: Any, axis: int = 0) -> Any:
    """x cut along `axis`: into that many equal parts (an int), or at those indices (a list).

    Raises:
      ValueError: an int that does not divide the axis.
    """
    x = tensor(x)
    size = x.shape[axis] if x.shape.rank is not None else None
    if isinstance(indices_or_sections, int):
        if size is not None and size % indices_or_sections:
            raise ValueError(
                f"split: an axis of size {size} cannot be cut into {indices_or_sections} equal "
                "parts."
            )
        return join_ops.split(x, indices_or_sections, axis=axis)
    if size is None:
        raise ValueError(f"split at indices needs the size of axis {axis}; x has {x.shape}.")
    bounds = [0] + [builtins.min(builtins.max(int(i), 0), size) for i in indices_or_sections]
    bounds.append(size)
    sizes = [builtins.max(b - a, 0) for a, b in zip(bounds, bounds[1:])]
    return join_ops.split(x, sizes, axis=axis)


@keras_op("unstack")
def unstack(x: Any, num: int | None = None, axis: int = 0) -> Any:
    """The slices of x along `axis`, as a list."""
    return join_ops.unstack(tensor(x), num=num, axis=axis)


@keras_op("tile")
def tile(x: Any, repeats: Any) -> Any:
    """x repeated `repeats[i]` times along axis i (missing leading entries count as 1)."""
    x = tensor(x)
    repeats = _shape(repeats)
    rank = known_rank(x, "tile")
    if len(repeats) > rank:
        x = array_ops.reshape(x, [1] * (len(repeats) - rank) + x.shape.as_list())
        rank = len(repeats)
    return broadcast_ops.tile(x, [1] * (rank - len(repeats)) + [int(r) for r in repeats])


@keras_op("repeat")
def repeat(x: Any, repeats: Any, axis: int | None = None) -> Any:
    """Each entry of x repeated `repeats` times along `axis` (None: of the flattened x);
    `repeats` is an int or one count per entry (known values)."""
    x = tensor(x)
    if axis is None:
        x, axis = array_ops.reshape(x, [-1]), 0
    counts = np.asarray(repeats)
    if counts.ndim == 0:
        size = x.shape[axis]
        index = np.repeat(np.arange(size), int(counts)) if size is not None else None
        if index is None:  # an unknown length: tile a new axis after `axis`, then merge
            expanded = array_ops.expand_dims(x, axis + 1 if axis >= 0 else axis)
            multiples = [1] * (known_rank(x, "repeat") + 1)
            multiples[(axis % x.shape.rank) + 1] = int(counts)
            tiled = broadcast_ops.tile(expanded, multiples)
            shape = fill_ops.shape(x)
            merged = join_ops.concat(
                [shape[: axis % x.shape.rank], [-1], shape[axis % x.shape.rank + 1 :]], 0
            )
            return array_ops.reshape(tiled, merged)
    else:
        index = np.repeat(np.arange(counts.size), counts)
    return gather_ops.gather(x, index.astype(np.int32), axis=axis)


@keras_op("take")
def take(x: Any, indices: Any, axis: int | None = None) -> Any:
    """The entries of x at `indices` along `axis` (None: of the flattened x); negative
    indices count from the end."""
    x = tensor(x)
    if axis is None:
        x, axis = array_ops.reshape(x, [-1]), 0
    indices = tensor(indices)
    if indices.dtype.kind not in "iu":
        indices = fill_ops.cast(indices, dtypes.int32)
    size = fill_ops.cast(fill_ops.shape(x)[axis], indices.dtype)
    zero = tensor(0, indices.dtype)
    indices = gather_ops.where_v2(math_ops.less(indices, zero), indices + size, indices)
    return gather_ops.gather(x, indices, axis=axis)


@keras_op("take_along_axis")
def take_along_axis(x: Any, indices: Any, axis: int | None = None) -> Any:
    """The entries of x at `indices` along `axis` (indices shaped like x there, broadcast
    elsewhere; None: of the flattened x); negative indices count from the end."""
    x, indices = tensor(x), tensor(indices)
    if axis is None:
        x, indices, axis = array_ops.reshape(x, [-1]), array_ops.reshape(indices, [-1]), 0
    rank = known_rank(x, "take_along_axis")
    if indices.shape.rank != rank:
        raise ValueError(
            f"take_along_axis: x {x.shape} and indices {indices.shape} must have the same rank."
        )
    axis %= rank
    indices = fill_ops.cast(indices, dtypes.int32)
    x_shape, i_shape = fill_ops.shape(x), fill_ops.shape(indices)
    # broadcast every axis but `axis` (NumPy's rule), keeping each one's own length there
    other = math_ops.maximum(x_shape, i_shape)
    x = broadcast_ops.broadcast_to(
        x, join_ops.concat([other[:axis], x_shape[axis : axis + 1], other[axis + 1 :]], 0)
    )
    indices = broadcast_ops.broadcast_to(
        indices, join_ops.concat([other[:axis], i_shape[axis : axis + 1], other[axis + 1 :]], 0)
    )
    size = fill_ops.shape(x)[axis]
    indices = gather_ops.where_v2(math_ops.less(indices, 0), indices + size, indices)
    x_last, i_last = moveaxis(x, axis, -1), moveaxis(indices, axis, -1)
    flat_x = array_ops.reshape(x_last, [-1])
    rows = reduction_ops.reduce_prod(fill_ops.shape(i_last)[:-1])
    offsets = fill_ops.range(0, rows) * size
    flat_i = array_ops.reshape(i_last, [rows, -1]) + array_ops.expand_dims(offsets, 1)
    found = array_ops.reshape(gather_ops.gather(flat_x, flat_i), fill_ops.shape(i_last))
    return moveaxis(found, -1, axis)


@keras_op("pad")
def pad(x: Any, pad_width: Any, mode: str = "constant", constant_values: Any = None) -> Any:
    """x padded by `pad_width` ((before, after) per axis, or one pair or int for all):
    "constant" (with `constant_values`, default 0), "reflect" or "symmetric"."""
    x = tensor(x)
    rank = known_rank(x, "pad")
    widths = np.broadcast_to(np.asarray(pad_width, np.int64), (rank, 2)).tolist()
    mode = mode.lower()
    if mode not in ("constant", "reflect", "symmetric"):
        raise ValueError(f"pad: mode must be constant, reflect or symmetric, got {mode!r}.")
    if constant_values is not None and mode != "constant":
        raise ValueError(f"pad: constant_values is for mode='constant', not {mode!r}.")
    value = 0 if constant_values is None else constant_values
    return join_ops.pad(x, widths, mode=mode.upper(), constant_values=tensor(value, x.dtype))


# -- sorting --------------------------------------------------------------------------------------
@keras_op("sort")
def sort(x: Any, axis: int = -1) -> Any:
    """x sorted in ascending order along `axis`."""
    return sort_ops.sort(tensor(x), axis=axis)


@keras_op("argsort")
def argsort(x: Any, axis: int = -1) -> Any:
    """The indices that sort x along `axis` (ties in order), int32."""
    return sort_ops.argsort(tensor(x), axis=axis, stable=True)


@keras_op("top_k")
def top_k(x: Any, k: int, sorted: bool = True) -> Any:  # noqa: A002  (Keras's name)
    """(values, indices) of the `k` largest entries along the last axis."""
    found = sort_ops.top_k(tensor(x), k=k, sorted=sorted)
    return found.values, found.indices


@keras_op("in_top_k")
def in_top_k(targets: Any, predictions: Any, k: int) -> Any:
    """Whether each target id is among the `k` largest predictions of its row."""
    ids = tensor(targets)
    ids = ids if ids.dtype in (dtypes.int32, dtypes.int64) else fill_ops.cast(ids, dtypes.int32)
    return sort_ops.in_top_k(tensor(predictions, dtypes.float32), ids, k)


# -- linear algebra -------------------------------------------------------------------------------
@keras_op("matmul")
def matmul(x1: Any, x2: Any) -> Any:
    """The matrix product of x1 and x2 (batched over leading axes)."""
    return matmul_ops.matmul(*promoted(x1, x2))


@keras_op("dot")
def dot(x1: Any, x2: Any) -> Any:
    """NumPy's dot: a product with a scalar, the inner product of vectors, else the sum over
    x1's last axis and x2's second-to-last (its only one for a vector)."""
    x1, x2 = promoted(x1, x2)
    r1, r2 = known_rank(x1, "dot"), known_rank(x2, "dot")
    if r1 == 0 or r2 == 0:
        return x1 * x2
    if r2 == 1:
        return einsum_ops.tensordot(x1, x2, [[r1 - 1], [0]])
    return einsum_ops.tensordot(x1, x2, [[r1 - 1], [r2 - 2]])


@keras_op("tensordot")
def tensordot(x1: Any, x2: Any, axes: Any = 2) -> Any:
    """The sum over the last `axes` axes of x1 and first of x2 (or the axes listed)."""
    return einsum_ops.tensordot(*promoted(x1, x2), axes)


@keras_op("einsum")
def einsum(subscripts: str, *operands: Any, **kwargs: Any) -> Any:
    """Einstein summation of `operands` as `subscripts` says ("ij,jk->ik")."""
    return einsum_ops.einsum(subscripts, *promoted(*operands), **kwargs)


@keras_op("outer")
def outer(x1: Any, x2: Any) -> Any:
    """The outer product of x1 and x2, flattened: [len(x1), len(x2)]."""
    x1, x2 = promoted(x1, x2)
    return array_ops.reshape(x1, [-1, 1]) * array_ops.reshape(x2, [1, -1])


@keras_op("norm")
def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A002
    """A vector norm (`axis` an int, or x a vector) or matrix norm (`axis` two ints, or x a
    matrix). Vectors: ord None or 2 (Euclidean), inf, -inf, 0 (nonzero count) or any p.
    Matrices: ord None or "fro", "nuc", 1, -1, 2, -2, inf, -inf. Integers give `floatx()`.

    Raises:
      ValueError: an `ord` the kind of norm does not have, or more than two axes.
    """
    x = floating(x)
    rank = known_rank(x, "norm")
    axes = axes_of(axis, rank)
    if axes is None:
        if ord is not None and rank not in (1, 2):
            raise ValueError(f"norm: ord={ord!r} needs `axis` for an input of rank {rank}.")
        axes = list(builtins.range(rank))
        if ord is None:  # the 2-norm of the flattened x
            return unary_ops.sqrt(
                reduction_ops.reduce_sum(unary_ops.square(x), axis=axes, keepdims=keepdims)
            )
    if len(axes) == 1:
        return _vector_norm(x, ord, axes[0], keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError(f"norm: `axis` must be an int or two ints, got {axis!r}.")


def _vector_norm(x: Any, ord: Any, axis: int, keepdims: bool) -> Any:  # noqa: A002
    a = unary_ops.abs(x)
    if ord is None or ord == 2:
        return unary_ops.sqrt(reduction_ops.reduce_sum(a * a, axis=axis, keepdims=keepdims))
    if ord == np.inf:
        return reduction_ops.reduce_max(a, axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return reduction_ops.reduce_min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        nonzero = fill_ops.cast(math_ops.not_equal(x, tensor(0, x.dtype)), x.dtype)
        return reduction_ops.reduce_sum(nonzero, axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError(f"norm: ord={ord!r} is a matrix norm; a vector norm takes a number.")
    p = tensor(float(ord), x.dtype)
    total = reduction_ops.reduce_sum(math_ops.pow(a, p), axis=axis, keepdims=keepdims)
    return math_ops.pow(total, tensor(1.0 / float(ord), x.dtype))


def _matrix_norm(x: Any, ord: Any, axes: list, keepdims: bool) -> Any:  # noqa: A002
    row, col = axes
    a = unary_ops.abs(x)
    if ord is None or ord == "fro":
        found = unary_ops.sqrt(reduction_ops.reduce_sum(a * a, axis=axes, keepdims=True))
    elif ord in (1, -1, np.inf, -np.inf):
        summed, then = (row, col) if ord in (1, -1) else (col, row)
        sums = reduction_ops.reduce_sum(a, axis=summed, keepdims=True)
        pick = reduction_ops.reduce_max if ord in (1, np.inf) else reduction_ops.reduce_min
        found = pick(sums, axis=then, keepdims=True)
    elif ord in (2, -2, "nuc"):
        moved = moveaxis(x, [row, col], [-2, -1])
        singular = linalg_ops.svd(moved, compute_uv=False)
        if ord == "nuc":
            found = reduction_ops.reduce_sum(singular, axis=-1)
        else:
            pick = reduction_ops.reduce_max if ord == 2 else reduction_ops.reduce_min
            found = pick(singular, axis=-1)
        for a_ in sorted((row, col)):
            found = array_ops.expand_dims(found, a_)
    else:
        raise ValueError(f"norm: ord={ord!r} is not a matrix norm.")
    return found if keepdims else array_ops.squeeze(found, axes)


@keras_op("trace")
def trace(x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """The sum of the `offset` diagonal of the matrices on axes (axis1, axis2)."""
    x = tensor(x)
    rank = known_rank(x, "trace")
    moved = moveaxis(x, axes_of([axis1, axis2], rank), [-2, -1])
    mask = eye(fill_ops.shape(moved)[-2], fill_ops.shape(moved)[-1], k=offset, dtype=x.dtype)
    return reduction_ops.reduce_sum(moved * mask, axis=[-2, -1])


@keras_op("convert_to_tensor")
def convert_to_tensor(x: Any, dtype: Any = None, sparse: Any = None, ragged: Any = None) -> Any:
    """x as a tensor (on values: an `sl.Array`), cast to `dtype` when given."""
    if sparse or ragged:
        raise NotImplementedError("Sparse and ragged tensors are not supported.")
    return tensor(x, None if dtype is None else standard_dtype(dtype))
