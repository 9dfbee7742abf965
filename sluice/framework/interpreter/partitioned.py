"""Running a partitioned graph: one executor per device, each on its own thread, all at once.

Each partition's executor runs its plan under `jax.default_device` of its device, so its kernels
compute there; values it sends are moved to the receiving device with `jax.device_put` (which JAX
runs asynchronously) and counted. The partitions share one `Rendezvous` and one `RunControl`:
the first error in any partition stops the others (they raise CancelledError, which is dropped)
and the run raises that error; a deadline passed stops them all with DeadlineExceededError.
Nothing waits forever: a partition waiting for a Recv wakes up to look at the control.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from typing import Any

import jax

from sluice.framework.interpreter.executor import Executor
from sluice.framework.ir import errors
from sluice.framework.placement.rendezvous import Rendezvous

_POLL_S = 0.05  # how often a waiting partition looks whether the run was stopped


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
    """What one partition did in one run."""

    device: str
    nodes: int = 0  # nodes in its plan: ops, Sends, Recvs and control-loop nodes
    ops: int = 0  # graph ops among them
    sends: int = 0  # Send nodes (cut edges leaving it)
    recvs: int = 0  # Recv nodes (cut edges entering it)
    control_loops: int = 0
    values_sent: int = 0  # values sent this run (a Send in a loop sends every iteration)
    bytes_sent: int = 0  # bytes of those values
    nodes_run: int = 0


class PartitionLink:
    """An executor's view of the other partitions: its Sends, its Recvs' arrivals, the control."""

    def __init__(self, rendezvous: Rendezvous, control: RunControl, stats: PartitionStats):
        self.rendezvous = rendezvous
        self.control = control
        self.stats = stats
        self.arrivals: queue.SimpleQueue = queue.SimpleQueue()

    @property
    def stopped(self) -> bool:
        return self.control.stopped

    def raise_stopped(self) -> None:
        raise errors.CancelledError(None, None, "The run was stopped by another partition.")

    def send(self, edge: Any, tag: tuple, value: Any, dead: bool) -> None:
        if not dead and value is not None:
            if isinstance(value, jax.Array):
                value = jax.device_put(value, edge.dst_device.jax_device)
            self.stats.bytes_sent += int(getattr(value, "nbytes", 0))
        self.stats.values_sent += 1
        self.rendezvous.send((*edge.key, tag), value, dead)

    def recv(self, node: Any, state: Any, tag: tuple) -> None:
        put = self.arrivals.put
        self.rendezvous.recv((*node.edge.key, tag),
                             lambda value, dead: put((node, state, value, dead)))

    def next_arrival(self) -> tuple:
        """The next received (node, state, value, dead), waiting for it."""
        while True:
            try:
                return self.arrivals.get(timeout=_POLL_S)
            except queue.Empty:
                if self.control.stopped:
                    self.raise_stopped()


def run_partitions(plans: list[Any], contexts: list[Any], devices: list[Any],
                   stats: list[PartitionStats], feed_values: list[Any],
                   timeout_s: float | None = None) -> list[Any]:
    """Runs each partition's plan (on `devices[i]`, a `LocalDevice`) on its own thread; returns
    one value per fetch (DEAD for a dead one)."""
    rendezvous, control = Rendezvous(), RunControl()
    executors = [Executor(plan, ctx, link=PartitionLink(rendezvous, control, part_stats))
                 for plan, ctx, part_stats in zip(plans, contexts, stats)]
    results: list[Any] = [None] * len(executors)

    def work(i: int) -> None:
        try:
            with jax.default_device(devices[i].jax_device):
                results[i] = executors[i].run(feed_values)
        except BaseException as err:  # noqa: BLE001  (handed to the caller's thread)
            control.stop(err)
            rendezvous.abort()

    threads = [threading.Thread(target=work, args=(i,), daemon=True,
                                name=f"sluice-partition-{stats[i].device}")
               for i in range(len(executors))]
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    for thread in threads:
        thread.start()
    for thread in threads:
        while thread.is_alive():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                control.stop(errors.DeadlineExceededError(
                    None, None, f"The run took longer than its timeout of {timeout_s * 1000:g} "
                    "ms (RunOptions.timeout_in_ms)."))
                rendezvous.abort()
                deadline = None
                left = None
            thread.join(timeout=_POLL_S if left is None else min(left, _POLL_S))
    for part_stats, executor in zip(stats, executors):
        part_stats.nodes_run = executor.nodes_run
    if control.error is not None:
        raise control.error
    merged: list[Any] = [None] * executors[0].plan.num_fetches  # each fetch comes from one
    for part_results in results:
        for pos, value in enumerate(part_results):
            if value is not None:
                merged[pos] = value
    return merged
