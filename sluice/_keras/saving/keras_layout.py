"""The Keras 3 weights layout: the `.weights.h5` file, and `model.weights.h5` in a `.keras` zip.

Keras 3 (`keras.saving.saving_lib`) saves every object of a model under its path in the model,
as one h5 group holding a `vars` group with the object's own variables as datasets named by
their index, in the order the object created them (trainable ones first):

    /vars                                   the model's own variables (usually none)
    /layers/dense/vars/0, /1                 Dense: kernel, bias
    /layers/dense_1/vars/0, /1               the second Dense of the model
    /layers/conv2d/vars/0, /1                Conv1D/Conv2D: kernel, bias
    /layers/embedding/vars/0                 Embedding: embeddings
    /layers/batch_normalization/vars/0..3    gamma, beta, moving_mean, moving_variance
    /layers/layer_normalization/vars/0, /1   gamma, beta
    /layers/lstm/vars                        (empty: the layer's weights are its cell's)
    /layers/lstm/cell/vars/0..2              kernel, recurrent_kernel, bias [4*units]; gates i,f,c,o
    /layers/gru/cell/vars/0..2               ... bias [2, 3*units] when reset_after; gates z,r,h
    /layers/bidirectional/forward_layer/cell/vars/0..2, /backward_layer/cell/vars/0..2
    /layers/functional/layers/dense/vars/0   a model nested in a model
    /optimizer/vars/0..                      the optimizer (not read or written here)

The path of an object is found by walking the model as Keras does (`_walk_saveable`):

  * a Sequential or functional model first lists `layers` (a functional model's layers in
    Keras's order: by depth from the inputs, then by first visit; its InputLayers included);
    an object in a list is named by its class in snake case, numbered per class in list order
    (`dense`, `dense_1`, `conv2d`, ...), never by its own name, so two builds of one
    architecture have the same paths;
  * then every attribute holding a layer or a list of layers, public names in sorted order
    before private ones: an RNN's `cell`, a Bidirectional's `forward_layer`/`backward_layer`,
    a TimeDistributed's `layer`, a subclassed model's `self.encoder = ...` and its `layers`
    property (so an attribute named after "layers" in sorted order, like `self.tail`, is saved
    under `layers/<class>_<n>`, numbered in the order the model's layers were assigned);
  * an object reached twice is saved at its first path only.

Loading checks everything before writing anything: each object's `vars` must hold exactly its
number of variables with the same shapes and numeric types, the file's layers must all exist in
the model; every difference is listed in one error. With `skip_mismatch`, an object that does
not match keeps its values instead. The file is untrusted (`h5_values`): only hard links inside
it are followed, and a dataset must be numeric, stored in this file and no bigger than it.

>>> import h5py
>>> model = sl.Sequential([sl.Input((3,)), sl.layers.Dense(2), sl.layers.Dense(1)])
>>> with h5py.File("model.weights.h5", "w") as f:
...     write_model_weights(model, f)
>>> with h5py.File("model.weights.h5", "r") as f:
...     list(f["layers"])
['dense', 'dense_1']
>>> with h5py.File("model.weights.h5", "r") as f:
...     f["layers/dense/vars/0"].shape, f["layers/dense/vars/1"].shape
((3, 2), (2,))
>>> copy = sl.Sequential([sl.Input((3,)), sl.layers.Dense(2), sl.layers.Dense(1)])
>>> with h5py.File("model.weights.h5", "r") as f:
...     read_model_weights(copy, f)
>>> all(np.array_equal(a, b) for a, b in zip(model.get_weights(), copy.get_weights()))
True
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import h5py
import numpy as np

from sluice._keras.layers import keras_operations, runtime, stateless, tracking
from sluice._keras.layers.base import Layer
from sluice._keras.layers.graph_op_layer import GraphOpLayer
from sluice._keras.saving import families, h5_values
from sluice.framework.variables import Variable

_VARS = "vars"
_OPERATIONS = (*keras_operations.OPERATIONS.values(), GraphOpLayer)  # operations in Keras
find_group = h5_values.find_group  # for readers of the other groups of the file (the optimizer)
# Attributes of every layer that hold no sublayer of the model (the parent links, and the
# model's own list of layers, which the "layers" entry lists already).
_NOT_CHILDREN = frozenset({"_layers", "_parent", "_parent_layer"})


keras_snake_case = families.to_snake_case  # Keras's `naming.to_snake_case`


def _model_kind(layer: Layer) -> str:
    """Keras's `_obj_type` of a sluice object: "Functional", "Sequential" or "Layer"."""
    if getattr(layer, "_functional", False):
        return "Functional"
    if any(c.__name__ == "Sequential" for c in type(layer).__mro__):
        return "Sequential"
    return "Layer"


def keras_class_name(layer: Layer) -> str:
    """The class name Keras would give the object (a functional sluice Model is Keras's
    `Functional`)."""
    return "Functional" if _model_kind(layer) == "Functional" else type(layer).__name__


def functional_layers(model: Any) -> list[Layer]:
    """A functional model's layers in Keras's order (`keras.src.ops.function.map_graph`):
    by decreasing depth (the longest path to an output), ties broken by the order in which a
    depth-first walk back from the outputs first reaches each layer. InputLayers included."""
    sources = set(model.inputs)
    visits: list[tuple[Any, Layer, list]] = []  # (call key, layer, parent tensors), inputs first
    first_seen: dict[int, int] = {}
    layers: dict[int, Layer] = {}
    finished: set[int] = set()

    def call_of(t: Any) -> tuple[int, Layer, list] | None:
        node = tracking.producing_node(t)
        if node is None:
            return None
        parents = [] if t in sources else node.input_tensors
        return id(node), node.layer, parents

    def visit(t: Any) -> None:
        call = call_of(t)
        if call is None or call[0] in finished:
            return
        key, layer, parents = call
        layers[id(layer)] = layer
        first_seen.setdefault(id(layer), len(first_seen))
        finished.add(key)  # sluice's graph has no cycles (checked when the model is made)
        for parent in parents:
            visit(parent)
        visits.append(call)

    for t in model.outputs:
        visit(t)
    node_depth: dict[int, int] = {}
    layer_depth: dict[int, int] = {}
    for key, layer, parents in reversed(visits):
        depth = max(node_depth.setdefault(key, 0), layer_depth.get(id(layer), 0))
        layer_depth[id(layer)] = node_depth[key] = depth
        for parent in parents:
            parent_call = call_of(parent)
            if parent_call is not None:
                node_depth[parent_call[0]] = max(depth + 1, node_depth.get(parent_call[0], 0))
    for t in model.inputs:  # inputs the outputs do not use
        call = call_of(t)
        if call is not None and id(call[1]) not in layer_depth:
            layers[id(call[1])] = call[1]
            layer_depth[id(call[1])], first_seen[id(call[1])] = 0, -1
    return sorted(layers.values(), key=lambda x: (-layer_depth[id(x)], first_seen[id(x)]))


def keras_layers(model: Any) -> list[Layer]:
    """`model.layers` as Keras lists them (functional: Keras's order, InputLayers included;
    not the `keras.ops` nodes, which are operations in Keras, not layers)."""
    found = functional_layers(model) if _model_kind(model) == "Functional" else model.layers
    return [layer for layer in found if not isinstance(layer, _OPERATIONS)]


def _name_key(attribute: str) -> str:
    return "~" + attribute if attribute.startswith("_") else attribute  # private ones last


def _children(obj: Layer) -> Iterator[tuple[str, Any]]:
    """(attribute, a layer or a list of layers) in the order Keras's `_walk_saveable` visits."""
    attributes = dict(vars(obj))
    if _model_kind(obj) in ("Functional", "Sequential"):
        yield "layers", keras_layers(obj)
    elif hasattr(obj, "_functional"):  # a subclassed model: its `layers` property is walked too
        attributes["layers"] = list(obj.layers)
    for attribute in sorted(attributes, key=_name_key):
        if attribute.startswith("__") or attribute in _NOT_CHILDREN:
            continue
        value = attributes[attribute]
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, Layer):
            yield attribute, value
        elif isinstance(value, (list, tuple)) and any(isinstance(v, Layer) for v in value):
            yield attribute, value


def saveable_paths(root: Layer) -> list[tuple[str, Layer]]:
    """(path, object) for the model and everything in it that Keras saves, in Keras's order;
    the model's own path is ""."""
    found: list[tuple[str, Layer]] = []
    seen: set[int] = set()

    def visit(obj: Layer, path: str) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        found.append((path, obj))
        for attribute, child in _children(obj):
            child_path = f"{path}/{attribute}" if path else attribute
            if isinstance(child, Layer):
                visit(child, child_path)
                continue
            used: dict[str, int] = {}
            for item in child:
                if not isinstance(item, Layer):
                    continue
                name = keras_snake_case(keras_class_name(item))
                used[name] = used.get(name, -1) + 1
                visit(item, f"{child_path}/{name}" + (f"_{used[name]}" if used[name] else ""))

    visit(root, "")
    return found


def own_variables(layer: Layer) -> list[Variable]:
    """The variables a layer saves itself, in Keras's order: trainable ones, then the others,
    each in the order the layer created them."""
    variables = [w.variable for w in layer.own_weights]
    return [v for v in variables if v.trainable] + [v for v in variables if not v.trainable]


# -- writing --------------------------------------------------------------------------------------
def write_model_weights(model: Layer, group: h5py.Group) -> None:
    """Writes the variables of `model` (a model or layer) into `group` (an open, empty h5py
    group: a new `.weights.h5` file) in Keras 3's layout (see the module docstring). A model
    never called (a GAN whose own train_step calls its parts) writes its parts' weights."""
    entries = [(path, own_variables(obj)) for path, obj in saveable_paths(model)]
    flat = [v for _, variables in entries for v in variables]
    values = iter(_read_values(model, flat))
    for path, variables in entries:
        target = group
        for part in [p for p in path.split("/") if p] + [_VARS]:
            target = target.require_group(part)
        for i, _ in enumerate(variables):
            target.create_dataset(str(i), data=np.asarray(next(values)))


# -- reading --------------------------------------------------------------------------------------
def _vars_of(root: h5py.Group, path: str) -> h5py.Group | None:
    """The `vars` group of the object at `path` (also where Keras 2.13 wrote `layers` as
    `_layer_checkpoint_dependencies`)."""
    found = h5_values.find_group(root, f"{path}/{_VARS}" if path else _VARS)
    if (
        found is None
        and path
        and h5_values.find_group(root, "_layer_checkpoint_dependencies") is not None
    ):
        found = h5_values.find_group(
            root, path.replace("layers", "_layer_checkpoint_dependencies") + "/vars"
        )
    return found


def _describe(obj: Layer) -> str:
    return f"layer {obj.name!r} ({type(obj).__name__})"


def _read_object(root: h5py.Group, path: str, obj: Layer) -> list[tuple[Variable, np.ndarray]]:
    variables = own_variables(obj)
    store = _vars_of(root, path)
    shown = f"/{path}/{_VARS}" if path else f"/{_VARS}"
    keys = sorted(store.keys()) if store is not None else []
    if len(keys) != len(variables):
        if not keys and variables:
            raise ValueError(
                f"{_describe(obj)}: the file has no weights for it (nothing at {shown}); it "
                f"expects {len(variables)}: {[v.op.name for v in variables]}."
            )
        raise ValueError(
            f"{_describe(obj)}: {shown} holds {len(keys)} weights {keys}, the layer has "
            f"{len(variables)}: {[v.op.name for v in variables]}."
        )
    pairs = []
    for i, variable in enumerate(variables):
        ds = h5_values.hard_child(store, str(i))
        if ds is None:
            raise ValueError(f"{_describe(obj)}: {shown} has no dataset {str(i)!r} ({keys}).")
        pairs.append(
            (variable, h5_values.checked_array(ds, f"{_describe(obj)}, {shown}/{i}", variable))
        )
    return pairs


def _unknown_layers(root: h5py.Group, paths: list[tuple[str, Layer]]) -> list[str]:
    """Groups with weights under a model's `layers` group that no object of the model reads."""
    known = {path for path, _ in paths}
    unknown = []
    for path, obj in paths:
        if _model_kind(obj) not in ("Functional", "Sequential"):
            continue
        listed = h5_values.find_group(root, f"{path}/layers" if path else "layers")
        for name in sorted(listed.keys()) if listed is not None else []:
            child = f"{path}/layers/{name}" if path else f"layers/{name}"
            group = h5_values.hard_child(listed, name)
            if (
                child not in known
                and isinstance(group, h5py.Group)
                and h5_values.has_datasets(group)
            ):
                unknown.append(f"/{child}")
    return unknown


def read_model_weights(
    model: Layer, group: h5py.Group, skip_mismatch: bool = False, source: str = "the file"
) -> None:
    """Loads the variables of `model` from `group`, in Keras 3's layout (see the module
    docstring). Checks everything first; on any error nothing is changed.

    Args:
      model: a model or layer (one never called, such as a GAN rebuilt from its config, loads
        its parts' weights; an unbuilt part holding none is a mismatch).
      group: the root group of the `.weights.h5` file (or of `model.weights.h5` in a `.keras`).
      skip_mismatch: leave the objects whose weights are missing or differ as they are (and
        ignore layers of the file the model lacks) instead of raising.
      source: how to name the file in errors.

    Raises:
      ValueError: listing every object whose weights are missing or differ in count, shape or
        type, and every layer of the file the model does not have.
    """
    paths = saveable_paths(model)
    pairs: list[tuple[Variable, np.ndarray]] = []
    problems: list[str] = []
    for path, obj in paths:
        try:
            pairs += _read_object(group, path, obj)
        except (ValueError, OSError, KeyError, TypeError) as err:
            problems.append(str(err))
    if not skip_mismatch:
        try:
            problems += [
                f"{name}: the file has weights for this layer; the model has no such layer."
                for name in _unknown_layers(group, paths)
            ]
        except (ValueError, OSError, KeyError) as err:
            problems.append(str(err))
    if problems and not skip_mismatch:
        listed = "\n  ".join(problems)
        raise ValueError(
            f"Cannot load the Keras 3 weights of {source} into {model.name!r}:\n  {listed}"
        )
    if pairs:
        variables, values = zip(*pairs)
        if model.graph is not None:
            runtime.runtime_for(model.graph).write(list(variables), list(values))
        else:  # a model never called: its parts' weights, each in its own graph
            stateless.assign_variables(variables, values)


def _read_values(model: Layer, variables: list[Variable]) -> list[Any]:
    if model.graph is not None:
        return runtime.read_values(model.graph, variables)
    return stateless.variable_values(variables)  # a model never called: each in its own graph


def is_keras3_layout(group: h5py.Group) -> bool:
    """Whether `group` looks like a Keras 3 weights file (a `vars` group or a `layers` group
    holding `vars` groups), as opposed to a Keras 2 or sluice file."""
    if "layer_names" in group.attrs or "layer_names0" in group.attrs:
        return False
    return any(
        isinstance(group.get(name, getlink=True), h5py.HardLink)
        for name in (_VARS, "layers", "_layer_checkpoint_dependencies")
    )


__all__ = [
    "find_group",
    "functional_layers",
    "is_keras3_layout",
    "keras_layers",
    "keras_snake_case",
    "own_variables",
    "read_model_weights",
    "saveable_paths",
    "write_model_weights",
]
