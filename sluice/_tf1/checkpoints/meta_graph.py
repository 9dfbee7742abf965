"""Meta graph files next to checkpoints (TF1's `export_meta_graph` / `import_meta_graph`).

    saver.save(sess, "runs/x/model", global_step=100)    # model-100.h5 and model-100.meta
    # a new process, no model code:
    saver = sl.train.import_meta_graph(sl.train.latest_checkpoint("runs/x") + ".meta")
    saver.restore(sess, sl.train.latest_checkpoint("runs/x"))
    sess.run(sl.get_collection("train_op")[0], {"x:0": batch})

A checkpoint is `<prefix>-<step>.h5` and its meta graph `<prefix>-<step>.meta`, TF1's name. Since
`latest_checkpoint` returns the ".h5" path, `import_meta_graph` reads "<...>.h5.meta" as
"<...>.meta" when only the latter exists, so TF1's idiom works as written. The file is JSON (see
`docs/meta_graph_format.md`), read as untrusted input: its size is checked first and nothing
named in it is opened or evaluated.
"""

from __future__ import annotations

import os
from typing import Any

from sluice._export import export
from sluice._tf1.checkpoints import atomic, checkpoint_names
from sluice._tf1.checkpoints.meta_graph_files import (  # noqa: F401  (re-exported)
    META_SUFFIX,
    export_meta_graph,
    is_sluice_meta_graph,
    meta_graph_path,
    remove_meta_graphs,
    write_meta_graph,
)
from sluice._tf1.checkpoints.saver import Saver
from sluice.framework.graph_def import GraphDef
from sluice.framework.graph_def.limits import read_file
from sluice.framework.graph_def.meta_graph import (
    MetaGraphDef,
    import_meta_graph_def,
    register_collection_type,
)
from sluice.framework.ir import graph as graph_lib
from sluice.framework.variables import global_variables


def read_meta_graph(path: str) -> MetaGraphDef:
    """The MetaGraphDef in the file at `path` ("<...>.h5.meta" read as "<...>.meta")."""
    path = os.fspath(path)
    if not os.path.exists(path) and path.endswith(".h5." + META_SUFFIX):
        tf1_name = path[: -len(".h5." + META_SUFFIX)] + "." + META_SUFFIX
        if os.path.exists(tf1_name):
            path = tf1_name
    if not os.path.exists(path):
        raise OSError(f"File {path} does not exist.")
    directory, name = os.path.split(os.path.abspath(path))
    problem = checkpoint_names.outside_problem(directory, name)
    if problem is not None:  # a run directory from elsewhere must not read this machine's files
        raise ValueError(f"The meta graph {path!r} {problem}; sluice writes a regular file.")
    data = read_file(path, "meta graph")
    meta = MetaGraphDef(data)
    if not isinstance(data, dict) or data.get("format") != "sluice.meta_graph":
        raise ValueError(
            f"{path} is not a sluice meta graph (its 'format' field is not 'sluice.meta_graph')."
        )
    return meta


@export("train.import_meta_graph")
def import_meta_graph(
    meta_graph_or_file: Any,
    clear_devices: bool = False,
    import_scope: str | None = None,
    input_map: dict | None = None,
    **kwargs: Any,
) -> Saver | None:
    """Builds a saved meta graph into the default graph and returns its Saver (TF1 semantics).

    The ops, control-flow contexts, Variables and collections come back, so
    `sl.get_collection("train_op")`, `global_variables()`, `get_global_step()` work as in the
    script that saved it.

    Args:
      meta_graph_or_file: a MetaGraphDef or the path of a ".meta" file.
      clear_devices: drop the ops' requested devices.
      import_scope: a name scope for the imported names.
      input_map: {tensor name in the meta graph: Tensor} to use in their place.

    Returns:
      A Saver over the imported save and restore ops if the meta graph has a saver_def; else a
      new `Saver()` of the imported variables if there are any (as TF1); else None.

    Raises:
      OSError: no such file.
      ValueError: a malformed file (the message names the node, context or collection).
    """
    del kwargs
    meta = (
        meta_graph_or_file
        if isinstance(meta_graph_or_file, MetaGraphDef)
        else read_meta_graph(meta_graph_or_file)
    )
    graph = graph_lib.get_default_graph()
    saver_def = meta.saver_def
    savers = []

    def build_saver(imported: Any) -> None:  # a bad saver_def leaves the graph as it was
        if saver_def is not None:
            savers.append(
                Saver.from_saver_def(
                    saver_def, imported.operation, imported.tensor, add_to_collection=False
                )
            )

    imported = import_meta_graph_def(
        meta, graph, import_scope, input_map, clear_devices, check=build_saver
    )
    if savers:
        saver = savers[0]
        for kept in graph.get_collection(graph_lib.GraphKeys.SAVERS):
            if isinstance(kept, Saver) and kept._save_op is saver._save_op:
                return kept  # the file's "savers" collection had it: one Saver, listed once
        graph.add_to_collection(graph_lib.GraphKeys.SAVERS, saver)
        return saver
    scope = imported.prefix
    if [v for v in global_variables() if v.op.name.startswith(scope)]:
        return Saver()
    return None


def _encode_saver(saver: Saver) -> dict:
    return saver.saver_def


def _decode_saver(saver_def: Any, imported: Any) -> Saver:
    return Saver.from_saver_def(
        saver_def, imported.operation, imported.tensor, add_to_collection=False
    )


register_collection_type("saver", Saver, _encode_saver, _decode_saver)


@export("train.write_graph")
def write_graph(graph_or_graph_def: Any, logdir: str, name: str, as_text: bool = True) -> str:
    """Writes a graph's GraphDef to `logdir/name` (atomically); returns the path (TF1).

    `as_text` writes indented JSON, otherwise compact JSON: the same data, never a pickle.
    The directory is created if missing."""
    graph_def = (
        graph_or_graph_def
        if isinstance(graph_or_graph_def, GraphDef)
        else graph_or_graph_def.as_graph_def()
    )
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(os.fspath(logdir), name)
    atomic.write_bytes_atomically(path, graph_def.to_json(indent=1 if as_text else None).encode())
    return path
