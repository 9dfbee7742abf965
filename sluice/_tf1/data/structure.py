"""Element structure: nested tuples, namedtuples and dicts of components, as `tf.data` nests them.

A list is a value, not a structure (TF1 converts `[1, 2]` to one tensor), and dict keys are
ordered by sorting, as `tf.nest` orders them. Internally a dataset passes each element as a flat
tuple of NumPy arrays; its `Spec` says how to nest them and what dtype and shape each has.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.tensor_shape import TensorShape, as_shape


def is_nested(x: Any) -> bool:
    return isinstance(x, (tuple, dict))


def flatten(x: Any) -> list:
    if isinstance(x, dict):
        return [leaf for key in sorted(x) for leaf in flatten(x[key])]
    if isinstance(x, tuple):
        return [leaf for item in x for leaf in flatten(item)]
    return [x]


def pack_as(structure: Any, flat: list) -> Any:
    """`flat` nested as `structure` (the inverse of `flatten`)."""
    leaves = iter(flat)

    def build(s: Any) -> Any:
        if isinstance(s, dict):
            built = {key: build(s[key]) for key in sorted(s)}
            return type(s)((key, built[key]) for key in s)
        if isinstance(s, tuple):
            items = [build(item) for item in s]
            return type(s)(*items) if hasattr(s, "_fields") else type(s)(items)
        return next(leaves)

    return build(structure)


def map_structure(fn: Callable, structure: Any) -> Any:
    return pack_as(structure, [fn(leaf) for leaf in flatten(structure)])


def assert_same_structure(a: Any, b: Any, what: str) -> None:
    """Raises ValueError unless `a` and `b` nest alike (dict keys and tuple lengths)."""

    def shape_of(x: Any) -> Any:
        if isinstance(x, dict):
            return ("dict", tuple((k, shape_of(x[k])) for k in sorted(x)))
        if isinstance(x, tuple):
            return ("tuple", tuple(shape_of(i) for i in x))
        return "."

    if shape_of(a) != shape_of(b):
        raise ValueError(f"{what}: the structures {a!r} and {b!r} do not match.")


@dataclasses.dataclass(frozen=True)
class Spec:
    """The nesting, dtypes and static shapes of a dataset's elements."""

    structure: Any  # the nesting, with a placeholder leaf per component
    types: tuple[np.dtype, ...]
    shapes: tuple[TensorShape, ...]

    @classmethod
    def of(cls, structure: Any, types: list, shapes: list) -> "Spec":
        return cls(
            structure, tuple(dtypes.as_dtype(t) for t in types), tuple(as_shape(s) for s in shapes)
        )

    @property
    def output_types(self) -> Any:
        return pack_as(self.structure, list(self.types))

    @property
    def output_shapes(self) -> Any:
        return pack_as(self.structure, list(self.shapes))

    @property
    def output_classes(self) -> Any:
        return pack_as(self.structure, [Tensor] * len(self.types))

    def with_shapes(self, shapes: list) -> "Spec":
        return Spec(self.structure, self.types, tuple(as_shape(s) for s in shapes))

    def __len__(self) -> int:
        return len(self.types)


def normalize(value: Any) -> Any:
    """A nested value with its tuples and dicts rebuilt; a list stays one component (TF1
    converts it to one tensor)."""
    if isinstance(value, dict):
        return type(value)((k, normalize(v)) for k, v in value.items())
    if isinstance(value, tuple):
        items = [normalize(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    return value


def leaf_dtype(value: Any) -> np.dtype:
    """A component's dtype as TF1 converts it: Python floats to float32, ints to int32."""
    if isinstance(value, Tensor):
        return value.dtype
    array = np.asarray(value)
    if array.dtype == np.float64 and not isinstance(value, (np.ndarray, np.generic)):
        return dtypes.float32
    if array.dtype == np.int64 and not isinstance(value, (np.ndarray, np.generic)):
        return dtypes.int32
    return dtypes.as_dtype(array.dtype)


def leaf_shape(value: Any) -> TensorShape:
    if isinstance(value, Tensor):
        return value.shape
    return TensorShape(np.shape(value))


def shape_str(shape: Any) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"
