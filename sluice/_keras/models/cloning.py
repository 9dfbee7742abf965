"""`clone_model`: the same architecture with fresh layers (new weights), as Keras 3's.

    Sequential:  Sequential([its input] + [clone_function(layer) for layer in model.layers])
    functional:  new Inputs (or `input_tensors`), then each layer call of the model replayed
                 with the layer's clone (a shared layer is cloned once and shared again)
    subclassed:  model.__class__.from_config(model.get_config())

The default `clone_function` is `layer.__class__.from_config(layer.get_config())`. A clone of
a functional model is built in a graph of its own (layer names are unique within a graph, and
the clone keeps the names); given `input_tensors`, in theirs, where a clone whose name is
taken there gets a new one.

>>> x = sl.Input((4,)); model = sl.Model(x, sl.layers.Dense(2)(x))
>>> copy = clone_model(model)
>>> [layer.name for layer in copy.layers], copy.output_shape
(['input_layer', 'dense'], (None, 2))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sluice._export import export
from sluice._keras.layers import base, tracking
from sluice._keras.layers.core.input_layer import Input, InputLayer, input_layer_of
from sluice._keras.layers.core.lambda_layer import Lambda
from sluice._keras.models.model import Model
from sluice._keras.models.sequential import Sequential
from sluice._keras.saving import serialization
from sluice._keras.utils import rng_utils
from sluice._tf1.cells import nest
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Graph, Tensor


@export("models.clone_model")
def clone_model(
    model: Model, input_tensors: Any = None, clone_function: Callable | None = None, **kwargs: Any
) -> Model:
    """A new model of the same architecture as `model`, made of new layers (see the module
    docstring).

    Args:
      model: a Sequential, functional or subclassed Model.
      input_tensors: tensors to build the clone on (functional and Sequential models only):
        one per model input, in the structure of `model.inputs`.
      clone_function: `layer -> new layer`, called once per layer (default: from its config).
        Return the layer itself to share it (and its weights) with the clone.

    Raises:
      ValueError: `input_tensors` or `clone_function` for a subclassed model, a wrong number of
        input tensors, or a `clone_function` that does not return a layer.
    """
    if kwargs.pop("recursive", False) or kwargs.pop("call_function", None) is not None:
        raise NotImplementedError("clone_model: `recursive` and `call_function` are not supported.")
    if kwargs:
        raise ValueError(f"clone_model: unexpected arguments {sorted(kwargs)}.")
    given_function = clone_function is not None
    clone_function = clone_function or _clone_layer
    if not callable(clone_function):
        raise ValueError(f"clone_function must be callable, got {clone_function!r}.")
    if isinstance(model, Sequential):
        return _clone_sequential(model, input_tensors, clone_function)
    if not isinstance(model, Model):
        raise ValueError(f"clone_model takes a Model, got {type(model).__name__}.")
    if model._functional:
        return _clone_functional(model, input_tensors, clone_function)
    if given_function or input_tensors is not None:
        raise ValueError(
            "Arguments `clone_function` and `input_tensors` are only supported for Sequential "
            f"models or Functional models. Received model of type {type(model).__name__!r}, "
            f"with clone_function={clone_function} and input_tensors={input_tensors}"
        )
    config = serialization.serialize_keras_object(model)
    return serialization.deserialize_keras_object(
        config, custom_objects={type(model).__name__: type(model)}, safe_mode=False
    )


def _fresh_graph() -> Graph:
    """A new graph, seeded as a model's own graph is."""
    g = Graph()
    seed = rng_utils.get_random_seed()
    g.seed = seed if seed is not None else graph_lib.get_default_graph().seed
    return g


def _clone_layer(layer: base.Layer) -> base.Layer:
    """A new layer of the same class and config (no weights yet); a Lambda keeps its function
    objects (the config never leaves this process)."""
    config = layer.get_config()
    if isinstance(layer, Lambda):
        config = {**config, "function": layer.function, "output_shape": layer.output_shape,
                  "mask": layer.mask}  # fmt: skip
    return type(layer).from_config(config)


def _checked(layer: Any, original: base.Layer) -> base.Layer:
    if not isinstance(layer, base.Layer):
        raise ValueError(
            f"clone_function must return a layer; for {original.name!r} it returned {layer!r}."
        )
    return layer


def _clone_sequential(
    model: Sequential, input_tensors: Any, clone_function: Callable
) -> Sequential:
    layers = [_checked(clone_function(layer), layer) for layer in model.layers]
    if input_tensors is not None:
        flat = nest.flatten(input_tensors)
        if len(flat) != 1 or not isinstance(flat[0], Tensor):
            raise ValueError(
                f"Argument `input_tensors` must contain a single tensor; got {input_tensors!r}."
            )
        first = flat[0] if input_layer_of(flat[0]) is not None else Input(tensor=flat[0])
        layers = [first] + layers
    elif model._input_spec is not None:
        batch_shape, dtype = model._input_spec
        with _fresh_graph().as_default():
            layers = [InputLayer(batch_shape=batch_shape, dtype=dtype)] + layers
    return Sequential(layers, trainable=model.trainable, name=model.name)


def _clone_functional(model: Model, input_tensors: Any, clone_function: Callable) -> Model:
    originals = nest.flatten(model._input_struct)
    if input_tensors is None:
        with _fresh_graph().as_default():
            new = [
                Input(batch_shape=input_layer_of(t).batch_shape, dtype=t.dtype.name,
                      name=input_layer_of(t).name)
                for t in originals
            ]  # fmt: skip
    else:
        new = nest.flatten(input_tensors)
        if len(new) != len(originals) or not all(isinstance(t, Tensor) for t in new):
            raise ValueError(
                f"Model {model.name!r} has {len(originals)} inputs; `input_tensors` must hold as "
                f"many tensors, got {input_tensors!r}."
            )
        new = [t if input_layer_of(t) is not None else Input(tensor=t) for t in new]
    graph = tracking.graph_of(new)
    mapping: dict[int, Any] = {id(old): t for old, t in zip(originals, new)}
    clones: dict[int, base.Layer] = {}

    def swap(value: Any) -> Any:
        return mapping.get(id(value), value) if isinstance(value, Tensor) else value

    with graph.as_default():
        for node in model._graph_nodes:
            layer = node.layer
            if id(layer) not in clones:
                clones[id(layer)] = _checked(clone_function(layer), layer)
            clone = clones[id(layer)]
            if (
                clone is not layer
                and clone.graph is None
                and clone.name in tracking.layer_names(graph)
            ):
                clone.allow_renaming()  # its name is taken in these inputs' graph
            outputs = clone(
                *nest.map_structure(swap, node.args), **nest.map_structure(swap, node.kwargs)
            )
            for old, t in zip(nest.flatten(node.outputs), nest.flatten(outputs)):
                mapping[id(old)] = t
    inputs = nest.pack_sequence_as(model._input_struct, new)
    outputs = nest.map_structure(lambda t: mapping[id(t)], model._output_struct)
    name = model.name if model.name not in tracking.layer_names(graph) else None
    return Model(inputs, outputs, name=name, trainable=model.trainable)
