"""The processes of a multi-process run (`sl.distribution.initialize`): which one writes files,
and a barrier. In a one-process run, this process is the chief and barriers return at once.

Every process runs the same script, so each one reaches the same saves; a save gathers the
values on every process (a collective), process 0 writes the file, and a barrier keeps the
others from reading it before it exists.
"""

from __future__ import annotations

import jax

from sluice._export import export


@export("distribution.process_count")
def process_count() -> int:
    return jax.process_count()


@export("distribution.process_index")
def process_index() -> int:
    return jax.process_index()


@export("distribution.is_chief")
def is_chief() -> bool:
    """Whether this process writes the run's files (checkpoints, logs, plots): process 0."""
    return jax.process_index() == 0


@export("distribution.barrier")
def barrier(name: str) -> None:
    """Waits until every process has reached the barrier `name` (nothing to wait for alone)."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)
