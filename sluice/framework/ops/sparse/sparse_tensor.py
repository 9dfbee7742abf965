"""`SparseTensor`: a tensor given by the coordinates and values of its non-zero elements
(TF1 `tf.SparseTensor`), its session value `SparseTensorValue`, and `sparse_placeholder`.

Like `IndexedSlices`, it is a Python wrapper of three graph tensors, so both engines run the ops
on it unchanged:

    indices      int64 [N, rank]: the coordinates of the N stored elements
    values       [N]:             their values
    dense_shape  int64 [rank]:    the shape of the dense tensor it stands for

meaning

    dense = zeros(dense_shape); dense[tuple(indices[i])] = values[i]

Most ops expect the indices in row-major (lexicographic) order, as TF1's do; `sparse_reorder`
puts them in it. A session fetches a SparseTensor as a `SparseTensorValue` of NumPy arrays, and a
feed_dict key that is a SparseTensor is fed from a `SparseTensorValue` or an
`(indices, values, dense_shape)` tuple: one key, three placeholders.

>>> st = sl.SparseTensor(indices=[[0, 0], [1, 2]], values=[1.0, 2.0], dense_shape=[3, 4])
>>> st.shape.as_list(), st.dtype.name
([3, 4], 'float32')
>>> value = sl.Session().run(st)
>>> value.indices.tolist(), value.values.tolist(), value.dense_shape.tolist()
([[0, 0], [1, 2]], [1.0, 2.0], [3, 4])
"""

from __future__ import annotations

import collections
from typing import Any

import jax
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.default_session import get_default_session
from sluice.framework.ir.graph import Tensor, name_scope
from sluice.framework.ir.tensor_shape import TensorShape, as_shape
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.shape_rules import partial_shape_value

SparseTensorValue = collections.namedtuple(
    "SparseTensorValue", ["indices", "values", "dense_shape"]
)
export("SparseTensorValue", "sparse.SparseTensorValue")(SparseTensorValue)
SparseTensorValue.__doc__ = "What a session returns for a SparseTensor: NumPy arrays."


@export("SparseTensor", "sparse.SparseTensor")
class SparseTensor:
    """A sparse tensor: `values[i]` at coordinates `indices[i]` of a `dense_shape` tensor.

    Args:
      indices: an int64 matrix [N, rank] (other ints are converted).
      values: a vector [N] of any dtype.
      dense_shape: an int64 vector [rank].

    Raises:
      ValueError: `indices` is not a matrix, `values` or `dense_shape` not a vector, or their
        sizes disagree (N, rank).
      TypeError: `indices` or `dense_shape` is not of an integer dtype.
    """

    def __init__(self, indices: Any, values: Any, dense_shape: Any):
        with name_scope(None, "SparseTensor", [indices, values, dense_shape]):
            indices = _int64_tensor(indices, "indices")
            values = core_ops.convert_to_tensor(values, name="values")
            dense_shape = _int64_tensor(dense_shape, "dense_shape")
        for what, t, rank in (("indices", indices, 2), ("values", values, 1)):
            if t.shape.rank not in (None, rank):
                raise ValueError(
                    f"SparseTensor: {what} must have rank {rank}, got shape {t.shape} "
                    f"(Shape {t.shape} must have rank {rank})."
                )
        if dense_shape.shape.rank not in (None, 1):
            raise ValueError(
                f"SparseTensor: dense_shape must have rank 1, got shape {dense_shape.shape}."
            )
        n_indices = indices.shape[0] if indices.shape.rank else None
        n_values = values.shape[0] if values.shape.rank else None
        if None not in (n_indices, n_values) and n_indices != n_values:
            raise ValueError(
                f"SparseTensor: {n_indices} indices (shape {indices.shape}) for {n_values} "
                f"values (shape {values.shape}): Dimensions {n_indices} and {n_values} are not "
                "compatible."
            )
        rank = indices.shape[1] if indices.shape.rank else None
        n_dims = dense_shape.shape[0] if dense_shape.shape.rank else None
        if None not in (rank, n_dims) and rank != n_dims:
            raise ValueError(
                f"SparseTensor: indices of shape {indices.shape} hold {rank} coordinates, but "
                f"dense_shape has {n_dims} dimensions: Dimensions {rank} and {n_dims} are not "
                "compatible."
            )
        self._indices, self._values, self._dense_shape = indices, values, dense_shape
        static = partial_shape_value(dense_shape)
        if static.rank is None and rank is not None:
            static = TensorShape([None] * rank)
        self._static_shape = TensorShape(
            None
            if static.dims is None
            else [None if d is None or d < 0 else d for d in static.dims]
        )

    @classmethod
    def from_value(cls, sparse_tensor_value: Any) -> SparseTensor:
        """A SparseTensor of constants from a `SparseTensorValue` (a SparseTensor passes).

        Raises:
          TypeError: `sparse_tensor_value` is neither.
        """
        if not is_sparse(sparse_tensor_value):
            raise TypeError(
                f"Neither a SparseTensor nor SparseTensorValue: {sparse_tensor_value!r}."
            )
        return cls(
            sparse_tensor_value.indices,
            sparse_tensor_value.values,
            sparse_tensor_value.dense_shape,
        )

    @property
    def indices(self) -> Tensor:
        return self._indices

    @property
    def values(self) -> Tensor:
        return self._values

    @property
    def dense_shape(self) -> Tensor:
        return self._dense_shape

    @property
    def dtype(self) -> Any:
        return self._values.dtype

    @property
    def op(self) -> Any:
        """The op that makes `values`."""
        return self._values.op

    @property
    def graph(self) -> Any:
        return self._indices.graph

    @property
    def name(self) -> str:
        return self._values.name

    @property
    def shape(self) -> TensorShape:
        """The static shape of the dense tensor, as far as it is known."""
        return self._static_shape

    def get_shape(self) -> TensorShape:
        return self._static_shape

    def set_shape(self, shape: Any) -> None:
        """Merges `shape` into the static dense shape.

        Raises:
          ValueError: `shape` is not compatible with it.
        """
        self._static_shape = self._static_shape.merge_with(as_shape(shape))

    def eval(self, feed_dict: dict | None = None, session: Any = None) -> SparseTensorValue:
        """The value in `session` (the default session if None)."""
        session = session or get_default_session()
        if session is None:
            raise ValueError(
                "SparseTensor.eval() needs a session: pass one or use `with Session():`."
            )
        return session.run(self, feed_dict=feed_dict)

    # a Tensor's binary operators give way to a SparseTensor's (`dense * sp`, as TF1's)
    defers_tensor_operators = True

    @classmethod
    def override_operator(cls, operator: str, func: Any) -> None:
        """Installs a Python operator (`__mul__`, ...); the sparse op modules call this."""
        setattr(cls, operator, func)

    def __repr__(self) -> str:
        return (
            f"SparseTensor(indices={self._indices}, values={self._values}, "
            f"dense_shape={self._dense_shape})"
        )


@export("SparseTensorSpec")
class SparseTensorSpec:
    """Describes a SparseTensor: its dense shape (partly known, or None for any) and the dtype
    of its values (TF 1.15's `tf.SparseTensorSpec`). As a `while_loop` shape invariant it lets
    the number of elements change, and the rank too when the shape's rank is unknown.

    >>> spec = sl.SparseTensorSpec([None], sl.float32)
    >>> spec.is_compatible_with(sl.SparseTensor([[0]], [1.0], [10]))
    True
    """

    def __init__(self, shape: Any = None, dtype: Any = dtypes.float32):
        self._shape = as_shape(shape)
        self._dtype = dtypes.as_dtype(dtype)

    @classmethod
    def from_value(cls, value: Any) -> SparseTensorSpec:
        """The spec of a SparseTensor (or SparseTensorValue)."""
        value = convert_to_sparse(value, "SparseTensorSpec.from_value: value")
        return cls(value.shape, value.dtype)

    @property
    def shape(self) -> TensorShape:
        return self._shape

    @property
    def dtype(self) -> Any:
        return self._dtype

    def is_compatible_with(self, spec_or_value: Any) -> bool:
        """Whether a SparseTensor (or SparseTensorSpec) has this dtype and a dense shape
        compatible with this one."""
        if isinstance(spec_or_value, (SparseTensor, SparseTensorValue)):
            spec_or_value = SparseTensorSpec.from_value(spec_or_value)
        return (
            isinstance(spec_or_value, SparseTensorSpec)
            and spec_or_value.dtype == self._dtype
            and self._shape.is_compatible_with(spec_or_value.shape)
        )

    def component_shapes(self) -> list[TensorShape]:
        """The shapes of indices, values and dense_shape that this spec allows."""
        rank = self._shape.rank
        return [TensorShape([None, rank]), TensorShape([None]), TensorShape([rank])]

    def _key(self) -> tuple:
        return (None if self._shape.rank is None else tuple(self._shape.as_list()), self._dtype)

    def __eq__(self, other: Any) -> bool:
        return type(other) is type(self) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"SparseTensorSpec(shape={self._shape}, dtype={self._dtype!r})"


def _int64_tensor(value: Any, what: str) -> Tensor:
    if isinstance(value, Tensor):
        if not dtypes.is_integer(value.dtype):
            raise TypeError(
                f"SparseTensor: {what} must be an int64 tensor, got {value.dtype.name} "
                f"({value.name})."
            )
        return value if value.dtype == dtypes.int64 else _cast(value)
    return core_ops.convert_to_tensor(np.asarray(value, dtype=np.int64), name=what)


def _cast(t: Tensor) -> Tensor:
    return fill_ops.cast(t, dtypes.int64)


def is_sparse(x: Any) -> bool:
    """Whether `x` is a SparseTensor or a SparseTensorValue."""
    return isinstance(x, (SparseTensor, SparseTensorValue))


def convert_to_sparse(x: Any, what: str = "Input") -> SparseTensor:
    """`x` as a SparseTensor: a SparseTensorValue becomes constants (TF1's
    `_convert_to_sparse_tensor`).

    Raises:
      TypeError: `x` is neither.
    """
    if isinstance(x, SparseTensorValue):
        return SparseTensor.from_value(x)
    if not isinstance(x, SparseTensor):
        raise TypeError(f"{what} must be a SparseTensor, got {type(x).__name__}: {x!r}.")
    return x


@export("sparse_placeholder", "sparse.placeholder")
def sparse_placeholder(dtype: Any, shape: Any = None, name: str | None = None) -> SparseTensor:
    """A SparseTensor of three placeholders, fed as one: `feed_dict={sp: SparseTensorValue(...)}`
    or `{sp: (indices, values, dense_shape)}` (TF1 `tf.sparse_placeholder`).

    Args:
      dtype: the dtype of the values.
      shape: the dense shape, if known: a fully known shape becomes a constant (it is not fed;
        a feed must agree with it), a partly known one is fed and fixes the static shape.
      name: the prefix of the placeholders' names (`name/values`, `name/indices`, `name/shape`).

    >>> sp = sl.sparse_placeholder(sl.float32)
    >>> dense = sl.sparse_tensor_to_dense(sp)
    >>> sl.Session().run(dense, {sp: ([[0, 1]], [5.0], [2, 2])}).tolist()
    [[0.0, 5.0], [0.0, 0.0]]
    """
    static = None if shape is None else as_shape(shape)
    rank = None if static is None else static.rank

    def sub(suffix: str) -> str | None:
        return None if name is None else f"{name}/{suffix}"

    if static is not None and static.is_fully_defined():
        dense_shape = core_ops.constant(
            np.asarray(static.as_list(), np.int64), dtype=dtypes.int64, name=sub("shape")
        )
    else:
        dense_shape = core_ops.placeholder(dtypes.int64, [rank], name=sub("shape"))
    values = core_ops.placeholder(dtype, [None], name=sub("values"))
    indices = core_ops.placeholder(dtypes.int64, [None, rank], name=sub("indices"))
    result = SparseTensor(indices, values, dense_shape)
    if static is not None:
        result.set_shape(static)
    return result


# A session fetches the three tensors and hands back a SparseTensorValue; structures of graph
# tensors get a SparseTensor back.
def _flatten(s: SparseTensor) -> tuple:
    return (s.indices, s.values, s.dense_shape), None


def _unflatten(_: Any, children: Any) -> Any:
    children = list(children)
    if any(isinstance(c, Tensor) for c in children):
        return SparseTensor(*children)
    return SparseTensorValue(*children)


jax.tree_util.register_pytree_node(SparseTensor, _flatten, _unflatten)
