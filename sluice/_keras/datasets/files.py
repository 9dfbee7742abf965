"""Where Keras keeps its data sets, and how a missing file gets there.

A file is looked up in the Keras cache, `$KERAS_HOME/datasets` or `~/.keras/datasets` (the very
files Keras downloads, so a machine that ran Keras once needs no network). A file found there
is used as it is (it may be a smaller local file of the same format); a missing one is
downloaded from Keras's URL with a timeout, checked against Keras's published hash while it is
written to a temporary file, then renamed into place, so an interrupted download never leaves a
half file behind. Offline, `DownloadError` names the URL and the path to put the file at.

Archives are extracted only after every member has been checked to be a plain file or folder
inside the target folder.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request

from sluice._export import export

__all__ = ["DownloadError", "cache_dir", "download", "extract_tar", "get_file", "keras_home"]

TIMEOUT_SECONDS = 30.0
_CHUNK = 1 << 20


@export("datasets.DownloadError")
class DownloadError(OSError):
    """A data set file is neither in the Keras cache nor downloadable."""


def keras_home() -> str:
    """`$KERAS_HOME` if set, else `~/.keras` (Keras's rule)."""
    return os.path.expanduser(os.environ.get("KERAS_HOME") or os.path.join("~", ".keras"))


def cache_dir(subdir: str = "datasets") -> str:
    """The folder data set files live in: `keras_home()/subdir`."""
    return os.path.join(keras_home(), subdir)


def _check_name(fname: str) -> None:
    if not fname or fname in ("..", ".") or fname != os.path.basename(fname):
        raise ValueError(
            f"A data set file name must be a plain name inside the cache folder, got {fname!r}."
        )


def get_file(
    fname: str, origin: str, file_hash: str | None = None, cache_subdir: str = "datasets"
) -> str:
    """The path of `fname` in the Keras cache, downloaded from `origin` first when missing.

    Args:
      fname: the file's name in the cache folder (no folders).
      origin: the URL Keras downloads it from.
      file_hash: Keras's sha256 (64 hex digits) or md5 (32) of the file, checked on download.
      cache_subdir: the folder under the Keras home, "datasets" or e.g. "datasets/fashion-mnist".

    Raises:
      DownloadError: the file is missing and could not be downloaded (the message names the
        URL and the cache path).
      ValueError: the downloaded file does not match `file_hash`.
    """
    _check_name(fname)
    folder = cache_dir(cache_subdir)
    path = os.path.join(folder, fname)
    if os.path.isfile(path):
        return path
    download(origin, path, file_hash)
    return path


def _hasher(file_hash: str | None):
    if file_hash is None:
        return None
    return hashlib.sha256() if len(file_hash) == 64 else hashlib.md5()


def _open_url(url: str):
    """The response for `url` (a function of its own so tests can replace it: no network)."""
    return urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS)  # noqa: S310 (Keras's URLs)


def download(url: str, path: str, file_hash: str | None = None) -> None:
    """Writes `url` to `path` atomically, checking `file_hash` (sha256 or md5) on the way."""
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise DownloadError(
            f"Cannot create the Keras cache folder {folder!r} ({e}) for {url}; "
            "set KERAS_HOME to a writable folder."
        ) from e
    hasher = _hasher(file_hash)
    handle, temporary = tempfile.mkstemp(prefix=".download-", dir=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            try:
                with _open_url(url) as response:
                    while chunk := response.read(_CHUNK):
                        out.write(chunk)
                        if hasher is not None:
                            hasher.update(chunk)
            except (urllib.error.URLError, OSError, ValueError) as e:
                raise DownloadError(
                    f"Could not download {url} ({getattr(e, 'reason', e)}), and it is not in "
                    f"the Keras cache at {path}. Copy the file Keras downloads there (or set "
                    "KERAS_HOME), or connect to the network."
                ) from e
            out.flush()
            os.fsync(out.fileno())
        if hasher is not None and hasher.hexdigest() != file_hash.lower():
            raise ValueError(
                f"The file downloaded from {url} has hash {hasher.hexdigest()}, not "
                f"Keras's {file_hash}: it is corrupted or not the expected file."
            )
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def _inside(folder: str, name: str, root: str | None = None) -> bool:
    """Whether `folder/name` resolves to a path inside `root` (default: `folder`)."""
    root = root or folder
    target = os.path.realpath(os.path.join(folder, name))
    return os.path.commonpath([target, root]) == root


def extract_tar(archive: str, destination: str, folder: str | None = None) -> None:
    """Extracts `archive` into `destination`, refusing links, devices and any member whose path
    leads outside `destination`, or outside `destination/folder` when `folder` is given (then
    nothing is extracted). The folders and files the archive holds at its top replace those of
    the same names in `destination`: `folder` keeps a tampered archive in a shared folder (the
    Keras cache) from replacing the other data sets there.

    The members go to a temporary folder beside `destination` first and are moved into place
    together, so an interrupted extraction leaves no partial data set behind.

    Raises:
      ValueError: the archive holds a member that is not a plain file or folder inside
        `destination` (`destination/folder`), or is not a tar file.
    """
    os.makedirs(destination, exist_ok=True)
    destination = os.path.realpath(destination)
    root = os.path.realpath(os.path.join(destination, folder)) if folder else destination
    try:
        tar = tarfile.open(archive)
    except tarfile.TarError as e:
        raise ValueError(f"{archive} is not a readable tar archive ({e}).") from e
    with tar:
        members = tar.getmembers()
        for member in members:
            plain = member.isfile() or member.isdir()
            if not plain or not _inside(destination, member.name, root):
                raise ValueError(
                    f"Refusing to extract {archive}: its member {member.name!r} is "
                    f"not a plain file or folder inside {root}."
                )
        staging = tempfile.mkdtemp(prefix=".extract-", dir=destination)
        try:
            if hasattr(tarfile, "data_filter"):  # Python >= 3.10.12 / 3.11.4: a second guard
                tar.extractall(staging, members=members, filter="data")
            else:
                tar.extractall(staging, members=members)  # noqa: S202 (members checked above)
            for top in os.listdir(staging):
                target = os.path.join(destination, top)
                if os.path.isdir(target) and not os.path.islink(target):
                    shutil.rmtree(target)
                os.replace(os.path.join(staging, top), target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
