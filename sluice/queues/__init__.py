"""TF1's queues and queue-based input: `FIFOQueue`, `RandomShuffleQueue`, `PaddingFIFOQueue`,
`QueueRunner`, `start_queue_runners`, the input producers and `batch`/`shuffle_batch`.

Queue ops are host ops (see `sluice.framework.ops.host.queue_ops`): a dequeue is fed to the
step that needs it, an enqueue pushes what its step computed. `sl.train` re-exports these names.
"""

from sluice._tf1.queues.data_flow import FIFOQueue, PaddingFIFOQueue, QueueBase, RandomShuffleQueue
from sluice._tf1.queues.input import (
    batch,
    input_producer,
    limit_epochs,
    range_input_producer,
    shuffle_batch,
    slice_input_producer,
    string_input_producer,
)
from sluice._tf1.queues.queue_runner import (
    QUEUE_RUNNERS,
    QueueRunner,
    add_queue_runner,
    start_queue_runners,
)

__all__ = [
    "FIFOQueue",
    "PaddingFIFOQueue",
    "QUEUE_RUNNERS",
    "QueueBase",
    "QueueRunner",
    "RandomShuffleQueue",
    "add_queue_runner",
    "batch",
    "input_producer",
    "limit_epochs",
    "range_input_producer",
    "shuffle_batch",
    "slice_input_producer",
    "start_queue_runners",
    "string_input_producer",
]
