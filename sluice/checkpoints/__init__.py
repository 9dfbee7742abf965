"""Checkpoints: `Saver` with Save/Restore ops, one h5 file per checkpoint, a JSON state file.

The file layout is documented in `h5_format` (and the checks of an untrusted file in
`h5_checks`), the state file in `checkpoint_state`, the keep-list and deletion in `keeper`,
the per-directory lock in `dir_lock`.
"""

from sluice._tf1.checkpoints.checkpoint_state import (
    CheckpointState,
    CheckpointStateError,
    checkpoint_exists,
    get_checkpoint_state,
    latest_checkpoint,
)
from sluice._tf1.checkpoints.reader import (
    CheckpointReader,
    list_variables,
    load_checkpoint,
    load_variable,
)
from sluice._tf1.checkpoints.saver import Saver

__all__ = [
    "CheckpointReader",
    "CheckpointState",
    "CheckpointStateError",
    "Saver",
    "checkpoint_exists",
    "get_checkpoint_state",
    "latest_checkpoint",
    "list_variables",
    "load_checkpoint",
    "load_variable",
]
