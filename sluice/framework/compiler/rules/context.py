"""What a lowering rule sees of one op while the compiled engine traces it."""

from __future__ import annotations

import dataclasses
from typing import Any

from sluice.framework.compiler.trace_context import TraceContext
from sluice.framework.ir.graph import Operation


@dataclasses.dataclass
class OpContext:
    """One op being lowered: `rule(op_context) -> [(value, liveness) per output]`.

    A liveness is a Python bool when known while tracing, else a traced bool (`liveness`).
    """

    op: Operation
    inputs: list  # (value, liveness) of each input, in order
    # The op's liveness: all its inputs and control inputs live. A rule may set it to the op's
    # own (a Merge is live when any input is, so a control edge from it is not dead).
    live: Any
    iteration: Any  # the enclosing while loop's iteration (0 outside loops)
    pushes: dict  # stack push op -> (value, liveness): what the enclosing loop saves per iteration
    trace: TraceContext  # the stateful kernels' context (variables, random counters)

    @property
    def values(self) -> list:
        """The inputs' values, without their liveness."""
        return [v for v, _ in self.inputs]
