"""Element-wise and ordering transformations: map, filter, flat_map/interleave, shuffle, repeat,
take, skip, concatenate, zip, prefetch, cache. (Batching is in `batching`.)"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Iterator

import numpy as np

from sluice._tf1.data import functions, structure
from sluice._tf1.data.background import BufferedElements
from sluice._tf1.data.dataset import (
    INFINITE,
    UNKNOWN,
    Dataset,
    Element,
    IterationContext,
    dataset_kind,
)
from sluice._tf1.data.structure import Spec
from sluice.framework.ir import errors
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.core.shape_rules import constant_value
from sluice.framework.ops.random.random_ops import get_seed

AUTOTUNE = -1
_AUTOTUNE_BUFFER = 4  # what prefetch(AUTOTUNE) buffers


def _require_dataset(x: Any, what: str) -> Dataset:
    if not isinstance(x, Dataset):
        raise TypeError(f"{what}: expected a sl.data.Dataset, got {x!r}.")
    return x


def _count(value: Any, what: str) -> int:
    if isinstance(value, Tensor):
        known = constant_value(value)
        if known is None:
            raise TypeError(f"{what} must be a Python integer or a constant, got {value!r}.")
        value = known
    if isinstance(value, (bool, np.bool_)) or not np.issubdtype(
        np.asarray(value).dtype, np.integer
    ):
        raise TypeError(f"{what} must be a Python integer, got {value!r}.")
    return int(value)


def _count_or_tensor(value: Any, what: str) -> int | Tensor:
    """A count known now, or an int scalar tensor read when the pipeline starts (a count that a
    `flat_map` function computes, or a placeholder fed to the iterator's initializer)."""
    if isinstance(value, Tensor) and constant_value(value) is None:
        if value.dtype.kind not in "iu" or not value.shape.is_compatible_with([]):
            raise TypeError(f"{what} must be an integer scalar, got {value!r}.")
        return value
    return _count(value, what)


def _resolve(count: int | Tensor, ctx: IterationContext) -> int:
    return int(ctx.value(count)) if isinstance(count, Tensor) else count


class _Unary(Dataset):
    def __init__(self, input_dataset: Dataset):
        self._input = _require_dataset(input_dataset, type(self).__name__)
        self.spec = self._input.spec

    def _inputs(self) -> list[Dataset]:
        return [self._input]

    def _cardinality(self) -> int:  # one element out per element in
        return self._input._cardinality()


@dataset_kind
class Map(_Unary):
    def __init__(self, input_dataset: Dataset, fn: Callable):
        super().__init__(input_dataset)
        self._fn = functions.TracedFunction(fn, self._input.spec, "map")
        self.spec = self._fn.output_spec

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        for element in self._input._elements(ctx):
            values = self._fn(element, ctx)
            functions.check_runtime_shapes(self._fn, values)
            yield tuple(values)


@dataset_kind
class Filter(_Unary):
    def __init__(self, input_dataset: Dataset, predicate: Callable):
        super().__init__(input_dataset)
        self._predicate = functions.TracedFunction(predicate, self.spec, "filter")
        functions.require_scalar_bool(self._predicate)

    def _cardinality(self) -> int:
        return UNKNOWN

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        for element in self._input._elements(ctx):
            if bool(self._predicate(element, ctx)[0]):
                yield element


@dataset_kind
class Interleave(_Unary):
    """`flat_map` is `interleave` with one input element at a time."""

    def __init__(
        self, input_dataset: Dataset, fn: Callable, cycle_length: int, block_length: int, what: str
    ):
        super().__init__(input_dataset)
        self._cycle = _count(cycle_length, f"{what}: cycle_length")
        self._block = _count(block_length, f"{what}: block_length")
        if self._cycle == AUTOTUNE:
            self._cycle = 4
        if self._cycle < 1 or self._block < 1:
            raise ValueError(f"{what}: cycle_length and block_length must be positive.")
        self._fn = functions.TracedFunction(fn, self._input.spec, what, returns_dataset=True)
        inner = self._fn.result
        if not isinstance(inner, Dataset):
            raise TypeError(f"{what}: `map_func` must return a sl.data.Dataset, got {inner!r}.")
        self._inner = inner
        self._inner_captured = inner._captured()
        self.spec = inner.spec

    def _cardinality(self) -> int:
        return UNKNOWN

    def _open(self, element: Element, ctx: IterationContext) -> Iterator[Element]:
        values = self._fn(element, ctx, self._inner_captured)
        inner_ctx = ctx.with_values(dict(zip(self._inner_captured, values)))
        return self._inner._elements(inner_ctx)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        """TF1's cycle of slots: take `block_length` elements from one slot's dataset, move to
        the next slot; an empty slot opens the next input element's dataset where it stands,
        and a slot whose dataset ends is emptied and passed over until the cycle comes back."""
        source = self._input._elements(ctx)
        slots: list[Iterator[Element] | None] = [None] * self._cycle
        index = taken = opened = 0
        input_done = False
        while not input_done or opened:
            current = slots[index]
            if current is not None:
                element = next(current, None)
                if element is not None:
                    taken += 1
                    if taken == self._block:
                        index, taken = (index + 1) % self._cycle, 0
                    yield element
                    continue
                slots[index], opened = None, opened - 1
            elif not input_done:
                element = next(source, None)
                if element is None:
                    input_done = True
                else:
                    slots[index], opened = self._open(element, ctx), opened + 1
                continue
            index, taken = (index + 1) % self._cycle, 0


@dataset_kind
class Shuffle(_Unary):
    def __init__(
        self,
        input_dataset: Dataset,
        buffer_size: int,
        seed: int | None,
        reshuffle_each_iteration: bool,
    ):
        super().__init__(input_dataset)
        self._buffer_size = _count_or_tensor(buffer_size, "shuffle: buffer_size")
        if not isinstance(self._buffer_size, Tensor) and self._buffer_size < 1:
            raise ValueError(f"shuffle: buffer_size must be positive, got {buffer_size}.")
        # TF1's seeds: the op's and the graph's; neither set draws fresh ones per iterator
        self._seed = get_seed(seed) if seed is not None or _graph_seeded() else None
        self._reshuffle = bool(reshuffle_each_iteration)

    def _rng(self, ctx: IterationContext) -> np.random.Generator:
        """The generator of this pass. Each iterator starts from the seed again; each further
        pass of a `repeat` draws a new order unless reshuffle_each_iteration is False."""
        key = id(self)
        if key not in ctx.state:
            entropy = (
                list(self._seed)
                if self._seed is not None
                else [int(np.random.SeedSequence().entropy % 2**63)]
            )
            ctx.state[key] = (entropy, itertools.count())
        entropy, passes = ctx.state[key]
        epoch = next(passes) if self._reshuffle else 0
        return np.random.default_rng(entropy + [epoch])

    def _captured_here(self) -> list[Tensor]:
        return [self._buffer_size] if isinstance(self._buffer_size, Tensor) else []

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        size = _resolve(self._buffer_size, ctx)
        if size < 1:
            raise errors.InvalidArgumentError(
                None, None, f"shuffle: buffer_size must be greater than zero, got {size}."
            )
        uniform = _uniforms(self._rng(ctx))
        source = self._input._elements(ctx)
        buffer: list[Element] = []
        for element in source:
            buffer.append(element)
            if len(buffer) == size:
                break
        for element in source:  # the buffer is full: emit a random one, refill its place
            index = int(next(uniform) * len(buffer))
            yield buffer[index]
            buffer[index] = element
        while buffer:  # the input has ended: drain in random order
            index = int(next(uniform) * len(buffer))
            buffer[index], buffer[-1] = buffer[-1], buffer[index]
            yield buffer.pop()


def _uniforms(rng: np.random.Generator, block: int = 1024) -> Iterator[float]:
    """Uniform numbers in [0, 1), drawn a block at a time (one draw per element is slow)."""
    while True:
        yield from rng.random(block).tolist()


def _graph_seeded() -> bool:
    from sluice.framework.ir import graph as graph_lib

    return graph_lib.get_default_graph().seed is not None


class _Counted(_Unary):
    """Repeat, Take and Skip: a count that is an int, or a Tensor read when the pipeline starts."""

    def __init__(self, input_dataset: Dataset, count: int | Tensor, what: str):
        super().__init__(input_dataset)
        self._count = _count_or_tensor(count, what)

    def _captured_here(self) -> list[Tensor]:
        return [self._count] if isinstance(self._count, Tensor) else []


@dataset_kind
class Repeat(_Counted):
    def __init__(self, input_dataset: Dataset, count: int | None):
        super().__init__(input_dataset, -1 if count is None else count, "repeat: count")

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if isinstance(self._count, Tensor):
            return UNKNOWN
        if self._count < 0:
            return 0 if n == 0 else INFINITE
        if self._count == 0:
            return 0
        return n if n in (INFINITE, UNKNOWN) else n * self._count

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        count = _resolve(self._count, ctx)
        passes = itertools.count() if count < 0 else range(count)
        for _ in passes:
            produced = False
            for element in self._input._elements(ctx):
                produced = True
                yield element
            if not produced:  # an empty input repeated forever is empty, as in TF1
                return


@dataset_kind
class Take(_Counted):
    def __init__(self, input_dataset: Dataset, count: int):
        super().__init__(input_dataset, count, "take: count")

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if isinstance(self._count, Tensor):
            return UNKNOWN
        if self._count < 0 or n == UNKNOWN:
            return n
        return self._count if n == INFINITE else min(n, self._count)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        count = _resolve(self._count, ctx)
        source = self._input._elements(ctx)
        yield from source if count < 0 else itertools.islice(source, count)


@dataset_kind
class Skip(_Counted):
    def __init__(self, input_dataset: Dataset, count: int):
        super().__init__(input_dataset, count, "skip: count")

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if isinstance(self._count, Tensor):
            return UNKNOWN
        if n in (INFINITE, UNKNOWN):
            return n
        return 0 if self._count < 0 else max(0, n - self._count)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        count = _resolve(self._count, ctx)
        if count < 0:
            return
        yield from itertools.islice(self._input._elements(ctx), count, None)


@dataset_kind
class Concatenate(Dataset):
    def __init__(self, first: Dataset, second: Dataset):
        self._first = _require_dataset(first, "concatenate")
        self._second = _require_dataset(second, "concatenate")
        a, b = first.spec, second.spec
        structure.assert_same_structure(a.structure, b.structure, "concatenate")
        if a.types != b.types:
            raise TypeError(
                f"Two datasets to concatenate have different types "
                f"{first.output_types} and {second.output_types}"
            )
        self.spec = a.with_shapes(
            [x.most_specific_compatible_shape(y) for x, y in zip(a.shapes, b.shapes)]
        )

    def _inputs(self) -> list[Dataset]:
        return [self._first, self._second]

    def _cardinality(self) -> int:
        a, b = self._first._cardinality(), self._second._cardinality()
        if INFINITE in (a, b):
            return INFINITE
        return UNKNOWN if UNKNOWN in (a, b) else a + b

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        yield from self._first._elements(ctx)
        yield from self._second._elements(ctx)


@dataset_kind
class Zip(Dataset):
    def __init__(self, datasets: Any):
        if not structure.is_nested(datasets):
            raise TypeError(f"zip: expected a nested tuple or dict of datasets, got {datasets!r}.")
        self._datasets = [_require_dataset(d, "zip") for d in structure.flatten(datasets)]
        specs = [d.spec for d in self._datasets]
        self.spec = Spec.of(
            structure.pack_as(datasets, [s.structure for s in specs]),
            [t for s in specs for t in s.types],
            [sh for s in specs for sh in s.shapes],
        )

    def _inputs(self) -> list[Dataset]:
        return list(self._datasets)

    def _cardinality(self) -> int:
        sizes = [d._cardinality() for d in self._datasets]
        if UNKNOWN in sizes:
            return UNKNOWN
        return min([n for n in sizes if n != INFINITE], default=INFINITE)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        for parts in zip(*[d._elements(ctx) for d in self._datasets]):
            yield tuple(v for part in parts for v in part)


@dataset_kind
class Prefetch(_Unary):
    def __init__(self, input_dataset: Dataset, buffer_size: int):
        super().__init__(input_dataset)
        size = _count(buffer_size, "prefetch: buffer_size")
        if size == AUTOTUNE:
            size = _AUTOTUNE_BUFFER
        if size < 0:
            raise ValueError(f"prefetch: buffer_size must be >= 0 or AUTOTUNE, got {size}.")
        self._buffer_size = size

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        if self._buffer_size == 0:
            yield from self._input._elements(ctx)
            return
        yield from BufferedElements(self._input._elements(ctx), self._buffer_size, ctx.stop)


@dataset_kind
class Cache(_Unary):
    def __init__(self, input_dataset: Dataset, filename: str):
        super().__init__(input_dataset)
        if filename:
            raise NotImplementedError(
                "cache(filename): sluice caches in memory only; call cache() without a file name."
            )

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        cached = ctx.state.get(id(self))
        if cached is not None:
            yield from cached
            return
        seen = []
        for element in self._input._elements(ctx):
            seen.append(element)
            yield element
        ctx.state[id(self)] = seen  # only a complete pass is replayed, as in TF1
