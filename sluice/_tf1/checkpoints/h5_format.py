"""The checkpoint file: one HDF5 file per checkpoint, readable with h5py alone (no pickle).

Layout, format_version 1:

    /                           attrs: format = b"sluice.checkpoint", format_version = 1,
                                       num_variables, global_step (only if saved with a step)
    /variables/<graph name>     one dataset per variable at its graph name ("dense/kernel" is
                                /variables/dense/kernel; a variable whose name is also the
                                scope of others, such as "w" beside "w/ExponentialMovingAverage",
                                is at /variables/w/.self, since HDF5 cannot hold a dataset and a
                                group at one path): C order, contiguous, uncompressed;
                                attrs: dtype (NumPy name as ASCII bytes), shape (int64
                                vector), crc32 (zlib CRC-32 of the little-endian bytes of the
                                stored array)
    /random_state/op_names      strings (fixed-length UTF-8 bytes): the random ops the session
                                has run ...
    /random_state/counts        int64: ... and how many times each (the session's RNG state);
                                both with a crc32 attr (names: of b"\\0".join(utf-8 names))

bfloat16 values are stored as uint16 (same bits) with attr dtype = b"bfloat16". Files are written
with HDF5 1.10 metadata (`libver="v110"`), whose superblock and object headers carry checksums,
and without variable-length data (so no global heap, which HDF5 does not checksum): damage to any
metadata is detected by HDF5 and damage to any value by its crc32. Files of earlier sluice
versions (string attributes of variable length, no `shape` attribute, variable-length op names)
are read too.

    >>> with sl.name_scope("dense"):
    ...     dense_kernel = sl.Variable(np.eye(2, dtype="float32"), name="kernel")
    >>> with sl.Session() as sess:
    ...     sess.run(dense_kernel.initializer)
    ...     path = sl.train.Saver().save(sess, "model", global_step=100)
    >>> with h5py.File(path, "r") as f:
    ...     kernel = f["variables/dense/kernel"][()]
    ...     step = int(f.attrs["global_step"])
    >>> kernel, step
    (array([[1., 0.],
           [0., 1.]], dtype=float32), 100)

Reading treats the file as untrusted input (`h5_checks`): everything is checked before a value
is read. This module imports only NumPy, h5py and the standard library; errors are
`CheckpointError`s whose `kind` says which `sl.errors` class the caller raises.
"""

from __future__ import annotations

import dataclasses
import io
import os
import zlib
from typing import Any

import h5py
import numpy as np

from sluice._tf1.checkpoints import atomic, h5_checks, regular_file
from sluice._tf1.checkpoints.h5_checks import CheckpointError, damaged, hdf5_errors  # noqa: F401

FORMAT = "sluice.checkpoint"
FORMAT_VERSION = 1
SUFFIX = ".h5"
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_LIBVER = ("v110", "v110")
_MAX_VARIABLES = 2**31


@dataclasses.dataclass
class Checkpoint:
    """What `read_checkpoint` returns."""

    path: str
    arrays: dict[str, np.ndarray]
    global_step: int | None
    random_counts: dict[str, int]


# -- writing --------------------------------------------------------------------------------------
# The last path component of a variable stored below the group its name also names.
_SELF = ".self"


def check_names(names: list[str]) -> None:
    """Raises ValueError for a name that cannot be stored: empty, absolute, with an empty
    component, or with the component `.self` (which the file layout reserves)."""
    for name in names:
        if not name or name.startswith("/") or "//" in name or name.endswith("/"):
            raise ValueError(f"{name!r} cannot be a checkpoint name.")
        if _SELF in name.split("/"):
            raise ValueError(
                f"{name!r} cannot be a checkpoint name: the path component "
                f"{_SELF!r} is reserved by the checkpoint format."
            )


def _storage_paths(names: list[str]) -> dict[str, str]:
    """Each name's dataset path: the name, or `<name>/.self` when other names lie below it."""
    scopes = {
        "/".join(parts[:i]) for parts in (n.split("/") for n in names) for i in range(1, len(parts))
    }
    return {n: f"{n}/{_SELF}" if n in scopes else n for n in names}


def _variable_name(stored_path: str) -> str:
    parts = stored_path.split("/")
    return "/".join(parts[:-1]) if len(parts) > 1 and parts[-1] == _SELF else stored_path


def write_checkpoint(
    path: str,
    arrays: dict[str, Any],
    global_step: int | None = None,
    random_counts: dict[str, int] | None = None,
) -> None:
    """Writes one checkpoint file crash-safely (temporary file, fsync, rename)."""
    names = sorted(arrays)
    check_names(names)
    ops = sorted(random_counts or {})

    # Built in memory, then written with Python's file I/O: HDF5 crashes (SIGSEGV) when a write
    # of its own fails for a full disk; Python raises OSError there, naming the path.
    image = io.BytesIO()
    with h5py.File(image, "w", libver=_LIBVER) as f:
        # Fixed-length strings live in checksummed object headers; variable-length ones
        # would live in a global heap, which HDF5 neither checksums nor parses safely.
        f.attrs["format"] = np.bytes_(FORMAT)
        f.attrs["format_version"] = FORMAT_VERSION
        f.attrs["num_variables"] = len(names)
        if global_step is not None:
            f.attrs["global_step"] = np.int64(global_step)
        group = f.create_group("variables")
        paths = _storage_paths(names)
        for name in names:
            value = np.asarray(arrays[name])
            stored = _storable(value)
            ds = group.create_dataset(paths[name], data=stored)
            ds.attrs["dtype"] = np.bytes_(value.dtype.name)
            ds.attrs["shape"] = np.array(value.shape, np.int64)
            ds.attrs["crc32"] = np.uint32(_crc(stored))
        state = f.create_group("random_state")
        encoded = [o.encode("utf-8") for o in ops]
        width = max([1] + [len(e) for e in encoded])
        ds = state.create_dataset("op_names", data=np.array(encoded, dtype=f"S{width}"))
        ds.attrs["crc32"] = np.uint32(_crc_names(ops))
        counts = np.array([int(random_counts[o]) for o in ops], np.int64)
        ds = state.create_dataset("counts", data=counts)
        ds.attrs["crc32"] = np.uint32(_crc(counts))
    atomic.write_bytes_atomically(path, image.getbuffer())


def _storable(value: np.ndarray) -> np.ndarray:
    if value.dtype.name == "bfloat16":
        return value.view(np.uint16)
    return np.asarray(value, order="C")


def _dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes  # a JAX dependency; only bfloat16 checkpoints need it

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _crc(array: np.ndarray) -> int:
    little = np.asarray(array, dtype=array.dtype.newbyteorder("<"), order="C")
    return zlib.crc32(little.tobytes())


def _crc_names(names: list[str]) -> int:
    return zlib.crc32(b"\0".join(n.encode("utf-8") for n in names))


# -- reading --------------------------------------------------------------------------------------
def resolve_path(path: str) -> str:
    """The checkpoint file for `path` (a file, or a prefix that lacks ".h5")."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise CheckpointError(
            "invalid",
            f"{path!r} is a directory, not a checkpoint file. Pass a checkpoint file such as "
            f"sl.train.latest_checkpoint({path!r}) returns "
            f"(e.g. '{os.path.join(path, 'model-100.h5')}').",
        )
    if _is_regular_file(path):
        return path
    if not path.endswith(SUFFIX) and _is_regular_file(path + SUFFIX):
        return path + SUFFIX
    raise CheckpointError(
        "not_found",
        f"Checkpoint file {path!r} does not exist. Expected an .h5 file written by "
        "Saver.save; sl.train.latest_checkpoint(directory) returns the newest one.",
    )


def _is_regular_file(path: str) -> bool:
    """Whether a file is at `path`; a FIFO, device or socket there (reading one could block
    forever) is refused, naming it."""
    try:
        regular_file.check_regular(path)
    except FileNotFoundError:
        return False
    except regular_file.NotRegularFileError as err:
        raise CheckpointError("invalid", f"Cannot read the checkpoint: {err}") from None
    except OSError:
        return True  # unreadable (permissions): opening it reports why
    return True


class _OpenCheckpoint:
    """An open, checked checkpoint file: its size, root group and variable datasets."""

    def __init__(self, path: str):
        self.path = path
        # checked again on the opened file: one swapped for a FIFO since resolve_path is refused
        with os.fdopen(regular_file.open_regular(path), "rb") as fh:
            signature = fh.read(len(_HDF5_SIGNATURE))
            self.size = os.fstat(fh.fileno()).st_size
            if signature != _HDF5_SIGNATURE:
                raise CheckpointError(
                    "invalid",
                    f"{path!r} is not a checkpoint: it is not an HDF5 file (a sluice checkpoint "
                    "is an .h5 file written by Saver.save).",
                )
            try:  # HDF5 opens the file checked, not whatever the path names by now
                self.file = h5py.File(regular_file.same_file(fh.fileno(), path), "r")
            except h5_checks.HDF5_ERRORS as err:
                raise CheckpointError(
                    "data_loss",
                    f"Checkpoint {path!r} is corrupt or truncated: HDF5 cannot open it ({err}). "
                    "Restore an earlier checkpoint of its directory.",
                ) from None
        try:
            self._check_header()
            self.variables = self._variables()
        except BaseException:
            self.file.close()
            raise

    def __enter__(self) -> _OpenCheckpoint:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.file.close()

    def _check_header(self) -> None:
        f, path = self.file, self.path
        if h5_checks.attribute(f, "format", path, "the file", "text") != FORMAT:
            raise CheckpointError(
                "invalid",
                f"{path!r} is an HDF5 file but not a sluice checkpoint (its 'format' attribute "
                f"is not {FORMAT!r}); checkpoints are written by sl.train.Saver.save.",
            )
        # a version sluice could one day write is "unimplemented"; any other is damage
        version = h5_checks.integer_attribute(f, "format_version", path, "the file", 0, 1000)
        if version != FORMAT_VERSION:
            raise CheckpointError(
                "unimplemented",
                f"Checkpoint {path!r} has format version {version}; this sluice reads "
                f"version {FORMAT_VERSION}.",
            )

    def _variables(self) -> dict[str, tuple[h5py.Dataset, np.dtype, str, tuple]]:
        """name -> (dataset, stored dtype, dtype name, shape), every one checked."""
        group = h5_checks.hard_group(self.file, "variables", self.path, required=True)
        found = {}
        for stored_path, ds in h5_checks.datasets_under(group, self.path).items():
            name = _variable_name(stored_path)
            what = f"the variable {name!r}"
            stored, shape = h5_checks.stored_layout(ds, self.path, what, self.size)
            dtype_name = h5_checks.declared_dtype(ds, self.path, what, stored)
            h5_checks.check_shape_attribute(ds, self.path, what, shape)
            found[name] = (ds, stored, dtype_name, shape)
        listed = h5_checks.integer_attribute(
            self.file, "num_variables", self.path, "the file", 0, _MAX_VARIABLES
        )
        if listed != len(found):
            raise damaged(self.path, "the file", f"lists {listed} variables but holds {len(found)}")
        return found

    def specs(self) -> dict[str, tuple[np.dtype, tuple]]:
        return {name: (_dtype(d), shape) for name, (_, _, d, shape) in self.variables.items()}

    def read_variable(self, name: str) -> np.ndarray:
        ds, stored, dtype_name, shape = self.variables[name]
        what = f"the variable {name!r}"
        values = _read_verified(ds, self.path, what, stored, shape)
        return values.view(_dtype(dtype_name)) if dtype_name == "bfloat16" else values

    def global_step(self) -> int | None:
        return h5_checks.integer_attribute(
            self.file, "global_step", self.path, "the file", -(2**63), 2**64, required=False
        )

    def random_counts(self) -> dict[str, int]:
        state = h5_checks.hard_group(self.file, "random_state", self.path, required=False)
        if state is None:
            return {}
        datasets = {}
        for key in ("op_names", "counts"):
            with hdf5_errors(self.path, f"/random_state/{key}"):
                link = state.get(key, getlink=True)
            if not isinstance(link, h5py.HardLink) or not isinstance(state[key], h5py.Dataset):
                raise damaged(self.path, f"/random_state/{key}", "is missing or not a dataset")
            datasets[key] = state[key]
        names_ds, counts_ds = datasets["op_names"], datasets["counts"]
        n = h5_checks.text_dataset(names_ds, self.path, "random_state/op_names", self.size)
        stored, shape = h5_checks.stored_layout(
            counts_ds, self.path, "random_state/counts", self.size
        )
        if stored.kind not in "iu" or shape != (n,):
            raise damaged(
                self.path,
                "random_state/counts",
                f"is {stored} of shape {list(shape)}, not {n} integers (one per op name)",
            )
        with hdf5_errors(self.path, "random_state/op_names"):
            raw = names_ds[()]
            names = [bytes(v).decode("utf-8") if not isinstance(v, str) else v for v in raw]
        _verify_crc(names_ds, self.path, "random_state/op_names", _crc_names(names))
        counts = _read_verified(counts_ds, self.path, "random_state/counts", stored, shape)
        return {n: int(c) for n, c in zip(names, counts)}


def _read_verified(
    ds: h5py.Dataset, path: str, what: str, stored: np.dtype, shape: tuple
) -> np.ndarray:
    """Reads a checked dataset into an array of its checked size and verifies its crc32."""
    values = np.empty(shape, stored)  # at most the file's size: h5_checks.check_storage
    with hdf5_errors(path, what):
        if values.size:
            ds.read_direct(values)
    _verify_crc(ds, path, what, _crc(values))
    return values.astype(stored.newbyteorder("="), copy=False)


def _verify_crc(ds: h5py.Dataset, path: str, what: str, actual: int) -> None:
    crc = h5_checks.integer_attribute(ds, "crc32", path, what, 0, 2**32 - 1)
    if actual != crc:
        raise CheckpointError(
            "data_loss",
            f"Checkpoint {path!r} is corrupt: {what} fails its checksum (crc32 stored "
            f"{crc:#010x}, computed {actual:#010x}). Restore an earlier checkpoint of its "
            "directory.",
        )


def _reading(path: str) -> _OpenCheckpoint:
    """Opens and checks the checkpoint at `path` (a file or a prefix)."""
    path = resolve_path(path)
    with hdf5_errors(path, "the file"):
        return _OpenCheckpoint(path)


def describe(path: str) -> dict[str, tuple[np.dtype, tuple]]:
    """name -> (dtype, shape) of every variable in the checkpoint at `path`."""
    with _reading(path) as checkpoint:
        return checkpoint.specs()


def is_sluice_checkpoint(path: str) -> bool:
    """Whether `path` is a regular file (not a symlink) that starts like a sluice checkpoint:
    an HDF5 file whose `format` attribute is "sluice.checkpoint". Never raises."""
    try:
        with os.fdopen(regular_file.open_regular(path, follow_symlinks=False), "rb") as fh:
            if fh.read(len(_HDF5_SIGNATURE)) != _HDF5_SIGNATURE:
                return False
            with h5py.File(regular_file.same_file(fh.fileno(), path), "r") as f:
                return h5_checks.attribute(f, "format", path, "the file", "text") == FORMAT
    except (CheckpointError, *h5_checks.HDF5_ERRORS):  # OSError among them
        return False


def _mismatch(path: str, found: dict, expected: dict, allow_extra: bool) -> CheckpointError | None:
    missing = sorted(set(expected) - set(found))
    extra = [] if allow_extra else sorted(set(found) - set(expected))
    lines = []
    if missing:
        lines.append(f"  in the graph but not in the checkpoint: {missing}")
    if extra:
        lines.append(
            f"  in the checkpoint but not in the graph: {extra} (pass var_list= to Saver "
            "to restore a subset)"
        )
    for name in sorted(set(found) & set(expected)):
        (dtype, shape), (want_dtype, want_shape) = found[name], expected[name]
        if not _shape_fits(want_shape, shape):
            lines.append(
                f"  {name}: shape {list(shape)} in the checkpoint, {want_shape} in the graph"
            )
        if np.dtype(dtype) != np.dtype(want_dtype):
            lines.append(
                f"  {name}: dtype {np.dtype(dtype).name} in the checkpoint, "
                f"{np.dtype(want_dtype).name} in the graph"
            )
    if not lines:
        return None
    kind = "not_found" if missing and len(lines) == 1 else "invalid"
    return CheckpointError(
        kind, f"Checkpoint {path!r} does not match the graph:\n" + "\n".join(lines)
    )


def _shape_fits(want: Any, shape: tuple) -> bool:
    if want is None:
        return True
    if hasattr(want, "is_compatible_with"):
        return want.is_compatible_with(shape)
    return tuple(want) == tuple(shape)


def read_checkpoint(
    path: str, expected: dict | None = None, allow_extra: bool = False
) -> Checkpoint:
    """Reads and verifies a checkpoint.

    Args:
      path: the checkpoint file (or its prefix without ".h5").
      expected: name -> (dtype, shape) the caller will restore; names, shapes and dtypes are
        checked against the file before anything is read. None reads every variable.
      allow_extra: whether the file may hold variables that are not expected.

    Raises:
      CheckpointError: naming the file (and the variable) at fault: "data_loss" for a damaged
        or hostile file, "invalid" for one that does not match `expected`.
    """
    with _reading(path) as checkpoint:
        path = checkpoint.path
        found = checkpoint.specs()
        if expected is not None:
            problem = _mismatch(path, found, expected, allow_extra)
            if problem is not None:
                raise problem
        with hdf5_errors(path, "the file"):
            arrays = {
                name: checkpoint.read_variable(name)
                for name in (expected if expected is not None else found)
            }
            step = checkpoint.global_step()
            counts = checkpoint.random_counts()
    return Checkpoint(path, arrays, step, counts)
