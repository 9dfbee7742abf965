"""`Iterator`: TF1's one-shot, initializable and reinitializable iterators.

`get_next()` returns tensors that the session fills on the host before each step that needs
them (see `sluice.framework.ops.host.iterator_ops`): one element per run however many of its tensors
are fetched, the next element in the next run, `sl.errors.OutOfRangeError` after the last one.
Each session keeps its own position; its elements are made on a daemon thread one element ahead
of the steps (more with `prefetch`), so the device does not wait for the host's next batch. The
thread stops when the iterator is re-initialised, its session closes, or the process exits.

>>> import numpy as np, sluice as sl
>>> x = sl.placeholder(sl.float32, [None, 2])
>>> it = sl.data.Dataset.from_tensor_slices(x).batch(2).make_initializable_iterator()
>>> batch = it.get_next()
>>> with sl.Session() as sess:
...     sess.run(it.initializer, {x: np.ones((3, 2))})
...     print(sess.run(batch).shape, sess.run(batch).shape)
(2, 2) (1, 2)
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from sluice._export import export
from sluice._tf1.data import structure
from sluice._tf1.data.background import BufferedElements
from sluice._tf1.data.dataset import Dataset, IterationContext, dataset_kind
from sluice._tf1.data.structure import Spec
from sluice.framework.ir import errors
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ops.host import iterator_ops


class RunningIterator:
    """One session's position in a dataset (the iterator resource of TF1's resource manager)."""

    def __init__(self, dataset: Dataset, captured: list[Tensor], values: list):
        bound = {t: np.asarray(v) for t, v in zip(captured, values)}
        self._ctx = IterationContext(bound)
        self._elements = BufferedElements(dataset._elements(self._ctx), 1, self._ctx.stop)
        self._lock = threading.Lock()
        self._done = False

    def get_next(self) -> list:
        with self._lock:
            if self._done:
                raise errors.OutOfRangeError(None, None, "End of sequence")
            try:
                return list(next(self._elements))
            except StopIteration:
                self._done = True
                raise errors.OutOfRangeError(None, None, "End of sequence") from None
            except errors.OpError:
                raise
            except Exception as err:  # noqa: BLE001 (a bug in a pipeline stage: say where)
                raise errors.UnknownError(None, None, f"{type(err).__name__}: {err}") from err

    def close(self) -> None:
        self._ctx.stop.set()
        self._elements.close()


def _require_capturable_by_value(captured: list[Tensor]) -> None:
    """TF1's check for a one-shot iterator: it captures its dataset's tensors by value, so no
    placeholder (nothing would feed it) and no stateful op may lie behind them.

    Raises:
      ValueError: naming the op, as TF1 does; an initializable iterator is the way.
    """
    seen: set = set()
    pending = [t.op for t in captured]
    while pending:
        op = pending.pop()
        if op in seen:
            continue
        seen.add(op)
        if op.type in ("Placeholder", "PlaceholderV2"):
            raise ValueError(
                f"Cannot capture a placeholder (name:{op.name}, type:{op.type}) by "
                "value: a one-shot iterator cannot read a fed placeholder; use "
                "make_initializable_iterator() and feed it to the initializer."
            )
        if op.op_def.stateful:
            raise ValueError(
                f"Cannot capture a stateful node (name:{op.name}, type:{op.type}) "
                "by value: use make_initializable_iterator() for a dataset that "
                "reads it."
            )
        pending += [t.op for t in op.inputs] + list(op.control_inputs)


def _factory(dataset: Dataset, captured: list[Tensor]):
    return lambda values: RunningIterator(dataset, captured, values)


@export("data.Iterator")
@dataset_kind
class Iterator:
    """Elements of a dataset, one per `Session.run` of `get_next()`'s tensors (TF1 `Iterator`).

    Build one with `Dataset.make_one_shot_iterator()`, `Dataset.make_initializable_iterator()`
    or `Iterator.from_structure(output_types, output_shapes)` (a reinitializable iterator that
    `make_initializer(dataset)` points at any dataset of that structure).
    """

    def __init__(
        self, spec: Spec, shared_name: str, initializer: Operation | None, one_shot_token: str = ""
    ):
        self._spec = spec
        self._shared_name = shared_name
        self._initializer = initializer
        self._one_shot = one_shot_token
        self._graph = graph_lib.get_default_graph()

    # -- construction ------------------------------------------------------------------------
    @staticmethod
    def _name(shared_name: str | None) -> str:
        return shared_name or graph_lib.get_default_graph().unique_name("Iterator")

    @classmethod
    def one_shot(cls, dataset: Dataset) -> "Iterator":
        g = graph_lib.get_default_graph()
        captured = dataset._captured()
        _require_capturable_by_value(captured)
        token = iterator_ops.register_dataset(g, _factory(dataset, captured), captured)
        return cls(dataset.spec, cls._name(None), None, token)

    @classmethod
    def initializable(cls, dataset: Dataset, shared_name: str | None = None) -> "Iterator":
        it = cls(dataset.spec, cls._name(shared_name), None)
        it._initializer = it.make_initializer(dataset)
        return it

    @staticmethod
    def from_structure(
        output_types: Any,
        output_shapes: Any = None,
        shared_name: str | None = None,
        output_classes: Any = None,
    ) -> "Iterator":
        """A reinitializable iterator for elements of this structure; `make_initializer`
        points it at a dataset."""
        types = structure.flatten(output_types)
        if output_shapes is None:
            shapes = [None] * len(types)
        else:
            structure.assert_same_structure(
                output_types, output_shapes, "Iterator.from_structure: output_shapes"
            )
            shapes = structure.flatten(output_shapes)
        spec = Spec.of(structure.map_structure(lambda _: None, output_types), types, shapes)
        return Iterator(spec, Iterator._name(shared_name), None)

    def make_initializer(self, dataset: Dataset, name: str | None = None) -> Operation:
        """An op that (re)starts this iterator at the beginning of `dataset`."""
        if self._one_shot:
            raise ValueError("A one-shot iterator cannot be pointed at another dataset.")
        mine, theirs = self._spec, dataset.spec
        try:
            structure.assert_same_structure(mine.structure, theirs.structure, "make_initializer")
        except ValueError:
            raise TypeError(
                f"Expected output structure {self.output_types} but got dataset with "
                f"output structure {dataset.output_types}."
            ) from None
        if mine.types != theirs.types:
            raise TypeError(
                f"Expected output types {self.output_types} but got dataset with "
                f"output types {dataset.output_types}."
            )
        if not all(a.is_compatible_with(b) for a, b in zip(mine.shapes, theirs.shapes)):
            raise TypeError(
                f"Expected output shapes compatible with {self.output_shapes} but got"
                f" dataset with output shapes {dataset.output_shapes}."
            )
        g = graph_lib.get_default_graph()
        captured = dataset._captured()
        token = iterator_ops.register_dataset(g, _factory(dataset, captured), captured)
        return iterator_ops.make_iterator(self._shared_name, token, name=name)

    # -- use ---------------------------------------------------------------------------------
    @property
    def initializer(self) -> Operation:
        if self._initializer is None:
            raise ValueError(
                "Iterator does not have an initializer: a one-shot iterator starts "
                "itself, a reinitializable one starts with make_initializer(ds)."
            )
        return self._initializer

    def get_next(self, name: str | None = None) -> Any:
        """The next element's tensors, nested as the dataset's elements; static shapes from
        `output_shapes` (a batch dimension is None unless `drop_remainder`)."""
        spec = self._spec
        with self._graph.as_default():
            flat = iterator_ops.iterator_get_next(
                self._shared_name, spec.types, spec.shapes, self._one_shot, name=name
            )
        return structure.pack_as(spec.structure, flat)

    @property
    def output_types(self) -> Any:
        return self._spec.output_types

    @property
    def output_shapes(self) -> Any:
        return self._spec.output_shapes

    @property
    def output_classes(self) -> Any:
        return self._spec.output_classes


@export("data.make_one_shot_iterator")
def make_one_shot_iterator(dataset: Dataset) -> Iterator:
    """`tf.compat.v1.data.make_one_shot_iterator(dataset)`."""
    return dataset.make_one_shot_iterator()


@export("data.make_initializable_iterator")
def make_initializable_iterator(dataset: Dataset, shared_name: str | None = None) -> Iterator:
    """`tf.compat.v1.data.make_initializable_iterator(dataset)`."""
    return dataset.make_initializable_iterator(shared_name)


@export("data.get_output_types")
def get_output_types(dataset_or_iterator: Any) -> Any:
    return dataset_or_iterator.output_types


@export("data.get_output_shapes")
def get_output_shapes(dataset_or_iterator: Any) -> Any:
    return dataset_or_iterator.output_shapes


@export("data.get_output_classes")
def get_output_classes(dataset_or_iterator: Any) -> Any:
    return dataset_or_iterator.output_classes


@dataset_kind  # `Dataset.__iter__` and `as_numpy_iterator` read through it
def host_elements(dataset: Dataset) -> Any:
    """The elements of `dataset` as nested NumPy values, made one ahead on a daemon thread:
    how Keras's `fit` reads a dataset, feeding each batch to its step with no graph op. The
    thread stops when the generator is closed or collected.

    Raises:
      ValueError: the dataset reads graph tensors (a placeholder), which only a session's
        iterator can give values to.
    """
    if not isinstance(dataset, Dataset):
        raise TypeError(f"Expected a sl.data.Dataset, got {dataset!r}.")
    if dataset._captured():
        raise ValueError(
            "This dataset reads graph tensors (e.g. from_tensor_slices over a "
            "placeholder); Keras reads a dataset of values. Build it from arrays."
        )
    ctx = IterationContext({})
    elements = BufferedElements(dataset._elements(ctx), 1, ctx.stop)
    try:
        for flat in elements:
            yield structure.pack_as(dataset.spec.structure, list(flat))
    finally:
        ctx.stop.set()
        elements.close()
