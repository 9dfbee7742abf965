"""TF1's queue classes: `FIFOQueue`, `RandomShuffleQueue`, `PaddingFIFOQueue`.

A queue lives in each session that runs its ops (see `sluice.framework.ops.host.queue_ops`). Its
enqueue ops push values the step computed; its dequeue ops are fed to the step that needs them.

>>> import sluice as sl
>>> q = sl.FIFOQueue(3, [sl.int32])
>>> with sl.Session() as sess:
...     sess.run(q.enqueue_many([[1, 2, 3]]))
...     print(sess.run(q.dequeue()), sess.run(q.size()))
1 2
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ir.tensor_shape import TensorShape, as_shape
from sluice.framework.ops.core.core_ops import convert_to_tensor
from sluice.framework.ops.core.shape_rules import constant_value
from sluice.framework.ops.host import queue_ops
from sluice.framework.ops.host.host_queue import FIFO, PADDING_FIFO, RANDOM_SHUFFLE
from sluice.framework.ops.random.random_ops import get_seed


@export("QueueBase")
class QueueBase:
    """What every queue offers (TF1 `QueueBase`); build one of the subclasses."""

    def __init__(
        self,
        kind: str,
        capacity: int,
        dtypes_: Any,
        shapes: Any,
        names: Any,
        shared_name: str | None,
        name: str,
        min_after_dequeue: int = 0,
        seed: tuple[int, int] = (0, 0),
    ):
        if not isinstance(dtypes_, (list, tuple)):
            dtypes_ = [dtypes_]
        self._dtypes = [dtypes.as_dtype(t) for t in dtypes_]
        if shapes is None:
            if kind == PADDING_FIFO:
                raise ValueError("PaddingFIFOQueue needs `shapes` (None for a dimension to pad).")
            self._shapes = [TensorShape(None)] * len(self._dtypes)
        else:
            if (
                not isinstance(shapes, (list, tuple))
                or shapes
                and not isinstance(shapes[0], (list, tuple, TensorShape))
                and len(self._dtypes) == 1
            ):
                shapes = [shapes]
            self._shapes = [as_shape(s) for s in shapes]
            if len(self._shapes) != len(self._dtypes):
                raise ValueError(
                    f"Queue shapes must have the same length as dtypes: "
                    f"{len(self._shapes)} shapes for {len(self._dtypes)} dtypes."
                )
            if kind != PADDING_FIFO and not all(s.is_fully_defined() for s in self._shapes):
                raise ValueError(
                    f"{kind} needs fully defined shapes, got {self._shapes}; use a "
                    "PaddingFIFOQueue for shapes with unknown dimensions."
                )
        if names is not None:
            names = list(names) if isinstance(names, (list, tuple)) else [names]
            if len(names) != len(self._dtypes):
                raise ValueError("Queue names must have the same length as dtypes.")
        self._names = names
        if int(capacity) == 0:  # TF1: a negative capacity means no bound
            raise ValueError(
                "Queue capacity must be positive (or negative for no bound), got 0:"
                " its first enqueue would wait forever."
            )
        g = graph_lib.get_default_graph()
        self._name = g.unique_name(name)
        self._queue = queue_ops.queue_attrs(
            shared_name or self._name,
            kind,
            capacity,
            self._dtypes,
            self._shapes,
            min_after_dequeue,
            seed,
        )

    # -- properties ----------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def dtypes(self) -> list:
        return list(self._dtypes)

    @property
    def shapes(self) -> list:
        return list(self._shapes)

    @property
    def names(self) -> Any:
        return self._names

    # -- enqueue -------------------------------------------------------------------------------
    def _components(self, vals: Any, many: bool) -> list[Tensor]:
        if isinstance(vals, dict):
            if self._names is None:
                raise ValueError("Queue must have names to enqueue a dictionary.")
            if sorted(vals) != sorted(self._names):
                raise ValueError(
                    f"Keys in dictionary to enqueue {sorted(vals)} do not match the "
                    f"names of the queue {sorted(self._names)}."
                )
            vals = [vals[n] for n in self._names]
        elif not isinstance(vals, (list, tuple)):
            vals = [vals]
        if len(vals) != len(self._dtypes):
            raise ValueError(
                f"{self._name}: expected {len(self._dtypes)} components to enqueue, "
                f"got {len(vals)}."
            )
        tensors = []
        for i, (v, dtype, shape) in enumerate(zip(vals, self._dtypes, self._shapes)):
            t = convert_to_tensor(v, dtype=dtype, name=f"component_{i}")
            element_shape = t.shape[1:] if many and t.shape.rank else t.shape
            if many and t.shape.rank == 0:
                raise ValueError(
                    f"{self._name}: enqueue_many needs components with a first "
                    f"dimension; component {i} is a scalar."
                )
            if not shape.is_compatible_with(element_shape):
                raise ValueError(
                    f"Shape {element_shape} of component {i} is incompatible with "
                    f"the queue's shape {shape}."
                )
            tensors.append(t)
        return tensors

    def enqueue(self, vals: Any, name: str | None = None) -> Operation:
        """An op that adds one element (blocks while the queue is full)."""
        return queue_ops.enqueue(self._queue, self._components(vals, False), False, name)

    def enqueue_many(self, vals: Any, name: str | None = None) -> Operation:
        """An op that adds the slices of `vals` along their first dimension."""
        return queue_ops.enqueue(self._queue, self._components(vals, True), True, name)

    # -- dequeue -------------------------------------------------------------------------------
    def _result(self, tensors: list[Tensor]) -> Any:
        if self._names is not None:
            return dict(zip(self._names, tensors))
        return tensors[0] if len(tensors) == 1 else tensors

    def dequeue(self, name: str | None = None) -> Any:
        """One element (a Tensor for one component, else a list; a dict for a named queue)."""
        return self._result(queue_ops.dequeue(self._queue, None, False, name))

    def dequeue_many(self, n: int, name: str | None = None) -> Any:
        """`n` elements stacked; OutOfRangeError if the queue closes with fewer."""
        return self._result(queue_ops.dequeue(self._queue, _static_n(n), False, name))

    def dequeue_up_to(self, n: int, name: str | None = None) -> Any:
        """Up to `n` elements stacked: fewer when the queue has closed."""
        return self._result(queue_ops.dequeue(self._queue, _static_n(n), True, name))

    def size(self, name: str | None = None) -> Tensor:
        return queue_ops.size(self._queue, name)

    def is_closed(self, name: str | None = None) -> Tensor:
        return queue_ops.is_closed(self._queue, name)

    def close(self, cancel_pending_enqueues: bool = False, name: str | None = None) -> Operation:
        """An op that closes the queue: later enqueues fail, dequeues drain what is left."""
        return queue_ops.close(self._queue, bool(cancel_pending_enqueues), name)


def _static_n(n: Any) -> int:
    """`n` as a Python int: the host takes that many elements before the step."""
    if isinstance(n, Tensor):
        value = constant_value(n)
        if value is None:
            raise TypeError(
                f"dequeue_many/dequeue_up_to: n must be known when the graph is built"
                f" (a Python int or a constant), got {n!r}."
            )
        n = value
    value = int(n)
    if value < 0:
        raise ValueError(f"n must be >= 0, got {value}.")
    return value


@export("FIFOQueue")
class FIFOQueue(QueueBase):
    """Elements leave in the order they came (TF1 `tf.FIFOQueue`)."""

    def __init__(
        self,
        capacity: int,
        dtypes: Any,
        shapes: Any = None,
        names: Any = None,
        shared_name: str | None = None,
        name: str = "fifo_queue",
    ):
        super().__init__(FIFO, capacity, dtypes, shapes, names, shared_name, name)


@export("PaddingFIFOQueue")
class PaddingFIFOQueue(QueueBase):
    """A FIFO queue whose `dequeue_many` pads each component to the longest in the batch."""

    def __init__(
        self,
        capacity: int,
        dtypes: Any,
        shapes: Any,
        names: Any = None,
        shared_name: str | None = None,
        name: str = "padding_fifo_queue",
    ):
        super().__init__(PADDING_FIFO, capacity, dtypes, shapes, names, shared_name, name)


@export("RandomShuffleQueue")
class RandomShuffleQueue(QueueBase):
    """Dequeues a uniformly random element, keeping `min_after_dequeue` in the queue until it
    is closed (TF1 `tf.RandomShuffleQueue`)."""

    def __init__(
        self,
        capacity: int,
        min_after_dequeue: int,
        dtypes: Any,
        shapes: Any = None,
        names: Any = None,
        seed: int | None = None,
        shared_name: str | None = None,
        name: str = "random_shuffle_queue",
    ):
        if int(min_after_dequeue) < 0 or 0 <= int(capacity) <= int(min_after_dequeue):
            raise ValueError(
                f"min_after_dequeue ({min_after_dequeue}) must be in [0, capacity ({capacity}))."
            )
        super().__init__(
            RANDOM_SHUFFLE,
            capacity,
            dtypes,
            shapes,
            names,
            shared_name,
            name,
            min_after_dequeue,
            get_seed(seed),
        )
