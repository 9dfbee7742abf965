"""The checkpoint state file (`checkpoint.json`) of a checkpoint directory.

The state file is small JSON, replaced atomically after each save:

    {"format": "sluice.checkpoint_state", "version": 1,
     "model_checkpoint_path": "model-300.h5",
     "all_model_checkpoint_paths": ["model-100.h5", "model-200.h5", "model-300.h5"],
     "all_model_checkpoint_timestamps": [1700000000.0, ...],
     "preserved_checkpoint_paths": [], "last_preserved_timestamp": 1700000000.0}

Paths are plain file names in the directory (newest last), so a moved directory still restores.
The file is untrusted input: `read_state` checks its size, its JSON and every field's type, and
`get_checkpoint_state` every entry (`checkpoint_names.entry_problem`); a file or an entry that
sluice would not have written raises `CheckpointStateError` naming the file and the entry.
Imports only the standard library (and sibling modules that do), so a process can write
checkpoints without loading JAX.
"""

from __future__ import annotations

import json
import math
import os
from typing import NamedTuple

from sluice._export import export
from sluice._tf1.checkpoints import atomic, checkpoint_names, regular_file
from sluice._tf1.checkpoints.checkpoint_names import checkpoint_path  # noqa: F401  (re-exported)

STATE_FILENAME = "checkpoint.json"
_STATE_FORMAT = "sluice.checkpoint_state"
_SUFFIX = checkpoint_names.SUFFIX
# A state file listing a million checkpoints is under 40 MB; anything larger was not written
# by sluice and is not read into memory.
MAX_STATE_BYTES = 64 << 20


@export("checkpoints.CheckpointStateError")
class CheckpointStateError(ValueError):
    """A checkpoint state file, or an entry of one, that sluice would not have written."""


@export("checkpoints.CheckpointState", "train.CheckpointState")
class CheckpointState(NamedTuple):
    """The state of a checkpoint directory, with paths joined to the directory."""

    model_checkpoint_path: str
    all_model_checkpoint_paths: list[str]


class StateFields(NamedTuple):
    """The fields of a state file, type-checked but with entries not yet checked as names."""

    path: str
    latest: str | None
    paths: list
    timestamps: list[float]
    preserved: list
    last_preserved: float | None


def state_file_path(directory: str, state_filename: str | None = None) -> str:
    """The state file's path; raises ValueError if `state_filename` is not a plain name."""
    name = checkpoint_names.check_state_filename(state_filename or STATE_FILENAME)
    return os.path.join(directory, name)


def read_state(directory: str, state_filename: str | None = None) -> StateFields | None:
    """The directory's state file, or None without one.

    Raises:
      CheckpointStateError: the file cannot be read, is too large, is not JSON, or a field has
        the wrong type.
    """
    path = state_file_path(directory, state_filename)
    try:
        # never a symlink (it could point anywhere), a FIFO or a device (it could block)
        data = regular_file.read_regular(path, MAX_STATE_BYTES + 1, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise CheckpointStateError(
            f"The checkpoint state file {path!r} cannot be read ({err})."
        ) from None
    if len(data) > MAX_STATE_BYTES:
        raise CheckpointStateError(
            f"The checkpoint state file {path!r} is larger than {MAX_STATE_BYTES} bytes: not a "
            "state file sluice writes."
        )
    try:
        state = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise CheckpointStateError(
            f"The checkpoint state file {path!r} cannot be read ({type(err).__name__}: "
            f"{str(err)[:200]}); it is written by Saver.save as JSON."
        ) from None
    if not isinstance(state, dict) or state.get("format") != _STATE_FORMAT:
        raise CheckpointStateError(f"{path!r} is not a sluice checkpoint state file.")
    return StateFields(
        path=path,
        latest=_field(state, "model_checkpoint_path", str, path, None),
        paths=_field(state, "all_model_checkpoint_paths", list, path, []),
        timestamps=_numbers(_field(state, "all_model_checkpoint_timestamps", list, path, []), path),
        preserved=_field(state, "preserved_checkpoint_paths", list, path, []),
        last_preserved=_number(state.get("last_preserved_timestamp"), path),
    )


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number a state file holds")


def _field(state: dict, key: str, kind: type, path: str, default: object) -> object:
    value = state.get(key, default)
    if value is not default and not isinstance(value, kind):
        raise CheckpointStateError(
            f"The checkpoint state file {path!r} has {key} = {str(value)[:100]!r}, not a "
            f"{kind.__name__}."
        )
    return value


def _number(value: object, path: str) -> float | None:
    if value is None:
        return None
    try:
        number = float(value) if isinstance(value, (int, float)) else math.nan
    except OverflowError:
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number):
        raise CheckpointStateError(
            f"The checkpoint state file {path!r} holds {str(value)[:100]!r} where a timestamp "
            "(a finite number) belongs."
        )
    return number


def _numbers(values: list, path: str) -> list[float]:
    return [_number(v, path) for v in values]


def write_state(
    directory: str,
    latest: str,
    entries: list[tuple[str, float]],
    preserved: list[str],
    last_preserved: float,
    state_filename: str | None = None,
) -> None:
    """Replaces the state file atomically (callers hold `dir_lock.locked(directory)`)."""
    state = {
        "format": _STATE_FORMAT,
        "version": 1,
        "model_checkpoint_path": latest,
        "all_model_checkpoint_paths": [n for n, _ in entries],
        "all_model_checkpoint_timestamps": [t for _, t in entries],
        "preserved_checkpoint_paths": preserved,
        "last_preserved_timestamp": last_preserved,
    }
    text = json.dumps(state, indent=1)
    atomic.write_bytes_atomically(state_file_path(directory, state_filename), text.encode())


def entry_error(state_path: str, entry: object, problem: str) -> CheckpointStateError:
    return CheckpointStateError(
        f"The checkpoint state file {state_path!r} lists {entry!r}, which {problem}. sluice "
        f"lists only plain names of checkpoint files in that directory (<prefix>-<step>"
        f"{_SUFFIX}); it neither returns nor deletes this entry. Fix or delete the state file."
    )


def checked_entry(directory: str, fields: StateFields, entry: object) -> str:
    """`entry` joined to the directory; raises CheckpointStateError if sluice would not have
    written it."""
    problem = checkpoint_names.entry_problem(entry, os.path.basename(fields.path))
    if problem is None:
        problem = checkpoint_names.outside_problem(directory, entry)
    if problem is not None:
        raise entry_error(fields.path, entry, problem)
    return os.path.join(directory, entry)


@export("checkpoints.get_checkpoint_state", "train.get_checkpoint_state")
def get_checkpoint_state(
    checkpoint_dir: str, latest_filename: str | None = None
) -> CheckpointState | None:
    """The directory's state (paths joined to `checkpoint_dir`), or None without a state file.

    Raises:
      CheckpointStateError (a ValueError): the state file, or one of its entries, is not what
        sluice writes; the message names the file and the entry.
    """
    fields = read_state(checkpoint_dir, latest_filename)
    if fields is None or not fields.paths:
        return None
    paths = [checked_entry(checkpoint_dir, fields, p) for p in fields.paths]
    for entry in fields.preserved:
        checked_entry(checkpoint_dir, fields, entry)
    latest = fields.paths[-1] if fields.latest is None else fields.latest
    return CheckpointState(checked_entry(checkpoint_dir, fields, latest), paths)


@export("checkpoints.latest_checkpoint", "train.latest_checkpoint")
def latest_checkpoint(checkpoint_dir: str, latest_filename: str | None = None) -> str | None:
    """The newest checkpoint listed in the directory's state file that exists, or None.

    Raises:
      CheckpointStateError (a ValueError): the state file or an entry is not what sluice
        writes (e.g. an entry "../x.h5"); the message names both.

    >>> v = sl.Variable(3.0, name="v")
    >>> saver = sl.train.Saver()
    >>> with sl.Session() as sess:
    ...     sess.run(v.initializer)
    ...     saver.save(sess, "model", global_step=100)
    'model-100.h5'
    >>> with sl.Session() as sess:
    ...     saver.restore(sess, sl.train.latest_checkpoint("."))
    ...     print(sess.run(v))
    3.0
    """
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None:
        return None
    for path in reversed(state.all_model_checkpoint_paths):
        if os.path.isfile(path):
            return path
    return None


@export("checkpoints.checkpoint_exists", "train.checkpoint_exists")
def checkpoint_exists(checkpoint_prefix: str) -> bool:
    """Whether a checkpoint file exists at this path (or this path + ".h5")."""
    return os.path.isfile(checkpoint_prefix) or os.path.isfile(checkpoint_prefix + _SUFFIX)
