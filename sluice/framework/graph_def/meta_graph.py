"""Meta graphs: a graph_def with what a new process needs to resume (TF1's MetaGraphDef).

    {"format": "sluice.meta_graph", "version": 1,
     "meta_info_def": {"tags": [], "any_info": ..., ...},      (plain JSON, as the caller gave)
     "graph_def": {...},                                       (see graph_def)
     "saver_def": null | {...},                                (the Saver that wrote it)
     "variables": [{"handle": "w", "initializer": "w/Assign", "initial_value": "w/...:0",
                    "snapshot": "w/Read/ReadVariableOp:0", "trainable": true}, ...],
     "collection_def": {"train_op": [{"operation": "train"}], "variables": [{"variable": "w"}],
                        "lr": [{"value": {"f": 0.1}}], "while_context": [{"context": 0}],
                        "savers": [{"ext": {"kind": "saver", "value": {...}}}], ...}}

A collection holds Tensors, Operations, Variables and control-flow contexts by name, numbers,
strings and bools as values, and objects of registered types (`register_collection_type`: a
Saver, registered by `sluice.checkpoints`); a collection holding anything else is left out with a
warning naming it, as TF1 does. Importing rebuilds each Variable once over the imported ops, so
`global_variables()`, `get_global_step()` and a new `Saver()` work in the new graph.
"""

from __future__ import annotations

import json
import warnings
from typing import Any, Callable, NamedTuple

from sluice.framework.graph_def import attr_codec, contexts, importer
from sluice.framework.graph_def.graph_def import GraphDef, graph_def_of
from sluice.framework.graph_def.limits import parse_json
from sluice.framework.ir.graph import Graph, Operation, Tensor, get_default_graph
from sluice.framework.variables import Variable

FORMAT = "sluice.meta_graph"
VERSION = 1
_FIELDS = {
    "format",
    "version",
    "meta_info_def",
    "graph_def",
    "saver_def",
    "variables",
    "collection_def",
}


class _CollectionType(NamedTuple):
    cls: type
    encode: Callable[[Any], Any]
    decode: Callable[[Any, "importer.Imported"], Any]


_COLLECTION_TYPES: dict[str, _CollectionType] = {}


def register_collection_type(
    kind: str, cls: type, encode: Callable[[Any], Any], decode: Callable[[Any, Any], Any]
) -> None:
    """Lets objects of `cls` be kept in a meta graph's collections: `encode(obj)` gives plain
    JSON; `decode(json, imported)` rebuilds it over the imported graph (`imported.tensor(name)`,
    `imported.operation(name)` find what the JSON names)."""
    if kind in _COLLECTION_TYPES:
        raise KeyError(f"A collection type {kind!r} is already registered.")
    _COLLECTION_TYPES[kind] = _CollectionType(cls, encode, decode)


class MetaGraphDef:
    """A serialised meta graph (TF1's MetaGraphDef): `graph_def`, `saver_def`,
    `collection_def`, `meta_info_def`, as JSON data."""

    def __init__(self, data: dict):
        self._data = data

    @property
    def graph_def(self) -> GraphDef:
        return GraphDef(self._data["graph_def"])

    @property
    def saver_def(self) -> dict | None:
        return self._data["saver_def"]

    @property
    def collection_def(self) -> dict:
        return self._data["collection_def"]

    @property
    def meta_info_def(self) -> dict:
        return self._data["meta_info_def"]

    def HasField(self, name: str) -> bool:  # noqa: N802  (TF1's protocol buffer spelling)
        return self._data.get(name) is not None

    def as_dict(self) -> dict:
        return self._data

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self._data, indent=indent, allow_nan=False)

    def SerializeToString(self) -> bytes:  # noqa: N802
        return self.to_json().encode("utf-8")

    @classmethod
    def from_json(cls, text: str | bytes) -> "MetaGraphDef":
        data = parse_json(text, "meta graph")
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"Not a sluice meta graph: the 'format' field is not {FORMAT!r}.")
        return cls(data)

    def __repr__(self) -> str:
        return (
            f"<MetaGraphDef {len(self._data['graph_def']['node'])} nodes, "
            f"collections {sorted(self._data['collection_def'])}>"
        )


def meta_graph_of(
    graph: Graph | None = None,
    meta_info_def: dict | None = None,
    graph_def: GraphDef | None = None,
    saver_def: dict | None = None,
    collection_list: list[str] | None = None,
    clear_devices: bool = False,
) -> MetaGraphDef:
    """The MetaGraphDef of `graph` (default: the default graph).

    Raises:
      UnserializableAttrError (a TypeError): an op attr with no saved form (a py_func's
        function is saved as a token; a Python callable elsewhere is not), naming the op.
    """
    graph = graph or get_default_graph()
    if graph_def is None:
        graph_def = graph_def_of(graph, clear_devices=clear_devices)
    ops = sorted(graph.get_operations(), key=lambda op: op.id)
    context_index = {id(c): i for i, c in enumerate(contexts.collect(ops))}
    variables: dict[str, Variable] = {}
    collection_def = {}
    keys = graph.get_all_collection_keys() if collection_list is None else collection_list
    for key in keys:
        items = graph.get_collection(key)
        encoded = []
        for item in items:
            value = _encode_item(item, context_index, variables)
            if value is None:
                warnings.warn(
                    f"Issue encountered when serializing {key}: a "
                    f"{type(item).__name__} cannot be kept in a meta graph; the "
                    "collection is left out.",
                    stacklevel=3,
                )
                break
            encoded.append(value)
        else:
            collection_def[key] = encoded
    records = [
        {
            "handle": v.op.name,
            "initializer": v.initializer.name,
            "initial_value": v.initial_value.name,
            "snapshot": v.snapshot.name,
            "trainable": v.trainable,
        }
        for v in variables.values()
    ]
    data = {
        "format": FORMAT,
        "version": VERSION,
        "meta_info_def": dict(meta_info_def or {}),
        "graph_def": graph_def.as_dict(),
        "saver_def": saver_def,
        "variables": records,
        "collection_def": collection_def,
    }
    json.dumps(data["meta_info_def"], allow_nan=False)  # a TypeError now, not at write time
    return MetaGraphDef(data)


def _encode_item(item: Any, context_index: dict, variables: dict) -> dict | None:
    if isinstance(item, Variable):
        variables.setdefault(item.op.name, item)
        return {"variable": item.op.name}
    if isinstance(item, Tensor):
        return {"tensor": item.name}
    if isinstance(item, Operation):
        return {"operation": item.name}
    if id(item) in context_index:
        return {"context": context_index[id(item)]}
    if isinstance(item, (bool, int, float, str, bytes)):
        return {"value": attr_codec.encode(item)}
    for kind, entry in _COLLECTION_TYPES.items():
        if isinstance(item, entry.cls):
            return {"ext": {"kind": kind, "value": entry.encode(item)}}
    return None


class MetaGraphError(ValueError):
    """A meta graph that sluice would not have written."""


def import_meta_graph_def(
    meta: MetaGraphDef | dict,
    graph: Graph | None = None,
    import_scope: str | None = None,
    input_map: dict | None = None,
    clear_devices: bool = False,
    check: Callable[[importer.Imported], None] | None = None,
) -> importer.Imported:
    """Builds a meta graph into `graph`: its nodes, Variables and collections.

    Returns the import's record (ops by their names in the file). Collections are extended,
    as TF1 does; names in them get `import_scope`. `check(imported)` runs before the
    collections are extended: when it raises, the graph is left as it was."""
    data = meta.as_dict() if isinstance(meta, MetaGraphDef) else meta
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise MetaGraphError(f"Not a sluice meta graph: the 'format' field is not {FORMAT!r}.")
    if set(data) != _FIELDS or data.get("version") != VERSION:
        raise MetaGraphError(
            f"A version {VERSION} meta graph has the fields {sorted(_FIELDS)}; "
            f"got {sorted(data)} (version {data.get('version')!r})."
        )
    if not isinstance(data["meta_info_def"], dict):
        raise MetaGraphError("meta_info_def must be an object.")
    graph = graph or get_default_graph()
    graph_def = data["graph_def"]
    if clear_devices and isinstance(graph_def, dict) and isinstance(graph_def.get("node"), list):
        graph_def = dict(
            graph_def,
            node=[
                dict(n, device="", colocation=[]) if isinstance(n, dict) else n
                for n in graph_def["node"]
            ],
        )
    with graph.as_default(), graph.name_scope(import_scope or "") as scope:
        imported = importer.build(graph, graph_def, scope if import_scope else "", input_map or {})
    try:
        rebuilt = _rebuild_variables(data["variables"], imported)
        collections = data["collection_def"]
        if not isinstance(collections, dict):
            raise MetaGraphError("collection_def must be an object.")
        decoded = {}
        for key, items in collections.items():
            if not isinstance(items, list):
                raise MetaGraphError(f"Collection {key!r} must be a list.")
            decoded[key] = [_decode_item(item, key, imported, rebuilt) for item in items]
        if check is not None:
            check(imported)
    except BaseException:
        graph.discard_built_ops(imported.ops.values())  # the graph is left as it was
        raise
    for key, values in decoded.items():
        for value in values:
            graph.add_to_collection(key, value)
    return imported


def _rebuild_variables(records: Any, imported: importer.Imported) -> dict[str, Variable]:
    if not isinstance(records, list):
        raise MetaGraphError("variables must be a list.")
    fields = {"handle", "initializer", "initial_value", "snapshot", "trainable"}
    out = {}
    for record in records:
        if (
            not isinstance(record, dict)
            or set(record) != fields
            or not isinstance(record["trainable"], bool)
        ):
            raise MetaGraphError(
                f"A variable record has the fields {sorted(fields)} "
                f"(trainable a bool); got {str(record)[:200]}."
            )
        if record["handle"] in out:
            raise MetaGraphError(f"Variable {record['handle']!r} has two variable records.")
        try:
            handle = imported.operation(record["handle"]).outputs[0]
            out[record["handle"]] = Variable.from_graph_ops(
                handle,
                imported.operation(record["initializer"]),
                imported.tensor(record["initial_value"]),
                imported.tensor(record["snapshot"]),
                record["trainable"],
            )
        except (ValueError, IndexError) as err:
            raise MetaGraphError(f"Variable {record['handle']!r}: {err}") from None
    return out


def _decode_item(item: Any, key: str, imported: importer.Imported, rebuilt: dict) -> Any:
    where = f"Collection {key!r}"
    if not isinstance(item, dict) or len(item) != 1:
        raise MetaGraphError(f"{where}: an item is an object with one key, got {item!r:.100}.")
    ((kind, value),) = item.items()
    try:
        if kind == "variable":
            if value not in rebuilt:
                raise MetaGraphError(f"{where}: variable {value!r} has no variable record.")
            return rebuilt[value]
        if kind == "tensor":
            return imported.tensor(value)
        if kind == "operation":
            return imported.operation(value)
        if kind == "context":
            if type(value) is not int or not 0 <= value < len(imported.contexts):
                raise MetaGraphError(f"{where}: context {value!r} is not listed.")
            return imported.contexts[value]
        if kind == "value":
            decoded = attr_codec.decode(value)
            if not isinstance(decoded, (bool, int, float, str, bytes)):
                raise MetaGraphError(f"{where}: a value item holds {type(decoded).__name__}.")
            return decoded
        if kind == "ext" and isinstance(value, dict) and set(value) == {"kind", "value"}:
            entry = _COLLECTION_TYPES.get(value["kind"]) if isinstance(value["kind"], str) else None
            if entry is None:
                raise MetaGraphError(f"{where}: unknown item kind {value['kind']!r}.")
            return entry.decode(value["value"], imported)
    except MetaGraphError:
        raise
    except (ValueError, KeyError, TypeError) as err:  # a registered type's decoder too
        raise MetaGraphError(f"{where}: {err}") from None
    raise MetaGraphError(f"{where}: unknown item kind {kind!r}.")


__all__ = [
    "MetaGraphDef",
    "MetaGraphError",
    "import_meta_graph_def",
    "meta_graph_of",
    "register_collection_type",
]
