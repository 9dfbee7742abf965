"""Making a partition's device JAX's default device on this thread, and putting the old one back.

`jax.default_device(d)` as a context manager does it in four Python calls (the context manager's
`__enter__` and `__exit__`, each calling into JAX's config state); a thread that runs two
partitions of a loop split across devices by turns switches twice per iteration (W5: about 2% of
its time). `DeviceScope` calls JAX's config state directly, where that state is what this JAX
version has (a thread-local value with no hook to run on change); else it uses the context
manager. Either way the kernels dispatched in between run on the device: the same state decides.
"""

from __future__ import annotations

import functools
from typing import Any

import jax

try:  # the state behind `jax.default_device`: `swap_local(value) -> old`, `set_local(old)`
    from jax._src.config import default_device as _DEFAULT_DEVICE_STATE
except ImportError:  # another JAX layout: the context manager
    _DEFAULT_DEVICE_STATE = None


class DeviceScope:
    """`enter()` makes the device the thread's default and returns what was the default;
    `leave(previous)` puts that back. Scopes nest as context managers do."""

    __slots__ = ("enter", "leave")

    def __init__(self, jax_device: Any):
        manager = jax.default_device(jax_device)
        state = _DEFAULT_DEVICE_STATE
        if (
            state is not None
            and getattr(state, "_update_thread_local_hook", True) is None
            and hasattr(state, "swap_local")
            and hasattr(state, "set_local")
            and getattr(manager, "new_val", None) is not None
        ):
            self.enter = functools.partial(state.swap_local, manager.new_val)
            self.leave = state.set_local
        else:
            self.enter = functools.partial(_enter, jax_device)
            self.leave = _leave


def _enter(jax_device: Any) -> Any:
    manager = jax.default_device(jax_device)  # one per entry: entries may nest
    manager.__enter__()
    return manager


def _leave(manager: Any) -> None:
    manager.__exit__(None, None, None)
