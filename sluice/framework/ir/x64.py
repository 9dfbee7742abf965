"""sluice's 64-bit types without touching the user's JAX configuration.

TF1 graphs use float64 and int64 as real dtypes; JAX truncates them to 32 bits unless
`jax_enable_x64` is on. sluice never sets that flag for the process (a user's own JAX code in
the same program keeps its dtypes: `jnp.arange(3)` stays int32): it runs its own calls into JAX
under JAX's scoped setting `jax.enable_x64(True)`, a thread-local context. JAX keys its jit
caches and traces on that setting, so a step traced and called inside the scope stays 64-bit.

The scope is entered at the few places sluice reaches JAX: building an op (`Graph.create_op`:
shape inference, constant folding), `Session.run` and `Variable.load` (both engines, feeds,
variables, random keys), the optimizers' evaluation of optax state while building, `sl.ops` on
arrays, host callbacks, and the threads sluice starts (partitions, prefetch: the setting is per
thread). The user's own functions that sluice calls back (`py_func`, `from_generator`) run under
`user_scope()`, the process's own setting. The Keras models reach JAX only through these, so
`fit` and the user's callbacks run outside the scope. Every sluice op states its output dtype,
so float32 graphs stay float32 inside it. A user who turned x64 on themselves keeps it on;
inside the scope nothing changes.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

import jax

_F = TypeVar("_F", bound=Callable[..., Any])


def x64_scope() -> Any:
    """A context manager: JAX calls inside it (on this thread) use 64-bit types."""
    return jax.enable_x64(True)


def with_x64(fn: _F) -> _F:
    """Decorator: `fn` runs inside `x64_scope()` (a plain function, not a generator)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with jax.enable_x64(True):
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def user_scope() -> Any:
    """A context manager for the user's own code that sluice calls back (a `py_func`'s
    function, a `from_generator` generator): it runs under the process's own setting, as the
    user set it, not under sluice's."""
    setting = getattr(jax.enable_x64, "get_global", None)
    return jax.enable_x64(bool(setting() if setting else jax.config.jax_enable_x64))


def enabled() -> bool:
    """Whether JAX calls on this thread use 64-bit types now."""
    return bool(jax.config.jax_enable_x64)
