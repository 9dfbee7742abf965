"""Queue ops (TF1's QueueEnqueueV2, QueueDequeue*V2, QueueSizeV2, QueueCloseV2) as host ops.

Every op of a queue carries the queue's description in its attributes (`queue`: shared name,
kind, capacity, component dtypes and shapes, min_after_dequeue, seeds), so each session makes the
queue (a `HostQueue`) at its first use, under its shared name, with nothing kept outside the
graph. Enqueue and close are host sinks: the step computes the enqueued values, then the session
pushes them (blocking while the queue is full, outside its run lock). Dequeue, size and
is_closed are host sources: the session takes the values before the step and feeds them.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from sluice.framework.ir import dtypes, errors
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ir.registry import Check, not_differentiable, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.host.host_callback import (
    call_on_host,
    callback_failed,
    new_token,
    raise_recorded,
    record_failure,
    tracing,
)
from sluice.framework.ops.host.host_ops import (
    HostContext,
    HostResources,
    never_run,
    register_host_sink,
    register_host_source,
    require_top_level,
)
from sluice.framework.ops.host.host_queue import HostQueue


def queue_attrs(
    shared_name: str,
    kind: str,
    capacity: int,
    types: list,
    shapes: list,
    min_after_dequeue: int = 0,
    seed: tuple[int, int] = (0, 0),
) -> dict:
    """The `queue` attribute every op of one queue carries."""
    return {
        "shared_name": shared_name,
        "kind": kind,
        "capacity": int(capacity),
        "component_types": [dtypes.as_dtype(t) for t in types],
        "shapes": [TensorShape(s) if not isinstance(s, TensorShape) else s for s in shapes],
        "min_after_dequeue": int(min_after_dequeue),
        "seed": list(seed),
    }


def _queue(session: HostContext, op: Operation) -> HostQueue:
    return _queue_in(session.host_resources, op)


def _queue_in(resources: HostResources, op: Operation) -> HostQueue:
    """The queue of `op` among a session's host resources (made at its first use)."""
    q = op.get_attr("queue")

    def create() -> HostQueue:
        return HostQueue(
            q["shared_name"],
            q["kind"],
            q["capacity"],
            q["component_types"],
            q["shapes"],
            q["min_after_dequeue"],
            tuple(q["seed"]),
        )

    return resources.get_or_create(q["shared_name"], create)


def _with_op(op: Operation, fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except errors.OpError as err:
        if err.op is None:
            err.op = op
        raise


# -- enqueue (a sink, or a step's own op inside control flow) -------------------------------
def _enqueue(session: HostContext, op: Operation, values: list) -> None:
    _with_op(op, _queue(session, op).enqueue, values, op.get_attr("many"))


def _enqueue_in_step(ctx: Any, *values: Any, queue: dict, many: bool, token: str = "") -> list:
    """An enqueue built in a cond branch or a while body (TF's testWhileQueue): the step pushes
    each time the op runs, in order, from the host (an ordered callback when compiled). Other
    runs may go on while it pushes (a full queue's enqueue waits for a dequeue, as in TF1)."""
    op = ctx.op
    resources = getattr(ctx, "host_resources", None)
    if resources is None:
        raise errors.UnimplementedError(
            None, op, f"{op.name}: an enqueue inside control flow needs a session's queues."
        )
    target = _queue_in(resources, op)

    def push(*arrays: Any) -> None:
        count = len(arrays[0]) if many and arrays and np.ndim(arrays[0]) else 1
        if target.has_room(count):  # no wait: the step keeps the lock, no other run steps in
            _with_op(op, target.enqueue, list(arrays), many)
            return
        # A full queue waits for another thread's dequeue, whose run needs the step lock. While
        # it waits, other runs go on, as in TF1 (a compiled step has handed the variables it
        # writes to XLA meanwhile: a run reading them then fails as uninitialized).
        with resources.step_lock.set_aside():
            _with_op(op, target.enqueue, list(arrays), many)

    if not tracing():
        # runs that take the lock meanwhile set the session's per-run state: give it back
        own = ctx.op, getattr(ctx, "stack_memory", None)
        try:
            push(*values)
        finally:
            ctx.op, ctx.stack_memory = own
        return []

    def host(*arrays: Any) -> tuple:
        try:
            push(*arrays)
        except errors.OpError as err:  # raised by the step's check, after the callback
            return (record_failure(err),)
        return (np.int64(0),)

    call_on_host(getattr(ctx, "live", True), token, host, [], values, ordered=True)
    return []


register_op(
    "QueueEnqueueV2",
    infer=lambda op: [],
    kernel=_enqueue_in_step,
    stateful=True,
    check=Check(callback_failed, raise_recorded),
)
register_host_sink("QueueEnqueueV2", _enqueue)
not_differentiable("QueueEnqueueV2")


def _close(session: HostContext, op: Operation, values: list) -> None:
    _queue(session, op).close_queue(op.get_attr("cancel_pending_enqueues"))


register_op("QueueCloseV2", infer=lambda op: [], kernel=never_run, stateful=True)
register_host_sink("QueueCloseV2", _close)
not_differentiable("QueueCloseV2")


# -- dequeue, size, is_closed (sources) -------------------------------------------------------
def _dequeue_infer(op: Operation) -> list:
    q, n = op.get_attr("queue"), op.get_attr("n")
    if n is None:
        return list(zip(q["component_types"], q["shapes"]))
    first = TensorShape([None if op.get_attr("up_to") else n])
    return [(t, first.concatenate(s)) for t, s in zip(q["component_types"], q["shapes"])]


def _dequeue(session: HostContext, op: Operation) -> list:
    return _with_op(op, _queue(session, op).dequeue, op.get_attr("n"), op.get_attr("up_to"))


register_op("QueueDequeueV2", infer=_dequeue_infer, kernel=never_run, stateful=True)
register_host_source("QueueDequeueV2", _dequeue)
not_differentiable("QueueDequeueV2")

register_op(
    "QueueSizeV2",
    infer=lambda op: [(dtypes.int32, TensorShape([]))],
    kernel=never_run,
    stateful=True,
)
register_host_source("QueueSizeV2", lambda session, op: [_queue(session, op).size()])
not_differentiable("QueueSizeV2")

register_op(
    "QueueIsClosedV2",
    infer=lambda op: [(dtypes.bool_, TensorShape([]))],
    kernel=never_run,
    stateful=True,
)
register_host_source("QueueIsClosedV2", lambda session, op: [_queue(session, op).is_closed()])
not_differentiable("QueueIsClosedV2")


# -- builders ---------------------------------------------------------------------------------
def enqueue(queue: dict, values: list[Tensor], many: bool, name: str | None) -> Operation:
    g = graph_lib.graph_of(values)
    attrs = {"queue": queue, "many": many}
    if g.control_flow_context is not None:  # runs inside the step (see `_enqueue_in_step`)
        attrs["token"] = new_token("enqueue")
    return g.create_op(
        "QueueEnqueueV2",
        values,
        attrs,
        name=name or ("QueueEnqueueManyV2" if many else "QueueEnqueueV2"),
    )


def dequeue(queue: dict, n: int | None, up_to: bool, name: str | None) -> list[Tensor]:
    g = graph_lib.get_default_graph()
    require_top_level(g, "QueueDequeueV2")
    default = (
        "QueueDequeueV2" if n is None else ("QueueDequeueUpToV2" if up_to else "QueueDequeueManyV2")
    )
    op = g.create_op(
        "QueueDequeueV2", [], {"queue": queue, "n": n, "up_to": up_to}, name=name or default
    )
    return list(op.outputs)


def size(queue: dict, name: str | None) -> Tensor:
    g = graph_lib.get_default_graph()
    return g.create_op("QueueSizeV2", [], {"queue": queue}, name=name or "QueueSizeV2").outputs[0]


def is_closed(queue: dict, name: str | None) -> Tensor:
    g = graph_lib.get_default_graph()
    return g.create_op(
        "QueueIsClosedV2", [], {"queue": queue}, name=name or "QueueIsClosedV2"
    ).outputs[0]


def close(queue: dict, cancel_pending_enqueues: bool, name: str | None) -> Operation:
    g = graph_lib.get_default_graph()
    return g.create_op(
        "QueueCloseV2",
        [],
        {"queue": queue, "cancel_pending_enqueues": cancel_pending_enqueues},
        name=name or "QueueCloseV2",
    )


# -- epochs of an input producer (a source) ---------------------------------------------------
class _Counter:
    """How many times a session has run an `EpochCounter` op."""

    def __init__(self):
        self.count = 0

    def close(self) -> None:
        pass


def _count_up(session: HostContext, op: Operation) -> list:
    counter = session.host_resources.get_or_create(op.get_attr("shared_name"), _Counter)
    limit = op.get_attr("limit")
    with _COUNT_LOCK:
        if counter.count >= limit:
            raise errors.OutOfRangeError(None, op, f"Reached limit of {limit}")
        counter.count += 1
        return [counter.count - 1]


_COUNT_LOCK = threading.Lock()

register_op(
    "EpochCounter",
    infer=lambda op: [(dtypes.int64, TensorShape([]))],
    kernel=never_run,
    stateful=True,
)
register_host_source("EpochCounter", _count_up)
not_differentiable("EpochCounter")


def epoch_counter(limit: int, name: str | None = None) -> Tensor:
    """0, 1, ... limit-1 in successive runs, then OutOfRangeError (TF1's `count_up_to` on the
    `epochs` local variable of `limit_epochs`, kept by the session instead of a variable)."""
    g = graph_lib.get_default_graph()
    op_name = g.unique_name(name or "epochs")
    return g.create_op(
        "EpochCounter", [], {"shared_name": op_name, "limit": int(limit)}, name=op_name + "/"
    ).outputs[0]
