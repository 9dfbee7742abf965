"""`plot_model` and `model_to_dot`: a model's layers and their connections as a Graphviz graph.

The model is read through what every sluice model and layer has (`layers`, `inputs`, `outputs`,
each layer's calls with their input and output tensors), so that utils needs no import of the
model classes above it. DOT text needs nothing installed; PNG/SVG/PDF need pydot and Graphviz.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from sluice._export import export

_RASTER_HELP = (
    "pip install pydot, and install Graphviz's `dot` program (the system package 'graphviz': "
    "apt-get install graphviz, brew install graphviz, conda install graphviz)"
)


def _flatten(structure: Any) -> list:
    if isinstance(structure, dict):
        return [x for key in sorted(structure) for x in _flatten(structure[key])]
    if isinstance(structure, (list, tuple)):
        return [x for item in structure for x in _flatten(item)]
    return [structure]


def _tensors(structure: Any) -> list:
    return [t for t in _flatten(structure) if hasattr(t, "shape") and hasattr(t, "op")]


def _calls(layer: Any) -> list:
    """The recorded calls of a layer: objects with `args`, `kwargs` and `outputs`."""
    return list(getattr(layer, "_nodes", []))


def _shape_text(tensors: list) -> str:
    shapes = [
        str(tuple(t.shape.as_list())).replace(",)", ")") if t.shape.rank is not None else "?"
        for t in tensors
    ]
    return "?" if not shapes else shapes[0] if len(shapes) == 1 else "[" + ", ".join(shapes) + "]"


def _is_model(layer: Any) -> bool:
    return hasattr(layer, "layers") and hasattr(layer, "inputs") and hasattr(layer, "outputs")


def _is_sequential(model: Any) -> bool:
    return any(cls.__name__ == "Sequential" for cls in type(model).__mro__)


def _edges(model: Any) -> list[tuple[Any, Any]]:
    """(from layer, to layer) for every tensor one layer passes another inside `model`."""
    layers = model.layers
    if _is_sequential(model):
        return list(zip(layers, layers[1:]))
    producer: dict[int, Any] = {}
    for t in _tensors(model.inputs):
        for layer in layers:
            if any(t is o for c in _calls(layer) for o in _tensors(c.outputs)):
                producer[id(t)] = layer
    edges, seen_calls, grew = [], set(), True
    while grew:  # a shared layer's later call may follow layers listed after it
        grew = False
        for layer in layers:
            for call in _calls(layer):
                inputs = _tensors((call.args, call.kwargs))
                if id(call) in seen_calls or not all(id(t) in producer for t in inputs):
                    continue
                if not inputs and not any(
                    t is o for t in _tensors(model.inputs) for o in _tensors(call.outputs)
                ):
                    continue
                seen_calls.add(id(call))
                grew = True
                for t in inputs:
                    if producer[id(t)] is not layer and (producer[id(t)], layer) not in edges:
                        edges.append((producer[id(t)], layer))
                for t in _tensors(call.outputs):
                    producer.setdefault(id(t), layer)
    return edges


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _label(
    layer: Any,
    show_shapes: bool,
    show_dtype: bool,
    show_layer_names: bool,
    show_layer_activations: bool,
    show_trainable: bool,
) -> str:
    kind = type(layer).__name__
    lines = [f"{layer.name} ({kind})" if show_layer_names else kind]
    if show_layer_activations:
        config = layer.get_config() if hasattr(layer, "get_config") else {}
        activation = config.get("activation") if isinstance(config, dict) else None
        if isinstance(activation, str):
            lines.append(f"Activation: {activation}")
    if show_dtype:
        calls = _calls(layer)
        outputs = _tensors(calls[0].outputs) if calls else []
        lines.append(f"dtype: {outputs[0].dtype.name if outputs else layer.dtype}")
    if show_shapes:
        calls = _calls(layer)
        if calls:
            inputs = _tensors((calls[0].args, calls[0].kwargs)) or _tensors(calls[0].outputs)
            lines.append(f"Input shape: {_shape_text(inputs)}")
            lines.append(f"Output shape: {_shape_text(_tensors(calls[0].outputs))}")
    if show_trainable:
        lines.append(f"Trainable: {'Y' if getattr(layer, 'trainable', True) else 'N'}")
    return "\n".join(lines)


@export("utils.model_to_dot_source")
def model_to_dot_source(
    model: Any,
    show_shapes: bool = False,
    show_dtype: bool = False,
    show_layer_names: bool = True,
    rankdir: str = "TB",
    expand_nested: bool = False,
    dpi: int = 200,
    show_layer_activations: bool = False,
    show_trainable: bool = False,
) -> str:
    """The model's layers and their connections as Graphviz DOT text (see `plot_model`).

    >>> model = sl.Sequential([sl.Input((3,)), sl.layers.Dense(2, name="out")])
    >>> print(model_to_dot_source(model, show_shapes=True))  # doctest: +NORMALIZE_WHITESPACE
    digraph model {
      graph [rankdir="TB", dpi=200, concentrate=true];
      node [shape=box, fontname="Helvetica"];
      "out" [label="out (Dense)\\nInput shape: (None, 3)\\nOutput shape: (None, 2)"];
    }
    """
    if rankdir not in ("TB", "LR", "BT", "RL"):
        raise ValueError(f"plot_model: rankdir must be 'TB', 'LR', 'BT' or 'RL', got {rankdir!r}.")
    if not getattr(model, "built", False) or not model.layers:
        raise ValueError(
            f"plot_model: model {getattr(model, 'name', model)!r} has not been "
            "built (no layers called on inputs yet); build or call it first."
        )
    options = (show_shapes, show_dtype, show_layer_names, show_layer_activations, show_trainable)
    lines = [
        "digraph model {",
        f'  graph [rankdir="{rankdir}", dpi={int(dpi)}, concentrate=true];',
        '  node [shape=box, fontname="Helvetica"];',
    ]

    def entry_and_exit(layer: Any, prefix: str) -> tuple[list[str], list[str]]:
        """The node ids an edge into / out of `layer` attaches to."""
        node_id = prefix + layer.name
        if not (expand_nested and _is_model(layer)):
            return [node_id], [node_id]
        inner = layer.layers
        if _is_sequential(layer):
            first, last = [inner[0]], [inner[-1]]
        else:
            first = [x for x in inner if type(x).__name__ == "InputLayer"] or inner[:1]
            outputs = _tensors(layer.outputs)
            last = [
                x
                for x in inner
                if any(t is o for c in _calls(x) for t in _tensors(c.outputs) for o in outputs)
            ]
        inner_prefix = f"{node_id}/"
        return (
            [i for x in first for i in entry_and_exit(x, inner_prefix)[0]],
            [i for x in last or inner[-1:] for i in entry_and_exit(x, inner_prefix)[1]],
        )

    def draw(graph: Any, prefix: str, indent: str) -> None:
        for layer in graph.layers:
            if expand_nested and _is_model(layer):
                lines.append(f"{indent}subgraph {_quote('cluster_' + prefix + layer.name)} {{")
                lines.append(f"{indent}  label={_quote(layer.name)};")
                draw(layer, f"{prefix}{layer.name}/", indent + "  ")
                lines.append(f"{indent}}}")
            else:
                label = _label(layer, *options)
                lines.append(f"{indent}{_quote(prefix + layer.name)} [label={_quote(label)}];")
        for source, target in _edges(graph):
            for a in entry_and_exit(source, prefix)[1]:
                for b in entry_and_exit(target, prefix)[0]:
                    lines.append(f"{indent}{_quote(a)} -> {_quote(b)};")

    draw(model, "", "  ")
    lines.append("}")
    return "\n".join(lines) + "\n"


@export("utils.model_to_dot")
def model_to_dot(
    model: Any,
    show_shapes: bool = False,
    show_dtype: bool = False,
    show_layer_names: bool = True,
    rankdir: str = "TB",
    expand_nested: bool = False,
    dpi: int = 200,
    show_layer_activations: bool = False,
    show_trainable: bool = False,
) -> Any:
    """Keras's `model_to_dot`: the graph of `plot_model` as a `pydot.Dot`.

    Raises:
      ImportError: pydot is not installed (`model_to_dot_source` gives the DOT text without it).
    """
    try:
        import pydot
    except ImportError as e:
        raise ImportError(
            f"model_to_dot needs pydot: {_RASTER_HELP}. Without it, "
            "sl.utils.model_to_dot_source gives the DOT text."
        ) from e
    source = model_to_dot_source(
        model,
        show_shapes,
        show_dtype,
        show_layer_names,
        rankdir,
        expand_nested,
        dpi,
        show_layer_activations,
        show_trainable,
    )
    return pydot.graph_from_dot_data(source)[0]


@export("utils.plot_model")
def plot_model(
    model: Any,
    to_file: str = "model.png",
    show_shapes: bool = False,
    show_dtype: bool = False,
    show_layer_names: bool = True,
    rankdir: str = "TB",
    expand_nested: bool = False,
    dpi: int = 200,
    show_layer_activations: bool = False,
    show_trainable: bool = False,
) -> None:
    """Draws the model's layers and their connections (Keras's `plot_model`).

    A `.dot` or `.gv` file gets the DOT text and needs nothing else installed; other formats
    (png, svg, pdf, jpg, ... by the file's extension) are rendered by Graphviz through pydot.

    Args:
      model: a built Sequential or functional model (nested models are boxes, or clusters of
        their layers with `expand_nested`).
      to_file: where to write; the extension chooses the format.
      show_shapes, show_dtype, show_layer_names, show_layer_activations, show_trainable: what
        each box shows besides the layer class.
      rankdir: "TB" (top to bottom), "LR", "BT" or "RL".
      dpi: the resolution of raster formats.

    Raises:
      ImportError: a format other than DOT while pydot or Graphviz's `dot` is missing (names
        both installs).
      ValueError: an unbuilt model or a bad `rankdir`.
    """
    source = model_to_dot_source(
        model,
        show_shapes,
        show_dtype,
        show_layer_names,
        rankdir,
        expand_nested,
        dpi,
        show_layer_activations,
        show_trainable,
    )
    extension = os.path.splitext(os.fspath(to_file))[1].lower().lstrip(".") or "png"
    if extension in ("dot", "gv"):
        with open(to_file, "w", encoding="utf-8") as f:
            f.write(source)
        return
    try:
        import pydot
    except ImportError as e:
        raise ImportError(
            f"plot_model: writing {to_file} needs pydot and Graphviz: "
            f"{_RASTER_HELP}. A .dot file needs neither."
        ) from e
    if shutil.which("dot") is None:
        raise ImportError(
            f"plot_model: writing {to_file} needs Graphviz's `dot` program, which "
            f"is not on PATH: {_RASTER_HELP}. A .dot file needs neither."
        )
    pydot.graph_from_dot_data(source)[0].write(os.fspath(to_file), prog="dot", format=extension)
