"""What a stateful kernel sees: the `KernelContext` protocol, and how random keys are derived.

A stateful kernel (a variable read or write, a random op, a stack) is called as
`kernel(ctx, *inputs, **attrs)`. Both engines hand it a `KernelContext`: the interpreter its
session state (concrete arrays), the compiled engine its trace context (traced values). Both
derive the key of one execution of a random op from the op's seeds and a per-op counter, so they
draw the same numbers, and saving the counters saves the random state.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import jax


@runtime_checkable
class KernelContext(Protocol):
    """The state a stateful kernel may touch."""

    op: Any  # the Operation whose kernel is running

    def read_variable(self, handle: str) -> Any:
        """The value of the variable `handle`; FailedPreconditionError when it has none."""
        ...

    def write_variable(self, handle: str, value: Any) -> None:
        """Sets the variable `handle` to `value`."""
        ...

    def has_variable(self, handle: str) -> bool:
        """Whether the variable `handle` has a value."""
        ...

    def random_key(self) -> Any:
        """A fresh JAX PRNG key for this execution of `self.op`: `derive_key` of the op's `seed`
        and `seed2` attrs and its execution counter, which the call advances."""
        ...


class HostValueRequired(ValueError):
    """A kernel needs a value known before the run (a shape, a range's bounds: a host input)
    and was given a traced one: the compiled engine cannot trace this op here, the interpreter
    runs it with the value."""


@jax.jit
def derive_key(seed: Any, seed2: Any, count: Any) -> Any:
    """The PRNG key for execution number `count` of the op seeded (seed, seed2)."""
    key = jax.random.fold_in(jax.random.key(seed), seed2)
    return jax.random.fold_in(key, count)
