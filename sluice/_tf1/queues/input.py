"""TF1's queue-based input functions: `input_producer`, `range_input_producer`,
`slice_input_producer`, `limit_epochs`, `batch`, `shuffle_batch`.

Each builds a queue, an enqueue op and a `QueueRunner` for it (in the graph's queue-runner
collection); `start_queue_runners` starts the threads that fill the queues, as in TF1. The PTB
model's input is `i = range_input_producer(epoch_size, shuffle=False).dequeue()`. New code is
better served by `sl.data`, which needs no threads of the user's to manage.
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._tf1.queues.data_flow import FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue
from sluice._tf1.queues.queue_runner import QueueRunner, add_queue_runner
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor, control_dependencies
from sluice.framework.ir.tensor_shape import TensorShape, as_shape
from sluice.framework.ops.array.fill_ops import range as range_op
from sluice.framework.ops.array.fill_ops import shape as shape_of
from sluice.framework.ops.array.gather_ops import gather
from sluice.framework.ops.core.core_ops import convert_to_tensor, identity
from sluice.framework.ops.host import queue_ops
from sluice.framework.ops.random.random_ops import random_shuffle


@export("train.limit_epochs")
def limit_epochs(tensor: Any, num_epochs: int | None = None, name: str | None = None) -> Tensor:
    """`tensor`, `num_epochs` times; the run after that fails with OutOfRangeError."""
    if num_epochs is None:
        return convert_to_tensor(tensor)
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs}.")
    g = graph_lib.get_default_graph()
    with g.name_scope(name or "limit_epochs"):
        tensor = convert_to_tensor(tensor)
        counter = queue_ops.epoch_counter(num_epochs)
        with control_dependencies([counter.op]):
            return identity(tensor)


@export("train.input_producer")
def input_producer(
    input_tensor: Any,
    element_shape: Any = None,
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: int = 32,
    shared_name: str | None = None,
    summary_name: str | None = None,
    name: str | None = None,
    cancel_op: Any = None,
) -> FIFOQueue:
    """A queue that a runner fills with the rows of `input_tensor` (shuffled each epoch if
    `shuffle`), `num_epochs` times (forever if None). `summary_name` is accepted and no
    summary is written."""
    g = graph_lib.get_default_graph()
    with g.name_scope(name or "input_producer"):
        input_tensor = convert_to_tensor(input_tensor, name="input_tensor")
        inferred = input_tensor.shape[1:] if input_tensor.shape.rank else TensorShape(None)
        element_shape = (
            inferred if element_shape is None else as_shape(element_shape).merge_with(inferred)
        )
        if not element_shape.is_fully_defined():
            raise ValueError(
                "Either `input_tensor` must have a fully defined shape or "
                "`element_shape` must be specified"
            )
        if shuffle:
            input_tensor = random_shuffle(input_tensor, seed=seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        q = FIFOQueue(
            capacity,
            [input_tensor.dtype],
            [element_shape],
            shared_name=shared_name,
            name=name or "fifo_queue",
        )
        enqueue = q.enqueue_many([input_tensor])
        add_queue_runner(QueueRunner(q, [enqueue], cancel_op=cancel_op))
        return q


@export("train.range_input_producer")
def range_input_producer(
    limit: Any,
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: int = 32,
    shared_name: str | None = None,
    name: str | None = None,
    cancel_op: Any = None,
) -> FIFOQueue:
    """A queue of the integers 0..limit-1 (int32), shuffled each epoch if `shuffle`."""
    g = graph_lib.get_default_graph()
    with g.name_scope(name or "input_producer"):
        range_tensor = range_op(limit)
        return input_producer(
            range_tensor,
            [],
            num_epochs,
            shuffle,
            seed,
            capacity,
            shared_name,
            f"fraction_of_{capacity}_full",
            None,
            cancel_op,
        )


@export("train.slice_input_producer")
def slice_input_producer(
    tensor_list: list,
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: int = 32,
    shared_name: str | None = None,
    name: str | None = None,
) -> list:
    """One row of every tensor of `tensor_list` per run (the same row of each), the rows in
    shuffled order if `shuffle`, `num_epochs` times."""
    g = graph_lib.get_default_graph()
    with g.name_scope(name or "input_producer"):
        tensors = [convert_to_tensor(t) for t in tensor_list]
        if not tensors:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        first = tensors[0].shape[0] if tensors[0].shape.rank else None
        size = first if first is not None else shape_of(tensors[0])[0]
        queue = range_input_producer(
            size,
            num_epochs=num_epochs,
            shuffle=shuffle,
            seed=seed,
            capacity=capacity,
            shared_name=shared_name,
        )
        index = queue.dequeue()
        return [gather(t, index) for t in tensors]


@export("train.string_input_producer")
def string_input_producer(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError(
        "string_input_producer: sluice's input queues hold no string tensors (file names, "
        "records). Read files "
        "in Python and use sl.data.Dataset.from_generator(...) or from_tensor_slices(...)."
    )


# -- batching ---------------------------------------------------------------------------------
def _as_tensor_list(tensors: Any) -> tuple[list[Tensor], list | None]:
    if isinstance(tensors, dict):
        keys = sorted(tensors)
        return [convert_to_tensor(tensors[k]) for k in keys], keys
    if isinstance(tensors, (list, tuple)):
        return [convert_to_tensor(t) for t in tensors], None
    return [convert_to_tensor(tensors)], None


def _shapes(tensors: list[Tensor], shapes: Any, enqueue_many: bool, dynamic_pad: bool) -> list:
    if shapes is not None:
        return [as_shape(s) for s in shapes]
    found = []
    for t in tensors:
        shape = t.shape
        if enqueue_many:
            if shape.rank == 0:
                raise ValueError(
                    f"enqueue_many: tensor {t.name} is a scalar, without a batch "
                    "dimension to split."
                )
            shape = shape[1:] if shape.rank is not None else TensorShape(None)
        if not dynamic_pad and not shape.is_fully_defined():
            raise ValueError(
                f"All shapes must be fully defined: tensor {t.name} has shape "
                f"{shape}; give `shapes`, or dynamic_pad=True."
            )
        found.append(shape)
    return found


def _batch(
    queue: Any,
    tensors: Any,
    batch_size: int,
    num_threads: int,
    enqueue_many: bool,
    allow_smaller_final_batch: bool,
) -> Any:
    tensor_list, keys = _as_tensor_list(tensors)
    enqueue = queue.enqueue_many(tensor_list) if enqueue_many else queue.enqueue(tensor_list)
    add_queue_runner(QueueRunner(queue, [enqueue] * num_threads))
    if allow_smaller_final_batch:
        dequeued = queue.dequeue_up_to(batch_size)
    else:
        dequeued = queue.dequeue_many(batch_size)
    if keys is not None:
        dequeued = dequeued if isinstance(dequeued, list) else [dequeued]
        return dict(zip(keys, dequeued))
    return dequeued


@export("train.batch")
def batch(
    tensors: Any,
    batch_size: int,
    num_threads: int = 1,
    capacity: int = 32,
    enqueue_many: bool = False,
    shapes: Any = None,
    dynamic_pad: bool = False,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> Any:
    """Batches of `batch_size` of `tensors` (a list or dict of tensors evaluated per enqueue),
    through a FIFO queue filled by `num_threads` threads (a PaddingFIFOQueue if
    `dynamic_pad`). One tensor in: one batched tensor out, as in TF1."""
    g = graph_lib.get_default_graph()
    with g.name_scope(name or "batch"):
        tensor_list, _ = _as_tensor_list(tensors)
        types = [t.dtype for t in tensor_list]
        shape_list = _shapes(tensor_list, shapes, enqueue_many, dynamic_pad)
        queue_class = PaddingFIFOQueue if dynamic_pad else FIFOQueue
        queue = queue_class(capacity, types, shape_list, shared_name=shared_name)
        return _batch(
            queue, tensors, batch_size, num_threads, enqueue_many, allow_smaller_final_batch
        )


@export("train.shuffle_batch")
def shuffle_batch(
    tensors: Any,
    batch_size: int,
    capacity: int,
    min_after_dequeue: int,
    num_threads: int = 1,
    seed: int | None = None,
    enqueue_many: bool = False,
    shapes: Any = None,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> Any:
    """As `batch`, through a RandomShuffleQueue that keeps `min_after_dequeue` elements to
    pick from."""
    g = graph_lib.get_default_graph()
    with g.name_scope(name or "shuffle_batch"):
        tensor_list, _ = _as_tensor_list(tensors)
        types = [t.dtype for t in tensor_list]
        shape_list = _shapes(tensor_list, shapes, enqueue_many, False)
        queue = RandomShuffleQueue(
            capacity, min_after_dequeue, types, shape_list, seed=seed, shared_name=shared_name
        )
        return _batch(
            queue, tensors, batch_size, num_threads, enqueue_many, allow_smaller_final_batch
        )
