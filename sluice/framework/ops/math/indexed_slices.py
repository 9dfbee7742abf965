"""`IndexedSlices`: some slices of a tensor along its first dimension (TF1 `tf.IndexedSlices`).

The gradient of `gather(params, indices)` along axis 0 is one: the output gradient's slices with
the indices they came from, so a large embedding table's gradient is never made dense. It is a
Python wrapper of two or three graph tensors, like TF1's, so both engines run it unchanged; a
session fetches it as an `IndexedSlicesValue` namedtuple of NumPy arrays.

Meaning, with repeated indices adding up:

    dense = zeros(dense_shape)
    for i, row in zip(indices, values):
        dense[i] += row

`convert_to_tensor` builds that dense tensor (an UnsortedSegmentSum, as TF does), with TF's
warning when it is large or of unknown size. Ops that take a Tensor convert it the same way.
"""

from __future__ import annotations

import collections
import warnings
from typing import Any

import jax
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import fill_ops, slicing_ops  # noqa: F401  (gives Tensor its [])
from sluice.framework.ops.core import core_ops  # noqa: F401  (gives Tensor its [])
from sluice.framework.ops.core.array_util import INDEX_DTYPES, int_values
from sluice.framework.ops.math import math_ops, segment_ops  # noqa: F401  (gives Tensor its [])

# As TF: converting more elements than this to a dense tensor warns about the memory it takes.
LARGE_DENSE_ELEMENTS = 100_000_000

IndexedSlicesValue = collections.namedtuple(
    "IndexedSlicesValue", ["values", "indices", "dense_shape"]
)
export("IndexedSlicesValue")(IndexedSlicesValue)
IndexedSlicesValue.__doc__ = "What a session returns for an IndexedSlices: NumPy arrays."


@export("IndexedSlices")
class IndexedSlices:
    """Slices `values[i]` of a dense tensor of shape `dense_shape`, at rows `indices[i]`.

    Args:
      values: a Tensor of shape [N, D1, ..., Dn].
      indices: an int32 or int64 vector of N row indices (repeats add up).
      dense_shape: optional int vector: the shape of the dense tensor, [LARGE0, D1, ..., Dn].

    >>> params = sl.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> (g,) = sl.gradients(sl.reduce_sum(sl.gather(params, [2, 0, 2])), [params])
    >>> type(g).__name__
    'IndexedSlices'
    >>> sl.Session().run(sl.convert_to_tensor(g)).tolist()
    [[1.0, 1.0], [0.0, 0.0], [2.0, 2.0]]
    """

    def __init__(self, values: Any, indices: Any, dense_shape: Any = None):
        values = core_ops.convert_to_tensor(values)
        indices = core_ops.convert_to_tensor(indices)
        if indices.dtype not in INDEX_DTYPES:
            raise TypeError(
                f"IndexedSlices: indices must be int32 or int64, got {indices.dtype.name}."
            )
        if indices.shape.rank not in (None, 1):
            raise ValueError(f"IndexedSlices: indices must be a vector, got shape {indices.shape}.")
        if values.shape.rank == 0:
            raise ValueError("IndexedSlices: values must have a first dimension, got a scalar.")
        # As TF1, a pair whose counts differ may be built (its parts used apart, as TF1's tests
        # do with `IndexedSlices(variable, [1])`); it fails only when made dense (`to_dense`).
        if dense_shape is not None:
            dense_shape = core_ops.convert_to_tensor(dense_shape)
            if dense_shape.dtype not in INDEX_DTYPES or dense_shape.shape.rank not in (None, 1):
                raise TypeError(
                    "IndexedSlices: dense_shape must be an int32 or int64 vector, got "
                    f"{dense_shape.dtype.name}{dense_shape.shape}."
                )
        self._values, self._indices, self._dense_shape = values, indices, dense_shape

    @property
    def values(self) -> Tensor:
        return self._values

    @property
    def indices(self) -> Tensor:
        return self._indices

    @property
    def dense_shape(self) -> Tensor | None:
        return self._dense_shape

    @property
    def dtype(self) -> np.dtype:
        return self._values.dtype

    @property
    def name(self) -> str:
        return self._values.name

    @property
    def op(self) -> Any:
        return self._values.op

    @property
    def graph(self) -> Any:
        return self._values.graph

    @property
    def device(self) -> str:
        return self._values.device

    @property
    def shape(self) -> TensorShape:
        """The static shape of the dense tensor, as far as it is known."""
        dims = None if self._dense_shape is None else int_values(self._dense_shape)
        if dims is None:
            tail = self._values.shape.dims
            return TensorShape(None if tail is None else [None, *tail[1:]])
        return TensorShape([None if d is None or d < 0 else d for d in dims])

    def __neg__(self) -> IndexedSlices:
        return IndexedSlices(math_ops.negative(self._values), self._indices, self._dense_shape)

    def __repr__(self) -> str:
        shape = "" if self._dense_shape is None else f", dense_shape={self._dense_shape}"
        return f"IndexedSlices(indices={self._indices}, values={self._values}{shape})"

    def _as_tensor(self, dtype: Any = None) -> Tensor:
        return to_dense(self, dtype)


def to_dense(slices: IndexedSlices, dtype: Any = None, name: str | None = None) -> Tensor:
    """The dense tensor of `slices` (what `convert_to_tensor` gives), rows at repeated indices
    summed; warns, as TF, when it has 1e8 elements or more, or an unknown number of them.

    Raises:
      ValueError: `dtype` is not the slices' dtype, or they have no dense_shape.
    """
    if dtype is not None and dtypes.as_dtype(dtype) != slices.dtype:
        raise ValueError(
            f"Tensor conversion requested dtype {dtypes.as_dtype(dtype).name} for IndexedSlices "
            f"with dtype {slices.dtype.name}."
        )
    if slices.dense_shape is None:
        raise ValueError(
            f"Tensor conversion requested for IndexedSlices without dense_shape: {slices!r}."
        )
    n_values = slices.values.shape[0] if slices.values.shape.rank else None
    n_indices = slices.indices.shape[0] if slices.indices.shape.rank else None
    if None not in (n_values, n_indices) and n_values != n_indices:
        raise ValueError(
            f"IndexedSlices: {n_indices} indices for {n_values} slices (values of shape "
            f"{slices.values.shape}): cannot make them dense."
        )
    dims = int_values(slices.dense_shape)
    if dims is None or None in dims:
        warnings.warn(
            "Converting sparse IndexedSlices to a dense Tensor of unknown shape. "
            "This may consume a large amount of memory.",
            stacklevel=3,
        )
    elif int(np.prod(dims)) >= LARGE_DENSE_ELEMENTS:
        warnings.warn(
            f"Converting sparse IndexedSlices to a dense Tensor with {np.prod(dims)} "
            "elements. This may consume a large amount of memory.",
            stacklevel=3,
        )
    return segment_ops.unsorted_segment_sum(
        slices.values, slices.indices, slices.dense_shape[0], name=name
    )


def as_indexed_slices(x: Any, index_dtype: Any = dtypes.int32) -> IndexedSlices:
    """`x` as IndexedSlices (TF1's `_as_indexed_slices`): a Tensor becomes all its rows, at
    indices 0..n-1, with its shape as the dense shape; IndexedSlices get `index_dtype` indices."""
    index_dtype = dtypes.as_dtype(index_dtype)
    if isinstance(x, IndexedSlices):
        return IndexedSlices(x.values, fill_ops.cast(x.indices, index_dtype), x.dense_shape)
    x = core_ops.convert_to_tensor(x)
    # A Shape op even when the shape is known: a dead `x` (a Switch's other side) gives dead
    # indices and dense_shape, as TF1's (optimize=False), so that a Merge takes the live input.
    dense_shape = core_ops.apply_op("Shape", [x], {"out_type": index_dtype}).outputs[0]
    rows = fill_ops.range(0, dense_shape[0], dtype=index_dtype)
    return IndexedSlices(x, rows, dense_shape)


def as_indexed_slices_list(inputs: list) -> list[IndexedSlices]:
    """`inputs` as IndexedSlices with one index dtype: int64 when they differ (TF1's
    `_as_indexed_slices_list`, which merge uses for a mix of Tensors and IndexedSlices)."""
    kinds = {x.indices.dtype for x in inputs if isinstance(x, IndexedSlices)}
    index_dtype = dtypes.int64 if len(kinds) > 1 else (kinds.pop() if kinds else dtypes.int32)
    return [
        x
        if isinstance(x, IndexedSlices) and x.indices.dtype == index_dtype
        else as_indexed_slices(x, index_dtype)
        for x in inputs
    ]


def dense(gradient: Any) -> Any:
    """`gradient` as a Tensor: IndexedSlices are converted; Tensors and None pass through."""
    return to_dense(gradient) if isinstance(gradient, IndexedSlices) else gradient


# A session fetches the three tensors and hands back an IndexedSlicesValue; structures of graph
# tensors (loop variables, `tuple`) get an IndexedSlices back.
def _flatten(s: IndexedSlices) -> tuple:
    has_shape = s.dense_shape is not None
    children = (s.values, s.indices) + ((s.dense_shape,) if has_shape else ())
    return children, has_shape


def _unflatten(has_shape: bool, children: Any) -> Any:
    children = list(children)
    if any(isinstance(c, Tensor) for c in children):
        return IndexedSlices(*children)
    return IndexedSlicesValue(*(children if has_shape else children + [None]))


jax.tree_util.register_pytree_node(IndexedSlices, _flatten, _unflatten)


@export("python.ops.math_ops._as_indexed_slices")
def _as_indexed_slices(x: Any, optimize: bool = True) -> IndexedSlices:
    """`x` as IndexedSlices: an IndexedSlices unchanged, a Tensor as all its rows (indices
    `range(shape(x)[0])`, dense shape `shape(x)`), as TF1's `math_ops._as_indexed_slices`.

    Raises:
      TypeError: `x` is neither a Tensor nor IndexedSlices.

    >>> s = _as_indexed_slices(sl.constant([[1.0, 2.0], [3.0, 4.0]]))
    >>> sl.Session().run(s.indices).tolist()
    [0, 1]
    """
    del optimize
    if isinstance(x, IndexedSlices):
        return x
    if not isinstance(x, Tensor):
        raise TypeError(f"Not a Tensor or IndexedSlices: {type(x).__name__}")
    shape = fill_ops.shape(x)
    return IndexedSlices(x, fill_ops.range(0, shape[0]), shape)
