"""Calling a layer or model on values (`layer(np_array)`), as Keras 3 computes it eagerly.

sluice layers are graph code, so a call on arrays (NumPy, JAX, `sl.Array`, or lists and dicts
of them) runs as a small graph: a private graph of the layer (`value_graph`), where its weights
are read through their mirrors (`sluice.framework.state_cells`): the same values that `fit`
trains and `get_weights` reads, and no model's graph gains ops. The first call with a given
signature (the arguments' structure, each array's shape and dtype, the plain values such as
`training=True`) makes a placeholder per array and calls the layer on them once;
every call with that signature then runs those outputs in that graph's session, fed with the
values, and returns `sl.Array`s in the call's structure. Unbuilt layers are built and
initialised by the first call, as in Keras.

What the call changes is kept, as an eager Keras call keeps it: a weight assigned in `call`
(`self.total.assign_add(...)`, ordered with its reads as in a traced step), a stateful RNN's states
(`lstm(paragraph1)` then `lstm(paragraph2)` continues; `reset_states()` starts again) and, with
`training=True`, BatchNormalization's moving statistics. Arguments may also be Variables (a
stateful layer's `states`, weights): their current values are passed. The placeholders have
the arrays' whole shapes, batch size included, as Keras's eager tensors do: a `call` may use
`inputs.shape[0]` (`ops.zeros((inputs.shape[0], units))`, the functional API guide's custom
RNN).

Each layer keeps the traces of its last `CACHE_SIZE` signatures (least recently used first
out), so calls on ever-changing shapes do not keep every compiled step. (The ops of an evicted
trace stay in the private graph: graphs are not freed while the layer's cells mirror in them.)

Inside graph code (a layer's `call`, a model's forward pass, a traced step), a call on arrays is
part of that graph: the arrays become constants and the layer is called symbolically.

>>> dense = sl.layers.Dense(2, kernel_initializer="ones")
>>> dense(np.ones((3, 4), np.float32))
Array([[4., 4.],
       [4., 4.],
       [4., 4.]], dtype=float32)
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Any

import jax
import numpy as np

from sluice._keras.array import as_array
from sluice._keras.layers import runtime, tracking
from sluice._tf1.cells import nest
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Graph, GraphKeys, Operation, Tensor
from sluice.framework.ops.core import core_ops
from sluice.framework.variables import Variable

CACHE_SIZE = 32  # signatures kept per layer
_PLAIN = (bool, int, float, complex, str, bytes, type(None), np.generic)
_ARRAYS = (np.ndarray, jax.Array)


def are_values(inputs: Any) -> bool:
    """Whether `inputs` is an array or a structure of arrays (no symbolic tensor)."""
    leaves = nest.flatten(inputs)
    return bool(leaves) and all(isinstance(x, _ARRAYS) for x in leaves)


@dataclasses.dataclass(frozen=True)
class _Traced:
    """One signature's graph: the placeholders fed, the outputs, the updates run with them,
    and the `add_loss` terms with the layer that added each."""

    graph: Graph
    placeholders: list[Tensor]
    outputs: Any  # the call's outputs (tensors and plain values) in their structure
    updates: list[Operation]
    losses: list[tuple[Any, Tensor]]


def cached_signatures(layer: Any) -> int:
    """How many signatures of calls on values `layer` keeps graphs for (at most CACHE_SIZE)."""
    return len(layer.__dict__.get("_value_calls", ()))


def value_graph(layer: Any) -> Graph:
    """The graph in which calls of `layer` on values are built: a private graph of the layer,
    where its weights and states are read through their mirrors (`framework.state_cells`), so
    no model's graph gains ops. A layer never called before is first named among the layers of
    the default graph, as it would be there (its weights are created in that graph)."""
    if layer.graph is None:
        layer._enter_graph(graph_lib.get_default_graph())
    g = getattr(layer, "_value_graph", None)  # the layer's own: freed with it
    if g is None:
        g = layer._value_graph = Graph()
    return g


def call_on_values(layer: Any, args: tuple, kwargs: dict) -> Any:
    """`layer(*args, **kwargs)` on arrays: `sl.Array`s in the structure of the call's outputs.

    Raises:
      TypeError: an argument that is neither an array, a Variable, a value known without a
        run, nor a plain Python value.
    """
    if tracking.tracing():  # inside graph code: the arrays are constants of that graph
        return layer(*_as_constants(args), **_as_constants(kwargs))
    leaves = nest.flatten((args, kwargs))
    values = [_fed_value(layer, x) for x in leaves]
    in_masks = [_mask_of(x) for x in leaves]  # Keras 3's eager `array._keras_mask`
    signature = (
        str(nest.map_structure(lambda _: 0, (args, kwargs))),
        tuple(
            _plain_key(x) if v is None else (v.shape, v.dtype.str, getattr(m, "shape", None))
            for x, v, m in zip(leaves, values, in_masks)
        ),
    )
    calls = layer.__dict__.setdefault("_value_calls", collections.OrderedDict())
    traced = calls.get(signature)
    if traced is None:
        traced = _trace(layer, args, kwargs, leaves, values, in_masks)
        calls[signature] = traced
        while len(calls) > CACHE_SIZE:
            calls.popitem(last=False)
    calls.move_to_end(signature)
    rt = runtime.runtime_for(traced.graph)
    rt.initialize(traced.graph.get_collection(GraphKeys.GLOBAL_VARIABLES))
    flat_out = nest.flatten(traced.outputs)
    fetches = [t for t in flat_out if isinstance(t, Tensor)]
    masks = [tracking.get_mask(t) for t in fetches]
    mask_fetches = [m for m in masks if isinstance(m, Tensor)]
    fed_values = [a for v, m in zip(values, in_masks) for a in (v, m) if a is not None]
    fed = dict(zip(traced.placeholders, fed_values))
    (got, losses, got_masks), _ = rt.run(
        ((fetches, [t for _, t in traced.losses], mask_fetches), traced.updates), fed
    )
    layer.set_value_losses(
        [(owner, as_array(v)) for (owner, _), v in zip(traced.losses, losses) if owner is not None]
    )
    arrays, got_masks = [as_array(v) for v in got], iter(got_masks)
    for array, mask in zip(arrays, masks):
        if isinstance(mask, Tensor):  # Keras 3's eager `output._keras_mask`
            array._keras_mask = as_array(next(got_masks))
    arrays = iter(arrays)
    return nest.pack_sequence_as(
        traced.outputs, [next(arrays) if isinstance(t, Tensor) else t for t in flat_out]
    )


def _trace(
    layer: Any, args: tuple, kwargs: dict, leaves: list, values: list, masks: list
) -> _Traced:
    """Calls `layer` on placeholders standing for the arrays among `leaves` (and their masks)."""
    graph = value_graph(layer)
    with graph.as_default(), graph.name_scope(None):
        placeholders, symbolic = [], []
        for x, v, m in zip(leaves, values, masks):
            if v is None:
                symbolic.append(x)
                continue
            p = core_ops.placeholder(dtypes.as_dtype(v.dtype), list(v.shape))
            placeholders.append(p)
            symbolic.append(p)
            if m is not None:
                placeholders.append(core_ops.placeholder(dtypes.as_dtype(m.dtype), list(m.shape)))
                tracking.set_mask(p, placeholders[-1])
        args, kwargs = nest.pack_sequence_as((args, kwargs), symbolic)
        first_op_id = graph.last_op_id + 1
        with tracking.collect() as collector:
            outputs = layer(*args, **kwargs)
        writes = tracking.order_state_ops(graph, first_op_id)  # `self.total.assign_add(...)`
    updates = list(dict.fromkeys([*collector.updates, *writes]))
    losses = [
        (owner, core_ops.convert_to_tensor(t))
        for owner, t in zip(collector.loss_owners, collector.losses)
    ]
    return _Traced(graph, placeholders, outputs, updates, losses)


def _mask_of(x: Any) -> np.ndarray | None:
    mask = getattr(x, "_keras_mask", None) if isinstance(x, np.ndarray) else None
    return None if mask is None else np.asarray(mask)


def _fed_value(layer: Any, x: Any) -> np.ndarray | None:
    """The array fed for the argument `x`, or None for a plain value (part of the signature)."""
    if isinstance(x, _ARRAYS):
        return np.asarray(x)
    if isinstance(x, Variable):  # a weight, a stateful layer's states: its value now
        return np.asarray(runtime.read_values(x.graph, [x])[0])
    if isinstance(x, Tensor):
        return np.asarray(x)  # a value known without a run (TypeError otherwise)
    if isinstance(x, _PLAIN):
        return None
    raise TypeError(
        f"Layer {layer.name!r} called on arrays got an argument of type {type(x).__name__}; "
        "calls on arrays take arrays, Variables and plain Python values (training=True, ...). "
        "Call the layer on symbolic tensors for anything else."
    )


def _plain_key(x: Any) -> tuple:
    return (type(x).__name__, x)


def _as_constants(structure: Any) -> Any:
    return nest.map_structure(
        lambda x: core_ops.constant(np.asarray(x)) if isinstance(x, _ARRAYS) else x, structure
    )
