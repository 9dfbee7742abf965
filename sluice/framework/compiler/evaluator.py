"""What the lowering of a cond region or of a repeat asks of the lowering of its frame.

`lowering_cond` and `lowering_repeats` lower a unit made of other units, so they need to evaluate
those units as their frame does. They are handed a `FrameEvaluator` (`lowering.Lowering` is the
one implementation) and reach nothing else of it; they never import `lowering`, which imports
them.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from sluice.framework.compiler.frame import Frame
from sluice.framework.compiler.trace_context import TraceContext
from sluice.framework.ir.graph import Operation, Tensor


class FrameEvaluator(Protocol):
    """Evaluates ops and units of a frame on traced values (see `lowering.Lowering`)."""

    trace: TraceContext  # the stateful kernels' context: variables and random counters
    fed: set  # tensors the run feeds: their values in `env` are never overwritten
    # an output of a rolled repeat -> (the scan's stack of it, its row), for later repeats
    rows: dict[Tensor, tuple[Any, int]]

    def eval_op(
        self, op: Operation, env: dict, op_live: dict, iteration: Any, pushes: dict
    ) -> None:
        """Evaluates one op into `env` (tensor -> (value, liveness)) and `op_live`."""
        ...

    def eval_units(
        self,
        units: list,
        frame: Frame,
        env: dict,
        op_live: dict,
        iteration: Any,
        pushes: dict,
        only: set | None = None,
    ) -> None:
        """Evaluates units of `frame`'s order (ops, loops, cond regions, repeats) in order."""
        ...

    def replace(self, op: Operation, compute: Callable[[dict], Any]) -> None:
        """From now on `op`'s one output is `compute(env)`, not its lowering (the op's inputs
        then need not all have values)."""
        ...

    def note_applied(self, pass_name: str, op_name: str) -> None:
        """Records that an optimization pass rewrote `op_name` (reported in RunMetadata)."""
        ...
