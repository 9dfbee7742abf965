"""A metric used on values, as Keras 3 uses it outside a model:

    m = sl.metrics.AUC()
    m.update_state([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])    # runs at once, returns None
    m.result()                                            # the value, a NumPy scalar or array

sluice metrics are graph code (`update_state` builds an op, `result()` a Tensor), so an update on
values runs as a small graph, as `layer(np_array)` does (layers/value_calls.py): the first
update with a given signature (the arguments' shapes and dtypes) makes
placeholders in the metric's graph (its own new graph if it has none yet) and builds the update
once; each update with that signature then runs it in that graph's session, fed with the values.
`result()` runs the result Tensor the same way.

Which one `update_state` does is decided by its arguments: any symbolic Tensor among them (a
model's step, a custom `train_step`, TF1 graph code) builds ops as before; only values (NumPy or
JAX arrays, lists, numbers; None for a missing sample_weight) run at once. `result()` follows the
last update: a value after an update on values (or on a metric never updated, which gives its
zero state's result), a Tensor after an update on tensors.

Inside a trace (a layer call, a model's forward pass or a traced step: `sl.framework.ir.tracing`)
both are always graph code, arrays included: they are constants of that graph, updated at each
step. The state is the metric's (state cells, `metric.Metric`), so a metric used on arrays and then
in a model's step, or in two models' steps, goes on from where it was; a result on values after
updates in a model's step (`tracker.result()` after fit) reads that state.
"""

from __future__ import annotations

import functools
import types
import weakref
from typing import Any

import numpy as np

from sluice._keras.layers import runtime
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir import tracing as trace_scope
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.core import core_ops

_MAX_SIGNATURES = 32  # the updates on values a metric keeps built, one per shape and dtype


def run_on_values(metric: Any) -> None:
    """Gives `metric` (a new instance) an `update_state` and a `result` that run at once on
    values (see the module docstring); on tensors they are the class's own. They are methods
    bound to the instance, so a copy (`copy.deepcopy`) gets its own."""
    metric.update_state = types.MethodType(_update_state, metric)
    metric.result = types.MethodType(_result, metric)


def _update_state(metric: Any, *args: Any, **kwargs: Any) -> Any:
    update = functools.partial(type(metric).update_state, metric)
    if metric.__dict__.get("_tracing_values"):
        return update(*args, **kwargs)
    if _is_symbolic((args, kwargs)) or trace_scope.is_tracing():
        if not trace_scope.is_tracing():  # TF1 graph code: its result() is a Tensor too
            metric._on_values = False
        g = graph_lib.graph_of(
            [leaf for leaf in _leaves((args, kwargs)) if isinstance(leaf, Tensor)]
        )
        metric._last_graph = weakref.ref(g)
        with g.as_default():
            metric.mirror_state(g)
            return update(*args, **kwargs)
    metric._on_values = True
    _update_on_values(metric, update, args, kwargs)
    return None


def _result(metric: Any) -> Any:
    result = functools.partial(type(metric).result, metric)
    if metric.__dict__.get("_tracing_values"):
        return result()
    if trace_scope.is_tracing():
        g = graph_lib.get_default_graph()
    elif metric.__dict__.get("_on_values") is False:  # after TF1 graph code's update
        last = metric.__dict__.get("_last_graph")
        g = last() if last is not None and last() is not None else graph_lib.get_default_graph()
    else:
        return _result_on_values(metric, result)
    with g.as_default():
        metric.mirror_state(g)
        return result()


def _is_symbolic(structure: Any) -> bool:
    return any(
        isinstance(leaf, Tensor) or hasattr(leaf, "graph_variable") for leaf in _leaves(structure)
    )


def _leaves(structure: Any) -> list:
    """The leaves of nested tuples and dicts, lists kept whole (a list is one array's values)."""
    if isinstance(structure, tuple):
        return [leaf for item in structure for leaf in _leaves(item)]
    if isinstance(structure, dict):
        return [leaf for key in sorted(structure) for leaf in _leaves(structure[key])]
    return [structure]


def _update_on_values(metric: Any, update: Any, args: tuple, kwargs: dict) -> None:
    names = sorted(kwargs)
    leaves = list(args) + [kwargs[k] for k in names]
    values = [None if v is None else np.asarray(v) for v in leaves]
    signature = (
        len(args),
        tuple(names),
        tuple(None if v is None else (v.shape, v.dtype.str) for v in values),
    )
    cache = metric.__dict__.setdefault("_value_updates", {})
    found = cache.get(signature)
    if found is None and len(cache) >= _MAX_SIGNATURES:  # bounded: the oldest goes
        cache.pop(next(iter(cache)))
    graph = metric.state_graph()
    if found is None or found[0] is not graph:
        found = cache[signature] = _trace_update(metric, graph, update, args, names, values)
    graph, placeholders, op = found
    rt = runtime.runtime_for(graph)
    rt.initialize(metric.variables)
    rt.run(op, {p: v for p, v in zip(placeholders, values) if p is not None})


def _trace_update(
    metric: Any, graph: graph_lib.Graph, update: Any, args: tuple, names: list, values: list
) -> tuple:
    with graph.as_default():
        placeholders = [
            None if v is None else core_ops.placeholder(dtypes.as_dtype(v.dtype), list(v.shape))
            for v in values
        ]
        metric._tracing_values = True
        try:
            op = update(*placeholders[: len(args)], **dict(zip(names, placeholders[len(args) :])))
        finally:
            metric._tracing_values = False
    if op is None:
        raise TypeError(
            f"{type(metric).__name__}.update_state must return the update op when given tensors "
            "(sluice metrics are graph code), so that it can run on values."
        )
    return graph, placeholders, op


def _result_on_values(metric: Any, result: Any) -> Any:
    graph = metric.state_graph()
    found = metric.__dict__.get("_value_result")
    if found is None:
        with graph.as_default():
            metric._tracing_values = True
            try:
                metric._ensure_state([])  # a metric never updated: its zero state
                found = metric._value_result = (graph, result())
            finally:
                metric._tracing_values = False
    graph, tensor = found
    rt = runtime.runtime_for(graph)
    rt.initialize(metric.variables)
    return rt.run(tensor)
