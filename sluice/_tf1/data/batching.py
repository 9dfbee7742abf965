"""`batch` and `padded_batch`: consecutive elements stacked along a new first dimension."""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from sluice._tf1.data import structure
from sluice._tf1.data.dataset import (
    INFINITE,
    UNKNOWN,
    Dataset,
    Element,
    IterationContext,
    dataset_kind,
)
from sluice._tf1.data.transformations import _count_or_tensor, _resolve, _Unary
from sluice.framework.ir import errors
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.tensor_shape import TensorShape, as_shape
from sluice.framework.ops.core.shape_rules import constant_value


def _batches(source: Iterator[Element], size: int, drop_remainder: bool):
    batch: list[Element] = []
    for element in source:
        batch.append(element)
        if len(batch) == size:
            yield batch
            batch = []
    if batch and not drop_remainder:
        yield batch


def _batch_size(value: Any, what: str) -> int | Tensor:
    """A positive count now, or an int scalar tensor (a fed placeholder) read when the pipeline
    starts, as TF1 takes either."""
    size = _count_or_tensor(value, f"{what}: batch_size")
    if not isinstance(size, Tensor) and size < 1:
        raise ValueError(f"{what}: batch_size must be positive, got {value}.")
    return size


def _resolve_size(size: int | Tensor, ctx: IterationContext, what: str) -> int:
    value = _resolve(size, ctx)
    if value < 1:
        raise errors.InvalidArgumentError(
            None, None, f"{what}: batch_size must be greater than zero, got {value}."
        )
    return value


def _batch_dim(size: int | Tensor, drop_remainder: bool) -> TensorShape:
    return TensorShape([size if drop_remainder and not isinstance(size, Tensor) else None])


def _batch_count(n: int, size: int | Tensor, drop_remainder: bool) -> int:
    if isinstance(size, Tensor):
        return UNKNOWN
    if n in (INFINITE, UNKNOWN):
        return n
    return n // size + (0 if n % size == 0 or drop_remainder else 1)


@dataset_kind
class Batch(_Unary):
    def __init__(self, input_dataset: Dataset, batch_size: int, drop_remainder: bool):
        super().__init__(input_dataset)
        self._size = _batch_size(batch_size, "batch")
        self._drop = bool(drop_remainder)
        first = _batch_dim(self._size, self._drop)
        self.spec = self.spec.with_shapes([first.concatenate(s) for s in self.spec.shapes])

    def _captured_here(self) -> list[Tensor]:
        return [self._size] if isinstance(self._size, Tensor) else []

    def _cardinality(self) -> int:
        return _batch_count(self._input._cardinality(), self._size, self._drop)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        size = _resolve_size(self._size, ctx, "batch")
        for batch in _batches(self._input._elements(ctx), size, self._drop):
            yield tuple(_stack(i, parts) for i, parts in enumerate(zip(*batch)))


@dataset_kind
class PaddedBatch(_Unary):
    def __init__(
        self,
        input_dataset: Dataset,
        batch_size: int,
        padded_shapes: Any,
        padding_values: Any,
        drop_remainder: bool,
    ):
        super().__init__(input_dataset)
        spec = self._input.spec
        self._size = _batch_size(batch_size, "padded_batch")
        self._drop = bool(drop_remainder)
        if structure.is_nested(spec.structure):
            structure.assert_same_structure(
                spec.structure, padded_shapes, "padded_batch: padded_shapes"
            )
            shapes = structure.flatten(padded_shapes)
        else:
            shapes = [padded_shapes]
        self._padded = []
        for i, (shape, element_shape) in enumerate(zip(shapes, spec.shapes)):
            dims = as_shape([None if d == -1 else d for d in _dims(shape, i)])
            if not dims.is_compatible_with(element_shape) and element_shape.rank is not None:
                raise ValueError(
                    f"padded_batch: the padded shape {structure.shape_str(dims)} of component {i}"
                    f" is not compatible with its element shape "
                    f"{structure.shape_str(element_shape)}."
                )
            self._padded.append(dims)
        if padding_values is None:
            values: list = [np.zeros((), t) for t in spec.types]
        else:
            if structure.is_nested(spec.structure):
                structure.assert_same_structure(
                    spec.structure, padding_values, "padded_batch: padding_values"
                )
                flat = structure.flatten(padding_values)
            else:
                flat = [padding_values]
            values = [_padding_value(v, t, i) for i, (v, t) in enumerate(zip(flat, spec.types))]
        self._values = values  # NumPy scalars, or scalar tensors read when the pipeline starts
        first = _batch_dim(self._size, self._drop)
        self.spec = spec.with_shapes([first.concatenate(s) for s in self._padded])

    def _captured_here(self) -> list[Tensor]:
        size = [self._size] if isinstance(self._size, Tensor) else []
        return size + [v for v in self._values if isinstance(v, Tensor)]

    def _cardinality(self) -> int:
        return _batch_count(self._input._cardinality(), self._size, self._drop)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        fills = [np.asarray(ctx.value(v)) if isinstance(v, Tensor) else v for v in self._values]
        size = _resolve_size(self._size, ctx, "padded_batch")
        for batch in _batches(self._input._elements(ctx), size, self._drop):
            components = []
            for i, (padded, fill) in enumerate(zip(self._padded, fills)):
                parts = [np.asarray(element[i]) for element in batch]
                for part in parts:
                    if part.ndim != padded.rank:
                        raise errors.InvalidArgumentError(
                            None,
                            None,
                            f"padded_batch: all elements in a batch must have the "
                            f"same rank as the padded shape for component {i}: "
                            f"expected rank {padded.rank} but got element with rank "
                            f"{part.ndim}.",
                        )
                longest = np.max([p.shape for p in parts], axis=0) if parts[0].ndim else ()
                target = [m if d is None else d for d, m in zip(padded.dims, longest)]
                out = np.full([len(parts)] + target, fill, dtype=fill.dtype)
                for j, part in enumerate(parts):
                    if part.ndim != len(target) or any(s > t for s, t in zip(part.shape, target)):
                        raise errors.InvalidArgumentError(
                            None,
                            None,
                            f"padded_batch: attempted to pad component {i} of shape "
                            f"{list(part.shape)} to a smaller size {target}.",
                        )
                    out[(j,) + tuple(slice(0, s) for s in part.shape)] = part
                components.append(out)
            yield tuple(components)


def _padding_value(value: Any, dtype: np.dtype, component: int) -> np.ndarray | Tensor:
    """A scalar of the component's dtype: a constant now, or a tensor (a fed placeholder) read
    when the pipeline starts. A tensor or NumPy value of another dtype is a TypeError, as in
    TF1; a Python number is converted when it fits the dtype's kind."""
    if isinstance(value, Tensor):
        known = constant_value(value)
        found, shape = value.dtype, value.shape
    else:
        known = np.asarray(value)
        found, shape = structure.leaf_dtype(value), TensorShape(known.shape)
    if not shape.is_compatible_with([]):
        raise ValueError(
            f"padded_batch: the padding value of component {component} should be "
            f"a scalar, but has shape {structure.shape_str(shape)}."
        )
    python_number = isinstance(value, (int, float, bool)) and not isinstance(value, np.generic)
    if found != dtype and not (python_number and _fits(value, dtype)):
        raise TypeError(
            f"padded_batch: the padding value of component {component} has dtype "
            f"{np.dtype(found).name}, which does not match the component's dtype "
            f"{np.dtype(dtype).name}."
        )
    if known is None:
        return value
    return np.asarray(known, dtype)


def _fits(number: Any, dtype: np.dtype) -> bool:
    if isinstance(number, bool):
        return np.dtype(dtype) == np.bool_
    if isinstance(number, int):
        return np.dtype(dtype).kind in "iuf"
    return np.dtype(dtype).kind == "f"


def _stack(component: int, parts: tuple) -> np.ndarray:
    try:
        return np.stack(parts)
    except ValueError:  # say which element differs, as TF1 does
        shapes = [np.shape(p) for p in parts]
        j = next(j for j, s in enumerate(shapes) if s != shapes[0])
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Cannot batch tensors with different shapes in component {component}. "
            f"First element had shape {list(shapes[0])} and element {j} had shape "
            f"{list(shapes[j])}.",
        ) from None


def _dims(shape: Any, component: int) -> list:
    """A padded shape's dimensions (None or -1: the longest in the batch); its rank must be
    known, as TF1 makes it a 1-D int64 tensor."""
    if isinstance(shape, Tensor):
        known = constant_value(shape)
        if known is None:
            raise TypeError(
                f"padded_batch: the padded shape of component {component} must be "
                f"known when the graph is built (a list or a constant), got {shape!r}."
            )
        shape = np.asarray(known).tolist()
        if not isinstance(shape, list):
            shape = [shape]  # a scalar: let the rank check below name it
    if isinstance(shape, TensorShape):
        if shape.rank is None:
            raise ValueError(
                f"padded_batch: the padded shape of component {component} has an "
                "unknown rank; give one dimension (None to pad) per axis."
            )
        return list(shape.dims)
    return [None if d is None else int(d) for d in shape]
