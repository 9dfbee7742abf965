"""The devices of this process, by TF1 name: `/job:localhost/replica:0/task:0/device:CPU:1`.

Each JAX device of the default backend gets the full name of its type and its index among the
devices of that type; on a GPU or TPU machine the host CPU devices are listed too, so a request
for `/cpu:0` (file I/O, a parameter device) always finds one.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax

from sluice.framework.ir.device_spec import DeviceSpec

LOCAL_JOB = "localhost"
_TYPE_OF_PLATFORM = {"cpu": "CPU", "gpu": "GPU", "cuda": "GPU", "rocm": "GPU", "tpu": "TPU"}


@dataclasses.dataclass(frozen=True)
class LocalDevice:
    """One device of this process: its TF1 full name and the JAX device behind it."""

    name: str
    device_type: str
    index: int
    jax_device: Any = dataclasses.field(compare=False, repr=False)

    @property
    def memory_limit(self) -> int | None:
        stats = self.jax_device.memory_stats()
        return stats.get("bytes_limit") if stats else None


def full_name(device_type: str, index: int) -> str:
    return f"/job:{LOCAL_JOB}/replica:0/task:0/device:{device_type}:{index}"


@functools.cache
def local_devices() -> tuple[LocalDevice, ...]:
    """The process's devices, the default backend's first (its first one is the default device).
    Computed once: JAX's device list does not change while a process runs."""
    found: list[LocalDevice] = []
    backends = [jax.default_backend()]
    if backends[0] != "cpu":
        backends.append("cpu")
    for backend in backends:
        try:
            devices = jax.local_devices(backend=backend)  # this process's, in a multi-process run
        except RuntimeError:  # no such backend here
            continue
        for index, device in enumerate(devices):
            device_type = _TYPE_OF_PLATFORM.get(device.platform, device.platform.upper())
            found.append(LocalDevice(full_name(device_type, index), device_type, index, device))
    return tuple(found)


def default_device() -> LocalDevice:
    return local_devices()[0]


def matching_devices(spec: DeviceSpec) -> list[LocalDevice]:
    """The local devices that a (possibly partial) spec names, lowest index first."""
    if (
        spec.job not in (None, LOCAL_JOB)
        or spec.replica not in (None, 0)
        or spec.task not in (None, 0)
    ):
        return []
    return [
        d
        for d in local_devices()
        if (spec.device_type is None or d.device_type == spec.device_type)
        and (spec.device_index is None or d.index == spec.device_index)
    ]


def device_by_name(name: str) -> LocalDevice:
    for d in local_devices():
        if d.name == name:
            return d
    raise KeyError(name)
