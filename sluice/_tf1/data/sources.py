"""Dataset sources: slices of arrays or graph tensors, a whole value, a generator, a range."""

from __future__ import annotations

import traceback
from typing import Any, Callable, Iterator

import numpy as np

from sluice._tf1.data import structure
from sluice._tf1.data.dataset import UNKNOWN, Dataset, Element, IterationContext, dataset_kind
from sluice._tf1.data.structure import Spec
from sluice.framework.ir import dtypes, errors
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.tensor_shape import TensorShape, as_shape
from sluice.framework.ir.x64 import user_scope
from sluice.framework.ops.core.core_ops import convert_to_tensor
from sluice.framework.ops.core.shape_rules import constant_value

_VALUE_TYPES = (np.ndarray, np.generic, int, float, bool, complex, list)


def _component(leaf: Any) -> np.ndarray | Tensor:
    """A NumPy array (with TF1's dtype for Python values) or a graph tensor to capture."""
    if isinstance(leaf, Tensor):
        return leaf
    if isinstance(leaf, _VALUE_TYPES):
        try:
            array = np.asarray(leaf)
        except ValueError:  # NumPy's words for a ragged list
            raise ValueError(
                f"sl.data: can't convert non-rectangular Python sequence to a "
                f"tensor: {leaf!r:.200}; pad it (or use padded_batch on a "
                "generator's elements)."
            ) from None
        if array.dtype.kind in "SU":
            raise TypeError(
                f"sl.data: cannot make a component of {leaf!r:.200} (dtype "
                f"{array.dtype}); sluice's datasets hold no string tensors: encode text as ids."
            )
        if array.dtype.kind == "O":
            raise TypeError(
                f"sl.data: cannot make a component of {leaf!r:.200}: its values "
                "are Python objects, not numbers."
            )
        return array.astype(structure.leaf_dtype(leaf), copy=False)
    return convert_to_tensor(leaf)  # a Variable, or anything with a tensor conversion


def _values(components: list, ctx: IterationContext) -> list[np.ndarray]:
    return [ctx.value(c) if isinstance(c, Tensor) else c for c in components]


class _FromValues(Dataset):
    """A source over nested values or graph tensors (captured, so a fed placeholder works)."""

    def __init__(self, tensors: Any):
        tensors = structure.normalize(tensors)
        self._structure = structure.map_structure(lambda _: None, tensors)
        self._components = [_component(leaf) for leaf in structure.flatten(tensors)]

    def _captured_here(self) -> list[Tensor]:
        return [c for c in self._components if isinstance(c, Tensor)]


@dataset_kind
class TensorSlices(_FromValues):
    def __init__(self, tensors: Any):
        super().__init__(tensors)
        shapes = [structure.leaf_shape(c) for c in self._components]
        for shape in shapes:
            if shape.rank == 0:
                raise ValueError(
                    "from_tensor_slices: every component needs a first dimension to "
                    f"slice; got a scalar among shapes {[str(s) for s in shapes]}."
                )
        firsts = {s[0] for s in shapes if s.rank is not None and s[0] is not None}
        if len(firsts) > 1:
            raise ValueError(
                f"from_tensor_slices: Dimensions {sorted(firsts)} are not "
                "compatible: all components must have the same first dimension."
            )
        types = [c.dtype for c in self._components]
        self.spec = Spec.of(
            self._structure,
            types,
            [TensorShape(None) if s.rank is None else TensorShape(s.dims[1:]) for s in shapes],
        )

    def _cardinality(self) -> int:
        first = structure.leaf_shape(self._components[0]) if self._components else None
        if first is None or first.rank is None or first[0] is None:
            return UNKNOWN  # a placeholder's length shows when the iterator starts
        return int(first[0])

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        values = _values(self._components, ctx)
        sizes = {len(v) for v in values}
        if len(sizes) != 1:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"from_tensor_slices: all components must have the same size in the "
                f"first dimension; got {[v.shape for v in values]}.",
            )
        yield from zip(*values)  # a tuple of rows, one per component


@dataset_kind
class Tensors(_FromValues):
    def __init__(self, tensors: Any):
        super().__init__(tensors)
        self.spec = Spec.of(
            self._structure,
            [c.dtype for c in self._components],
            [structure.leaf_shape(c) for c in self._components],
        )

    def _cardinality(self) -> int:
        return 1

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        yield tuple(_values(self._components, ctx))


def _generator_error(err: BaseException) -> errors.OpError:
    """An exception of the generator as TF1's py_func reports it."""
    text = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    if isinstance(err, (ValueError, TypeError)):
        return errors.InvalidArgumentError(None, None, text)
    return errors.UnknownError(None, None, text)


@dataset_kind
class FromGenerator(Dataset):
    def __init__(
        self, generator: Callable, output_types: Any, output_shapes: Any = None, args: Any = None
    ):
        if not callable(generator):
            raise TypeError(f"from_generator: `generator` must be callable, got {generator!r}.")
        flat_types = [dtypes.as_dtype(t) for t in structure.flatten(output_types)]
        if output_shapes is None:
            flat_shapes = [TensorShape(None)] * len(flat_types)
        else:
            if structure.is_nested(output_types):
                structure.assert_same_structure(
                    output_types, output_shapes, "from_generator: output_shapes"
                )
                flat_shapes = [as_shape(s) for s in structure.flatten(output_shapes)]
            else:
                flat_shapes = [as_shape(output_shapes)]
        self._generator = generator
        self._args = [_component(a) for a in (args or ())]
        self._types = output_types
        self.spec = Spec.of(
            structure.map_structure(lambda _: None, output_types), flat_types, flat_shapes
        )

    def _captured_here(self) -> list[Tensor]:
        return [a for a in self._args if isinstance(a, Tensor)]

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        args = [a[()] if a.ndim == 0 else a for a in _values(self._args, ctx)]
        try:
            with user_scope():  # the user's generator keeps the user's JAX setting
                iterator = iter(self._generator(*args))
        except Exception as err:  # noqa: BLE001 (the generator's failure is the run's error)
            raise _generator_error(err) from err
        while True:
            try:
                with user_scope():
                    value = next(iterator)
            except StopIteration:
                return
            except Exception as err:  # noqa: BLE001
                raise _generator_error(err) from err
            yield self._convert(value)

    def _convert(self, value: Any) -> Element:
        spec = self.spec
        if structure.is_nested(self._types):
            try:
                structure.assert_same_structure(self._types, value, "from_generator")
            except ValueError:
                raise errors.InvalidArgumentError(
                    None,
                    None,
                    "TypeError: `generator` yielded an element that did not match "
                    f"the expected structure. The expected structure was "
                    f"{self._types}, but the yielded element was {value!r}.",
                ) from None
            leaves = structure.flatten(value)
        else:
            leaves = [value]
        arrays = []
        for leaf, dtype, shape in zip(leaves, spec.types, spec.shapes):
            try:
                array = np.asarray(leaf, dtype=dtype)
            except (TypeError, ValueError):
                raise errors.InvalidArgumentError(
                    None,
                    None,
                    "TypeError: `generator` yielded an element that could not be "
                    f"converted to the expected type. The expected type was "
                    f"{dtype.name}, but the yielded element was {leaf!r}.",
                ) from None
            if not shape.is_compatible_with(array.shape):
                raise errors.InvalidArgumentError(
                    None,
                    None,
                    f"`generator` yielded an element of shape {array.shape} where "
                    f"an element of shape {shape} was expected.",
                )
            arrays.append(array)
        return tuple(arrays)


@dataset_kind
class Range(Dataset):
    """`range` over Python ints or int scalar tensors (a bound a `flat_map` function computes,
    a fed placeholder), read when the pipeline starts."""

    def __init__(self, *args: Any):
        if not 1 <= len(args) <= 3:
            raise TypeError(f"range takes 1 to 3 arguments (start, stop, step), got {args}.")
        self._args = [_range_arg(a) for a in args]
        known = [a for a in self._args if not isinstance(a, Tensor)]
        if len(known) == len(self._args):
            range(*known)  # Python's checks now: step != 0
        elif len(self._args) == 3 and not isinstance(self._args[2], Tensor) and not known[-1]:
            raise ValueError("range: step must not be zero.")
        self.spec = Spec.of(None, [dtypes.int64], [TensorShape([])])

    def _captured_here(self) -> list[Tensor]:
        return [a for a in self._args if isinstance(a, Tensor)]

    def _cardinality(self) -> int:
        if any(isinstance(a, Tensor) for a in self._args):
            return UNKNOWN
        return len(range(*self._args))

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        bounds = [int(ctx.value(a)) if isinstance(a, Tensor) else a for a in self._args]
        if len(bounds) == 3 and bounds[2] == 0:
            raise errors.InvalidArgumentError(None, None, "range: step must not be zero.")
        for i in range(*bounds):
            yield (np.int64(i),)


def _range_arg(value: Any) -> int | Tensor:
    if isinstance(value, Tensor):
        known = constant_value(value)
        if known is None:
            if value.dtype.kind not in "iu" or not value.shape.is_compatible_with([]):
                raise TypeError(f"range: a bound must be an integer scalar, got {value!r}.")
            return value
        value = known
    if isinstance(value, (bool, np.bool_)) or not np.issubdtype(
        np.asarray(value).dtype, np.integer
    ):
        raise TypeError(f"range: a bound must be an integer, got {value!r}.")
    return int(value)
