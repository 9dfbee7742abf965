"""The keep-list of a checkpoint directory: records each save in the state file and deletes the
checkpoints beyond `max_to_keep`, safely when several processes save into one directory.

Every save runs under the directory's lock (`dir_lock`): write the checkpoint, re-read the state
file, add the new entry, rewrite the state file atomically, delete what fell off the list. So
two processes saving into one directory interleave whole saves, each sees the other's entries,
and a checkpoint is listed as soon as it is complete.

Deleting is careful, because the state file is untrusted input: an entry is deleted only if it
is a plain name of the directory (`checkpoint_names.entry_problem`), a regular file (never a
symlink, never what one points to) and a sluice checkpoint (`h5_format.is_sluice_checkpoint`).
Entries that fail are dropped from the list with a warning and left on disk.

Imports NumPy and h5py but not JAX, so a process can save checkpoints without loading JAX.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
import warnings
from collections.abc import Callable, Sequence

from sluice._tf1.checkpoints import atomic, checkpoint_names, checkpoint_state, dir_lock, h5_format


def _now() -> float:
    return time.time()


class CheckpointKeeper:
    """The kept checkpoints of a directory, newest last; deletes the oldest of the saved
    checkpoint's prefix beyond `max_to_keep` (other prefixes' checkpoints stay, as in TF1).

    The first save in a directory also adopts the unlisted checkpoints of its prefix found there
    (left unlisted by a crash between writing a file and listing it), so `max_to_keep` holds
    across restarts, and removes the prefix's stale temporary files (their owner died).

    Args:
      max_to_keep: how many to keep; None or 0 keeps (and lists) all.
      keep_checkpoint_every_n_hours: additionally preserve (unlisted, never deleted) one
        checkpoint per this many hours.
      state_filename: the state file's name in the directory.
    """

    def __init__(
        self,
        max_to_keep: int | None = 5,
        keep_checkpoint_every_n_hours: float | None = None,
        state_filename: str | None = None,
    ):
        self.max_to_keep = max_to_keep
        self.keep_every_s = (
            None
            if keep_checkpoint_every_n_hours is None
            else keep_checkpoint_every_n_hours * 3600.0
        )
        self.state_filename = checkpoint_names.check_state_filename(
            state_filename or checkpoint_state.STATE_FILENAME
        )
        self._directory: str | None = None
        self._kept: list[tuple[str, float]] = []  # (file name, timestamp), newest last
        self._last_preserved = _now()

    @property
    def checkpoints(self) -> list[str]:
        """The kept checkpoint paths as of this keeper's last save, oldest first."""
        if self._directory is None:
            return []
        return [os.path.join(self._directory, name) for name, _ in self._kept]

    def save(self, path: str, write: Callable[[], None], record: bool = True) -> list[str]:
        """Calls `write()` (which writes the checkpoint file `path`) and then `record(path)`,
        both under the directory's lock. Returns the deleted paths."""
        directory = os.path.dirname(os.path.abspath(path))
        with dir_lock.locked(directory, self.state_filename):
            write()
            return self.record(path) if record else []

    def record(self, path: str) -> list[str]:
        """Adds a just-written checkpoint, rewrites the state file, then deletes the checkpoints
        that fell off the list. Returns the deleted paths."""
        directory, name = os.path.split(os.path.abspath(path))
        with dir_lock.locked(directory, self.state_filename):
            return self._record(directory, name)

    def _record(self, directory: str, name: str) -> list[str]:
        fields = _read_tolerantly(directory, self.state_filename)
        entries, preserved = _listed(directory, fields, self.state_filename)
        if fields is not None and fields.last_preserved is not None:
            self._last_preserved = fields.last_preserved
        if fields is None or directory != self._directory:
            entries = _adopt(directory, checkpoint_names.prefix_of(name), entries, preserved)
            atomic.remove_stale_temporaries(directory, checkpoint_names.prefix_of(name))
            atomic.remove_stale_temporaries(directory, self.state_filename)
        entries = [(n, t) for n, t in entries if n != name] + [(name, _now())]
        # max_to_keep counts this saver's prefix only: another Saver's checkpoints in the
        # directory stay listed and on disk (a TF1 Saver deletes only its own)
        prefix = checkpoint_names.prefix_of(name)
        ours = [entry for entry in entries if checkpoint_names.prefix_of(entry[0]) == prefix]
        dropped = []
        while self.max_to_keep and len(ours) > self.max_to_keep:
            old, stamp = ours.pop(0)
            entries.remove((old, stamp))
            if self.keep_every_s is not None and stamp - self._last_preserved >= self.keep_every_s:
                preserved.append(old)
                self._last_preserved = stamp
            else:
                dropped.append(old)
        checkpoint_state.write_state(
            directory, name, entries, preserved, self._last_preserved, self.state_filename
        )
        self._directory, self._kept = directory, entries
        return [os.path.join(directory, n) for n in dropped if delete_checkpoint(directory, n)]


def _read_tolerantly(directory: str, state_filename: str) -> checkpoint_state.StateFields | None:
    """The state file's fields, or None when there is none or it is unreadable (then it is
    rebuilt from the directory's files and rewritten by this save)."""
    try:
        return checkpoint_state.read_state(directory, state_filename)
    except checkpoint_state.CheckpointStateError as err:
        warnings.warn(f"{err} Saver rebuilds it from the checkpoint files found.", stacklevel=4)
        return None


def _listed(
    directory: str, fields: checkpoint_state.StateFields | None, state_filename: str
) -> tuple[list[tuple[str, float]], list[str]]:
    """The state file's entries that are checkpoint files of this directory: (name, timestamp)
    newest last, and the preserved names. Invalid entries are dropped with a warning."""
    if fields is None:
        return [], []
    ignored: list[str] = []

    def usable(entry: object) -> bool:
        problem = checkpoint_names.entry_problem(entry, state_filename)
        if problem is None and _file_kind(directory, entry) == "link":
            problem = "is a symbolic link (sluice never writes one)"
        if problem is not None:
            ignored.append(f"{entry!r} ({problem})")
            return False
        return _file_kind(directory, entry) == "file"

    entries: dict[str, float] = {}
    for i, entry in enumerate(fields.paths):
        if usable(entry) and entry not in entries:
            stamp = fields.timestamps[i] if i < len(fields.timestamps) else None
            entries[entry] = stamp if stamp is not None else _mtime(directory, entry)
    preserved = [p for p in dict.fromkeys(fields.preserved) if usable(p) and p not in entries]
    if ignored:
        warnings.warn(
            f"Saver ignores these entries of the checkpoint state file {fields.path!r}: "
            f"{', '.join(ignored)}. They are dropped from the list; no file is deleted for them.",
            stacklevel=5,
        )
    return list(entries.items()), preserved


def _adopt(
    directory: str, prefix: str, entries: list[tuple[str, float]], preserved: list[str]
) -> list[tuple[str, float]]:
    """`entries` plus the unlisted checkpoints of `prefix` in the directory, ordered by time."""
    pattern = checkpoint_names.prefix_pattern(prefix)
    known = {n for n, _ in entries} | set(preserved)
    adopted = dict(entries)
    for name in os.listdir(directory):
        if pattern.match(name) and name not in known and _file_kind(directory, name) == "file":
            if h5_format.is_sluice_checkpoint(os.path.join(directory, name)):
                adopted[name] = _mtime(directory, name)
    if len(adopted) == len(entries):
        return entries
    return sorted(adopted.items(), key=lambda item: (item[1], checkpoint_names.step_of(item[0])))


def _file_kind(directory: str, name: str) -> str:
    """ "file" (a regular file), "link" (a symlink), "missing" or "other"."""
    try:
        mode = os.lstat(os.path.join(directory, name)).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except (OSError, ValueError):
        return "other"
    if stat.S_ISLNK(mode):
        return "link"
    return "file" if stat.S_ISREG(mode) else "other"


def _mtime(directory: str, name: str) -> float:
    try:
        return os.lstat(os.path.join(directory, name)).st_mtime
    except OSError:
        return 0.0


def delete_checkpoint(directory: str, name: str) -> bool:
    """Deletes the checkpoint `name` of `directory` if it is a plain-named regular file holding
    a sluice checkpoint; returns whether it did. `os.remove` never follows a symlink."""
    if checkpoint_names.plain_name_problem(name) is not None:
        return False
    path = os.path.join(directory, name)
    if _file_kind(directory, name) != "file" or not h5_format.is_sluice_checkpoint(path):
        return False
    try:
        os.remove(path)
    except FileNotFoundError:
        return False
    return True


def delete_checkpoints(
    directory: str, also: Sequence[str] = (), state_filename: str | None = None
) -> list[str]:
    """Deletes every checkpoint the directory's state file lists (each checked as `record`
    checks it), the paths `also` inside the directory, the state file and its lock file.
    Returns the deleted checkpoint paths."""
    state_filename = state_filename or checkpoint_state.STATE_FILENAME
    deleted = []
    with dir_lock.locked(directory, state_filename):
        fields = _read_tolerantly(directory, state_filename)
        entries, preserved = _listed(directory, fields, state_filename)
        names = [n for n, _ in entries] + preserved
        for path in also:
            head, name = os.path.split(os.path.abspath(path))
            if head == os.path.abspath(directory):
                names.append(name)
        for name in dict.fromkeys(names):
            if delete_checkpoint(directory, name):
                deleted.append(os.path.join(directory, name))
        atomic.remove_stale_temporaries(directory, state_filename)
        for name in (state_filename, dir_lock.lock_filename(state_filename)):
            if _file_kind(directory, name) == "file":
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.path.join(directory, name))
    return deleted
