"""`Dataset`: TF1.15's `tf.data.Dataset` for the common input pipeline, made on the host.

A dataset is a recipe: each transformation returns a new dataset that knows its element spec
(`output_types`, `output_shapes`, `output_classes`, known when it is built, as in TF1) and how to
make its elements as flat tuples of NumPy arrays from its input's. An iterator runs the recipe
on a background thread of the host (see `iterators`), and the session feeds each element to the
step that needs it, so a compiled step takes it as a `jax.jit` argument.

>>> import numpy as np, sluice as sl
>>> ds = sl.data.Dataset.from_tensor_slices(np.arange(6)).map(lambda x: x * 2).batch(4)
>>> batch = ds.make_one_shot_iterator().get_next()
>>> with sl.Session() as sess:
...     print(sess.run(batch), sess.run(batch))
[0 2 4 6] [ 8 10]
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterator

import numpy as np

from sluice._export import export
from sluice._keras.array import as_array
from sluice._tf1.data import structure
from sluice._tf1.data.structure import Spec
from sluice.framework.ir import tracing
from sluice.framework.ir.graph import Tensor

Element = tuple  # one NumPy array per component

INFINITE = -1  # TF1's cardinality of a dataset that never ends (`repeat()`)
UNKNOWN = -2  # ... and of one whose length shows only when it runs (`filter`, a generator)


# The class of each kind of dataset, and the iterator, by name. Their modules (sources,
# transformations, batching, iterators) register them when imported, as `sl.data` imports them
# all: they import this module for the base class, so it imports none of them.
_KINDS: dict[str, type] = {}


def dataset_kind(cls: type) -> type:
    """Class decorator: `Dataset`'s methods make `cls` under its class name."""
    _KINDS[cls.__name__] = cls
    return cls


class IterationContext:
    """What one iterator's run of a pipeline shares between its stages: the values of the graph
    tensors the pipeline captured, a stop signal for its threads, and per-stage state that lasts
    across the epochs of a `repeat` (shuffle epochs, caches)."""

    def __init__(self, bound: dict[Tensor, np.ndarray], stop: threading.Event | None = None):
        self.bound = bound
        self.stop = stop if stop is not None else threading.Event()
        self.state: dict[int, Any] = {}

    def value(self, tensor: Tensor) -> np.ndarray:
        return self.bound[tensor]

    def with_values(self, bound: dict[Tensor, np.ndarray]) -> "IterationContext":
        """A context for an inner pipeline (`flat_map`) that captured tensors of its own."""
        inner = IterationContext({**self.bound, **bound}, self.stop)
        inner.state = self.state
        return inner


@export("data.Dataset")
class Dataset:
    """A sequence of elements, each a nested structure of components (TF1's `DatasetV1`).

    Subclasses set `spec` and implement `_elements(ctx)`; sources that capture graph tensors
    list them in `_captured_here()`.
    """

    spec: Spec

    # -- what subclasses provide -------------------------------------------------------------
    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        raise NotImplementedError

    def _inputs(self) -> list["Dataset"]:
        return []

    def _captured_here(self) -> list[Tensor]:
        return []

    def static_cardinality(self) -> int:
        """The number of elements, or INFINITE or UNKNOWN, as known when the graph is built."""
        return self._cardinality()

    def _cardinality(self) -> int:
        """The number of elements, or INFINITE or UNKNOWN, known when the graph is built (TF1's
        `Cardinality()` of each dataset kernel)."""
        return UNKNOWN

    def _captured(self) -> list[Tensor]:
        """Every graph tensor this pipeline reads, in a fixed order."""
        found = list(self._captured_here())
        for d in self._inputs():
            found += d._captured()
        return list(dict.fromkeys(found))

    # -- TF1 properties ----------------------------------------------------------------------
    @property
    def output_types(self) -> Any:
        return self.spec.output_types

    @property
    def output_shapes(self) -> Any:
        return self.spec.output_shapes

    @property
    def output_classes(self) -> Any:
        return self.spec.output_classes

    def __iter__(self) -> Iterator[Any]:
        """The elements as values, one after another (TF2's eager iteration, which Keras 3
        code uses: `for x, y in dataset.take(1):`); each array an `sl.Array` (`.numpy()`).
        Inside graph code (a traced step, TF1's graph building) a dataset is read through an
        iterator instead (`make_one_shot_iterator()`), as TF1 requires.

        Raises:
          RuntimeError: while graph code is being built.
          ValueError: the dataset reads graph tensors (a placeholder).
        """
        if tracing.is_tracing():
            raise RuntimeError(
                "A sl.data.Dataset is iterated in graph code through an iterator, as in TF1: "
                "use make_one_shot_iterator() or make_initializable_iterator()."
            )
        for element in _KINDS["host_elements"](self):  # registered by `iterators`
            yield structure.map_structure(
                lambda v: as_array(v) if isinstance(v, np.ndarray) else v, element
            )

    def as_numpy_iterator(self) -> Iterator[Any]:
        """The elements as NumPy values (TF2's `as_numpy_iterator`)."""
        return _KINDS["host_elements"](self)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} shapes: {self.output_shapes}, types: {self.output_types}>"

    # -- sources -----------------------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors: Any) -> "Dataset":
        """One element per slice along the first dimension of every component."""
        return _KINDS["TensorSlices"](tensors)

    @staticmethod
    def from_tensors(tensors: Any) -> "Dataset":
        """A single element: `tensors` whole."""
        return _KINDS["Tensors"](tensors)

    @staticmethod
    def from_generator(
        generator: Callable, output_types: Any, output_shapes: Any = None, args: Any = None
    ) -> "Dataset":
        """The elements `generator(*args)` yields, converted to `output_types`.

        Raises (at run time, from `sess.run`): InvalidArgumentError for an element of another
        structure, type or shape; UnknownError for an exception in the generator.
        """
        return _KINDS["FromGenerator"](generator, output_types, output_shapes, args)

    @staticmethod
    def range(*args: int) -> "Dataset":
        """`range(stop)`, `range(start, stop)` or `range(start, stop, step)` as int64 scalars."""
        return _KINDS["Range"](*args)

    @staticmethod
    def zip(datasets: Any) -> "Dataset":
        """Elements of a nested tuple/dict of datasets side by side, up to the shortest."""
        return _KINDS["Zip"](datasets)

    # -- transformations ---------------------------------------------------------------------
    def map(self, map_func: Callable, num_parallel_calls: int | None = None) -> "Dataset":
        """`map_func` of every element. It receives Tensors and builds graph ops, traced once
        (see `functions`); `num_parallel_calls` is accepted and elements are mapped in order
        on the iterator's thread."""
        return _KINDS["Map"](self, map_func)

    def filter(self, predicate: Callable) -> "Dataset":
        """The elements for which `predicate` (a traced function to a scalar bool) holds."""
        return _KINDS["Filter"](self, predicate)

    def flat_map(self, map_func: Callable) -> "Dataset":
        """The elements of the dataset `map_func` returns for each element, one after another."""
        return _KINDS["Interleave"](self, map_func, cycle_length=1, block_length=1, what="flat_map")

    def interleave(
        self,
        map_func: Callable,
        cycle_length: int = 1,
        block_length: int = 1,
        num_parallel_calls: int | None = None,
    ) -> "Dataset":
        """Takes `block_length` elements in turn from the datasets `map_func` returns for
        `cycle_length` input elements at a time (TF1 `interleave`, deterministic order)."""
        return _KINDS["Interleave"](self, map_func, cycle_length, block_length, what="interleave")

    def shuffle(
        self, buffer_size: int, seed: int | None = None, reshuffle_each_iteration: bool = True
    ) -> "Dataset":
        """TF1's shuffle buffer: fill `buffer_size` elements, emit one picked uniformly at
        random, put the next input element in its place. A seed (this op's or the graph's)
        makes the order deterministic; each epoch of a `repeat` draws a new order unless
        `reshuffle_each_iteration=False`."""
        return _KINDS["Shuffle"](self, buffer_size, seed, reshuffle_each_iteration)

    def batch(self, batch_size: int, drop_remainder: bool = False) -> "Dataset":
        """Stacks `batch_size` consecutive elements; the last batch may be smaller unless
        `drop_remainder` (then the batch dimension is static)."""
        return _KINDS["Batch"](self, batch_size, drop_remainder)

    def padded_batch(
        self,
        batch_size: int,
        padded_shapes: Any,
        padding_values: Any = None,
        drop_remainder: bool = False,
    ) -> "Dataset":
        """Batches elements of different shapes, padding each component to `padded_shapes`
        (a None or -1 dimension pads to the longest in the batch) with `padding_values`
        (default 0)."""
        return _KINDS["PaddedBatch"](
            self, batch_size, padded_shapes, padding_values, drop_remainder
        )

    def repeat(self, count: int | None = None) -> "Dataset":
        """The elements `count` times over (None or -1: forever)."""
        return _KINDS["Repeat"](self, count)

    def take(self, count: int) -> "Dataset":
        """The first `count` elements (-1: all)."""
        return _KINDS["Take"](self, count)

    def skip(self, count: int) -> "Dataset":
        """All but the first `count` elements (-1: none)."""
        return _KINDS["Skip"](self, count)

    def concatenate(self, dataset: "Dataset") -> "Dataset":
        """This dataset's elements, then `dataset`'s (same structure and types)."""
        return _KINDS["Concatenate"](self, dataset)

    def prefetch(self, buffer_size: int) -> "Dataset":
        """Makes up to `buffer_size` elements ahead on a thread of its own."""
        return _KINDS["Prefetch"](self, buffer_size)

    def cache(self, filename: str = "") -> "Dataset":
        """Keeps the elements of the first full pass in memory and replays them on later
        passes (a `repeat`); a file cache is not supported."""
        return _KINDS["Cache"](self, filename)

    # -- iterators ---------------------------------------------------------------------------
    def make_one_shot_iterator(self) -> Any:
        """An iterator that starts at its first use and cannot be re-initialised. As in TF1 it
        captures the dataset's tensors by value: one that reads a placeholder or a variable is
        a ValueError (use `make_initializable_iterator`)."""
        return _KINDS["Iterator"].one_shot(self)

    def make_initializable_iterator(self, shared_name: str | None = None) -> Any:
        """An iterator that its `initializer` op (re)starts, with the values of the graph
        tensors the dataset captured (a placeholder fed in that run)."""
        return _KINDS["Iterator"].initializable(self, shared_name)
