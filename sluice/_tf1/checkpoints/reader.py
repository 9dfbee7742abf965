"""Reading checkpoints without a graph (TF1 `tf.train.list_variables`, `load_variable`,
`load_checkpoint`)."""

from __future__ import annotations

import os

import numpy as np

from sluice._export import export
from sluice._tf1.checkpoints import checkpoint_state, h5_format
from sluice._tf1.checkpoints.io_ops import as_op_error
from sluice.framework.ir import errors


def _checkpoint_file(ckpt_dir_or_file: str) -> str:
    if os.path.isdir(ckpt_dir_or_file):
        latest = checkpoint_state.latest_checkpoint(ckpt_dir_or_file)
        if latest is None:
            raise errors.NotFoundError(
                None, None, f"No checkpoint is listed in {ckpt_dir_or_file!r}."
            )
        return latest
    return ckpt_dir_or_file


@export("checkpoints.CheckpointReader")
class CheckpointReader:
    """The variables of one checkpoint file, read on demand."""

    def __init__(self, path: str):
        self.path = _checkpoint_file(path)
        try:
            self._specs = h5_format.describe(self.path)
        except h5_format.CheckpointError as err:
            raise as_op_error(err) from None

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        return {name: list(shape) for name, (_, shape) in self._specs.items()}

    def get_variable_to_dtype_map(self) -> dict[str, np.dtype]:
        return {name: dtype for name, (dtype, _) in self._specs.items()}

    def has_tensor(self, name: str) -> bool:
        return name in self._specs

    def get_tensor(self, name: str) -> np.ndarray:
        if name not in self._specs:
            raise errors.NotFoundError(
                None, None, f"Variable {name!r} is not in checkpoint {self.path!r}."
            )
        try:
            checkpoint = h5_format.read_checkpoint(
                self.path, {name: self._specs[name]}, allow_extra=True
            )
        except h5_format.CheckpointError as err:
            raise as_op_error(err) from None
        return checkpoint.arrays[name]


@export("checkpoints.load_checkpoint", "train.load_checkpoint")
def load_checkpoint(ckpt_dir_or_file: str) -> CheckpointReader:
    """A reader for a checkpoint file, or for the latest checkpoint of a directory."""
    return CheckpointReader(ckpt_dir_or_file)


@export("checkpoints.list_variables", "train.list_variables")
def list_variables(ckpt_dir_or_file: str) -> list[tuple[str, list[int]]]:
    """(name, shape) of every variable in the checkpoint, sorted by name."""
    return sorted(load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map().items())


@export("checkpoints.load_variable", "train.load_variable")
def load_variable(ckpt_dir_or_file: str, name: str) -> np.ndarray:
    """The value of one variable in the checkpoint (verified by its checksum)."""
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)
