"""A TensorArray's elements as a list known while the graph is built (TF1's infer_shape=False).

A TensorArray whose elements differ in shape cannot live in one dense buffer. When all its
writes use constant indices (outside a while loop), its elements are tensors known while the
graph is built, so it is kept as a Python dict `{index: element}`: a read is that element, a
stack is a Pack, a concat a ConcatV2, a split one SplitV. These are ordinary ops, so both engines
run them as they run any graph, and their gradients are the ops' own (reads of one element add
up, as TF1's gradient array aggregates them).

An element is kept lazily as `Piece(pieces, k)`: the k-th output of an unstack or split that is
built only if the array turns into a list (a dense array records its constant-index writes this
way, to switch when a write of another shape comes).
"""

from __future__ import annotations

from typing import Any

from sluice.framework.ir import errors
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import fill_ops, join_ops
from sluice.framework.ops.core import core_ops


class Pieces:
    """The rows of `value` (lengths None) or its pieces along axis 0 of the given `lengths`,
    built on first use."""

    def __init__(self, value: Tensor, count: int, lengths: list[int] | None = None):
        self.value, self.count, self.lengths = value, count, lengths
        self._tensors: list | None = None

    def shape(self, k: int) -> TensorShape:
        rest = self.value.shape[1:] if self.value.shape.rank is not None else TensorShape(None)
        if self.lengths is None:
            return rest
        return TensorShape([self.lengths[k]]).concatenate(rest)

    def tensors(self) -> list:
        if self._tensors is None:
            if self.lengths is None:
                self._tensors = join_ops.unstack(self.value, num=self.count)
            else:
                self._tensors = join_ops.split(self.value, self.lengths, axis=0, num=self.count)
        return self._tensors


class Piece:
    """Element k of `pieces`."""

    def __init__(self, pieces: Pieces, k: int):
        self.pieces, self.k = pieces, k

    @property
    def shape(self) -> TensorShape:
        return self.pieces.shape(self.k)

    def tensor(self) -> Tensor:
        return self.pieces.tensors()[self.k]


def shape_of(element: Any) -> TensorShape:
    return element.shape


def tensor_of(element: Any) -> Tensor:
    return element.tensor() if isinstance(element, Piece) else element


def zeros_for(name: str, index: int, shape: TensorShape, dtype: Any) -> Tensor:
    """Zeros for an unwritten element when its shape is fully known (as TF1 reads it)."""
    if not shape.is_fully_defined():
        raise errors.InvalidArgumentError(
            None,
            None,
            f"TensorArray {name}: Could not read from TensorArray index {index}: it has not yet "
            f"been written to, and the element shape is not fully defined: {shape}. Set the "
            "TensorArray's full element_shape to read unwritten elements as zeros.",
        )
    return fill_ops.zeros(shape.as_list(), dtype)


def all_elements(
    name: str, elements: dict, size: int, shape: TensorShape, dtype: Any
) -> list[Tensor]:
    """Elements 0..size-1, unwritten ones as zeros of `shape` (the elements' common shape)."""
    return [
        tensor_of(elements[k]) if k in elements else zeros_for(name, k, shape, dtype)
        for k in range(size)
    ]


def common_shape(name: str, elements: dict, what: str, skip_first: bool = False) -> TensorShape:
    """The shape all elements share (after their first dimension when `skip_first`); an
    InvalidArgumentError naming two that differ."""
    common, first = TensorShape(None), None
    for k in sorted(elements):
        shape = shape_of(elements[k])
        if skip_first and shape.rank is not None:
            if shape.rank == 0:
                raise errors.InvalidArgumentError(
                    None,
                    None,
                    f"TensorArray {name}: Concat saw a scalar shape at index {k} but requires "
                    "at least vectors",
                )
            shape = shape[1:]
        if not common.is_compatible_with(shape):
            raise errors.InvalidArgumentError(
                None,
                None,
                f"TensorArray {name}: {what} needs elements of one shape"
                f"{' after their first dimension' if skip_first else ''}, but index {first} "
                f"has shape {common} and index {k} has shape {shape}",
            )
        if first is None:
            first = k
        common = common.merge_with(shape)
    return common


def stack(name: str, elements: dict, size: int, element_shape: TensorShape, dtype: Any) -> Tensor:
    shape = common_shape(name, elements, "stack").merge_with(element_shape)
    if size == 0:
        return fill_ops.zeros([0] + shape.as_list(), dtype)
    return join_ops.stack(all_elements(name, elements, size, shape, dtype), name="TensorArrayStack")


def concat(name: str, elements: dict, size: int, element_shape: TensorShape, dtype: Any) -> Tensor:
    rest = common_shape(name, elements, "concat", skip_first=True)
    if element_shape.rank is not None and element_shape.rank > 0:
        rest = rest.merge_with(element_shape[1:])
    if size == 0 or not elements and not element_shape.is_fully_defined():
        return fill_ops.zeros([0] + rest.as_list(), dtype)
    tensors = []
    for k in range(size):
        if k in elements:
            tensors.append(tensor_of(elements[k]))
        else:
            tensors.append(zeros_for(name, k, element_shape, dtype))
    if len(tensors) == 1:
        return core_ops.identity(tensors[0], name="TensorArrayConcat")
    return join_ops.concat(tensors, 0, name="TensorArrayConcat")


def first_dims(elements: dict, size: int, element_shape: TensorShape) -> list:
    """Each element's first dimension (TF1's concat returns them as `lengths`)."""
    out = []
    for k in range(size):
        shape = shape_of(elements[k]) if k in elements else element_shape
        out.append(shape[0] if shape.rank else None)
    return out
