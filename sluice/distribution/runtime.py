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

from sluice.framework.placement.processes import (  # noqa: F401  (re-exported)
    barrier,
    is_chief,
    process_count,
    process_index,
)

ENV_COORDINATOR = "SLUICE_COORDINATOR"
ENV_NUM_PROCESSES = "SLUICE_NUM_PROCESSES"
ENV_PROCESS_ID = "SLUICE_PROCESS_ID"


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"The environment variable {name}={value!r} must be an integer.") from None


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, **jax_kwargs) -> None:
    """Joins this process to a multi-process run (`jax.distributed.initialize`).

    Args:
      coordinator_address: "host:port" of process 0 (default: $SLUICE_COORDINATOR).
      num_processes: how many processes take part (default: $SLUICE_NUM_PROCESSES).
      process_id: this process's index, 0 to num_processes - 1 (default: $SLUICE_PROCESS_ID).
      **jax_kwargs: passed on to `jax.distributed.initialize` (e.g. `local_device_ids`).

    Raises:
      ValueError: a process id outside [0, num_processes), or a malformed environment value.
      RuntimeError: JAX's backends were started before (call this before computing anything).
    """
    coordinator_address = coordinator_address or os.environ.get(ENV_COORDINATOR) or None
    if num_processes is None:
        num_processes = _env_int(ENV_NUM_PROCESSES)
    if process_id is None:
        process_id = _env_int(ENV_PROCESS_ID)
    if num_processes is not None and process_id is not None and not (
            0 <= process_id < num_processes):
        raise ValueError(f"initialize: process_id {process_id} is not in [0, {num_processes}).")
    jax.distributed.initialize(coordinator_address, num_processes, process_id, **jax_kwargs)
