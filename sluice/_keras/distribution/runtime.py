"""Several processes training one model: `initialize` joins them, over `jax.distributed`.

The same script runs in every process (on every host); each one calls

    sl.distribution.initialize()          # or initialize("10.0.0.1:1234", 2, process_id)

before it builds a model. With no arguments the coordinator, the number of processes and this
process's index come from the environment:

    SLUICE_COORDINATOR=host:port   SLUICE_NUM_PROCESSES=N   SLUICE_PROCESS_ID=i

(`python -m sluice.distribution.launch` sets them for N processes on one machine; JAX's own
`JAX_COORDINATOR_ADDRESS`, ... and cluster detection (SLURM, ...) work when these are unset).
Afterwards `jax.devices()` lists the devices of every process, so `DataParallel()` spans them.
"""

from __future__ import annotations

import os

import jax

from sluice._export import export
from sluice._keras.distribution import checks
from sluice.framework.placement.processes import (  # noqa: F401  (re-exported)
    barrier,
    is_chief,
    process_count,
    process_index,
)

ENV_COORDINATOR = "SLUICE_COORDINATOR"
ENV_NUM_PROCESSES = "SLUICE_NUM_PROCESSES"
ENV_PROCESS_ID = "SLUICE_PROCESS_ID"
ENV_JAX_COORDINATOR = "JAX_COORDINATOR_ADDRESS"


def _env_int(name: str, minimum: int) -> int | None:
    value = os.environ.get(name)
    if value in (None, ""):
        return None
    return checks.env_integer(name, value, minimum)


def _coordinator(argument: str | None) -> str | None:
    """The coordinator's address, checked: a bad one makes JAX fail deep in its RPC layer, or
    crash the process."""
    if argument is not None:
        return checks.coordinator_address(argument, "initialize: coordinator_address")
    for name in (ENV_COORDINATOR, ENV_JAX_COORDINATOR):  # JAX reads its own when ours is unset
        value = os.environ.get(name)
        if value:
            address = checks.coordinator_address(value, f"The environment variable {name}")
            return address if name == ENV_COORDINATOR else None
    return None


@export("distribution.initialize")
def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    **jax_kwargs,
) -> None:
    """Joins this process to a multi-process run (`jax.distributed.initialize`).

    Args:
      coordinator_address: "host:port" of process 0 (default: $SLUICE_COORDINATOR); the host a
        name, an IPv4 address or a bracketed IPv6 address ("[::1]:1234"), the port in 1..65535.
      num_processes: how many processes take part, at least 1 (default: $SLUICE_NUM_PROCESSES).
      process_id: this process's index, 0 to num_processes - 1 (default: $SLUICE_PROCESS_ID).
      **jax_kwargs: passed on to `jax.distributed.initialize` (e.g. `local_device_ids`).

    Raises:
      ValueError: a malformed address, a count or index that is not an integer in range, or a
        malformed environment value (each names the argument or variable and the value); all
        checked before JAX is called.
      RuntimeError: JAX's backends were started before (call this before computing anything).
    """
    coordinator_address = _coordinator(coordinator_address or None)
    if num_processes is None:
        num_processes = _env_int(ENV_NUM_PROCESSES, 1)
    else:
        num_processes = checks.integer(num_processes, "initialize: num_processes", 1)
    if process_id is None:
        process_id = _env_int(ENV_PROCESS_ID, 0)
    else:
        process_id = checks.integer(process_id, "initialize: process_id")
    if process_id is not None and (
        process_id < 0 or num_processes is not None and process_id >= num_processes
    ):
        upper = "num_processes" if num_processes is None else num_processes
        raise ValueError(f"initialize: process_id {process_id} is not in [0, {upper}).")
    jax.distributed.initialize(coordinator_address, num_processes, process_id, **jax_kwargs)
