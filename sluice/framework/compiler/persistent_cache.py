"""The persistent compilation cache: a step XLA compiled once on this machine is loaded, not
compiled again, by every later process that runs the same step.

JAX keeps compiled programs in a persistent cache when `jax_compilation_cache_dir` names a folder;
sluice gives its own steps such a cache by default, in the user's cache folder
(`$XDG_CACHE_HOME/sluice/xla`, else `~/.cache/sluice/xla`; `~/Library/Caches/sluice/xla` on
macOS, `%LOCALAPPDATA%\\sluice\\xla` on Windows), without changing what JAX does for the user's
own programs:

* It starts when a session first runs a step (not at `import sluice`), by giving JAX a cache
  object of ours (`SluiceCache`) that serves only what JAX compiles while a sluice session runs a
  step (`Scope`, entered by `Session.run`); every other program compiles as it would without
  sluice.
* A user who configured JAX's cache (`jax_compilation_cache_dir`, `JAX_COMPILATION_CACHE_DIR`)
  or turned it off (`jax_enable_compilation_cache=False`) keeps exactly that: sluice installs
  nothing, and its steps go wherever JAX's settings send them.
* `SessionConfig(compilation_cache=...)` and the environment variable `SLUICE_COMPILATION_CACHE`
  turn it off (`False`; "0", "off", "false", "no") or move it (a folder) (see `resolve`).

Entries live in `<folder>/<jaxlib version>-<machine>-<cpu>/`, one file per program, named by
JAX's key (a hash of the program, jaxlib's version, the XLA flags, the compile options and the
devices), so a program compiled for another build of JAX or another CPU model (a home folder
shared by machines) is never loaded here. The folder is untrusted input, as every file sluice
reads: each entry is written as `MAGIC + sha256(key + payload) + payload` (payload: JAX's
compressed executable) by a write that replaces the file at once, and read back only when its
digest matches its key; a truncated, corrupted or foreign entry (another key's program, another
tool's file) is deleted and the step compiles, never loaded. A folder that cannot be created,
read or written makes sluice say so once, in a log line, and compile as if there were no cache.
A folder another user owns or anyone may write to is not used at all (whoever can write it could
make this process run their code, as JAX's docs warn).

The cache holds at most `MAX_BYTES`: the first write of a process removes the least recently
used entries (by modification time, which a read refreshes) above that.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pathlib
import platform
import stat
import sys
import tempfile
import threading
import time
from typing import Any

import jax

try:  # JAX offers no public hook for the object behind its persistent cache (jax 0.4.30-0.10)
    from jax._src import compilation_cache as _jax_cache
    from jax._src.compilation_cache_interface import CacheInterface
except ImportError:  # pragma: no cover: a JAX without them runs every step uncached
    _jax_cache = None
    CacheInterface = object  # type: ignore[assignment,misc]

ENV_VAR = "SLUICE_COMPILATION_CACHE"
OFF = frozenset({"0", "off", "false", "no", "none"})
ON = frozenset({"1", "on", "true", "yes"})
MAGIC = b"SLUICEX1"
_DIGEST = 32  # sha256
MAX_BYTES = 2 * 2**30

_logger = logging.getLogger("sluice")


def validate(setting: Any) -> None:
    """Raises TypeError unless `setting` is a value `SessionConfig.compilation_cache` takes."""
    if setting is None or isinstance(setting, (bool, str, os.PathLike)):
        return
    raise TypeError(
        "SessionConfig(compilation_cache=...) takes None (the default: the environment variable "
        f"{ENV_VAR}, else the user's cache folder), True, False or a folder; got {setting!r}."
    )


def resolve(setting: Any = None) -> pathlib.Path | None:
    """The folder a session's compiled steps are cached in, or None for no cache.

    `setting` is `SessionConfig.compilation_cache`: None reads the environment variable
    `SLUICE_COMPILATION_CACHE` ("0", "off", "false", "no" or "none": no cache; "1", "on", "true",
    "yes" or unset: the default folder; anything else: a folder), True is the default folder
    (`default_directory`), False no cache, a str or path that folder (`~` expanded).

    >>> resolve(False) is None
    True
    >>> resolve("/tmp/my-cache").as_posix()
    '/tmp/my-cache'
    """
    validate(setting)
    if setting is None:
        text = os.environ.get(ENV_VAR, "").strip()
        if text.lower() in OFF:
            return None
        setting = True if not text or text.lower() in ON else text
    if setting is False:
        return None
    if setting is True:
        return default_directory()
    return pathlib.Path(os.path.expanduser(os.fspath(setting)))


def default_directory() -> pathlib.Path:
    """sluice's folder in the user's cache folder, by the platform's convention."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~\\AppData\\Local")
    elif sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return pathlib.Path(base) / "sluice" / "xla"


def build_tag() -> str:
    """The subfolder for this jaxlib and this machine: `<jaxlib version>-<machine>-<cpu>`, where
    cpu is a short hash of the processor's feature flags (XLA:CPU compiles for the host's CPU;
    JAX's key does not name it)."""
    import jaxlib

    return f"jaxlib{jaxlib.__version__}-{platform.machine() or 'unknown'}-{_cpu_fingerprint()}"


def _cpu_fingerprint() -> str:
    text = platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("flags", "Features", "model name")):
                    text += line
    except OSError:
        pass
    return hashlib.sha256(text.encode()).hexdigest()[:12]


class Store:
    """One cache folder: verified reads, atomic writes, and one warning when it cannot be used."""

    def __init__(self, root: pathlib.Path):
        self.root = root
        self.path = root / build_tag()
        self.usable: bool | None = None  # None until first used
        self.writable = True
        self.pruned = False
        self.warned = False
        self.dropped = 0  # bad entries removed in this process
        self._lock = threading.Lock()

    def _warn(self, what: str, err: Any) -> None:
        if not self.warned:
            self.warned = True
            _logger.warning(
                "sluice: the compilation cache at %s %s (%s): the steps it cannot serve are "
                "compiled. %s=off or SessionConfig(compilation_cache=False) turns it off.",
                self.path,
                what,
                err,
                ENV_VAR,
            )

    def ready(self) -> bool:
        if self.usable is None:
            with self._lock:
                if self.usable is None:
                    self.usable = self._prepare()
        return self.usable

    def _prepare(self) -> bool:
        try:
            for folder in (self.root, self.path):
                folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                unsafe = _unsafe(folder)
                if unsafe:
                    self._warn("is not used", unsafe)
                    return False
        except OSError as err:
            self._warn("cannot be created", err)
            return False
        return True

    def get(self, key: str) -> bytes | None:
        if not self.ready():
            return None
        file = self._file(key)
        try:
            data = file.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:  # unreadable: compiled, as a missing entry is
            self._warn("cannot be read", err)
            return None
        payload = data[len(MAGIC) + _DIGEST :]
        if data[: len(MAGIC)] != MAGIC or data[len(MAGIC) : len(MAGIC) + _DIGEST] != _digest(
            key, payload
        ):
            self._drop(file)
            return None
        try:
            os.utime(file)  # recently used: the last to be pruned
        except OSError:
            pass
        return payload

    def _drop(self, file: pathlib.Path) -> None:
        self.dropped += 1
        _logger.info("sluice: compilation cache entry %s is damaged or foreign: recompiling", file)
        try:
            file.unlink()
        except OSError:
            pass  # the fresh entry's write replaces it, or it stays unread

    def put(self, key: str, payload: bytes) -> None:
        if not (self.ready() and self.writable):
            return
        data = MAGIC + _digest(key, payload) + payload
        tmp = None
        try:
            if not self.pruned:
                self.pruned = True
                prune(self.root, MAX_BYTES - len(data))
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.path)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, self._file(key))
            tmp = None
        except OSError as err:
            self.writable = False
            self._warn("cannot be written", err)
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass

    def _file(self, key: str) -> pathlib.Path:
        if not key or "/" in key or "\\" in key or key.startswith("."):
            raise ValueError(f"not a compilation cache key: {key!r}")
        return self.path / key

    def entries(self) -> list[pathlib.Path]:
        """The entry files of this build (tests and benchmarks look at them)."""
        if not self.path.is_dir():
            return []
        return sorted(p for p in self.path.iterdir() if not p.name.startswith("."))


def _digest(key: str, payload: bytes) -> bytes:
    h = hashlib.sha256(MAGIC + key.encode() + b"\0")
    h.update(payload)
    return h.digest()


def _unsafe(folder: pathlib.Path) -> str | None:
    """Why `folder` must not be trusted (another user owns it, or anyone may write it), or None."""
    info = folder.stat()
    getuid = getattr(os, "getuid", None)
    if getuid is not None and info.st_uid != getuid():
        return f"it belongs to user id {info.st_uid}, not to this user"
    if info.st_mode & stat.S_IWOTH:
        return "any user may write to it"
    return None


def prune(root: pathlib.Path, limit: int) -> None:
    """Deletes the least recently used entries under `root` until they take at most `limit`
    bytes (leftover temporary files of an interrupted write count as entries)."""
    files = []
    for build in root.iterdir():
        if build.is_dir():
            for f in build.iterdir():
                try:
                    info = f.stat()
                except OSError:
                    continue
                if f.name.startswith(".tmp-") and time.time() - info.st_mtime < 3600:
                    continue  # another process may be writing it
                files.append((info.st_mtime, info.st_size, f))
    total = sum(size for _, size, _ in files)
    for _, size, f in sorted(files, key=lambda e: e[0]):
        if total <= limit:
            break
        try:
            f.unlink()
            total -= size
        except OSError:
            pass


_STORES: dict[pathlib.Path, Store] = {}
_stores_lock = threading.Lock()


def store(root: pathlib.Path) -> Store:
    """The one `Store` of folder `root` in this process."""
    found = _STORES.get(root)
    if found is None:
        with _stores_lock:
            found = _STORES.setdefault(root, Store(root))
    return found


class SluiceCache(CacheInterface):
    """JAX's persistent cache object while sluice's is on: entries of the `Store` of the session
    whose step is compiling on this thread (see `Scope`), and nothing for any other program.
    Should the user set `jax_compilation_cache_dir` afterwards, every program goes to JAX's own
    cache there, as it would have without sluice."""

    def __init__(self) -> None:
        self._path = default_directory()  # CacheInterface's field; JAX only logs it
        self._users: tuple[str, Any] | None = None  # (folder, JAX's cache object there)

    def _target(self) -> Any:
        folder = jax.config.jax_compilation_cache_dir
        if folder:
            if self._users is None or self._users[0] != folder:
                if _saved_min_time is not None:  # the user's threshold, not sluice's
                    jax.config.update("jax_persistent_cache_min_compile_time_secs", _saved_min_time)
                self._users = (folder, _jax_cache.get_file_cache(folder)[0])
            return self._users[1]
        return getattr(_local, "store", None)

    def get(self, key: str) -> bytes | None:
        target = self._target()
        return target.get(key) if target is not None else None

    def put(self, key: str, value: bytes) -> None:
        target = self._target()
        if target is not None:
            target.put(key, value)


_local = threading.local()
_installed: SluiceCache | None = None
_saved_min_time: float | None = None
_install_lock = threading.Lock()


def _ensure_installed() -> bool:
    """Gives JAX our cache object unless the user configured JAX's cache; True if ours serves."""
    global _installed
    if _jax_cache is None:
        return False
    current = getattr(_jax_cache, "_cache", None)
    if _installed is not None and current is _installed:
        return True
    with _install_lock:
        current = getattr(_jax_cache, "_cache", None)
        if _installed is not None and current is _installed:
            return True
        if (
            current is not None
            or jax.config.jax_compilation_cache_dir
            or not jax.config.jax_enable_compilation_cache
        ):
            return False  # the user's own JAX cache (or none), untouched
        _installed = _installed or SluiceCache()
        _jax_cache._cache = _installed
        # JAX writes only programs that took a second to compile; a sluice step's load is worth it
        # from a few milliseconds (programs outside a sluice step are refused by `put` anyway)
        global _saved_min_time
        _saved_min_time = jax.config.jax_persistent_cache_min_compile_time_secs
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        return True


class Scope:
    """While entered (`with scope:`), programs JAX compiles on this thread are cached in
    `root` (None: not cached). A session holds one and enters it around each run; scopes nest."""

    __slots__ = ("store",)

    def __init__(self, root: pathlib.Path | None):
        self.store = store(root) if root is not None else None

    def __enter__(self) -> Scope:
        saved = _local.__dict__.setdefault("saved", [])
        saved.append(getattr(_local, "store", None))
        _local.store = self.store if self.store is None or _ensure_installed() else None
        return self

    def __exit__(self, *exc: Any) -> None:
        _local.store = _local.saved.pop()


def active_store() -> Store | None:
    """The `Store` programs compiling on this thread go to (None outside a cached step)."""
    return getattr(_local, "store", None)
