"""Where the entries of gradient stacks live, and the swap policy of `swap_memory=True`.

Policy (as TensorFlow's stack kernels, core/kernels/stack.cc): only entries larger than
`threshold_bytes` are swapped, and only while the device memory in use is above `occupancy` of
the device's limit; the oldest unswapped entry goes first. Swapping out is a `jax.device_put` to
the device's `pinned_host` memory, which JAX runs asynchronously. A pop brings its entry back if
it was swapped, then prefetches the next entry while occupancy allows. The limit comes from the
session config, or from the device's own memory statistics when it reports them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax


@dataclasses.dataclass
class StackStats:
    """Bytes held by stack entries, per memory, and how many entries moved."""

    device_bytes: int = 0
    host_bytes: int = 0
    peak_device_bytes: int = 0
    peak_host_bytes: int = 0
    swapped_out: int = 0
    swapped_in: int = 0
    pushes: int = 0
    pops: int = 0


class StackEntry:
    __slots__ = ("value", "nbytes", "on_host", "popped", "device")

    def __init__(self, value: Any, nbytes: int):
        self.value = value
        self.nbytes = nbytes
        self.on_host = False
        self.popped = False
        self.device = None


class StackMemory:
    """Accounts stack entries for one run and moves them between device and host memory."""

    def __init__(
        self,
        limit_bytes: int | None,
        threshold_bytes: int = 2048,
        occupancy: float = 0.7,
        external_in_use: Any = None,
    ):
        self.limit_bytes = limit_bytes
        self.threshold_bytes = threshold_bytes
        self.occupancy = occupancy
        self.external_in_use = external_in_use  # callable: other device bytes in use, or None
        self.stats = StackStats()
        self._swappable: list[StackEntry] = []  # oldest first
        self._next_swappable = 0

    def in_use(self) -> int:
        """Device bytes in use: what the device reports when it can, else what stacks hold."""
        if self.external_in_use is not None:
            return self.external_in_use()
        return self.stats.device_bytes

    def _over(self, extra: int = 0) -> bool:
        return (
            self.limit_bytes is not None
            and self.in_use() + extra > self.occupancy * self.limit_bytes
        )

    def push(self, value: Any, swap_memory: bool) -> StackEntry:
        # An inner loop's stack pushed on an outer stack holds entries accounted already.
        nbytes = int(value.nbytes) if hasattr(value, "nbytes") else 0
        entry = StackEntry(value, nbytes)
        stats = self.stats
        stats.pushes += 1
        stats.device_bytes += nbytes
        stats.peak_device_bytes = max(stats.peak_device_bytes, stats.device_bytes)
        if swap_memory and nbytes > self.threshold_bytes:
            self._swappable.append(entry)
            while self._over() and self._swap_out_oldest():
                pass
        return entry

    def _swap_out_oldest(self) -> bool:
        while self._next_swappable < len(self._swappable):
            entry = self._swappable[self._next_swappable]
            self._next_swappable += 1
            if not entry.popped and not entry.on_host:
                self._to_host(entry)
                return True
        return False

    def _to_host(self, entry: StackEntry) -> None:
        value = entry.value
        if isinstance(value, jax.Array):
            device = next(iter(value.devices()))
            entry.device = device
            entry.value = jax.device_put(value, _sharding(device, "pinned_host"))
        entry.on_host = True
        stats = self.stats
        stats.device_bytes -= entry.nbytes
        stats.host_bytes += entry.nbytes
        stats.peak_host_bytes = max(stats.peak_host_bytes, stats.host_bytes)
        stats.swapped_out += 1

    def _to_device(self, entry: StackEntry) -> None:
        if entry.device is not None:
            entry.value = jax.device_put(entry.value, _sharding(entry.device, "device"))
        entry.on_host = False
        stats = self.stats
        stats.host_bytes -= entry.nbytes
        stats.device_bytes += entry.nbytes
        stats.peak_device_bytes = max(stats.peak_device_bytes, stats.device_bytes)
        stats.swapped_in += 1

    def pop(self, entry: StackEntry, next_entry: StackEntry | None) -> Any:
        if entry.on_host:
            self._to_device(entry)
        entry.popped = True
        self.stats.pops += 1
        self.stats.device_bytes -= entry.nbytes
        if next_entry is not None and next_entry.on_host and not self._over(next_entry.nbytes):
            self._to_device(next_entry)  # prefetch: the next pop finds it on the device
        return entry.value


def _sharding(device: Any, memory_kind: str) -> Any:
    try:
        return jax.sharding.SingleDeviceSharding(device, memory_kind=memory_kind)
    except (ValueError, TypeError):  # a backend without that memory kind keeps the default
        return jax.sharding.SingleDeviceSharding(device)
