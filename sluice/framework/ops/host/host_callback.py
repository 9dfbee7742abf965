"""What the host-callback ops (`py_func`, `Print`, `print`) share: knowing which engine runs
their kernel, and calling the host from the compiled step only where the op is live.

The interpreted engine calls a kernel eagerly with concrete values: the kernel calls Python
directly. The compiled engine calls it while tracing the step's `jax.jit`: the kernel emits an
`io_callback` instead, which every execution of the compiled step runs, only where the op runs
(`KernelContext.live` is True, or a traced bool for an op on a cond branch lowered to a select
or in a loop whose liveness is only known at run time).

Each callback also returns a status (0, or the number of an error it recorded), which the
kernel hands to the op's `registry.Check` (`callback_failed`): the compiled engine evaluates the
check right after the kernel, on the same thread, in the same trace. Through the check a failed
call stops the step before it changes any variable, and since the session reads the checks
before `run` returns, a print has been written by then (JAX runs callbacks asynchronously).
"""

from __future__ import annotations

import collections
import itertools
import threading
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback

from sluice.framework.ir import errors
from sluice.framework.ir.x64 import with_x64

_pending = threading.local()  # token -> the traced status of the op's callback
_tokens = itertools.count()


def new_token(prefix: str) -> str:
    """A name unique in the process for one host-callback op ("pyfunc_3", "print_4")."""
    return f"{prefix}_{next(_tokens)}"


def tracing() -> bool:
    """Whether the calling kernel runs inside a JAX trace (the compiled engine's step)."""
    return isinstance(jnp.zeros(()), jax.core.Tracer)  # values made under a trace are tracers


def call_on_host(
    live: Any,
    token: str,
    host: Callable[..., tuple],
    specs: Sequence[Any],
    inputs: Sequence[Any],
    ordered: bool = True,
) -> list:
    """While tracing: `host(*inputs)` as an io_callback run where `live` holds, returning
    `(*results shaped by specs, int64 status)`; the status goes to the op's check, the results
    (zeros where the op is not live) are returned."""
    status_spec = jax.ShapeDtypeStruct((), jnp.int64)

    # the host function sees sluice's x64 on whichever thread JAX calls it (see `ir.x64`)
    host = with_x64(host)

    def call(*values: Any) -> tuple:
        return tuple(io_callback(host, (*specs, status_spec), *values, ordered=ordered))

    def skip(*values: Any) -> tuple:
        return (*[jnp.zeros(s.shape, s.dtype) for s in specs], jnp.int64(0))

    if live is True:
        *results, status = call(*inputs)
    else:
        *results, status = jax.lax.cond(live, call, skip, *inputs)
    by_token = getattr(_pending, "by_token", None)
    if by_token is None:
        by_token = _pending.by_token = {}
    by_token[token] = status
    return results


def callback_failed(*inputs: Any, token: str, **attrs: Any) -> tuple:
    """The `Check.fails` of a host-callback op: (failed, error number) of the compiled call;
    an interpreted call raises itself, so it never fails here."""
    status = getattr(_pending, "by_token", {}).pop(token, None)
    if status is None:
        return jnp.bool_(False), jnp.int64(0)
    return status != 0, status


class _Failures:
    """OpErrors of callbacks in compiled steps, by number (0 means none), until raised."""

    _KEEP = 64  # a failure on a branch whose check is never read must not stay forever

    def __init__(self):
        self._entries: collections.OrderedDict[int, errors.OpError] = collections.OrderedDict()
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()

    def add(self, err: errors.OpError) -> np.int64:
        with self._lock:
            number = next(self._numbers)
            self._entries[number] = err
            while len(self._entries) > self._KEEP:
                self._entries.popitem(last=False)
        return np.int64(number)

    def pop(self, number: int) -> errors.OpError | None:
        with self._lock:
            return self._entries.pop(number, None)


_FAILURES = _Failures()


def record_failure(err: errors.OpError) -> np.int64:
    """Keeps the error a callback met (it must not raise: XLA would abort the step after
    donating the variables' buffers); returns the status the callback returns."""
    return _FAILURES.add(err)


def raise_recorded(op: Any, number: int) -> str:
    """The `Check.message` of a host-callback op: raises the error the compiled call recorded,
    of its own type (UnknownError, OutOfRangeError...: a check's message is otherwise an
    InvalidArgumentError's, which TF1 does not give here)."""
    err = _FAILURES.pop(number)
    if err is not None:
        raise err
    return f"{op.name} ({op.type}) failed on the host (its error is no longer recorded)"
