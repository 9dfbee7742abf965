"""Graph code called on JAX tracers: what `sl.ops` functions and Keras losses do inside
`jax.jit`, `jax.grad` and JAX's other transformations (Keras's JAX training loop computes its
loss inside `jax.value_and_grad`).

Outside graph code, `sl.ops.mean(array)` builds its ops on constants and gives their values. A
tracer has no value to make a constant of, so `call_on_tracers(fn, args, kwargs)` builds `fn`
in a scratch graph on placeholders of the array arguments' shapes and dtypes instead, and runs
the result as a `PureFunction` of those arguments (the compiled engine's lowering): the caller's
transformation sees ordinary JAX operations, and gradients flow through them.

    >>> mean = lambda x: call_on_tracers(sl.reduce_mean, (x,), {})
    >>> float(jax.jit(mean)(np.arange(4.0, dtype=np.float32)))
    1.5
    >>> jax.grad(mean)(np.ones(2, np.float32))
    Array([0.5, 0.5], dtype=float32)

The arguments may nest (lists, tuples, dicts); their array leaves (NumPy, JAX arrays, tracers)
become placeholders, every other leaf (numbers, strings, None) is passed to `fn` as it is. `fn`
must not read variables: a caller hands values of Keras weights in as arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sluice.framework.compiler.pure import PureFunction
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Graph, Tensor
from sluice.framework.ops.core import core_ops
from sluice.framework.prune import prune


def has_tracers(structure: Any) -> bool:
    """Whether a leaf of `structure` is a JAX tracer (a value inside a JAX transformation)."""
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(structure))


def call_on_tracers(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """`fn(*args, **kwargs)` as JAX operations on the array arguments (see the module
    docstring): the result's structure, its tensors replaced by their JAX values."""
    leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
    g = Graph()
    with g.as_default():
        feeds = {
            i: core_ops.placeholder(dtypes.as_dtype(jnp.result_type(x)), np.shape(x))
            for i, x in enumerate(leaves)
            if _is_array(x)
        }
        args, kwargs = jax.tree_util.tree_unflatten(
            treedef, [feeds.get(i, x) for i, x in enumerate(leaves)]
        )
        result = fn(*args, **kwargs)
    outputs, out_tree = jax.tree_util.tree_flatten(result)
    tensors = [t for t in outputs if isinstance(t, Tensor)]
    fetched, _ = PureFunction(prune(tensors, [], list(feeds.values())), [])(
        [], [leaves[i] for i in feeds]
    )
    values = iter(fetched)
    return jax.tree_util.tree_unflatten(
        out_tree, [next(values) if isinstance(t, Tensor) else t for t in outputs]
    )


def _is_array(x: Any) -> bool:
    return isinstance(x, (np.ndarray, np.generic, jax.Array))
