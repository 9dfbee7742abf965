"""`Layer.stateless_call`: a layer's call as a pure JAX function of its variables' values.

    outputs, non_trainable_values = layer.stateless_call(
        trainable_values, non_trainable_values, x, training=True)

as Keras 3 documents it: the values are given in the order of `layer.trainable_variables` and
`layer.non_trainable_variables`, nothing is read from or written to the layer's variables, and
the new values of the non-trainable ones (a BatchNormalization's moving statistics in training,
a seed generator's state) come back. So it runs inside `jax.jit`, `jax.grad` and `jax.vmap`, and
optax, orbax or a hand-written JAX loop drive the model (Keras's guide "Writing a training loop
from scratch in JAX").

How: once per argument signature (the arrays' shapes and dtypes, the other arguments' values,
`training`), the layer is called on placeholders of exactly those shapes inside
`tracking.collect()`, in a private graph of the layer (`_graph_for`), where its weights are read
through their mirrors; the outputs, the losses (`add_loss` terms and activity regularizers of
the call, then the weight regularizers, as Keras's `layer.losses`) and the collected updates are
pruned into a `PureFunction` bound to the variables. Every later call with that signature
evaluates the function on the values given. The shapes are static, batch included, so an RNN
over the sequence axis is a `lax.scan` of known length, which `jax.grad` differentiates.

Values outside any trace: `variable_values(variables)` gives the variables' current values as
JAX arrays and `assign_variables(variables, values)` writes values back (what Keras's guide does
with `v.value` and `v.assign(value)` after the loop).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from sluice._keras.layers import runtime, tracking
from sluice.framework import state_cells
from sluice.framework.compiler.pure import PureFunction
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Graph, Tensor
from sluice.framework.ops.core import core_ops
from sluice.framework.prune import prune
from sluice.framework.variables import Variable


@dataclasses.dataclass(frozen=True)
class _Traced:
    """One traced signature: the function and how to unpack what it returns."""

    fn: PureFunction
    outputs: Any  # the call's output structure (Tensors where values come)
    n_outputs: int  # the first n fetches are outputs, the rest losses
    n_trainable: int  # the first n bound values are the trainable variables'


def stateless_call(
    layer: Any,
    trainable_variables: Sequence[Any],
    non_trainable_variables: Sequence[Any],
    *args: Any,
    return_losses: bool = False,
    **kwargs: Any,
) -> tuple:
    """`layer(*args, **kwargs)` on the variable values given, without side effects.

    Args:
      layer: a built Layer (or Model).
      trainable_variables: values (JAX or NumPy arrays, or the variables themselves outside a
        trace) in the order of `layer.trainable_variables`.
      non_trainable_variables: values in the order of `layer.non_trainable_variables`.
      *args, **kwargs: the call's arguments: arrays (traced or not) and plain Python values
        (`training=True`, ...).
      return_losses: also return the call's losses (see the module docstring).

    Returns:
      `(outputs, new_non_trainable_values)`, or `(outputs, new_non_trainable_values, losses)`.

    Raises:
      ValueError: the layer is not built, or a list of values has the wrong length or shapes.
    """
    if not layer.built:
        raise ValueError(
            f"To call stateless_call, {type(layer).__name__} must be built (i.e. its variables "
            "must have been already created). You can build it by calling it on some data."
        )
    trainable, non_trainable = layer.trainable_variables, layer.non_trainable_variables
    for given, expected, which in (
        (trainable_variables, trainable, "trainable_variables"),
        (non_trainable_variables, non_trainable, "non_trainable_variables"),
    ):
        if len(given) != len(expected):
            raise ValueError(
                f"Argument `{which}` must be a list of tensors corresponding 1:1 to "
                f"{type(layer).__name__}().{which}. Received list with length {len(given)}, "
                f"but expected {len(expected)} variables."
            )
    leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
    # the variables too: setting `trainable` on a sublayer moves weights between the lists
    signature = (
        treedef,
        tuple(_leaf_signature(x) for x in leaves),
        tuple(map(id, trainable)),
        tuple(map(id, non_trainable)),
    )
    traces = layer.__dict__.setdefault("_stateless_traces", {})  # {signature: _Traced}
    traced = traces.get(signature)
    if traced is None:
        traced = traces[signature] = _trace(layer, trainable + non_trainable, leaves, treedef)
    values = _as_values(list(trainable_variables) + list(non_trainable_variables))
    fetched, new = traced.fn(values, [x for x in leaves if _is_array(x)])
    flat = iter(fetched[: traced.n_outputs])
    outputs = jax.tree_util.tree_map(
        lambda t: next(flat) if isinstance(t, Tensor) else t, traced.outputs
    )
    new_non_trainable = new[traced.n_trainable :]
    if return_losses:
        return outputs, new_non_trainable, list(fetched[traced.n_outputs :])
    return outputs, new_non_trainable


def _trace(layer: Any, variables: list, leaves: list, treedef: Any) -> _Traced:
    """Calls `layer` on placeholders for the array leaves (see the module docstring)."""
    g = _graph_for(layer)
    with g.as_default(), g.name_scope("stateless_call"):
        feeds = {
            i: core_ops.placeholder(dtypes.as_dtype(jnp.result_type(x)), np.shape(x))
            for i, x in enumerate(leaves)
            if _is_array(x)
        }
        args, kwargs = jax.tree_util.tree_unflatten(
            treedef, [feeds.get(i, x) for i, x in enumerate(leaves)]
        )
        with tracking.collect() as collector:
            outputs = layer(*args, **kwargs)
            regularization = layer.losses  # inside the trace: graph terms only
        losses = [core_ops.convert_to_tensor(t) for t in collector.losses + regularization]
    flat_outputs = [t for t in jax.tree_util.tree_leaves(outputs) if isinstance(t, Tensor)]
    pruned = prune(flat_outputs + losses, list(collector.updates), list(feeds.values()))
    bound = [_graph_variable(v, g).op.get_attr("shared_name") for v in variables]
    fn = PureFunction(pruned, bound)
    n_trainable = len(layer.trainable_variables)
    return _Traced(fn, outputs, len(flat_outputs), n_trainable)


def _graph_for(layer: Any) -> Graph:
    """The graph a stateless call of `layer` is traced in: one private graph per layer, where
    its weights are read through their mirrors (see `sluice.framework.state_cells`), so the
    model's own graph gains no ops."""
    g = getattr(layer, "_stateless_graph", None)  # the layer's own: freed with it
    if g is None:
        g = layer._stateless_graph = Graph()
    return g


def _graph_variable(v: Any, g: Graph) -> Variable:
    """The graph Variable through which `g` reads `v` (a Keras variable's mirror in `g`)."""
    mirror = getattr(v, "graph_variable", None)
    return mirror(g) if mirror is not None else v


def _is_array(x: Any) -> bool:
    return isinstance(x, (np.ndarray, np.generic, jax.Array))


def _leaf_signature(x: Any) -> Any:
    """What a trace depends on: an array's shape and dtype, another value itself."""
    if _is_array(x):
        return ("array", tuple(np.shape(x)), jnp.result_type(x).name)
    try:
        hash(x)
    except TypeError:
        raise TypeError(
            f"stateless_call takes arrays and plain Python values (hashable) as arguments; got "
            f"{type(x).__name__}: {x!r}."
        ) from None
    return ("value", type(x), x)


def _as_values(items: list) -> list:
    """Values for `items`: arrays as they are, variables' current values."""
    variables = [x for x in items if isinstance(x, Variable) or hasattr(x, "graph_variable")]
    if not variables:
        return items
    current = dict(zip(map(id, variables), variable_values(variables)))
    return [current.get(id(x), x) for x in items]


def variable_values(variables: Sequence[Any]) -> list[jax.Array]:
    """The current values of `variables` (a layer's, a model's, an optimizer's), as arrays: a
    Keras variable's taken from wherever its value lives (copied, so no later step's donation
    reaches it), the others (and one with no value yet) read by their graph's session."""
    by_graph: dict[Graph, list] = {}
    held = {}
    for v in variables:
        cell = state_cells.cell_of(v) if isinstance(v, Variable) else None
        value = state_cells.value_of(cell) if cell is not None else None
        if value is not None:
            held[id(v)] = jnp.array(value, copy=True)
        elif isinstance(v, Variable):
            by_graph.setdefault(v.graph, []).append(v)
    read = held
    for g, group in by_graph.items():
        read.update(zip(map(id, group), runtime.read_values(g, group)))
    return [jnp.asarray(read[id(v)]) if id(v) in read else jnp.asarray(v) for v in variables]


def assign_variables(variables: Sequence[Any], values: Sequence[Any]) -> None:
    """Writes `values` into `variables` (in order), as `v.assign(value)` for each."""
    variables, values = list(variables), list(values)
    if len(variables) != len(values):
        raise ValueError(f"Got {len(values)} values for {len(variables)} variables.")
    by_graph: dict[Graph, tuple[list, list]] = {}
    for v, value in zip(variables, values):
        if isinstance(v, Variable):
            group = by_graph.setdefault(v.graph, ([], []))
            group[0].append(v)
            group[1].append(np.asarray(value))
        else:
            v.assign(value)
    for g, (group, group_values) in by_graph.items():
        runtime.write_values(g, group, group_values, "assign_variables")
