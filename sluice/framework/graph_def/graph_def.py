"""`GraphDef`: a graph as JSON data (TF1's GraphDef protocol buffer, in sluice's own format).

    {"format": "sluice.graph_def", "version": 1,
     "node": [{"name": "dense/MatMul", "op": "MatMul",
               "input": ["x:0", "dense/kernel/Read/ReadVariableOp:0", "^init"],
               "device": "", "colocation": [], "gradient_op_type": null,
               "attr": {"transpose_a": {"b": false}, ...},       (typed: see attr_codec)
               "output": [{"dtype": "float32", "shape": [null, 4]}],
               "context": null | index into "contexts"}, ...],
     "contexts": [...]}                                           (see contexts)

Nodes are listed in the order they were built; an input names an earlier node, except a loop's
back edge (a Merge's input from its NextIteration). `Graph.as_graph_def()` returns one;
`sl.import_graph_def` builds one into a graph; `docs/meta_graph_format.md` gives the whole
schema. The format is JSON only: saving never pickles and loading never evaluates anything.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from sluice._export import export
from sluice.framework.graph_def import attr_codec, contexts
from sluice.framework.graph_def.limits import parse_json
from sluice.framework.ir.graph import Graph, Operation


class GraphDefError(ValueError):
    """A graph_def that sluice would not have written, or that does not fit the graph."""


FORMAT = "sluice.graph_def"
VERSION = 1


@export("NodeDef")
class NodeDef:
    """A view of one node of a GraphDef (TF1's NodeDef): `name`, `op`, `input`, `device` and
    `attr` (decoded values). `Operation.node_def` gives one for an op of a graph, as TF1's
    device functions read it:

    >>> with sl.Graph().as_default(), sl.device(lambda op: "/cpu:0"):
    ...     v = sl.Variable(1.0, name="v")
    >>> isinstance(v.op.node_def, sl.NodeDef), v.op.node_def.op, v.op.node_def.name
    (True, 'VariableV2', 'v')
    """

    def __init__(self, data: dict):
        self._data = data

    name = property(lambda self: self._data["name"])
    op = property(lambda self: self._data["op"])
    input = property(lambda self: list(self._data["input"]))
    device = property(lambda self: self._data["device"])

    @property
    def attr(self) -> dict[str, Any]:
        if "decoded_attr" in self._data:  # a view of an op in a graph (`node_def_of`)
            return dict(self._data["decoded_attr"])
        return {k: attr_codec.decode(v) for k, v in self._data["attr"].items()}

    def __repr__(self) -> str:
        return f"<NodeDef {self.name!r} op={self.op}>"


class GraphDef:
    """A serialised graph: its nodes in build order and its control-flow contexts.

    >>> with sl.Graph().as_default() as g:
    ...     y = sl.add(sl.constant(1.0, name="a"), 2.0, name="y")
    >>> [n.name for n in g.as_graph_def().node]
    ['a', 'Const', 'y']
    """

    def __init__(self, data: dict | None = None):
        self._data = (
            data
            if data is not None
            else {"format": FORMAT, "version": VERSION, "node": [], "contexts": []}
        )

    @property
    def node(self) -> list[NodeDef]:
        return [NodeDef(n) for n in self._data["node"]]

    @property
    def versions(self) -> dict:
        return {"producer": self._data["version"]}

    def as_dict(self) -> dict:
        """The JSON data (shared, not copied)."""
        return self._data

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self._data, indent=indent, sort_keys=indent is not None, allow_nan=False)

    def SerializeToString(self) -> bytes:  # noqa: N802  (TF1's protocol buffer spelling)
        return self.to_json().encode("utf-8")

    @classmethod
    def from_json(cls, text: str | bytes) -> "GraphDef":
        """Parses JSON text; the structure is checked when the graph_def is imported."""
        data = parse_json(text, "graph_def")
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"Not a sluice graph_def: the 'format' field is not {FORMAT!r}.")
        return cls(data)

    FromString = from_json

    def ParseFromString(self, text: str | bytes) -> None:  # noqa: N802
        self._data = GraphDef.from_json(text)._data

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, GraphDef) and self._data == other._data

    def __repr__(self) -> str:
        return f"<GraphDef {len(self._data['node'])} nodes>"


def graph_def_of(
    graph: Graph, ops: Iterable[Operation] | None = None, clear_devices: bool = False
) -> GraphDef:
    """The GraphDef of `graph` (of `ops`, in build order, when given).

    Raises:
      UnserializableAttrError (a TypeError): an attr with no saved form, such as a Python
        function, naming the op and the attr.
    """
    ops = sorted(graph.get_operations() if ops is None else ops, key=lambda op: op.id)
    ctxs = contexts.collect(ops)
    index = {id(c): i for i, c in enumerate(ctxs)}
    nodes = []
    for op in ops:
        attrs = {}
        for key, value in op.attrs.items():
            try:
                attrs[key] = attr_codec.encode(value)
            except attr_codec.UnserializableAttrError as err:
                raise attr_codec.UnserializableAttrError(
                    f"Cannot save op {op.name!r} ({op.type}) in a graph_def: its attr {key!r} "
                    f"is {err}."
                ) from None
        ctx = op.control_flow_context
        nodes.append(
            {
                "name": op.name,
                "op": op.type,
                "input": [t.name for t in op.inputs] + [f"^{c.name}" for c in op.control_inputs],
                "device": "" if clear_devices else op.device,
                "colocation": []
                if clear_devices
                else [g for g in op.colocation_groups() if g != f"loc:@{op.name}"],
                "gradient_op_type": _gradient_op_type(op),
                "attr": attrs,
                "output": [
                    {
                        "dtype": attr_codec.encode_dtype(t.dtype),
                        "shape": attr_codec.encode_shape(t.shape),
                    }
                    for t in op.outputs
                ],
                "context": None if ctx is None else index[id(ctx)],
            }
        )
    return GraphDef(
        {
            "format": FORMAT,
            "version": VERSION,
            "node": nodes,
            "contexts": contexts.encode(ctxs, lambda t: t.name),
        }
    )


def tf1_op_type(op: Operation) -> str:
    """The op type TF1 gives the node: a variable built without `use_resource` is TF1's
    reference variable, `VariableV2` (sluice runs every variable as a resource, `VarHandleOp`)."""
    if op.type == "VarHandleOp" and not op.attrs.get("use_resource", False):
        return "VariableV2"
    return op.type


def node_def_of(op: Operation) -> NodeDef:
    """`op.node_def`: a NodeDef view of one op of a graph, its attrs as they are (not encoded:
    a device function may read a node whose attrs have no saved form)."""
    return NodeDef(
        {
            "name": op.name,
            "op": tf1_op_type(op),
            "input": [t.name for t in op.inputs] + [f"^{c.name}" for c in op.control_inputs],
            "device": op.device,
            "decoded_attr": op.attrs,
        }
    )


def _gradient_op_type(op: Operation) -> str | None:
    """The gradient `gradient_override_map` gave the op, if any."""
    try:
        return op.get_attr("_gradient_op_type")
    except ValueError:
        return None
