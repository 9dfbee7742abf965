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

In a multi-process run (`sl.distribution`) every process calls `save` at the same point: each
gathers the values (laid out across processes), process 0 alone writes and lists the file, and
all wait for it. `restore` reads the file in every process and lays the values out again, so a
checkpoint written by 2 processes restores in 1 and the reverse.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from sluice.checkpoints import checkpoint_names, h5_format, keeper
from sluice.checkpoints.io_ops import encode_path
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import GraphKeys, Tensor
from sluice.framework.ops import core_ops
from sluice.framework.placement import processes
from sluice.framework.variables import Variable, global_variables


class Saver:
    """Saves and restores variables.

    Args:
      var_list: the variables to save: a list (saved under their graph names) or a dict
        {checkpoint name: Variable}. None: every global variable, and a restore then insists that
        the file holds exactly those; with an explicit var_list the file may hold more (a subset
        restore, as TF1 allows).
      max_to_keep: how many recent checkpoints to keep; None or 0 keeps and lists all.
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
        graph = (
            graph_lib.graph_of([v.handle for v in variables.values()])
            if variables
            else graph_lib.get_default_graph()
        )
        self._graph = graph
        names = list(variables)
        handles = [v.handle for v in variables.values()]
        with graph.as_default(), graph.control_dependencies(None), graph.name_scope(name or "save"):
            self._filename = core_ops.placeholder(dtypes.uint8, [None], name="filename")
            self._step = core_ops.placeholder_with_default(np.int64(-1), [], name="global_step")
            self._save_op = core_ops.apply_op(
                "SaveH5", [self._filename, self._step] + handles, {"names": tuple(names)}, "SaveH5"
            )
            attrs = {
                "names": tuple(names),
                "dtypes": tuple(v.dtype for v in variables.values()),
                "shapes": tuple(v.shape for v in variables.values()),
                "allow_extra": var_list is not None,
            }
            self._restore_op = core_ops.apply_op(
                "RestoreH5", [self._filename] + handles, attrs, "restore_all"
            )
        graph.add_to_collection(GraphKeys.SAVERS, self)

    @property
    def last_checkpoints(self) -> list[str]:
        """The checkpoints this Saver keeps, oldest first."""
        return self._keeper.checkpoints

    @property
    def saver_def(self) -> dict:
        """The names of the filename tensor and the save and restore ops (TF1's SaverDef)."""
        return {
            "filename_tensor_name": self._filename.name,
            "save_tensor_name": self._save_op.name,
            "restore_op_name": self._restore_op.name,
            "max_to_keep": self._keeper.max_to_keep,
        }

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
          meta_graph_suffix, write_meta_graph: accepted for TF1 code; no meta graph is written.
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
        feed = {
            self._filename: encode_path(path),
            self._step: np.int64(-1 if step is None else step),
        }
        if processes.is_chief():
            self._keeper.save(path, lambda: sess.run(self._save_op, feed), record=write_state)
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
        sess.run(self._restore_op, {self._filename: encode_path(os.fspath(save_path))})

    def as_saver_def(self) -> dict:
        return self.saver_def


def _named_variables(var_list: Any) -> dict[str, Variable]:
    if var_list is None:
        var_list = global_variables()
    if isinstance(var_list, dict):
        items = list(var_list.items())
    else:
        items = [(v.op.name if isinstance(v, Variable) else None, v) for v in var_list]
    named: dict[str, Variable] = {}
    for name, v in items:
        if not isinstance(v, Variable):
            raise TypeError(f"Saver var_list entries must be sl.Variable objects, got {v!r}.")
        if name in named:
            if named[name] is v:
                continue
            raise ValueError(f"At least two variables have the same name: {name}")
        named[name] = v
    return dict(sorted(named.items()))
