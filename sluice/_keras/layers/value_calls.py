"""Calling a layer or model on values (`layer(np_array)`), as Keras 3 computes it eagerly.

sluice layers are graph code, so a call on NumPy (or JAX) arrays is run as a small graph: the
first call with a given input signature (shapes past the batch, dtypes, keyword arguments) makes
placeholders with an unknown batch size in the layer's graph and calls the layer on them once;
every call with that signature then runs those outputs in the graph's session (the same weights
that `fit` trains and `get_weights` reads), fed with the values. Unbuilt layers are built and
initialised by the first call, as in Keras.

>>> dense = sl.layers.Dense(2, kernel_initializer="ones")
>>> dense(np.ones((3, 4), np.float32))
array([[4., 4.],
       [4., 4.],
       [4., 4.]], dtype=float32)
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from sluice._keras.layers import runtime
from sluice._tf1.cells import nest
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import GraphKeys
from sluice.framework.ops.core import core_ops

_PLAIN = (bool, int, float, str, type(None))


def are_values(inputs: Any) -> bool:
    """Whether `inputs` is an array or a structure of arrays (no symbolic tensor)."""
    leaves = nest.flatten(inputs)
    return bool(leaves) and all(isinstance(x, (np.ndarray, jax.Array)) for x in leaves)


def call_on_values(layer: Any, args: tuple, kwargs: dict) -> Any:
    """`layer(*args, **kwargs)` on the arrays `args[0]`: NumPy outputs, in the call's structure.

    Raises:
      TypeError: more positional arguments than the inputs, or keyword arguments that are not
        plain values (training=True, ...).
    """
    inputs = args[0]
    if len(args) > 1 or any(not isinstance(v, _PLAIN) for v in kwargs.values()):
        raise TypeError(
            f"Layer {layer.name!r} called on arrays takes its inputs and plain keyword arguments "
            "(training=..., ...) only; call it on symbolic tensors for anything else."
        )
    values = [np.asarray(v) for v in nest.flatten(inputs)]
    signature = (
        tuple((v.shape[1:], v.dtype.str) for v in values),
        str(nest.flatten(nest.map_structure(lambda _: 0, inputs))),
        tuple(sorted(kwargs.items())),
    )
    calls = layer.__dict__.setdefault("_value_calls", {})
    found = calls.get(signature)
    if found is None:
        graph = layer.graph if layer.graph is not None else graph_lib.get_default_graph()
        with graph.as_default():
            placeholders = [
                core_ops.placeholder(
                    dtypes.as_dtype(v.dtype), [None, *v.shape[1:]] if v.ndim else []
                )
                for v in values
            ]
            outputs = layer(nest.pack_sequence_as(inputs, placeholders), **kwargs)
        found = calls[signature] = (graph, placeholders, outputs)
    graph, placeholders, outputs = found
    rt = runtime.runtime_for(graph)
    rt.initialize(graph.get_collection(GraphKeys.GLOBAL_VARIABLES))
    return rt.run(outputs, dict(zip(placeholders, values)))
