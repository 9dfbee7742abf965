"""Meta graph files written next to checkpoints: their names, writing and removal.

`Saver.save` writes `<prefix>-<step>.meta` beside `<prefix>-<step>.h5` and removes it with the
checkpoint; `meta_graph` reads and imports them (and needs `Saver` to rebuild one). This module
holds what the Saver needs, so that `saver` imports it and `meta_graph` imports `saver`, one way.
"""

from __future__ import annotations

import os
import re
import warnings
from typing import Any

from sluice._export import export
from sluice._tf1.checkpoints import atomic, checkpoint_names, regular_file
from sluice.framework.graph_def.meta_graph import MetaGraphDef, meta_graph_of
from sluice.framework.ir import graph as graph_lib

META_SUFFIX = "meta"


def meta_graph_path(checkpoint_path: str, suffix: str = META_SUFFIX) -> str:
    """ "dir/model-100.h5" -> "dir/model-100.meta" (TF1's name for it)."""
    if (
        not isinstance(suffix, str)
        or not suffix
        or "/" in suffix
        or os.sep in suffix
        or "\0" in suffix
    ):
        raise ValueError(
            f"meta_graph_suffix {suffix!r} must be a file name extension such as "
            "'meta', without a path separator."
        )
    return f"{os.fspath(checkpoint_path).removesuffix('.h5')}.{suffix}"


@export("train.export_meta_graph")
def export_meta_graph(
    filename: str | None = None,
    meta_info_def: dict | None = None,
    graph_def: Any = None,
    saver_def: dict | None = None,
    collection_list: list[str] | None = None,
    as_text: bool = False,
    graph: graph_lib.Graph | None = None,
    export_scope: str | None = None,
    clear_devices: bool = False,
    clear_extraneous_savers: bool = False,
    strip_default_attrs: bool = False,
    save_debug_info: bool = False,
    **kwargs: Any,
) -> MetaGraphDef:
    """The graph's MetaGraphDef, written to `filename` (atomically) when given (TF1 semantics).

    Args:
      filename: where to write it; None: only return it.
      meta_info_def: plain JSON data kept as the meta graph's meta_info_def.
      graph_def: a GraphDef to use instead of the graph's own.
      saver_def: the `saver_def` of the Saver that `import_meta_graph` should rebuild.
      collection_list: the collections to keep (default: all).
      as_text: indented JSON; otherwise compact JSON (the same data; never a pickle).
      graph: the graph (default: the default graph).
      clear_devices: leave out the ops' requested devices.
      export_scope, clear_extraneous_savers, strip_default_attrs, save_debug_info: accepted
        for TF1 code; every op is exported and attrs have no defaults to strip.

    Raises:
      TypeError: an op attr with no saved form (a Python function, an optax schedule as a
        learning rate), naming the op; or meta_info_def that is not JSON data.
      NotImplementedError: export_scope (exporting part of a graph) is not supported.
    """
    del clear_extraneous_savers, strip_default_attrs, save_debug_info, kwargs
    if export_scope:
        raise NotImplementedError(
            "export_meta_graph(export_scope=...) is not supported: the whole graph is exported."
        )
    meta = meta_graph_of(graph, meta_info_def, graph_def, saver_def, collection_list, clear_devices)
    if filename is not None:
        write_meta_graph(meta, os.fspath(filename), as_text)
    return meta


def write_meta_graph(meta: MetaGraphDef, path: str, as_text: bool = False) -> str:
    atomic.write_bytes_atomically(path, meta.to_json(indent=1 if as_text else None).encode())
    return path


# How every meta graph sluice writes begins (compact or indented JSON).
_META_HEADER = re.compile(rb'^\{\s*"format":\s*"sluice\.meta_graph"')


def is_sluice_meta_graph(path: str) -> bool:
    """Whether `path` is a regular file (not a symlink) that begins like a meta graph sluice
    wrote: only those are deleted with their checkpoints."""
    try:
        start = regular_file.read_regular(path, 64, follow_symlinks=False)
    except OSError:
        return False
    return bool(_META_HEADER.match(start))


def remove_meta_graphs(
    checkpoint_paths: list[str], suffix: str = META_SUFFIX, kept: list[str] = ()
) -> None:
    """Removes the meta graphs of deleted checkpoints: regular files sluice wrote, never a link
    or a user's file of that name. Also those a killed process left behind (its checkpoint
    deleted, not yet its meta graph): meta graphs of the prefix older than every `kept`
    checkpoint, with no checkpoint beside them."""
    metas = [meta_graph_path(path, suffix) for path in checkpoint_paths]
    for directory, prefix in {
        os.path.split(checkpoint_names.prefix_of(path)) for path in checkpoint_paths
    }:
        steps = [
            checkpoint_names.step_of(os.path.basename(k))
            for k in kept
            if checkpoint_names.prefix_of(k) == os.path.join(directory, prefix)
        ]
        pattern = re.compile(re.escape(prefix) + r"-(\d+)\." + re.escape(suffix) + "$")
        for name in os.listdir(directory or "."):
            match = pattern.match(name)
            if (
                match
                and steps
                and int(match.group(1)) < min(steps)
                and not os.path.lexists(os.path.join(directory, name[: -len(suffix)] + "h5"))
            ):
                metas.append(os.path.join(directory, name))
    for meta in dict.fromkeys(metas):
        try:
            if is_sluice_meta_graph(meta):
                os.remove(meta)
        except OSError as err:  # a failed cleanup must not fail the save
            warnings.warn(f"Could not remove {meta}: {err}", stacklevel=2)
