"""`Saver` (TF1 `tf.train.Saver`): Save and Restore ops over h5 checkpoint files.

    saver = sl.train.Saver(max_to_keep=5)
    path = saver.save(sess, "ckpt/model", global_step=step)    # "ckpt/model-<step>.h5"
    saver.restore(sess, sl.train.latest_checkpoint("ckpt"))   # no initializer needed first

A save writes every variable of `var_list` and the session's random-number counters (so random
ops continue the same sequence after a restore) into one h5 file (layout: `h5_format`), then
records it in the directory's `checkpoint.json` and deletes the checkpoints beyond
`max_to_keep` (`keeper.CheckpointKeeper`). Each file and the state file are replaced atomically,
so a crash at any instant leaves the latest listed checkpoint loadable, and a save holds the
directory's lock from writing to listing, so processes saving into one directory do not collide.

Next to each checkpoint a save writes the graph's meta graph, `<save_path>-<step>.meta` (JSON,
`sl.train.import_meta_graph`), so a new process can resume with no model code, as in TF1.

In a multi-process run (`sl.distribution`) every process calls `save` at the same point: each
gathers the values (laid out across processes), process 0 alone writes and lists the file, and
all wait for it. `restore` reads the file in every process and lays the values out again, so a
checkpoint written by 2 processes restores in 1 and the reverse.
"""

from __future__ import annotations

import logging
import os
import warnings
from typing import Any

import numpy as np

from sluice._export import export
from sluice._tf1.checkpoints import checkpoint_names, h5_format, keeper, meta_graph_files
from sluice._tf1.checkpoints.io_ops import encode_path
from sluice.framework.graph_def import UnserializableAttrError
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import GraphKeys, Tensor
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.core import core_ops
from sluice.framework.partitioned_variables import PartitionedVariable, slice_info
from sluice.framework.placement import processes
from sluice.framework.variables import Variable, global_variables

_logger = logging.getLogger("sluice")


def _concat_collected_partitioned(graph: graph_lib.Graph) -> None:
    """TF1's Saver: a PartitionedVariable held in a collection gets its concatenation op (named
    as the variable) now, so a graph imported from the meta graph has that tensor to look up."""
    for key in graph.get_all_collection_keys():
        for element in graph.get_collection(key):
            if isinstance(element, PartitionedVariable):
                try:
                    graph.get_operation_by_name(element.name)
                except KeyError:
                    element.as_tensor()


@export("checkpoints.Saver", "train.Saver")
class Saver:
    """Saves and restores variables.

    Args:
      var_list: the variables to save: a list (saved under their graph names) or a dict
        {checkpoint name: Variable}. None: every global variable, and a restore then insists that
        the file holds exactly those; with an explicit var_list the file may hold more (a subset
        restore, as TF1 allows).
      max_to_keep: how many recent checkpoints of a save_path prefix to keep (another prefix's
        are left alone, as in TF1); None or 0 keeps and lists all.
      keep_checkpoint_every_n_hours: additionally preserve one checkpoint per this many hours.
      name: the name scope of the Save and Restore ops (default "save").
      allow_empty: build a Saver with no variables instead of raising.
      pad_step_number: zero-pad the step in file names (model-00000100.h5).

    Raises:
      ValueError: no variables to save, a name used twice, or names HDF5 cannot hold together.
    """

    def __init__(
        self,
        var_list: Any = None,
        max_to_keep: int | None = 5,
        keep_checkpoint_every_n_hours: float | None = None,
        name: str | None = None,
        allow_empty: bool = False,
        pad_step_number: bool = False,
    ):
        variables = _named_variables(var_list)
        if not variables and not allow_empty:
            raise ValueError("No variables to save.")
        h5_format.check_names(list(variables))
        self._variables = variables
        self._pad_step_number = pad_step_number
        self._keeper = keeper.CheckpointKeeper(max_to_keep, keep_checkpoint_every_n_hours)
        # one entry per variable handle: a part of a partitioned variable is a slice of the
        # full tensor its name stands for (see io_ops)
        entries = [(name, v, _slice_of(v, len(parts) > 1 or _is_part(v))) for name, parts in
                   variables.items() for v in parts]  # fmt: skip
        handles = [v.handle for _, v, _ in entries]
        graph = graph_lib.graph_of(handles) if handles else graph_lib.get_default_graph()
        self._graph = graph
        self._meta_graph_cache = None  # (graph version, MetaGraphDef or None): see save
        names = tuple(name for name, _, _ in entries)
        slices = tuple(part for _, _, part in entries)
        sliced = {"slices": slices} if any(slices) else {}  # no attr: the format of before
        with graph.as_default(), graph.control_dependencies(None), graph.name_scope(name or "save"):
            self._filename = core_ops.placeholder(dtypes.uint8, [None], name="filename")
            self._step = core_ops.placeholder_with_default(np.int64(-1), [], name="global_step")
            self._save_op = core_ops.apply_op(
                "SaveH5", [self._filename, self._step] + handles, {"names": names, **sliced},
                "SaveH5",
            )  # fmt: skip
            attrs = {
                "names": names,
                "dtypes": tuple(v.dtype for _, v, _ in entries),
                "shapes": tuple(
                    TensorShape(part[0]) if part else v.shape for _, v, part in entries
                ),
                "allow_extra": var_list is not None,
                **sliced,
            }
            self._restore_op = core_ops.apply_op(
                "RestoreH5", [self._filename] + handles, attrs, "restore_all"
            )
        graph.add_to_collection(GraphKeys.SAVERS, self)
        _concat_collected_partitioned(graph)

    @property
    def last_checkpoints(self) -> list[str]:
        """The checkpoints this Saver keeps, oldest first."""
        return self._keeper.checkpoints

    @property
    def saver_def(self) -> dict:
        """The names of the filename tensor and the save and restore ops (TF1's SaverDef), and
        how checkpoints are kept: all `from_saver_def` needs to rebuild this Saver."""
        hours = self._keeper.keep_every_s
        return {
            "filename_tensor_name": self._filename.name,
            "step_tensor_name": self._step.name,
            "save_tensor_name": self._save_op.name,
            "restore_op_name": self._restore_op.name,
            "max_to_keep": self._keeper.max_to_keep,
            "keep_checkpoint_every_n_hours": None if hours is None else hours / 3600.0,
            "pad_step_number": self._pad_step_number,
            "version": 1,
        }

    @classmethod
    def from_saver_def(
        cls, saver_def: dict, operation: Any, tensor: Any, add_to_collection: bool = True
    ) -> "Saver":
        """The Saver a `saver_def` describes, over save and restore ops already in a graph (an
        imported meta graph); `operation(name)` and `tensor(name)` find them.

        Raises:
          ValueError: a malformed saver_def, or names that are not a Saver's ops.
        """
        fields = {
            "filename_tensor_name",
            "step_tensor_name",
            "save_tensor_name",
            "restore_op_name",
            "max_to_keep",
            "keep_checkpoint_every_n_hours",
            "pad_step_number",
            "version",
        }
        if not isinstance(saver_def, dict) or set(saver_def) != fields:
            raise ValueError(
                f"A saver_def has the fields {sorted(fields)}; got "
                f"{sorted(saver_def) if isinstance(saver_def, dict) else saver_def}."
            )
        keep, hours = saver_def["max_to_keep"], saver_def["keep_checkpoint_every_n_hours"]
        if (
            not (keep is None or (type(keep) is int and keep >= 0))
            or not (hours is None or (type(hours) in (int, float) and hours > 0))
            or not isinstance(saver_def["pad_step_number"], bool)
        ):  # a negative max_to_keep deletes them all
            raise ValueError(
                f"saver_def: max_to_keep (null or an int >= 0), "
                f"keep_checkpoint_every_n_hours (null or a positive number) or "
                f"pad_step_number (a bool) is wrong: {saver_def}."
            )
        saver = cls.__new__(cls)
        saver._filename = tensor(saver_def["filename_tensor_name"])
        saver._step = tensor(saver_def["step_tensor_name"])
        saver._save_op = operation(saver_def["save_tensor_name"])
        saver._restore_op = operation(saver_def["restore_op_name"])
        if saver._save_op.type != "SaveH5" or saver._restore_op.type != "RestoreH5":
            raise ValueError(
                f"saver_def: {saver._save_op.name} and {saver._restore_op.name} "
                "are not a SaveH5 and a RestoreH5 op."
            )
        # the ops must read the tensors save() and restore() feed, or they would use others
        save_in, restore_in = saver._save_op.inputs, saver._restore_op.inputs
        if (
            len(save_in) < 2
            or save_in[0] is not saver._filename
            or save_in[1] is not saver._step
            or not restore_in
            or restore_in[0] is not saver._filename
            or saver._filename.op.type != "Placeholder"
        ):
            raise ValueError(
                f"saver_def: {saver._save_op.name} and {saver._restore_op.name} do "
                f"not take their filename from the placeholder "
                f"{saver._filename.name} (and the step from {saver._step.name})."
            )
        saver._graph = saver._save_op.graph
        saver._pad_step_number = saver_def["pad_step_number"]
        saver._keeper = keeper.CheckpointKeeper(keep, hours)
        saver._meta_graph_cache = None
        if add_to_collection:
            saver._graph.add_to_collection(GraphKeys.SAVERS, saver)
        return saver

    def export_meta_graph(
        self,
        filename: str | None = None,
        collection_list: list[str] | None = None,
        as_text: bool = False,
        export_scope: str | None = None,
        clear_devices: bool = False,
        clear_extraneous_savers: bool = False,
        strip_default_attrs: bool = False,
        save_debug_info: bool = False,
    ) -> Any:
        """`sl.train.export_meta_graph` of this Saver's graph, with its saver_def."""
        return meta_graph_files.export_meta_graph(
            filename,
            saver_def=self.saver_def,
            collection_list=collection_list,
            as_text=as_text,
            graph=self._graph,
            export_scope=export_scope,
            clear_devices=clear_devices,
        )

    def _write_meta_graph(self, path: str, suffix: str) -> None:
        """Writes the meta graph next to checkpoint `path`; serialised once per graph version
        (a new op or a changed one), then the same bytes are written at each save."""
        key = (self._graph.version, self._graph.mutation_version)
        cached = self._meta_graph_cache
        if cached is None or cached[0] != key:
            try:
                meta = meta_graph_files.export_meta_graph(
                    saver_def=self.saver_def, graph=self._graph
                )
            except UnserializableAttrError as err:
                # the checkpoint is still written: only a new process's import needs the graph
                warnings.warn(f"No meta graph is written with the checkpoints: {err}", stacklevel=3)
                meta = None
            cached = self._meta_graph_cache = (key, meta)
        if cached[1] is not None:
            meta_path = meta_graph_files.meta_graph_path(path, suffix)
            meta_graph_files.write_meta_graph(cached[1], meta_path)

    def save(
        self,
        sess: Any,
        save_path: str,
        global_step: Any = None,
        latest_filename: str | None = None,
        meta_graph_suffix: str = "meta",
        write_meta_graph: bool = True,
        write_state: bool = True,
    ) -> str:
        """Writes a checkpoint; returns its path ("<save_path>-<global_step>.h5").

        Args:
          sess: the session whose variable values are saved.
          save_path: the path prefix, e.g. "ckpt/model"; its directory must exist.
          global_step: an int, or a Variable/Tensor whose value is used; appended to the name and
            stored in the file.
          latest_filename: the state file's name (default "checkpoint.json"), a plain file name.
          meta_graph_suffix, write_meta_graph: also write the graph's meta graph (with this
            Saver's saver_def) as "<save_path>-<global_step>.<meta_graph_suffix>", TF1's name;
            `sl.train.import_meta_graph` rebuilds the graph from it in a new process.
          write_state: record the checkpoint in the state file and apply max_to_keep.

        Raises:
          ValueError: the directory of save_path does not exist, or latest_filename is a path.

        Entries of the state file that sluice would not have written are dropped from it with a
        warning, never deleted (`keeper`).
        """
        if sess is None:
            raise TypeError("Saver.save needs a session to read the variables from.")
        step = None
        if global_step is not None:
            step = (
                int(sess.run(global_step))
                if isinstance(global_step, (Tensor, Variable))
                else int(global_step)
            )
        path = checkpoint_names.checkpoint_path(os.fspath(save_path), step, self._pad_step_number)
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.")
        if latest_filename is not None:
            self._keeper.state_filename = checkpoint_names.check_state_filename(latest_filename)
        # a bad suffix fails before anything is written
        meta_graph_files.meta_graph_path(path, meta_graph_suffix)
        feed = {
            self._filename: encode_path(path),
            self._step: np.int64(-1 if step is None else step),
        }
        if processes.is_chief():

            def write() -> None:
                sess.run(self._save_op, feed)
                if write_meta_graph:  # before the checkpoint is listed: both or neither
                    self._write_meta_graph(path, meta_graph_suffix)

            deleted = self._keeper.save(path, write, record=write_state)
            if deleted:
                meta_graph_files.remove_meta_graphs(
                    deleted, meta_graph_suffix, self._keeper.checkpoints
                )
        else:  # gathers its values with the chief's (a collective); only the chief writes
            sess.run(self._save_op, feed)
        processes.barrier(f"sluice Saver.save {path}")  # no process reads it before it exists
        return path

    def restore(self, sess: Any, save_path: str) -> None:
        """Loads every variable of this Saver (and the random-number state) from `save_path`.

        Raises:
          ValueError: save_path is None.
          sl.errors.NotFoundError: no such file, or graph variables missing from it.
          sl.errors.InvalidArgumentError: a directory or not a checkpoint, extra variables in the
            file, or shapes/dtypes that differ (the message lists every one).
          sl.errors.DataLossError: a truncated or corrupt file (a checksum names the variable).
        """
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        _logger.info("Restoring parameters from %s", save_path)  # TF1's line, at INFO
        sess.run(self._restore_op, {self._filename: encode_path(os.fspath(save_path))})

    def as_saver_def(self) -> dict:
        return self.saver_def


def _is_part(v: Variable) -> bool:
    return slice_info(v) is not None


def _slice_of(v: Variable, sliced: bool) -> tuple:
    """(full_shape, offset, shape) of a part of a partitioned variable; () for a whole one."""
    if not sliced:
        return ()
    info = slice_info(v)
    return tuple(info.full_shape), tuple(info.var_offset), tuple(info.var_shape)


def _named_variables(var_list: Any) -> dict[str, list[Variable]]:
    """{checkpoint name: [the Variable] or the parts of one partitioned variable}, as TF1's
    `op_list_to_dict`: in a list, a PartitionedVariable (or a part of one) stands under its
    full name; in a dict, a value may be a Variable, a PartitionedVariable or a list of parts.

    Raises:
      TypeError: an entry is not a Variable, PartitionedVariable or list of parts.
      ValueError: two variables under one name, parts of different tensors under one name, or
        parts that do not make up the whole tensor.
    """
    if var_list is None:
        var_list = global_variables()
    if isinstance(var_list, PartitionedVariable):
        var_list = [var_list]
    if isinstance(var_list, dict):
        items = [(name, _parts(v, name)) for name, v in var_list.items()]
    else:
        items = []
        for v in var_list:
            if isinstance(v, PartitionedVariable):
                items.append((v.name, list(v)))
            elif isinstance(v, Variable) and _is_part(v):
                items.append((slice_info(v).full_name, [v]))
            else:
                items.append((v.op.name if isinstance(v, Variable) else None, _parts(v, None)))
    named: dict[str, list[Variable]] = {}
    for name, parts in items:
        group = named.setdefault(name, [])
        for v in parts:
            if any(v is seen for seen in group):
                continue
            if group and not (_is_part(v) and all(_is_part(seen) for seen in group)):
                raise ValueError(f"At least two variables have the same name: {name}")
            group.append(v)
    for name, group in named.items():
        if len(group) > 1 or _is_part(group[0]):
            _check_tiling(name, group)
    return dict(sorted(named.items()))


def _parts(v: Any, name: str | None) -> list[Variable]:
    if isinstance(v, PartitionedVariable):
        return list(v)
    if isinstance(v, (list, tuple)):
        if not all(isinstance(p, Variable) and _is_part(p) for p in v):
            raise ValueError(
                f"Saver: the list saved under {name!r} must hold the parts of one partitioned "
                f"variable (each with its _save_slice_info), got {v!r}."
            )
        return list(v)
    if not isinstance(v, Variable):
        raise TypeError(
            "Saver var_list entries must be sl.Variable or sl.PartitionedVariable objects, got "
            f"{v!r}."
        )
    return [v]


def _check_tiling(name: str, parts: list[Variable]) -> None:
    """The parts saved under `name` are slices of one tensor that together make it up."""
    infos = [slice_info(p) for p in parts]
    full_names = {i.full_name for i in infos}
    full_shapes = {tuple(i.full_shape) for i in infos}
    if len(full_names) > 1 or len(full_shapes) > 1 or len({p.dtype for p in parts}) > 1:
        raise ValueError(
            f"Slices must all be from the same tensor: the parts saved under {name!r} are "
            f"{[(p.name, i.spec, p.dtype.name) for p, i in zip(parts, infos)]}."
        )
    full = np.zeros(infos[0].full_shape, np.int8)
    for info in infos:
        full[tuple(slice(o, o + n) for o, n in zip(info.var_offset, info.var_shape))] += 1
    if not (full == 1).all():
        raise ValueError(
            f"Saver: the parts saved under {name!r} ({[i.spec for i in infos]}) do not make up "
            f"its full shape {infos[0].full_shape} exactly once; a sluice checkpoint holds whole "
            "tensors, so pass every part (or the PartitionedVariable)."
        )
