"""TF1's `tensorflow.python.client.device_lib`: the devices of this process, as TF1 programs
list them (`from sluice.python.client import device_lib` once `tensorflow` is renamed):

    gpus = [x.name for x in device_lib.list_local_devices() if x.device_type == "GPU"]

Each device is named as TF1 names it (`/device:CPU:0`, `/device:GPU:1`): the devices JAX gives
this process (see `sluice.framework.placement.devices`), the default backend's first.
"""

from __future__ import annotations

import dataclasses
import os

from sluice._export import export
from sluice.framework.placement import devices as devices_lib


@dataclasses.dataclass(frozen=True)
class DeviceAttributes:
    """One local device, with the fields of TF1's DeviceAttributes that programs read.

    `memory_limit` is in bytes: what JAX reports as the device's limit, or for a device that
    reports none (a CPU) the host's physical memory; TF1 gives a CPU a nominal 256 MiB.
    """

    name: str
    device_type: str
    memory_limit: int
    incarnation: int
    physical_device_desc: str


def _host_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # a platform without these sysconf names
        return 0


@export("python.client.device_lib.list_local_devices")
def list_local_devices(session_config: object = None) -> list[DeviceAttributes]:
    """The devices of this process, the default one first.

    Args:
      session_config: accepted for TF1's signature (the devices do not depend on it).

    >>> devices = list_local_devices()
    >>> devices[0].name, devices[0].device_type
    ('/device:CPU:0', 'CPU')
    """
    del session_config
    found = []
    for number, device in enumerate(devices_lib.local_devices()):
        limit = device.memory_limit
        found.append(
            DeviceAttributes(
                name=f"/device:{device.device_type}:{device.index}",
                device_type=device.device_type,
                memory_limit=int(limit) if limit else _host_memory(),
                incarnation=number + 1,
                physical_device_desc=(
                    f"device: {device.index}, name: {device.jax_device.device_kind}"
                ),
            )
        )
    return found
