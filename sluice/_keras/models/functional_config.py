"""A functional model's config in Keras 3's format, and the model rebuilt from it.

    {"name": "functional", "trainable": True,
     "layers": [{...serialize(layer)..., "name": "dense",
                 "inbound_nodes": [{"args": [<tensor>], "kwargs": {}}, ...]}, ...],
     "input_layers": [["input_layer", 0, 0]], "output_layers": [["dense", 0, 0]]}

Every call of a layer inside the model is a node: its arguments are kept as given, with each
tensor written as {"class_name": "__keras_tensor__", "config": {"shape", "dtype",
"keras_history": [layer name, node index, tensor index]}}: which call of which layer made it.
A layer's node index counts only its calls inside this model, from 0. Keras 3.6 adds one in
`input_layers`/`output_layers` (not in the nodes' arguments) when the layer is a functional
model, a relic of Keras 2 where node 0 was the model's own construction: an output made by the
first call of a nested functional model is ["inner", 1, 0], its use as an argument
["inner", 0, 0]. `from_config` creates the layers, then replays the nodes in an order where
every argument already exists.

The rebuilt model lives in the default graph, like any model built on `sl.Input`s, so that its
tensors and layers can be used with new Inputs (a seq2seq decoder split off a loaded model).
Layer names are unique within a graph: a layer (or the model) whose name is taken there gets
a new one, as when a model is built twice in one graph.
"""

from __future__ import annotations

from typing import Any

from sluice._keras.layers import keras_operations, tracking
from sluice._keras.layers.core.input_layer import InputLayer
from sluice._keras.saving import serialization
from sluice._tf1.cells import nest
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor


def _endpoint_offset(layer: Any) -> int:
    """What Keras adds to the node index of an input or output of the model made by `layer`:
    1 for a functional model (not a Sequential), else 0."""
    return 1 if getattr(layer, "_public_path", None) else 0


def _is_leaf(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 3 and isinstance(value[0], str)


def get_config(model: Any) -> dict:
    """The Keras 3 config of the functional `model` (see the module docstring).

    Raises:
      ValueError: a layer's argument is a tensor that no layer of the model made.
    """
    input_layers = [layer for layer in model._layers if isinstance(layer, InputLayer)]
    own_nodes = [layer.call_nodes[0] for layer in input_layers] + list(model._graph_nodes)
    own = {id(node) for node in own_nodes}
    history: dict[int, list] = {}  # id(tensor) -> [layer name, node index, tensor index]
    index_of: dict[int, int] = {}
    for layer in model._layers:
        kept = [node for node in layer.call_nodes if id(node) in own]
        for i, node in enumerate(kept):
            index_of[id(node)] = i
            for j, t in enumerate(nest.flatten(node.outputs)):
                if isinstance(t, Tensor):
                    history.setdefault(id(t), [layer.name, index_of[id(node)], j])

    def tensor_config(t: Tensor) -> dict:
        if id(t) not in history:
            raise ValueError(
                f"Model {model.name!r} cannot be saved: tensor {t.name} is an argument of a layer "
                "call but no layer of the model made it. Compute it with a layer (e.g. "
                "sl.layers.Lambda) from the model's inputs."
            )
        shape = tracking.shape_tuple(t)
        return {"class_name": "__keras_tensor__", "config": {
            "shape": None if shape is None else list(shape), "dtype": t.dtype.name,
            "keras_history": history[id(t)]}}  # fmt: skip

    def arguments(value: Any) -> Any:
        tensors = nest.map_structure(
            lambda v: tensor_config(v) if isinstance(v, Tensor) else v, value
        )
        return serialization.serialize_keras_object(tensors)

    layer_configs = []
    for layer in model._layers:
        config = serialization.serialize(layer)
        config["name"] = layer.name
        config["inbound_nodes"] = [
            {"args": arguments(list(node.args)), "kwargs": arguments(dict(node.kwargs))}
            for node in layer.call_nodes
            if id(node) in own and not isinstance(layer, InputLayer)
        ]
        operator = keras_operations.keras_node_form(layer)
        if operator is not None:  # `x + y`, `x * 2.0`: saved as Keras saves them, so it reads them
            config = _operation_config(
                layer, operator, [n for n in layer.call_nodes if id(n) in own]
            )
            for node in config["inbound_nodes"]:
                node["args"] = arguments(node["args"])
        layer_configs.append(config)

    def endpoint(t: Tensor) -> list:
        layer_name, node_index, tensor_index = history[id(t)]
        offset = _endpoint_offset(next(x for x in model._layers if x.name == layer_name))
        return [layer_name, node_index + offset, tensor_index]

    def endpoints(struct: Any) -> Any:
        if isinstance(struct, Tensor):
            return [endpoint(struct)]
        return nest.map_structure(endpoint, struct)

    return {
        "name": model.name,
        "trainable": model.trainable,
        "layers": layer_configs,
        "input_layers": endpoints(model._input_struct),
        "output_layers": endpoints(model._output_struct),
    }


def from_config(cls: type, config: dict, custom_objects: dict | None = None) -> Any:
    """The functional model `config` describes (built in the default graph).

    Raises:
      ValueError: the config is malformed, names a layer that is not in it, or has nodes that
        can never be replayed (an argument no node makes).
    """
    layer_configs = config.get("layers")
    if not isinstance(layer_configs, list):
        raise ValueError(
            f"A functional config needs a list of 'layers', got {type(layer_configs).__name__}."
        )
    graph = graph_lib.get_default_graph()
    created: dict[str, Any] = {}
    outputs: dict[str, list[list]] = {}  # layer name -> flat outputs of each replayed node
    pending: list[tuple[str, list]] = []
    for layer_config in layer_configs:
        if not isinstance(layer_config, dict) or not isinstance(layer_config.get("name"), str):
            raise ValueError(f"Each layer config needs a 'name': {_short(layer_config)}.")
        name = layer_config["name"]
        if name in created:
            raise ValueError(f"The layer name {name!r} appears twice in the model config.")
        if name in tracking.layer_names(graph):  # sluice's names are unique per graph
            inner = layer_config.get("config")
            if isinstance(inner, dict):
                inner = {k: v for k, v in inner.items() if k != "name"}
            layer_config = {**layer_config, "config": inner}
        with serialization.rebuilding_model_parts():
            layer = serialization.deserialize(layer_config, custom_objects)
        created[name] = layer
        if isinstance(layer, InputLayer):
            outputs[name] = [[layer.output]]
        else:
            nodes = layer_config.get("inbound_nodes", [])
            if not isinstance(nodes, list):
                raise ValueError(f"Layer {name!r}: 'inbound_nodes' must be a list.")
            outputs[name] = []
            pending.append((name, list(nodes)))

    def tensor(history: Any, endpoint: bool = False) -> Tensor:
        if not _is_leaf(history) or history[0] not in created:
            raise ValueError(f"A tensor in the config refers to an unknown layer: {history!r}.")
        layer_name, node_index, tensor_index = history
        if type(node_index) is not int or type(tensor_index) is not int:
            raise ValueError(f"A tensor's node and tensor indices must be ints: {history!r}.")
        if endpoint:  # see the module docstring
            node_index -= _endpoint_offset(created[layer_name])
        made = outputs[layer_name]
        if not 0 <= node_index:
            raise ValueError(f"Bad node index in {history!r}.")
        if node_index >= len(made):
            raise _NotYet()
        if not 0 <= tensor_index < len(made[node_index]):
            raise ValueError(f"Layer {layer_name!r} has no output {tensor_index} ({history!r}).")
        return made[node_index][tensor_index]

    def resolve(value: Any) -> Any:
        if isinstance(value, dict) and value.get("class_name") == "__keras_tensor__":
            inner = value.get("config")
            return tensor(inner.get("keras_history") if isinstance(inner, dict) else None)
        if isinstance(value, list):
            return [resolve(v) for v in value]
        if isinstance(value, dict) and not ("class_name" in value and "config" in value):
            return {k: resolve(v) for k, v in value.items()}
        return serialization.deserialize_keras_object(value, custom_objects)

    while pending:
        progress, still = False, []
        for name, nodes in pending:
            layer = created[name]
            while nodes:
                node = nodes[0]
                if not isinstance(node, dict):
                    raise ValueError(f"Layer {name!r}: a node must be a dict, got {_short(node)}.")
                try:
                    args = resolve(node.get("args", []))
                    kwargs = resolve(node.get("kwargs", {}))
                except _NotYet:
                    break
                if not isinstance(args, list) or not args or not isinstance(kwargs, dict):
                    raise ValueError(f"Layer {name!r}: a node needs args (a list) and kwargs.")
                result = layer(*args, **kwargs)
                outputs[name].append([t for t in nest.flatten(result)])
                nodes.pop(0)
                progress = True
            if nodes:
                still.append((name, nodes))
        if not progress:
            raise ValueError(
                "The model config cannot be rebuilt: the calls of "
                f"{sorted(n for n, _ in still)} need tensors that no call makes."
            )
        pending = still

    def endpoints(value: Any) -> Any:
        if _is_leaf(value):
            try:
                return tensor(value, endpoint=True)
            except _NotYet:
                raise ValueError(f"The model's input or output {value!r} is never made.") from None
        if isinstance(value, dict):
            return {k: endpoints(v) for k, v in value.items()}
        if isinstance(value, list):
            return [endpoints(v) for v in value]
        raise ValueError(f"Bad input_layers/output_layers entry: {value!r}.")

    inputs = endpoints(config.get("input_layers"))
    outputs_ = endpoints(config.get("output_layers"))
    if isinstance(inputs, list) and len(inputs) == 1:
        inputs = inputs[0]
    if isinstance(outputs_, list) and len(outputs_) == 1:
        outputs_ = outputs_[0]
    name = config.get("name")
    name = None if name in tracking.layer_names(graph) else name
    return cls(inputs=inputs, outputs=outputs_, name=name, trainable=config.get("trainable", True))


def _operation_config(layer: Any, operator: tuple[str, dict, list], nodes: list) -> dict:
    """The config Keras 3 writes for a `keras.ops` node (a GraphOpLayer that is one operator,
    see `keras_operations.keras_node_form`): the operation's class and config, and each call's
    arguments as the operation takes them."""
    class_name, config, template = operator

    def call_args(node: Any) -> list:
        given = nest.flatten(node.args)

        def fill(a: Any) -> Any:
            if isinstance(a, tuple):  # ("input", i)
                return given[a[1]]
            return [fill(b) for b in a] if isinstance(a, list) else a

        return fill(template)

    return {
        "module": keras_operations.MODULE,
        "class_name": class_name,
        "config": config,
        "registered_name": class_name,
        "name": layer.name,
        "inbound_nodes": [{"args": call_args(node), "kwargs": {}} for node in nodes],
    }


class _NotYet(Exception):
    """A node's argument comes from a call not replayed yet."""


def _short(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
