"""The names of checkpoint files, and the check that every name read from a state file passes.

sluice names a checkpoint `<prefix>-<step>.h5` (or `<prefix>.h5` without a step) in the
directory of its state file, and lists it there by that plain name. A state file is untrusted
input, so an entry is used only if it is such a name: no path separator, no "..", no NUL, at
most 255 bytes, ending in ".h5", and not one of sluice's own hidden files (temporaries, the lock).
A symlink listed there is followed only if it resolves inside the directory.
Imports only the standard library.
"""

from __future__ import annotations

import os
import re

from sluice._tf1.checkpoints import atomic, dir_lock

SUFFIX = ".h5"
_MAX_NAME_BYTES = 255  # NAME_MAX on Linux and macOS
_STEP = re.compile(r"-(\d+)" + re.escape(SUFFIX) + "$")


def checkpoint_path(save_path: str, global_step: int | None, pad_step_number: bool = False) -> str:
    """ "dir/model" (or "dir/model.h5") and step 100 -> "dir/model-100.h5"."""
    prefix = save_path.removesuffix(SUFFIX)
    if global_step is not None:
        prefix += f"-{global_step:08d}" if pad_step_number else f"-{global_step}"
    return prefix + SUFFIX


def prefix_of(name: str) -> str:
    """ "model-100.h5" -> "model"; "model.h5" -> "model"."""
    match = _STEP.search(name)
    return name[: match.start()] if match else name.removesuffix(SUFFIX)


def step_of(name: str) -> int:
    """ "model-100.h5" -> 100; -1 without a step."""
    match = _STEP.search(name)
    return int(match.group(1)) if match else -1


def prefix_pattern(prefix: str) -> re.Pattern:
    """Matches the names of the checkpoints with a step of this prefix."""
    return re.compile(re.escape(prefix) + r"-(\d+)" + re.escape(SUFFIX) + "$")


def plain_name_problem(name: object) -> str | None:
    """Why `name` is not a plain file name (so it could leave its directory), or None."""
    if not isinstance(name, str):
        return f"is a {type(name).__name__}, not a file name"
    if name in ("", ".", ".."):
        return "is not a file name"
    if any(ord(c) < 32 or c == "\x7f" for c in name):
        return "holds a NUL or control character"
    if "/" in name or "\\" in name or (os.altsep and os.altsep in name):
        return "is a path, not a plain file name in the directory"
    try:
        encoded = os.fsencode(name)
    except UnicodeError:
        return "cannot be encoded as a file name"
    if len(encoded) > _MAX_NAME_BYTES:
        return f"is longer than {_MAX_NAME_BYTES} bytes"
    return None


def entry_problem(name: object, state_filename: str) -> str | None:
    """Why `name` cannot be a checkpoint entry of the state file `state_filename`, or None."""
    problem = plain_name_problem(name)
    if problem is not None:
        return problem
    assert isinstance(name, str)
    if not name.endswith(SUFFIX):
        return f"does not end in {SUFFIX!r} (sluice writes <prefix>-<step>{SUFFIX})"
    if name in (state_filename, dir_lock.lock_filename(state_filename)):
        return "names the state file or its lock file"
    if atomic.is_temporary(name):
        return "names a temporary file"
    return None


def outside_problem(directory: str, name: str) -> str | None:
    """Why the file `name` of `directory` resolves outside it (a symlink), or None."""
    path = os.path.join(directory, name)
    if not os.path.islink(path):
        return None
    root, target = os.path.realpath(directory), os.path.realpath(path)
    if os.path.commonpath([root, target]) != root:
        return f"is a symbolic link to {target!r}, outside the directory"
    return None


def check_state_filename(name: str) -> str:
    """Returns `name` if it is a plain file name for a state file; else raises ValueError."""
    problem = plain_name_problem(name)
    if problem is not None:
        raise ValueError(
            f"latest_filename {name!r} {problem}; pass the name of a file in the checkpoint "
            "directory, such as 'checkpoint.json'."
        )
    return name
