"""The `KernelContext` of stateful kernels while the compiled engine traces a step."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from sluice.framework.compiler.liveness import select
from sluice.framework.ir import errors
from sluice.framework.ir.graph import Operation
from sluice.framework.ir.kernel_context import derive_key


class TraceContext:
    """The KernelContext of stateful kernels while tracing: state is a dict of traced values."""

    def __init__(self, variables: dict, random_counts: dict):
        self.variables = variables
        self.random_counts = random_counts
        self.op: Operation | None = None
        self.live: Any = True
        self.written: set[str] = set()  # handles assigned while tracing

    def read_variable(self, handle: str) -> Any:
        if handle not in self.variables:
            raise errors.FailedPreconditionError(
                None,
                self.op,
                f"Attempting to use uninitialized value {handle}: run its initializer first "
                "(sl.global_variables_initializer()) or restore it from a checkpoint.",
            )
        return self.variables[handle]

    def write_variable(self, handle: str, value: Any) -> None:
        self.written.add(handle)
        old = self.variables.get(handle)
        self.variables[handle] = (
            value if old is None or self.live is True else select(self.live, value, old)
        )

    def has_variable(self, handle: str) -> bool:
        return handle in self.variables

    def random_key(self) -> Any:
        op = self.op
        count = self.random_counts.get(op.name, 0)
        step = 1 if self.live is True else jnp.asarray(self.live, jnp.int64)
        self.random_counts[op.name] = count + step
        return derive_key(op.get_attr("seed"), op.get_attr("seed2"), count)

    stack_memory = None
    host_resources = None  # the session's queues (an enqueue in a loop), set by the step
