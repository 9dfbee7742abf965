"""`sl.gfile` and `sl.io.gfile`: TF's file API on the local file system.

TF1 code reads and writes files through `tf.gfile.GFile`, `tf.gfile.Exists`, ... (and TF2-style
code through `tf.io.gfile.exists`, ...). Both spellings are here, as thin wrappers over Python's
`open`, `os`, `glob` and `shutil`, with TF's errors: `NotFoundError` for a missing path,
`AlreadyExistsError` when `overwrite=False` would replace a file. Only local paths are served;
a URL such as "gs://bucket/x" raises `UnimplementedError` naming the scheme.

>>> import tempfile, os
>>> folder = tempfile.mkdtemp()
>>> sl.gfile.MakeDirs(os.path.join(folder, "a", "b"))
>>> with sl.gfile.GFile(os.path.join(folder, "a", "b", "x.txt"), "w") as f:
...     _ = f.write("hello")
>>> sl.io.gfile.glob(os.path.join(folder, "a", "*", "*.txt")) == [
...     os.path.join(folder, "a", "b", "x.txt")]
True
"""

from __future__ import annotations

import glob as glob_lib
import os
import re
import shutil
from typing import IO, Any, Iterator

from sluice._export import export
from sluice.framework.ir import errors

_MODES = frozenset(m + b + plus for m in "rwa" for b in ("", "b") for plus in ("", "+"))
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def _local(path: Any, what: str) -> str:
    """`path` as a local path string; a URL scheme is not served."""
    if isinstance(path, bytes):
        path = path.decode()
    path = os.fspath(path)
    if not isinstance(path, str):
        raise TypeError(f"gfile.{what}: path must be a string, got {type(path).__name__}.")
    scheme = _URL.match(path)
    if scheme and scheme.group(1) != "file":
        raise errors.UnimplementedError(
            None,
            None,
            f"gfile.{what}: file system scheme {scheme.group(1)!r} is not "
            f"implemented (only local paths are): {path}",
        )
    return path[len("file://") :] if scheme else path


def _not_found(what: str, path: str) -> errors.NotFoundError:
    return errors.NotFoundError(None, None, f"gfile.{what}: {path}; No such file or directory")


@export("gfile.FastGFile", "gfile.GFile", "gfile.Open")
class GFile:
    """A file opened with TF's mode strings ("r", "w", "a", "rb", "wb", "ab", each with "+").

    Text modes read and write `str` (UTF-8), "b" modes `bytes`. Besides the usual file methods
    it has TF's `size()`. Opening a missing file for reading raises `NotFoundError`.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "lines.txt")
    >>> with sl.gfile.GFile(path, "w") as f:
    ...     _ = f.write("one\\ntwo\\n")
    >>> with sl.gfile.Open(path) as f:
    ...     [line for line in f], f.size()
    (['one\\n', 'two\\n'], 8)
    """

    def __init__(self, name: Any, mode: str = "r"):
        if mode not in _MODES:
            raise errors.InvalidArgumentError(
                None, None, f"gfile.GFile: mode {mode!r} is not one of {sorted(_MODES)}."
            )
        self.name, self.mode = _local(name, "GFile"), mode
        try:
            encoding = None if "b" in mode else "utf-8"
            self._file: IO = open(self.name, mode, encoding=encoding)  # noqa: SIM115 (kept open)
        except FileNotFoundError:
            raise _not_found("GFile", self.name) from None
        except IsADirectoryError:
            raise errors.FailedPreconditionError(
                None, None, f"gfile.GFile: {self.name} is a directory"
            ) from None

    def read(self, n: int = -1) -> Any:
        return self._file.read(n)

    def readline(self) -> Any:
        return self._file.readline()

    def readlines(self) -> list:
        return self._file.readlines()

    def write(self, data: Any) -> int:
        return self._file.write(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        return self._file.tell()

    def size(self) -> int:
        """The file's length in bytes (after flushing what was written)."""
        self._file.flush()
        return os.path.getsize(self.name)

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    @property
    def closed(self) -> bool:
        return self._file.closed

    def __iter__(self) -> Iterator[Any]:
        return iter(self._file)

    def __next__(self) -> Any:
        return next(self._file)

    def __enter__(self) -> GFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


@export("gfile.Exists", "gfile.exists")
def exists(path: Any) -> bool:
    """Whether `path` names a file or directory."""
    return os.path.exists(_local(path, "exists"))


@export("gfile.IsDirectory", "gfile.isdir")
def isdir(path: Any) -> bool:
    return os.path.isdir(_local(path, "isdir"))


@export("gfile.ListDirectory", "gfile.listdir")
def listdir(path: Any) -> list[str]:
    """The names in directory `path` (not full paths), sorted; `NotFoundError` when missing."""
    path = _local(path, "listdir")
    if not os.path.isdir(path):
        raise _not_found("listdir", path)
    return sorted(os.listdir(path))


@export("gfile.MakeDirs", "gfile.makedirs")
def makedirs(path: Any) -> None:
    """Creates `path` and any missing parents; an existing directory is fine."""
    os.makedirs(_local(path, "makedirs"), exist_ok=True)


@export("gfile.MkDir", "gfile.mkdir")
def mkdir(path: Any) -> None:
    """Creates one directory; `AlreadyExistsError` if it exists, `NotFoundError` if its
    parent does not."""
    path = _local(path, "mkdir")
    try:
        os.mkdir(path)
    except FileExistsError:
        raise errors.AlreadyExistsError(None, None, f"gfile.mkdir: {path} exists") from None
    except FileNotFoundError:
        raise _not_found("mkdir", os.path.dirname(path)) from None


@export("gfile.Glob", "gfile.glob")
def glob(pattern: Any) -> list[str]:
    """The paths matching a shell pattern (`*`, `?`, `[...]`), sorted."""
    return sorted(glob_lib.glob(_local(pattern, "glob")))


@export("gfile.Remove", "gfile.remove")
def remove(path: Any) -> None:
    """Deletes a file; `NotFoundError` when it is missing."""
    path = _local(path, "remove")
    try:
        os.remove(path)
    except FileNotFoundError:
        raise _not_found("remove", path) from None


@export("gfile.DeleteRecursively", "gfile.rmtree")
def rmtree(path: Any) -> None:
    """Deletes a directory and everything under it; `NotFoundError` when it is missing."""
    path = _local(path, "rmtree")
    if not os.path.isdir(path):
        raise _not_found("rmtree", path)
    shutil.rmtree(path)


def _check_target(what: str, source: str, target: str, overwrite: bool) -> None:
    if not os.path.exists(source):
        raise _not_found(what, source)
    if os.path.exists(target) and not overwrite:
        raise errors.AlreadyExistsError(
            None, None, f"gfile.{what}: {target} exists (pass overwrite=True to replace it)"
        )


@export("gfile.Rename", "gfile.rename")
def rename(oldname: Any, newname: Any, overwrite: bool = False) -> None:
    """Moves `oldname` to `newname`; `AlreadyExistsError` if it exists and not `overwrite`."""
    oldname, newname = _local(oldname, "rename"), _local(newname, "rename")
    _check_target("rename", oldname, newname, overwrite)
    os.replace(oldname, newname)


@export("gfile.Copy", "gfile.copy")
def copy(oldpath: Any, newpath: Any, overwrite: bool = False) -> None:
    """Copies file `oldpath` to `newpath`; `AlreadyExistsError` if it exists and not
    `overwrite`."""
    oldpath, newpath = _local(oldpath, "copy"), _local(newpath, "copy")
    _check_target("copy", oldpath, newpath, overwrite)
    shutil.copyfile(oldpath, newpath)


@export("gfile.Walk", "gfile.walk")
def walk(top: Any, topdown: bool = True) -> Iterator[tuple[str, list[str], list[str]]]:
    """(directory, subdirectory names, file names) for each directory under `top`."""
    yield from os.walk(_local(top, "walk"), topdown=topdown)


# TF1 `tf.gfile` spellings.
Copy, Exists, Glob, IsDirectory, ListDirectory = copy, exists, glob, isdir, listdir
MakeDirs, MkDir, Remove, Rename, DeleteRecursively, Walk = (
    makedirs,
    mkdir,
    remove,
    rename,
    rmtree,
    walk,
)
Open = FastGFile = GFile

__all__ = [
    "Copy",
    "DeleteRecursively",
    "Exists",
    "FastGFile",
    "GFile",
    "Glob",
    "IsDirectory",
    "ListDirectory",
    "MakeDirs",
    "MkDir",
    "Open",
    "Remove",
    "Rename",
    "Walk",
    "copy",
    "exists",
    "glob",
    "isdir",
    "listdir",
    "makedirs",
    "mkdir",
    "remove",
    "rename",
    "rmtree",
    "walk",
]
