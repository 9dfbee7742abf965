"""`TensorShape`: a possibly partially known shape (unknown rank, or unknown dimensions)."""

from __future__ import annotations

from typing import Any, Iterable, Iterator

from sluice._export import export

_MODULE = "python.framework.tensor_shape"  # TF1's module path, which TF1 code imports


@export("TensorShape", f"{_MODULE}.TensorShape")
class TensorShape:
    """A static shape: `dims` is None (unknown rank) or a tuple of int-or-None.

    >>> TensorShape([None, 3]).merge_with([2, None]).as_list()
    [2, 3]
    """

    __slots__ = ("_dims",)

    def __init__(self, dims: Any = None):
        if isinstance(dims, TensorShape):
            self._dims = dims._dims
        elif dims is None:
            self._dims = None
        else:
            if isinstance(dims, int):
                dims = [dims]
            self._dims = tuple(_as_dim(d) for d in dims)

    # -- queries -------------------------------------------------------------------------------
    @property
    def dims(self) -> tuple | None:
        return self._dims

    @property
    def rank(self) -> int | None:
        return None if self._dims is None else len(self._dims)

    ndims = rank

    def is_fully_defined(self) -> bool:
        return self._dims is not None and all(d is not None for d in self._dims)

    def as_list(self) -> list:
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def as_tuple(self) -> tuple:
        return tuple(self.as_list())

    def num_elements(self) -> int | None:
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:
            n *= d
        return n

    def __len__(self) -> int:
        if self._dims is None:
            raise ValueError("Cannot take the length of a shape with unknown rank.")
        return len(self._dims)

    def __iter__(self) -> Iterator:
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(self._dims)

    def __getitem__(self, key):
        if self._dims is None:
            return TensorShape(None) if isinstance(key, slice) else None
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return self._dims[key]

    # -- combination ---------------------------------------------------------------------------
    def is_compatible_with(self, other: Any) -> bool:
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        if len(self._dims) != len(other._dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def merge_with(self, other: Any) -> "TensorShape":
        other = as_shape(other)
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible.")
        return TensorShape(a if a is not None else b for a, b in zip(self._dims, other._dims))

    def most_specific_compatible_shape(self, other: Any) -> "TensorShape":
        """The most specific shape that both `self` and `other` satisfy (used by Merge)."""
        other = as_shape(other)
        if self._dims is None or other._dims is None or len(self._dims) != len(other._dims):
            return TensorShape(None)
        return TensorShape(a if a == b else None for a, b in zip(self._dims, other._dims))

    def concatenate(self, other: Any) -> "TensorShape":
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return TensorShape(None)
        return TensorShape(self._dims + other._dims)

    def with_rank(self, rank: int) -> "TensorShape":
        if self._dims is None:
            return TensorShape([None] * rank)
        if len(self._dims) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}.")
        return self

    def __eq__(self, other: Any) -> bool:
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __hash__(self) -> int:
        return hash(self._dims)

    def __repr__(self) -> str:
        return f"TensorShape({None if self._dims is None else list(self._dims)})"

    def __str__(self) -> str:
        if self._dims is None:
            return "<unknown>"
        inner = ", ".join("?" if d is None else str(d) for d in self._dims)
        return f"({inner},)" if len(self._dims) == 1 else f"({inner})"


def _as_dim(d: Any) -> int | None:
    if d is None:
        return None
    if hasattr(d, "value") and not isinstance(d, int):  # a Dimension-like object
        d = d.value
        if d is None:
            return None
    d = int(d)
    if d < 0:
        return None  # -1 means "unknown", as in TF placeholders built from numpy shapes
    return d


@export(f"{_MODULE}.as_shape")
def as_shape(shape: Any) -> TensorShape:
    """`shape` as a TensorShape (TF1's `tensor_shape.as_shape`)."""
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


@export(f"{_MODULE}.unknown_shape")
def unknown_shape(rank: int | None = None, **unused_tf_kwargs: Any) -> TensorShape:
    """A shape of unknown rank, or of `rank` unknown dimensions (TF1's `unknown_shape`)."""
    return TensorShape(None if rank is None else [None] * rank)


@export(f"{_MODULE}.scalar")
def scalar() -> TensorShape:
    """The shape of a scalar, `[]`."""
    return TensorShape([])


@export(f"{_MODULE}.dimension_value")
def dimension_value(dimension: Any) -> int | None:
    """A dimension as an int or None (TF1's `dimension_value`; sluice's dimensions already are,
    and an object with a `value`, as TF1's Dimension, gives that)."""
    return getattr(dimension, "value", dimension)


def broadcast_shapes(a: TensorShape, b: TensorShape) -> TensorShape | None:
    """NumPy broadcasting of two static shapes; None when they can never broadcast."""
    if a.rank is None or b.rank is None:
        return TensorShape(None)
    da, db = list(a.dims), list(b.dims)
    n = max(len(da), len(db))
    da = [1] * (n - len(da)) + da
    db = [1] * (n - len(db)) + db
    out = []
    for x, y in zip(da, db):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None or y is None:
            out.append(x if y is None else y)
        elif x == y:
            out.append(x)
        else:
            return None
    return TensorShape(out)


def dims_iter(shapes: Iterable[TensorShape]) -> list:
    return [s.dims for s in shapes]
