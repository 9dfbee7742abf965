"""Graphs that outlive the script: graph_defs and meta graphs as JSON (TF1's GraphDef and
MetaGraphDef). See `docs/meta_graph_format.md` for the format.

    graph_def = graph.as_graph_def()                  # GraphDef: nodes + control-flow contexts
    sl.import_graph_def(graph_def, input_map, return_elements, name)
    meta = export_meta_graph(graph=g)                 # + collections, variables, saver_def
    import_meta_graph(meta)                           # the collections and Variables rebuilt
"""

from sluice.framework.graph_def.attr_codec import (
    UnserializableAttrError,
    register_attr_type,
)
from sluice.framework.graph_def.graph_def import GraphDef, NodeDef, graph_def_of, node_def_of
from sluice.framework.graph_def.importer import GraphDefError, import_graph_def
from sluice.framework.ir.graph import Graph as _Graph
from sluice.framework.ir.graph import Operation as _Operation

_Graph.register_graph_def_exporter(graph_def_of)
_Operation.register_node_def_builder(node_def_of)

__all__ = [
    "GraphDef",
    "GraphDefError",
    "NodeDef",
    "UnserializableAttrError",
    "graph_def_of",
    "import_graph_def",
    "register_attr_type",
]
