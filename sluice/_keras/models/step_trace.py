"""Tracing one step (`train_step`, `test_step`, `predict_step`) into the model's graph, so that
one `session.run` runs all of it, as Keras on TensorFlow runs a step as one `tf.function`:

    with g.as_default(), tracing(g) as trace:
        data = placeholders shaped like a batch     # x, (x, y), (x, y, sample_weight), dicts...
        logs = model.train_step(data)               # symbolic: the user's code runs once
    fetches = log_fetches(logs, trace.updates)      # {name: identity(value) after the updates}

While a trace is open it is the `tracking` collector: the `add_loss` terms of the layers called
inside (read back by `Model.losses`) and their `add_update` ops go to it. When it closes, the
variable writes built inside it are the step's updates: the optimizer's assignments, metric
`update_state`s, moving statistics, a `v.assign(...)` in user code. The ops that touch one
variable are ordered as they were built, TensorFlow's automatic control dependencies in
`tf.function`: a read built after a write sees the new value, a write waits for the reads built
before it. So a metric's `result()` read after its `update_state`, or a GAN's generator step
after the discriminator's update, sees what eager Keras would. Ops inside a `cond` branch or a
`while_loop` body are left as they are (they run when their loop or branch does), and so are a
variable's own initializer and first read, which a step built inside its trace (an optimizer's
slot, a metric's total) must not rerun.

>>> g = sl.Graph()
>>> with g.as_default():
...     v = sl.Variable(1.0)
...     with tracing(g) as trace:
...         bump = v.assign_add(1.0, read_value=False)
...         seen = v.value()        # built after the write: reads 2.0
>>> [op.name for op in trace.updates], bump in seen.op.control_inputs
(['AssignAdd'], True)
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from sluice._keras.layers import tracking
from sluice._keras.metrics.metric import Metric
from sluice._tf1.cells import nest
from sluice.framework.ir.graph import Graph, Operation, Tensor
from sluice.framework.ops.core import core_ops
from sluice.framework.variables import Variable


class StepTrace:
    """What a step built: its graph, the `tracking` collector of its calls, and (once closed)
    its updates, in the order they were built."""

    def __init__(self, graph: Graph, collector: tracking.CallCollector, first_op_id: int):
        self.graph = graph
        self.collector = collector
        self.first_op_id = first_op_id
        self.updates: list[Operation] = []


class _Traces(threading.local):
    def __init__(self) -> None:
        self.stack: list[StepTrace] = []


_TRACES = _Traces()


@contextlib.contextmanager
def tracing(graph: Graph) -> Iterator[StepTrace]:
    """Opens a step trace on `graph` (see the module docstring); on a clean exit its variable
    ops are ordered and `trace.updates` lists the writes and host effects to run."""
    with tracking.collect() as collector:
        trace = StepTrace(graph, collector, graph.last_op_id + 1)
        _TRACES.stack.append(trace)
        try:
            yield trace
        finally:
            _TRACES.stack.remove(trace)
    trace.updates = tracking.order_state_ops(graph, trace.first_op_id)


def traced_losses(graph: Graph | None) -> list[Tensor]:
    """The `add_loss` terms of the calls made so far in the innermost open trace of `graph`
    (none outside a trace): what Keras 3's `model.losses` holds inside a step."""
    for trace in reversed(_TRACES.stack):
        if trace.graph is graph:
            return list(trace.collector.losses)
    return []


def log_fetches(g: Graph, logs: Any, updates: list[Operation], step: str) -> tuple:
    """The logs a step returned as (tensors to fetch, Python values, names in order).

    Nested dicts are merged into one (Keras's `pythonify_logs`); a `Metric` is replaced by its
    `result()` (0 before its first update) and a Variable by its value, both read after the
    updates; every tensor is
    fetched through an identity that runs after every update; anything else (a Python number, a
    string) is passed through as it is.

    Raises:
      TypeError: `logs` is not a dict (or None).
    """
    if logs is None:
        logs = {}
    if not isinstance(logs, dict):
        raise TypeError(
            f"{step} must return a dict of logs (name -> value), as Keras's does; it returned "
            f"{type(logs).__name__}: {logs!r}"
        )
    flat = _merged(logs)
    tensors, values = {}, {}
    with g.as_default(), g.control_dependencies(updates):
        for name, value in flat.items():
            if isinstance(value, Metric):  # one that has seen nothing yet has no state: 0
                value = value.result() if value.variables else 0.0
            if isinstance(value, (Tensor, Variable)) or hasattr(value, "_as_tensor"):
                tensors[name] = core_ops.identity(core_ops.convert_to_tensor(value))
            else:
                values[name] = value
    return tensors, values, list(flat)


def outputs_after(g: Graph, outputs: Any, updates: list[Operation]) -> Any:
    """A predict step's outputs, through identities after the updates when it has any."""
    if not updates:
        return outputs
    with g.as_default(), g.control_dependencies(updates):
        return nest.map_structure(core_ops.identity, outputs)


def _merged(logs: dict) -> dict:
    flat = {}
    for name, value in logs.items():
        if isinstance(value, dict):
            flat.update(_merged(value))
        else:
            flat[str(name)] = value
    return flat
