"""Running a partitioned graph: one executor per device, all at once.

Each partition's executor runs its plan under `jax.default_device` of its device, so its kernels
compute there; values it sends are moved to the receiving device with `jax.device_put` and
counted. The partitions share one `Rendezvous`. Two drivers run them:

- "threads" (the default): a thread per partition, as TensorFlow runs them; a kernel that blocks
  (a host kernel, a predicate read from a device) holds up only its own partition, at the price
  of a thread switch for every value that crosses devices while Python's lock serialises the
  executors' own work.
- "scheduler": the executors take turns on the calling thread, a slice of nodes
  each. JAX dispatches kernels asynchronously, so a device computes while the scheduler goes on
  dispatching the other partitions' work: an expensive op on one device overlaps work on another
  without a thread per device, and a value crossing devices costs no thread switch. When every
  partition waits for another one, the run is deadlocked, which is a bug, raised as an
  InternalError rather than a hang. On W5 split across two devices it costs about 30% less per
  iteration than threads (`python -m benchmarks.model_parallel`).

Either way, the first error in any partition stops the others (they raise CancelledError, which is
dropped) and the run raises that error; a deadline passed stops them all with
DeadlineExceededError. Nothing waits forever.
"""

from __future__ import annotations

import collections
import dataclasses
import queue
import threading
import time
from typing import Any

import jax
import numpy as np

from sluice.framework.interpreter.executor import Executor
from sluice.framework.interpreter.stack_memory import StackStats
from sluice.framework.ir import errors
from sluice.framework.ir.x64 import x64_scope
from sluice.framework.ops.host.host_kernels import HOST_MAX_ELEMENTS
from sluice.framework.placement.rendezvous import Rendezvous

_POLL_S = 0.05  # how often a waiting thread looks whether the run was stopped
SLICE_NODES = 64  # nodes a partition runs before the scheduler turns to the next one


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
    """An executor's view of the other partitions: its Sends, its Recvs' arrivals, the control.
    Arrivals queue up here until `deliver` hands them to the executor."""

    def __init__(
        self, rendezvous: Rendezvous, control: RunControl, stats: PartitionStats, threaded: bool
    ):
        self.rendezvous = rendezvous
        self.control = control
        self.stats = stats
        self.threaded = threaded
        # a thread yields now and then only to look whether the run was stopped
        self.slice_nodes = 1024 if threaded else SLICE_NODES
        self.arrivals: Any = queue.SimpleQueue() if threaded else collections.deque()

    @property
    def stopped(self) -> bool:
        return self.control.stopped

    def raise_stopped(self) -> None:
        raise errors.CancelledError(None, None, "The run was stopped by another partition.")

    def send(self, node: Any, tag: tuple, value: Any, dead: bool) -> None:
        if not dead and value is not None:
            if isinstance(value, jax.Array):
                value = jax.device_put(value, node.edge.dst_device.jax_device)
            self.stats.bytes_sent += int(getattr(value, "nbytes", 0))
        self.stats.values_sent += 1
        self.rendezvous.send((node.key, tag), value, dead)

    def recv(self, node: Any, state: Any, tag: tuple) -> None:
        put = self.arrivals.put if self.threaded else self.arrivals.append
        self.rendezvous.recv((node.key, tag), lambda value, dead: put((node, state, value, dead)))

    def deliver(self, executor: Executor, block: bool) -> None:
        """Hands the executor every value that has arrived; with `block`, waits for one."""
        arrivals = self.arrivals
        if not self.threaded:
            while arrivals:
                executor.receive(*arrivals.popleft())
            return
        if block:
            while True:
                try:
                    executor.receive(*arrivals.get(timeout=_POLL_S))
                    break
                except queue.Empty:
                    if self.control.stopped:
                        self.raise_stopped()
        while True:
            try:
                executor.receive(*arrivals.get_nowait())
            except queue.Empty:
                return


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
    feeds = [feeds_on(plan, device, feed_values) for plan, device in zip(plans, devices)]
    executors = [
        Executor(plan, ctx, link=PartitionLink(rendezvous, control, part_stats, threads))
        for plan, ctx, part_stats in zip(plans, contexts, stats)
    ]
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    try:
        if threads:
            results = _run_threads(
                executors, devices, feeds, control, rendezvous, deadline, timeout_s
            )
        else:
            results = _run_scheduled(executors, devices, feeds, deadline, timeout_s)
    finally:
        for part_stats, executor in zip(stats, executors):
            part_stats.nodes_run = executor.nodes_run
    merged: list[Any] = [None] * plans[0].num_fetches  # each fetch comes from one partition
    for part_results in results:
        for pos, value in enumerate(part_results):
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


def _run_scheduled(
    executors: list[Executor],
    devices: list[Any],
    feeds: list[list[Any]],
    deadline: float | None,
    timeout_s: float | None,
) -> list[list[Any]]:
    runs = [executor.steps(values, SLICE_NODES) for executor, values in zip(executors, feeds)]
    placements = [jax.default_device(device.jax_device) for device in devices]
    live = list(range(len(executors)))
    try:
        with np.errstate(all="ignore"):
            while live:
                progress = False
                for i in list(live):
                    executor, link = executors[i], executors[i].link
                    before = executor.nodes_run
                    if link.arrivals:
                        progress = True
                        link.deliver(executor, block=False)
                    with placements[i]:
                        try:
                            next(runs[i])
                        except StopIteration:
                            live.remove(i)
                            progress = True
                            continue
                    progress = progress or executor.nodes_run != before
                if deadline is not None and time.monotonic() > deadline:
                    raise _deadline_error(timeout_s)
                if live and not progress:
                    waiting = ", ".join(devices[i].name for i in live)
                    raise errors.InternalError(
                        None,
                        None,
                        f"The partitions on {waiting} wait for each other's values "
                        "and none can go on: the partitioned graph is deadlocked.",
                    )
    finally:
        for run in runs:
            run.close()
    return [executor.results for executor in executors]


def _run_threads(
    executors: list[Executor],
    devices: list[Any],
    feeds: list[list[Any]],
    control: RunControl,
    rendezvous: Rendezvous,
    deadline: float | None,
    timeout_s: float | None,
) -> list[list[Any]]:
    results: list[Any] = [None] * len(executors)

    def work(i: int) -> None:
        try:
            # JAX's x64 setting is per thread: this one enters sluice's (see `ir.x64`)
            with x64_scope(), jax.default_device(devices[i].jax_device):
                results[i] = executors[i].run(feeds[i])
        except BaseException as err:  # noqa: BLE001  (handed to the caller's thread)
            control.stop(err)
            rendezvous.abort()

    threads = [
        threading.Thread(
            target=work, args=(i,), daemon=True, name=f"sluice-partition-{devices[i].name}"
        )
        for i in range(len(executors))
    ]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                if deadline is not None and time.monotonic() > deadline:
                    control.stop(_deadline_error(timeout_s))
                    rendezvous.abort()
                    deadline = None
                thread.join(timeout=_POLL_S)
    except BaseException as err:  # KeyboardInterrupt: stop the partitions before leaving
        control.stop(err)
        rendezvous.abort()
        raise
    if control.error is not None:
        raise control.error
    return results
