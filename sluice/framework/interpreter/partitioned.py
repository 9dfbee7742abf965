"""Running a partitioned graph: one executor per device, all at once.

Each partition's executor runs its plan under `jax.default_device` of its device, so its kernels
compute there; values it sends are moved to the receiving device with `jax.device_put` and
counted. The partitions share one `Rendezvous`. Two drivers run them:

- "threads" (the default): a thread per partition, as TensorFlow runs them (kept for the next runs:
  starting one cost more than a short run). Each thread begins its own partition; after that any
  thread takes a turn (a slice of nodes) of any partition that has work and no thread running it, so
  the thread that sent a value goes on to run its receiver rather than waking the receiver's thread:
  Python runs one thread at a time anyway, and a thread switch per value crossing devices cost more
  than the loop's own work. A thread with nothing to take sleeps, and takes work again when no
  thread has gone on for a short while: a kernel that blocks (a host kernel waiting for a device
  value) holds up the other partitions for about that while, not for as long as it blocks.
- "scheduler": the partitions take turns on the calling thread, a slice of nodes each. JAX
  dispatches kernels asynchronously, so a device computes while the scheduler goes on
  dispatching the other partitions' work; but a kernel that blocks holds up every partition.
  When every partition waits for another one, the run is deadlocked, which is a bug, raised as
  an InternalError rather than a hang.

A turn passes a partition over when it has nothing to do. In either driver, a partition whose
turn has nothing left to run but waits for values first runs the other partitions' ready work
that no thread runs (`_Turns.help_others`) and reads what they sent back, so a loop split across
devices, whose values go back and forth every iteration, runs on in one turn. On W5 split
across two devices both drivers cost about the same per iteration
(`python -m benchmarks.model_parallel`).

Either way, the first error in any partition stops the others (no thread takes another turn)
and the run raises that error; a deadline passed stops them all with
DeadlineExceededError. Nothing waits forever.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from typing import Any

import jax
import numpy as np

from sluice.framework.interpreter.device_scope import DeviceScope
from sluice.framework.interpreter.executor import Executor
from sluice.framework.interpreter.kinds import SEND
from sluice.framework.interpreter.stack_memory import StackStats
from sluice.framework.ir import errors
from sluice.framework.ir.x64 import x64_scope
from sluice.framework.ops.host.host_kernels import HOST_MAX_ELEMENTS
from sluice.framework.placement.rendezvous import Rendezvous

_HOST_TYPES = (np.ndarray, np.generic)
# NumPy scalar type -> the bytes of one value (those of a fixed size: not str_, bytes_, void)
_SCALAR_BYTES = {
    t: np.dtype(t).itemsize
    for t in np.sctypeDict.values()
    if issubclass(t, np.generic) and np.dtype(t).kind in "biufcmM"
}
_POLL_S = 0.05  # how often the calling thread looks at the deadline
_HELP_POLL_S = 0.002  # how often a partition's thread with nothing to run looks again,
_HELP_POLL_MAX_S = 0.02  # ... and at most, while the other threads go on
_HELP_BLOCKED_S = 0.01  # a partition's work run by another's thread for longer may have blocked
_HELP_BLOCKED_WAKEUPS = 3  # ... and has, when idle threads woke this often meanwhile


class _Helping:
    """Whether a run's partitions run each other's work (`_Turns.help_others`), shared by them."""

    __slots__ = ("on", "check", "wakeups")

    def __init__(self, check: bool):
        self.on = True
        self.check = check  # whether a drain that blocks stops it (a thread per partition)
        self.wakeups = 0  # times a thread with nothing to take woke and looked for work


class RunControl:
    """Whether the run goes on; the first error that stopped it."""

    def __init__(self):
        self.stopped = False
        self.error: BaseException | None = None
        self._lock = threading.Lock()

    def stop(self, error: BaseException) -> None:
        with self._lock:
            if not self.stopped:
                self.error = error
                self.stopped = True


@dataclasses.dataclass
class PartitionStats:
    """What one partition is and did in one run (`RunMetadata.partitions`)."""

    device: str
    nodes: int = 0  # nodes in its plan: ops, Sends, Recvs and control-loop nodes
    ops: int = 0  # graph ops among them
    sends: int = 0  # Send nodes (cut edges leaving it)
    recvs: int = 0  # Recv nodes (cut edges entering it)
    control_loops: int = 0
    values_sent: int = 0  # values sent this run (a Send in a loop sends every iteration)
    bytes_sent: int = 0  # bytes of those values
    nodes_run: int = 0
    stack_stats: StackStats = dataclasses.field(default_factory=StackStats)


def _deadline_error(timeout_s: float) -> errors.DeadlineExceededError:
    return errors.DeadlineExceededError(
        None,
        None,
        f"The run took longer than its timeout of {timeout_s * 1000:g} ms "
        "(RunOptions.timeout_in_ms).",
    )


class PartitionLink:
    """An executor's view of the other partitions: its Sends (into the receivers' mailboxes),
    its Recvs (from its own `mailbox`), the control."""

    __slots__ = ("rendezvous", "index", "mailbox", "control", "stats", "route", "ends")

    def __init__(
        self, rendezvous: Rendezvous, index: int, control: RunControl, stats: PartitionStats
    ):
        self.rendezvous = rendezvous
        self.index = index
        self.mailbox = rendezvous.mailbox(index)
        self.control = control
        self.stats = stats
        self.route: dict[Any, Any] = {}  # Send node -> its receiver's mailbox (see `connect`)
        # a loop -> (mailbox, key) of each end-of-frame message it sends when it ends here (the
        # key less its tag, which is ())
        self.ends: dict[str, list[tuple[Any, tuple]]] = {}

    def connect(self, plan: Any, devices: list[Any]) -> None:
        """Routes each Send of `plan` to the mailbox of the partition on its edge's device, and
        readies each partition's mailbox for the loops its values drive there."""
        for node in plan.remote:
            if node.kind == SEND:
                index = devices.index(node.edge.dst_device)
                self.route[node] = self.rendezvous.mailbox(index)
        this = devices[self.index].name
        for frame, receivers in plan.frame_ends.items():
            self.ends[frame] = [
                (self.rendezvous.mailbox(devices.index(device)), ("end", this, frame))
                for device in receivers
            ]
        for key, node in plan.driven.items():
            self.mailbox.driven[key] = node
        for frame, (senders, _) in plan.driven_frames.items():
            for sender in senders:
                self.mailbox.driven[("end", sender, frame)] = frame

    def end(self, frame: str) -> None:
        """Sends the end of loop `frame` here to the partitions its values drive."""
        for box, key in self.ends[frame]:
            box.put(key, (), None, False)  # the tag (): no iteration's

    def send(self, node: Any, tag: tuple, value: Any, dead: bool) -> None:
        stats = self.stats
        stats.values_sent += 1
        if value is not None:  # None: dead, or a control edge's signal
            # a NumPy scalar's size by its type: `nbytes` of one costs what the rest of a
            # Send does, and isinstance(x, jax.Array) several times that
            size = _SCALAR_BYTES.get(type(value))
            if size is None:
                size, value = _moved(value, node.edge.dst_device.jax_device)
            stats.bytes_sent += size
        self.route[node].put(node.key, tag, value, dead)


def _moved(value: Any, target: Any) -> tuple[int, Any]:
    """(its size in bytes, `value` as the receiving device reads it): a JAX array copied to
    `target`, a NumPy value as it is."""
    if isinstance(value, _HOST_TYPES):
        return value.nbytes, value
    if isinstance(value, jax.Array):
        value = jax.device_put(value, target)
        return value.nbytes, value
    return getattr(value, "nbytes", 0), value


class _Turns:
    """One partition's run as its driver sees it: the executor's generator, resumed a slice at a
    time by whichever thread has the partition's `busy` lock, under the partition's device."""

    __slots__ = (
        "executor",
        "mailbox",
        "inbox",
        "device",
        "steps",
        "slice_nodes",
        "scope",
        "busy",
        "others",
        "helping",
        "started",
        "done",
    )

    def __init__(self, executor: Executor, device: Any, feed_values: list[Any], slice_nodes: int):
        self.executor = executor
        self.mailbox = executor.link.mailbox
        self.inbox = self.mailbox.inbox
        self.device = device
        self.steps = executor.steps(feed_values, slice_nodes)
        self.slice_nodes = slice_nodes
        self.scope = DeviceScope(device.jax_device)  # its kernels run on its device
        self.busy = threading.Lock()
        self.others: list[_Turns] = []
        self.helping = _Helping(False)  # shared by the run's partitions
        self.started = False
        self.done = False

    def has_work(self) -> bool:
        """Whether a turn would make progress: nodes ready, values arrived, not yet begun, or
        nothing left to wait for (a turn ends it)."""
        executor = self.executor
        return bool(executor.ready or self.inbox or not self.started or not executor.waiting)

    def turn(self) -> None:
        """Hands the executor what has arrived and runs it for a slice (to its end, when it has
        nothing left to wait for: then `done`)."""
        self.started = True
        previous = self.scope.enter()
        try:  # the driver has NumPy's floating-point warnings off
            if self.inbox:
                for deliver, token, value, dead in self.mailbox.arrived():
                    deliver(token, value, dead)
            next(self.steps)
        except StopIteration:
            self.done = True
        finally:
            self.scope.leave(previous)

    def help_others(self) -> bool:
        """Runs the other partitions' ready work that no thread runs, on this partition's
        thread and within its turn, when this partition has nothing to run but waits for their
        values (`Executor.idle`), a slice of each; then this partition's work that they
        brought. With one other partition, the two run by turns from then on, while each
        brings the other work: a loop split in two takes no turn, no lock and no return to
        this partition's steps per value crossing. Runs up to a slice of this partition's
        nodes, as the turn would, and returns whether it did (the turn then yields). While
        this thread holds both partitions, what one sends the other is taken at once
        (`Mailbox.holder`); else it waits in the inbox, which the partition's turn reads."""
        mailbox, helping = self.mailbox, self.helping
        if not helping.on:
            return False
        own, check = self.executor, helping.check
        budget = self.slice_nodes
        by_turns = len(self.others) == 1  # with more, each gets its share of this thread
        for other in self.others:
            executor = other.executor
            if not (executor.ready and other.started and other.busy.acquire(blocking=False)):
                continue
            box = other.mailbox
            # this thread holds both partitions: what one sends the other is taken at once
            box.holder = mailbox.holder = threading.get_ident()
            enter, leave, clock = other.scope.enter, other.scope.leave, time.perf_counter
            try:
                while not other.done:
                    if check:
                        start = clock()
                        wakeups = helping.wakeups
                    previous = enter()  # the other partition's device, for its kernels
                    try:
                        executor.drain(other.slice_nodes)
                    finally:
                        leave(previous)
                    if (
                        check
                        and helping.wakeups - wakeups >= _HELP_BLOCKED_WAKEUPS
                        and clock() - start > _HELP_BLOCKED_S
                    ):
                        # work that blocks (a host kernel waiting for a device value; the
                        # idle threads woke meanwhile, so it let go of the GIL, where a thread
                        # that the OS held up on a loaded machine holds it): with a thread per
                        # partition, run it in turns from now on, so that this partition's
                        # next work, which waits for this turn to end, may run beside it
                        helping.on = False
                        return False
                    if not own.ready:
                        break
                    budget -= own.drain(budget)  # under this turn's device: its slice
                    if not by_turns or not executor.ready or budget <= 0:
                        break
            finally:
                box.holder = mailbox.holder = None
                other.busy.release()
            if budget <= 0:
                return True
        return False


def run_partitions(
    plans: list[Any],
    contexts: list[Any],
    devices: list[Any],
    stats: list[PartitionStats],
    feed_values: list[Any],
    timeout_s: float | None = None,
    threads: bool = True,
) -> list[Any]:
    """Runs each partition's plan on its device (`devices[i]`, a `LocalDevice`), all at once;
    returns one value per fetch (DEAD for a dead one)."""
    rendezvous, control = Rendezvous(), RunControl()
    executors = [
        Executor(plan, ctx, link=PartitionLink(rendezvous, i, control, part_stats))
        for i, (plan, ctx, part_stats) in enumerate(zip(plans, contexts, stats))
    ]
    for executor, plan in zip(executors, plans):
        executor.link.connect(plan, devices)
    parts = [
        # a thread yields only to look whether the run was stopped; turns on one thread are
        # shorter, so that every partition gets to dispatch its work
        _Turns(executor, device, feeds_on(plan, device, feed_values), 1024 if threads else 64)
        for executor, plan, device in zip(executors, plans, devices)
    ]
    helping = _Helping(threads)
    for part in parts:  # a Send hands a waiting Recv its value at once (see `Mailbox.put`)
        part.mailbox.receive = part.executor.receive
        part.mailbox.arrive = part.executor.arrive
        # held by whoever runs the partition's turn. On one thread a value is handed over at
        # once, even while a node of the receiver runs (up the stack): handing it over only
        # queues nodes and counts down, and sends no value on (at most a loop's end-of-frame
        # messages, which only count down there)
        part.mailbox.lock = part.busy if threads else None
        part.others = [other for other in parts if other is not part]
        part.executor.idle = part.help_others
        part.helping = helping
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    try:
        if threads:
            _run_threads(parts, control, rendezvous, deadline, timeout_s)
        else:
            _run_scheduled(parts, deadline, timeout_s)
    finally:
        for part, part_stats in zip(parts, stats):
            if part.busy.acquire(blocking=False):  # not one a thread still runs
                part.steps.close()
                part.busy.release()
            part_stats.nodes_run = part.executor.nodes_run
    merged: list[Any] = [None] * plans[0].num_fetches  # each fetch comes from one partition
    for executor in executors:
        for pos, value in enumerate(executor.results):
            if value is not None:
                merged[pos] = value
    return merged


def feeds_on(plan: Any, device: Any, feed_values: list[Any]) -> list[Any]:
    """The fed values as partition `plan` on `device` reads them: each array it uses copied to
    its device once, here, rather than by JAX at every use (in every iteration of a loop) from
    wherever the session put it. Small NumPy values stay on the host for the host kernels."""
    values = list(feed_values)
    target = device.jax_device
    for i, (source, value) in enumerate(zip(plan.feed_sources, feed_values)):
        if not any(slot >= 0 for _, _, slot in source.edges):
            continue  # this partition does not read it (a control edge needs no value)
        if isinstance(value, jax.Array):
            if value.devices() != {target}:
                values[i] = jax.device_put(value, target)
        elif isinstance(value, np.ndarray) and value.size > HOST_MAX_ELEMENTS:
            values[i] = jax.device_put(value, target)
    return values


def _run_scheduled(parts: list[_Turns], deadline: float | None, timeout_s: float | None) -> None:
    """The partitions take turns on this thread; one with nothing to do is passed over."""
    live = list(parts)
    with np.errstate(all="ignore"):
        while live:
            progress = finished = False
            for part in live:
                executor = part.executor
                if executor.ready or part.inbox or not executor.waiting or not part.started:
                    with part.busy:  # has_work, inline: the loop runs twice per W5 iteration
                        part.turn()
                    progress = True
                    finished = finished or part.done
            if finished:
                live = [part for part in live if not part.done]
            if deadline is not None and time.monotonic() > deadline:
                raise _deadline_error(timeout_s)
            if live and not progress:
                waiting = ", ".join(part.device.name for part in live)
                raise errors.InternalError(
                    None,
                    None,
                    f"The partitions on {waiting} wait for each other's values "
                    "and none can go on: the partitioned graph is deadlocked.",
                )


def _run_threads(
    parts: list[_Turns],
    control: RunControl,
    rendezvous: Rendezvous,
    deadline: float | None,
    timeout_s: float | None,
) -> None:
    """A thread per partition (`_Worker`s). Each thread begins its own partition; from then on, any
    thread takes a turn of any partition that has work and no thread running it, in turn from the
    one after its last, so one thread goes on with the values that another partition sent it instead
    of waking that partition's thread (Python runs one thread at a time anyway): a value crossing
    devices costs no thread switch. A thread with nothing to take sleeps and looks again after
    _HELP_POLL_S; it takes work again only if no thread went on (ended a turn or ran another
    partition's work in its own) while it slept, that is when the other threads are held up, in a
    kernel that blocks (a host kernel waiting for a device value): such a kernel holds up the
    partitions behind it for about that long, not for as long as it blocks. While the others go on,
    it looks half as often each time, down to every _HELP_POLL_MAX_S: a thread that wakes takes the
    GIL from the one that works, and on a loaded machine that one may then wait milliseconds to have
    it back."""
    count = len(parts)
    helping = parts[0].helping
    turns = [0]  # turns taken by all threads: with the nodes run by helpers, progress
    ended = threading.Event()  # every partition done, or the run stopped: the idle threads end

    def progress() -> int:
        return turns[0] + sum(part.executor.cut_nodes_run for part in parts)

    def take(at: int) -> int:
        """Takes a turn of the first partition from `at` on that may be taken; returns the index
        after it, or -1 when there was none."""
        for k in range(count):
            i = (at + k) % count
            part = parts[i]
            executor = part.executor
            # a partition is begun by its own thread, then taken by any; has_work, inline
            if part.done or not part.started:
                continue
            if not (executor.ready or part.inbox or not executor.waiting):
                continue
            if part.busy.acquire(blocking=False):
                try:
                    if not part.done:
                        part.turn()
                finally:
                    part.busy.release()
                turns[0] += 1
                return (i + 1) % count
        return -1

    def work(own: int) -> None:
        try:
            # JAX's x64 setting is per thread: this one enters sluice's (see `ir.x64`)
            with x64_scope(), np.errstate(all="ignore"):
                with parts[own].busy:
                    parts[own].turn()
                turns[0] += 1
                at = (own + 1) % count
                while not control.stopped:
                    after = take(at)
                    if after >= 0:
                        at = after
                        continue
                    if all(part.done for part in parts):
                        ended.set()
                        return
                    seen, wait = progress(), _HELP_POLL_S
                    while not control.stopped:
                        if ended.wait(wait):
                            return
                        helping.wakeups += 1
                        now = progress()
                        if now == seen or all(part.done for part in parts):
                            break  # no thread went on: look for work
                        # the others go on: look less often, since a thread that wakes takes
                        # the GIL from the one that runs, which waits until it has it back
                        seen, wait = now, min(2 * wait, _HELP_POLL_MAX_S)
        except BaseException as err:  # noqa: BLE001  (handed to the caller's thread)
            control.stop(err)
            rendezvous.abort()
        finally:
            if control.stopped:
                ended.set()

    workers = _take_workers(count)
    left = [count]  # partitions' threads still working
    finished = threading.Event()

    def job(own: int, worker: _Worker) -> None:
        try:
            threading.current_thread().name = f"sluice-partition-{parts[own].device.name}"
            work(own)
        finally:
            with _POOL_LOCK:
                _IDLE_WORKERS.append(worker)  # back before the run can end: the next one takes it
                left[0] -= 1
                last = not left[0]
            if last:
                finished.set()

    for i, worker in enumerate(workers):
        worker.give(job, i)
    try:
        # without a deadline nothing to look at: no wake-up, which takes the GIL from the workers
        while not finished.wait(None if deadline is None else _POLL_S):
            if deadline is not None and time.monotonic() > deadline:
                control.stop(_deadline_error(timeout_s))
                rendezvous.abort()
                ended.set()
                deadline = None
    except BaseException as err:  # KeyboardInterrupt: stop the partitions before leaving
        control.stop(err)
        rendezvous.abort()
        ended.set()
        raise
    if control.error is not None:
        raise control.error


class _Worker:
    """A partition's thread (`_run_threads`), kept for later runs: starting and joining a thread
    per partition cost about 0.25 ms of CPU each per run on a 2-core machine (a whole W5 run of
    10 iterations costs 0.3 ms on one device), and on a loaded one each start waited for the new
    thread to give the GIL back, often for milliseconds."""

    __slots__ = ("work", "wake")

    def __init__(self):
        self.work: Any = None
        self.wake = threading.Event()
        threading.Thread(target=self._serve, daemon=True, name="sluice-partition").start()

    def give(self, job: Any, own: int) -> None:
        """Runs `job(own, self)` on this thread (idle: taken from the pool)."""
        self.work = (job, own)
        self.wake.set()

    def _serve(self) -> None:
        while True:
            self.wake.wait()
            self.wake.clear()
            (job, own), self.work = self.work, None
            try:
                job(own, self)
            except BaseException:  # noqa: BLE001  (a job hands its errors to its run)
                pass
            job = None  # holds the run's executors and values: not while this thread waits


_POOL_LOCK = threading.Lock()
_IDLE_WORKERS: list[_Worker] = []  # partition threads waiting for a run


def _take_workers(count: int) -> list[_Worker]:
    """`count` idle partition threads, started when the pool has too few (runs at once, on
    several threads or nested in a host kernel, each have their own)."""
    with _POOL_LOCK:
        keep = max(0, len(_IDLE_WORKERS) - count)
        taken = _IDLE_WORKERS[keep:]
        del _IDLE_WORKERS[keep:]
    return taken + [_Worker() for _ in range(count - len(taken))]


def _forget_workers() -> None:
    """In a forked child, which has none of its parent's threads (and its lock may be held)."""
    global _POOL_LOCK
    _POOL_LOCK = threading.Lock()
    _IDLE_WORKERS.clear()


os.register_at_fork(after_in_child=_forget_workers)
