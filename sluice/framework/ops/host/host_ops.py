"""Host ops: ops whose work the session does on the host around a step, never inside it.

A *source* (an iterator's GetNext, a queue's Dequeue) has its outputs made by a Python callable
before the step runs; the session feeds them to the step as it feeds placeholders, so a compiled
step takes them as `jax.jit` arguments and never calls back to the host. A *sink* (an iterator's
initializer, a queue's Enqueue or Close) is a run target whose inputs the step computes and hands
to a Python callable after it. Both act on resources each session keeps for itself (an
iterator's position, a queue's elements), as TF1 keeps them in a session's resource manager.

Sources and sinks may block (an empty or a full queue); the session calls them outside its run
lock, so a queue runner's enqueue and a training step's dequeue on another thread both proceed.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
import weakref
from typing import Any, Callable, Protocol

from sluice.framework.ir import errors
from sluice.framework.ir.graph import Operation


class HostResource(Protocol):
    def close(self) -> None:
        """Releases threads and wakes blocked callers (the session is closing)."""


class HostContext(Protocol):
    """What a source or sink sees of its session."""

    host_resources: "HostResources"

    def run(self, fetches: Any, feed_dict: dict | None = None) -> Any: ...


HostSource = Callable[[HostContext, Operation], list]
HostSink = Callable[[HostContext, Operation, list], None]

_SOURCES: dict[str, HostSource] = {}
_SINKS: dict[str, HostSink] = {}


def register_host_source(op_type: str, produce: HostSource) -> None:
    """`produce(session, op) -> [value per output]`, called before each step that needs `op`."""
    if op_type in _SOURCES or op_type in _SINKS:
        raise KeyError(f"Op type {op_type!r} already has host behaviour.")
    _SOURCES[op_type] = produce


def register_host_sink(op_type: str, consume: HostSink) -> None:
    """`consume(session, op, input_values)`, called after each step that targets `op`."""
    if op_type in _SOURCES or op_type in _SINKS:
        raise KeyError(f"Op type {op_type!r} already has host behaviour.")
    _SINKS[op_type] = consume


def host_source(op_type: str) -> HostSource | None:
    return _SOURCES.get(op_type)


def host_sink(op_type: str) -> HostSink | None:
    return _SINKS.get(op_type)


def runs_in_step(op: Operation) -> bool:
    """Whether a sink built inside control flow runs in the step, through its kernel (an
    enqueue in a while body), rather than on the host after it."""
    return op.control_flow_context is not None and op.op_def.kernel is not never_run


def require_top_level(graph: Any, op_type: str) -> None:
    """Host ops run around a step, never inside one, so a cond branch or a while body cannot
    hold one (TF1 can): say so when it is built rather than when it runs.

    Raises:
      NotImplementedError: `graph` is building a cond branch or a while body.
    """
    if graph.control_flow_context is not None:
        raise NotImplementedError(
            f"{op_type}: sluice runs this op on the host around a step, so it cannot be built "
            "inside a cond branch or a while loop body; call it outside and pass its tensors "
            "in."
        )


def never_run(*args: Any, **attrs: Any) -> Any:
    """The registry kernel of a host op: the session does its work, engines never see it."""
    raise errors.InternalError(
        None,
        None,
        "A host op reached an engine: the session runs host "
        "ops around a step (see sluice.framework.ops.host.host_ops).",
    )


class StepLock:
    """`Session.run`'s lock: one step at a time, re-entrant for the thread that holds it.

    A step that waits inside itself for another run (an enqueue in a while body, on a full
    queue, waits for a dequeue) sets the lock aside while it waits (`set_aside`), as TF1 runs
    steps concurrently: holding it, the dequeue's run could never start.
    """

    def __init__(self):
        self._cond = threading.Condition()
        self._holder: int | None = None
        self._count = 0

    def __enter__(self) -> "StepLock":
        me = threading.get_ident()
        with self._cond:
            if self._holder != me:
                self._cond.wait_for(lambda: self._count == 0)
                self._holder = me
            self._count += 1
        return self

    def try_enter(self) -> bool:
        """Takes the lock if no other thread holds it (then leave it with `__exit__`)."""
        me = threading.get_ident()
        with self._cond:
            if self._holder not in (None, me):
                return False
            self._holder = me
            self._count += 1
            return True

    def __exit__(self, *exc: Any) -> None:
        with self._cond:
            self._count -= 1
            if self._count == 0:
                self._holder = None
                self._cond.notify_all()

    @contextlib.contextmanager
    def set_aside(self):
        """Lets other runs take the lock for the block, then takes it back for the step that
        held it (the block may run on a thread of its own: a compiled step's host callback)."""
        with self._cond:
            holder, count = self._holder, self._count
            self._holder, self._count = None, 0
            self._cond.notify_all()
        try:
            yield
        finally:
            if count:
                with self._cond:
                    self._cond.wait_for(lambda: self._count == 0)
                    self._holder, self._count = holder, count


class HostResources:
    """One session's host resources by name (thread-safe), and the session's `step_lock` (an
    in-step host op that must wait sets it aside)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._resources: dict[str, Any] = {}
        self._closed = False
        self.step_lock = StepLock()
        _LIVE_RESOURCES.add(self)

    def get(self, name: str) -> Any:
        with self._lock:
            return self._resources.get(name)

    def get_or_create(self, name: str, create: Callable[[], Any]) -> Any:
        with self._lock:
            self._require_open()
            resource = self._resources.get(name)
            if resource is None:
                resource = self._resources[name] = create()
            return resource

    def replace(self, name: str, resource: Any) -> None:
        """Puts `resource` under `name`, closing the one it replaces (a re-initialised
        iterator stops its producer thread)."""
        with self._lock:
            if self._closed:
                resource.close()
                self._require_open()
            old = self._resources.get(name)
            self._resources[name] = resource
        if old is not None:
            old.close()

    def close_all(self) -> None:
        with self._lock:
            self._closed = True
            resources, self._resources = list(self._resources.values()), {}
        for resource in resources:
            resource.close()

    def _require_open(self) -> None:
        if self._closed:
            raise errors.CancelledError(None, None, "Session has been closed.")


# -- interpreter exit --------------------------------------------------------------------------
# A daemon thread that is inside a JAX call when the interpreter finalizes aborts the process
# ("terminate called ... FATAL: exception not rethrown"). So at exit, before finalization, every
# session's host resources close (iterator threads stop, queue runners' enqueues fail) and the
# threads registered here get a moment to leave their steps.
_LIVE_RESOURCES: "weakref.WeakSet[HostResources]" = weakref.WeakSet()
_HOST_THREADS: "weakref.WeakSet[threading.Thread]" = weakref.WeakSet()
_EXITING = threading.Event()
_EXIT_GRACE_SECS = 2.0


def register_host_thread(thread: threading.Thread) -> None:
    """A thread that runs steps for host resources (a prefetch thread, a queue runner): the
    interpreter's exit waits briefly for it once its resources are closed."""
    _HOST_THREADS.add(thread)


def interpreter_exiting() -> bool:
    """True once the interpreter has begun to exit: host threads end quietly."""
    return _EXITING.is_set()


@atexit.register
def _stop_host_threads() -> None:
    _EXITING.set()
    for resources in list(_LIVE_RESOURCES):
        resources.close_all()
    deadline = time.monotonic() + _EXIT_GRACE_SECS
    for thread in list(_HOST_THREADS):
        if thread is not threading.current_thread() and thread.is_alive():
            thread.join(max(0.0, deadline - time.monotonic()))
