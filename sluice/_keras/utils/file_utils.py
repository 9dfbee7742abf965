"""`get_file` (`sl.utils`): a file from a URL, kept in the Keras cache, checked against its hash
and, if asked, extracted, as Keras 3's `keras.utils.get_file`.

The cache is `cache_dir/cache_subdir`: by default `$KERAS_HOME/datasets` or
`~/.keras/datasets` (`/tmp/.keras` when the home folder is read-only). A file already there is
used as it is, unless `force_download`, or a `file_hash` it does not match (then it is fetched
again). A download goes to a temporary file beside its target and is renamed into place only
once complete and checked, so an interrupted or corrupted download leaves nothing behind.

`origin` may be any URL `urllib` opens (http, https, ftp, `file://`) or a local path.

Archives are untrusted input: a member whose path is absolute, climbs out with `..`, goes
through a link, or is a link (symbolic or hard) to a place outside the extraction folder, or a
device, is skipped with a warning naming it, as Keras skips it; the other members are
extracted.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import warnings
import zipfile
from collections.abc import Iterator
from typing import Any

from sluice._export import export
from sluice._keras import config
from sluice._keras.utils import io_utils

__all__ = ["extract_archive", "get_file", "hash_file", "validate_file"]

_CHUNK = 1 << 16


def _hasher(algorithm: str, file_hash: str | None = None) -> Any:
    """Keras's rule: "sha256", or "auto" with a 64-digit hash, is sha256; anything else md5."""
    if algorithm == "sha256" or (
        algorithm == "auto" and file_hash is not None and len(file_hash) == 64
    ):
        return hashlib.sha256()
    if algorithm not in ("md5", "auto"):
        raise ValueError(
            f"get_file: hash_algorithm must be 'md5', 'sha256' or 'auto', got {algorithm!r}."
        )
    return hashlib.md5()  # noqa: S324 (Keras's legacy hashes; not a security boundary)


def hash_file(fpath: str, algorithm: str = "sha256", chunk_size: int = _CHUNK) -> str:
    """The hex digest of the file `fpath` ("sha256" or "md5")."""
    hasher = _hasher(algorithm) if isinstance(algorithm, str) else algorithm
    with open(fpath, "rb") as f:
        while chunk := f.read(chunk_size):
            hasher.update(chunk)
    return hasher.hexdigest()


def validate_file(fpath: str, file_hash: str, algorithm: str = "auto") -> bool:
    """Whether the file `fpath` has the sha256 or md5 `file_hash` ("auto": sha256 for a
    64-digit hash, else md5)."""
    return hash_file(fpath, _hasher(algorithm, file_hash)) == str(file_hash).lower()


def _origin_name(origin: str) -> str:
    """The file name at the end of `origin`'s path (a URL or a local path)."""
    path = urllib.parse.urlsplit(origin).path if "://" in origin else origin
    name = os.path.basename(path.rstrip("/\\") if path not in ("/", "") else "")
    if not name or name in (os.curdir, os.pardir) or os.path.splitdrive(name)[0]:
        raise ValueError(
            f"Can't parse the file name from the origin provided: '{origin}'. Please specify "
            "the `fname` argument."
        )
    return name


def _fetch(origin: str, target: str, file_hash: str | None, algorithm: str) -> None:
    """Writes `origin` to `target` through a temporary file, checking `file_hash`."""
    folder = os.path.dirname(target)
    handle, temporary = tempfile.mkstemp(prefix=".download-", dir=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            try:
                if "://" not in origin:  # a local path
                    with open(origin, "rb") as source:
                        shutil.copyfileobj(source, out, _CHUNK)
                else:
                    with urllib.request.urlopen(origin) as response:  # noqa: S310 (the user's URL)
                        shutil.copyfileobj(response, out, _CHUNK)
            except urllib.error.HTTPError as e:
                raise OSError(f"URL fetch failure on {origin}: {e.code} -- {e.msg}") from e
            except urllib.error.URLError as e:
                raise OSError(f"URL fetch failure on {origin}: {e.errno} -- {e.reason}") from e
            except OSError as e:
                raise OSError(f"URL fetch failure on {origin}: {e.errno} -- {e.strerror}") from e
        if file_hash is not None and not validate_file(temporary, file_hash, algorithm):
            raise ValueError(
                f"Incomplete or corrupted file detected: the {algorithm} hash of the file from "
                f"{origin} does not match the provided value of {file_hash}."
            )
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


@export("utils.get_file")
def get_file(
    fname: str | None = None,
    origin: str | None = None,
    untar: bool = False,
    md5_hash: str | None = None,
    file_hash: str | None = None,
    cache_subdir: str = "datasets",
    hash_algorithm: str = "auto",
    extract: bool = False,
    archive_format: Any = "auto",
    cache_dir: str | None = None,
    force_download: bool = False,
) -> str:
    """The path of a file from `origin`, downloaded into the Keras cache unless already there.

    Args:
      fname: the file's name in the cache (default: the last part of `origin`'s path); with
        `extract`, a name without an extension names the extraction folder.
      origin: the URL (http, https, ftp, `file://`) or local path of the file.
      untar: deprecated: `extract=True` with `archive_format="tar"`.
      md5_hash: deprecated: `file_hash` with `hash_algorithm="md5"`.
      file_hash: the expected sha256 or md5 hex digest; a cached file that does not match is
        fetched again, a fetched one that does not match is an error.
      cache_subdir: the folder under `cache_dir` (an absolute path is used as is).
      hash_algorithm: "md5", "sha256" or "auto" (sha256 for a 64-digit hash, else md5).
      extract: extract the archive (tar, tar.gz, tar.bz2, zip) and return the folder.
      archive_format: "auto" (tar, then zip), "tar", "zip", a list of them, or None.
      cache_dir: the cache folder (default `$KERAS_HOME`, else `~/.keras`).
      force_download: fetch the file even when it is cached.

    Returns:
      The path of the file, or of the extraction folder with `extract`.

    Raises:
      ValueError: no `origin`, an `fname` with folders in it, or a hash that does not match.
      OSError: the file could not be fetched ("URL fetch failure on ...").

    >>> import pathlib
    >>> _ = pathlib.Path("hello.txt").write_text("hello")
    >>> path = sl.utils.get_file(origin=pathlib.Path("hello.txt").resolve().as_uri(),
    ...                          cache_dir="cache")
    Downloading data from file://...hello.txt
    >>> path.endswith(os.path.join("cache", "datasets", "hello.txt"))
    True
    """
    if origin is None:
        raise ValueError('Please specify the "origin" argument (URL of the file to download).')
    origin = os.fspath(origin)
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    _hasher(hash_algorithm, file_hash)  # an unknown algorithm fails before any download
    base = os.path.expanduser(
        os.fspath(cache_dir) if cache_dir is not None else config.keras_home()
    )
    if not os.access(base, os.W_OK) and os.path.exists(base):
        base = os.path.join(tempfile.gettempdir(), ".keras")
    folder = os.path.join(base, os.fspath(cache_subdir))
    os.makedirs(folder, exist_ok=True)

    given_name = os.fspath(fname) if fname else None
    if given_name is None:
        name = _origin_name(origin)
    else:
        name = given_name
        if os.sep in name or (os.altsep and os.altsep in name) or name in (".", ".."):
            raise ValueError(
                "Paths are no longer accepted as the `fname` argument. To specify the file's "
                f"parent directory, use the `cache_dir` argument. Received: fname={name}"
            )

    extract = extract or untar
    if extract:
        if given_name is not None and "." in name:
            target = os.path.join(folder, name)
            extraction_dir = os.path.join(folder, name[: name.find(".")] + "_extracted")
        else:
            target = os.path.join(folder, name + "_archive")
            extraction_dir = os.path.join(folder, name)
    else:
        target = os.path.join(folder, name)

    download = force_download or not os.path.exists(target)
    if (
        not download
        and file_hash is not None
        and not validate_file(target, file_hash, hash_algorithm)
    ):
        io_utils.print_msg(
            "A local file was found, but it seems to be incomplete or outdated because the "
            f"{hash_algorithm} file hash does not match the original value of {file_hash} so "
            "we will re-download the data."
        )
        download = True
    if download:
        io_utils.print_msg(f"Downloading data from {origin}")
        _fetch(origin, target, file_hash, hash_algorithm)

    if extract:
        if not extract_archive(target, extraction_dir, "tar" if untar else archive_format):
            warnings.warn(f"Could not extract archive {target}.", stacklevel=2)
        return extraction_dir
    return target


# -- archives -------------------------------------------------------------------------------------
def _inside(root: str, path: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # another drive
        return False


def _resolved(root: str, name: str) -> str | None:
    """The real path of member `name` extracted under the real folder `root` (links already
    extracted are followed), or None when it is outside `root`."""
    if os.path.isabs(name) or os.path.splitdrive(name)[0]:
        return None
    path = os.path.realpath(os.path.join(root, name))
    return path if _inside(root, path) else None


def _under_a_broken_link(root: str, name: str) -> bool:
    """Whether a folder on the way to member `name` is a link to no folder (a link whose
    target was skipped): writing there would fail, so the member is skipped."""
    path = root
    for part in os.path.normpath(name).split(os.sep)[:-1]:
        path = os.path.join(path, part)
        if os.path.islink(path) and not os.path.isdir(path):
            return True
    return False


def _safe_tar_members(tar: tarfile.TarFile, root: str) -> Iterator[tarfile.TarInfo]:
    """The members of `tar` that stay inside `root`, checked one by one as they are extracted
    (so a link extracted earlier is followed); warns about each one skipped."""
    for member in tar.getmembers():
        safe = _resolved(root, member.name) is not None and not _under_a_broken_link(
            root, member.name
        )
        if safe and member.issym():  # relative to the link's own folder
            base = os.path.realpath(os.path.dirname(os.path.join(root, member.name)))
            link = os.path.realpath(os.path.join(base, member.linkname))
            safe = not os.path.isabs(member.linkname) and _inside(root, link)
        elif safe and member.islnk():  # a hard link names its target from the archive's root
            safe = _resolved(root, member.linkname) is not None
        elif safe and not (member.isfile() or member.isdir()):
            safe = False  # devices and fifos
        if safe:
            yield member
        else:
            warnings.warn(
                f"Skipping invalid path during archive extraction: '{member.name}'.", stacklevel=4
            )


def _safe_zip_members(archive: zipfile.ZipFile, root: str) -> Iterator[zipfile.ZipInfo]:
    for info in archive.infolist():
        if _resolved(root, info.filename) is not None:
            yield info
        else:
            warnings.warn(
                f"Skipping invalid path during archive extraction: '{info.filename}'.",
                stacklevel=4,
            )


def extract_archive(file_path: str, path: str = ".", archive_format: Any = "auto") -> bool:
    """Extracts the tar or zip archive `file_path` into the folder `path`, skipping (with a
    warning) every member that would land outside it; True when the file was an archive of
    one of the formats in `archive_format` ("auto": tar then zip; None: none).

    On any error while extracting (a corrupt archive, a full disk, an interrupt), `path` is
    removed and the error raised again.
    """
    if archive_format is None:
        return False
    formats = ["tar", "zip"] if archive_format == "auto" else archive_format
    formats = [formats] if isinstance(formats, str) else list(formats)
    file_path, path = os.fspath(file_path), os.fspath(path)
    for kind in formats:
        if kind not in ("tar", "zip"):
            raise NotImplementedError(f"extract_archive: unknown archive format {kind!r}.")
        if kind == "tar" and tarfile.is_tarfile(file_path):
            opener = tarfile.open
        elif kind == "zip" and zipfile.is_zipfile(file_path):
            opener = zipfile.ZipFile
        else:
            continue
        os.makedirs(path, exist_ok=True)
        root = os.path.realpath(path)
        try:
            with opener(file_path) as archive:
                if isinstance(archive, zipfile.ZipFile):
                    archive.extractall(root, members=_safe_zip_members(archive, root))
                elif hasattr(tarfile, "data_filter"):  # Python's own guard as well
                    archive.extractall(
                        root, members=_safe_tar_members(archive, root), filter="data"
                    )
                else:
                    archive.extractall(root, members=_safe_tar_members(archive, root))  # noqa: S202
        except BaseException:  # a corrupt archive, a full disk, an interrupt: no partial folder
            shutil.rmtree(path, ignore_errors=True)
            raise
        return True
    return False
