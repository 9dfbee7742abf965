"""One read of the global step shared by every hook (TF1's `_get_or_create_global_step_read`).

Hooks fetch it alongside the train op, so its value may be from before or after that run's
increment; hooks that act on a step read it again with a run of their own.
"""

from __future__ import annotations

from sluice._keras.optimizers.training_util import get_global_step
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Graph, Tensor
from sluice.framework.ops.core import core_ops

GLOBAL_STEP_READ_KEY = "global_step_read_op_cache"


def get_or_create_global_step_read(graph: Graph | None = None) -> Tensor | None:
    """The cached read of the graph's global step (built on first use), or None when the graph
    has no global step."""
    g = graph or graph_lib.get_default_graph()
    cached = g.get_collection(GLOBAL_STEP_READ_KEY)
    if cached:
        return cached[0]
    step = get_global_step(g)
    if step is None:
        return None
    with g.as_default(), g.name_scope(None), g.control_dependencies(None):
        with g.name_scope(step.op.name + "/"):
            read = core_ops.identity(step.read_value(), name="read_for_hooks")
    g.add_to_collection(GLOBAL_STEP_READ_KEY, read)
    return read


def require_global_step_read(hook_name: str) -> Tensor:
    """The read for a hook that needs the global step.

    Raises:
      RuntimeError: the default graph has no global step (TF1's message).
    """
    read = get_or_create_global_step_read()
    if read is None:
        raise RuntimeError(f"Global step should be created to use {hook_name}.")
    return read
