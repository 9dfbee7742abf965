"""Checks of an untrusted checkpoint file, made before any value is read from it.

A checkpoint may come from anywhere, so the reader believes nothing the file says until it has
checked it against what sluice writes (`h5_format`):

- objects are reached through hard links only (a soft or external link could point into another
  file), and every object under `/variables` is a group or a dataset;
- a dataset is contiguous, unfiltered, neither virtual nor kept in external files (whose bytes
  would come from another file), and of a plain numeric type (no object, variable-length,
  compound, array or reference type);
- its declared size fits the file: the bytes it declares are all stored, inside the file, so no
  file can make the reader allocate more memory than the file's own size;
- its `dtype` attribute is a type name sluice writes and agrees with the stored type, and its
  `shape` attribute (written since the `shape` attribute exists) agrees with its shape;
- attributes are scalars of the expected kind, checked before they are read;
- before a variable-length string is read (files of earlier versions keep the `format` and
  `dtype` attributes and the op names so), every global heap collection of the file is walked
  as HDF5 walks it and must be well formed: HDF5 loops forever on a free-space object of size 0.

Every failed check raises `CheckpointError` naming the file and the object at fault.
Imports only NumPy, h5py and the standard library.
"""

from __future__ import annotations

import contextlib
import functools
import math
import mmap
import os
import struct
from collections.abc import Iterator
from typing import Any

import h5py
import numpy as np

# The dtype names sluice writes in a dataset's `dtype` attribute (`sluice.framework.ir.dtypes`,
# plus the wider integers and complex128 that NumPy values may have).
DTYPE_NAMES = frozenset(
    {
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
        "bfloat16",
        "complex64",
        "complex128",
    }
)
_MAX_RANK = 32  # HDF5's own limit
_MAX_TEXT = 64  # the longest attribute string sluice writes ("sluice.checkpoint")
_MAX_OP_NAME = 4096
# HDF5 type classes whose NumPy mapping can be a plain number: compound is complex, enum is bool.
_NUMERIC_CLASSES = (h5py.h5t.INTEGER, h5py.h5t.FLOAT, h5py.h5t.ENUM, h5py.h5t.COMPOUND)
_LAYOUT_NAMES = {
    h5py.h5d.COMPACT: "compact",
    h5py.h5d.CONTIGUOUS: "contiguous",
    h5py.h5d.CHUNKED: "chunked",
    h5py.h5d.VIRTUAL: "virtual",
}
# What h5py raises on a damaged file; anything else is a bug in these checks, not the file.
HDF5_ERRORS = (
    OSError,
    ValueError,
    KeyError,
    TypeError,
    RuntimeError,
    IndexError,
    OverflowError,
    UnicodeError,
    AttributeError,
    SystemError,
)


class CheckpointError(Exception):
    """A problem with a checkpoint file. `kind`: "not_found", "invalid", "data_loss" or
    "unimplemented" (the `sl.errors` class the caller raises)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


def damaged(path: str, what: str, problem: str) -> CheckpointError:
    """A data-loss error: the file at `path` is corrupt or was not written by sluice."""
    return CheckpointError(
        "data_loss",
        f"Checkpoint {path!r} is corrupt or was not written by sluice: {what} {problem}. "
        "Restore an earlier checkpoint of its directory.",
    )


@contextlib.contextmanager
def hdf5_errors(path: str, what: str) -> Iterator[None]:
    """Turns what h5py raises on a damaged file into a data-loss `CheckpointError`."""
    try:
        yield
    except CheckpointError:
        raise
    except HDF5_ERRORS as err:
        raise damaged(path, what, f"cannot be read ({type(err).__name__}: {err})") from None


# -- attributes -----------------------------------------------------------------------------------
def attribute(obj: Any, name: str, path: str, what: str, kinds: str) -> Any:
    """The value of a scalar attribute of `obj`, or None when it has none.

    Args:
      kinds: NumPy kinds allowed ("iu" for an integer), or "text" for a string of at most
        64 characters; the kind and size are checked before the value is read.
    """
    where = f"the attribute {name!r} of {what}"
    with hdf5_errors(path, where):
        if name not in obj.attrs:
            return None
        attr_id = obj.attrs.get_id(name)
        shape, dtype = attr_id.shape, attr_id.dtype
        if shape not in ((), (1,)):
            raise damaged(path, where, f"has shape {shape}, not a single value")
        if kinds == "text":
            fixed = dtype.kind == "S" and dtype.itemsize <= _MAX_TEXT
            if not (fixed or h5py.check_string_dtype(dtype) is not None):
                raise damaged(path, where, f"has type {dtype}, not a string")
            if not fixed:
                check_global_heaps(path)
        elif dtype.kind not in kinds or dtype.itemsize > 8 or dtype.fields or dtype.subdtype:
            raise damaged(path, where, f"has type {dtype}, not {_kind_words(kinds)}")
        value = obj.attrs[name]
        if shape == (1,):
            value = value[0]
        if kinds == "text":
            return _ascii(value, path, where)
        return value.item() if isinstance(value, np.generic) else value


def integer_attribute(
    obj: Any, name: str, path: str, what: str, low: int, high: int, required: bool = True
) -> int | None:
    """An integer attribute in [low, high]; None when absent and not required."""
    value = attribute(obj, name, path, what, "iu")
    if value is None:
        if required:
            raise damaged(path, what, f"has no {name!r} attribute")
        return None
    if not low <= int(value) <= high:
        raise damaged(path, f"the attribute {name!r} of {what}", f"is {value}, out of range")
    return int(value)


def _ascii(value: Any, path: str, where: str) -> str:
    if isinstance(value, (bytes, np.bytes_)):
        try:
            value = bytes(value).decode("ascii")
        except UnicodeDecodeError:
            raise damaged(path, where, f"is {bytes(value)[:_MAX_TEXT]!r}, not ASCII text") from None
    if not isinstance(value, str) or len(value) > _MAX_TEXT or not value.isascii():
        raise damaged(path, where, f"is {str(value)[:_MAX_TEXT]!r}, not a short ASCII text")
    return value


def _kind_words(kinds: str) -> str:
    return "an integer" if kinds == "iu" else f"a value of NumPy kind {kinds!r}"


# -- the object tree ------------------------------------------------------------------------------
def hard_group(parent: h5py.Group, name: str, path: str, required: bool) -> h5py.Group | None:
    """The group `name` of `parent`, reached through a hard link; None when absent."""
    what = f"/{name}" if parent.name == "/" else f"{parent.name}/{name}"
    with hdf5_errors(path, what):
        link = parent.get(name, getlink=True)
        if link is None:
            if required:
                raise damaged(path, "the file", f"has no {what} group")
            return None
        if not isinstance(link, h5py.HardLink):
            raise damaged(path, what, f"is an h5py {type(link).__name__}, not a group of this file")
        group = parent[name]
        if not isinstance(group, h5py.Group):
            raise damaged(path, what, "is not a group")
        return group


def datasets_under(group: h5py.Group, path: str) -> dict[str, h5py.Dataset]:
    """Every dataset below `group` by its path relative to it (each object once, cycles in the
    link graph included), after checking that every link is a hard link."""
    links: list[tuple[str, Any]] = []

    def collect(name: str, link: Any) -> None:
        links.append((name, link))  # raising here would reach h5py's C code: check afterwards

    with hdf5_errors(path, group.name):
        group.visititems_links(collect)
    found: dict[str, h5py.Dataset] = {}
    for name, link in links:
        what = f"{group.name}/{name}"
        if not isinstance(link, h5py.HardLink):
            target = getattr(link, "filename", None) or getattr(link, "path", None)
            raise damaged(
                path,
                what,
                f"is not an object of this file but an h5py {type(link).__name__} to {target!r} "
                "(sluice writes datasets, never links to other objects or files)",
            )
        with hdf5_errors(path, what):
            obj = group[name]
        if isinstance(obj, h5py.Dataset):
            found[name] = obj
        elif not isinstance(obj, h5py.Group):
            raise damaged(path, what, f"is a {type(obj).__name__}, not a dataset or a group")
    return found


# -- datasets -------------------------------------------------------------------------------------
def stored_layout(ds: h5py.Dataset, path: str, what: str, file_size: int) -> tuple[np.dtype, tuple]:
    """The stored NumPy type and the shape of a dataset, after checking its type, storage layout
    and that its declared bytes all lie inside the file."""
    with hdf5_errors(path, what):
        type_class = ds.id.get_type().get_class()
        dtype = ds.dtype if type_class in _NUMERIC_CLASSES else None
        if dtype is None or dtype.kind not in "biufc" or dtype.fields or dtype.subdtype:
            raise damaged(
                path, what, f"is stored as {_type_words(ds, dtype)}, not a plain numeric type"
            )
        shape = ds.shape
        if shape is None or len(shape) > _MAX_RANK:
            raise damaged(path, what, f"has no usable dataspace (shape {shape})")
        check_storage(ds, path, what, math.prod(shape) * dtype.itemsize, file_size)
    return dtype, tuple(int(d) for d in shape)


def check_storage(ds: h5py.Dataset, path: str, what: str, nbytes: int, file_size: int) -> None:
    """Raises unless the dataset's `nbytes` bytes are stored contiguously, unfiltered, inside
    this file."""
    with hdf5_errors(path, what):
        plist = ds.id.get_create_plist()
        layout = plist.get_layout()
        if layout == h5py.h5d.VIRTUAL or ds.is_virtual:
            raise damaged(
                path, what, "is a virtual dataset (its values would come from other files)"
            )
        if plist.get_external_count():
            name = plist.get_external(0)[0]
            raise damaged(path, what, f"keeps its values in the external file {name!r}")
        if layout != h5py.h5d.CONTIGUOUS:
            kind = _LAYOUT_NAMES.get(layout, f"#{layout}")
            raise damaged(
                path, what, f"has the {kind} storage layout; sluice writes contiguous data"
            )
        if plist.get_nfilters():
            raise damaged(path, what, "is filtered (compressed); sluice writes unfiltered data")
        if nbytes > file_size:
            raise damaged(
                path,
                what,
                f"declares {nbytes} bytes of values, more than the whole file ({file_size} bytes)",
            )
        if nbytes == 0:
            return
        stored, offset = ds.id.get_storage_size(), ds.id.get_offset()
        if stored != nbytes or offset is None or offset + nbytes > file_size:
            raise damaged(
                path,
                what,
                f"declares {nbytes} bytes of values but stores {stored} bytes at offset {offset} "
                f"of a {file_size}-byte file",
            )


def _type_words(ds: h5py.Dataset, dtype: np.dtype | None) -> str:
    if dtype is not None:
        return f"{dtype} ({dtype.kind!r} kind)"
    names = {
        h5py.h5t.STRING: "a string type",
        h5py.h5t.VLEN: "a variable-length type",
        h5py.h5t.ARRAY: "an array type",
        h5py.h5t.REFERENCE: "a reference type",
        h5py.h5t.OPAQUE: "an opaque type",
        h5py.h5t.BITFIELD: "a bitfield type",
    }
    return names.get(ds.id.get_type().get_class(), "an unsupported HDF5 type")


def declared_dtype(ds: h5py.Dataset, path: str, what: str, stored: np.dtype) -> str:
    """The dataset's `dtype` attribute, checked to be a name sluice writes that agrees with the
    stored type (bfloat16 is stored as uint16)."""
    name = attribute(ds, "dtype", path, what, "text")
    if name is None:
        raise damaged(path, what, "has no 'dtype' attribute")
    if name not in DTYPE_NAMES:
        raise damaged(
            path, what, f"has the dtype attribute {name!r}, not a type name sluice writes"
        )
    storage_name = "uint16" if name == "bfloat16" else name
    if stored.newbyteorder("=") != np.dtype(storage_name):
        raise damaged(path, what, f"is stored as {stored} but its dtype attribute says {name!r}")
    return name


def check_shape_attribute(ds: h5py.Dataset, path: str, what: str, shape: tuple) -> None:
    """Raises when the dataset's `shape` attribute (if any) differs from its shape."""
    where = f"the attribute 'shape' of {what}"
    with hdf5_errors(path, where):
        if "shape" not in ds.attrs:
            return  # files written before the attribute existed
        attr_id = ds.attrs.get_id("shape")
        vector = len(attr_id.shape) == 1 and attr_id.shape[0] <= _MAX_RANK
        if not vector or attr_id.dtype.kind not in "iu":
            raise damaged(path, where, f"has shape {attr_id.shape} and type {attr_id.dtype}")
        recorded = tuple(int(d) for d in ds.attrs["shape"])
    if recorded != shape:
        raise damaged(
            path, what, f"has shape {list(shape)} but its shape attribute says {list(recorded)}"
        )


def text_dataset(ds: h5py.Dataset, path: str, what: str, file_size: int) -> int:
    """Checks a 1-D dataset of strings (fixed-length bytes, or variable-length in files of earlier
    versions); returns its length."""
    with hdf5_errors(path, what):
        dtype, shape = ds.dtype, ds.shape
        variable = h5py.check_string_dtype(dtype) is not None and dtype.kind == "O"
        fixed = dtype.kind == "S" and dtype.itemsize <= _MAX_OP_NAME
        if not (variable or fixed) or shape is None or len(shape) != 1:
            raise damaged(path, what, f"is {dtype} of shape {shape}, not a list of strings")
        # a variable-length string is stored as a 16-byte reference to a heap
        itemsize = 16 if variable else dtype.itemsize
        check_storage(ds, path, what, int(shape[0]) * itemsize, file_size)
    if variable:
        check_global_heaps(path)
    return int(shape[0])


# -- global heaps (variable-length data) ----------------------------------------------------------
_HEAP_SIGNATURE = b"GCOL"
_HEAP_HEADER = 16  # signature, version, 3 reserved bytes, collection size
_OBJECT_HEADER = 16  # index, reference count, 4 reserved bytes, object size


def check_global_heaps(path: str) -> None:
    """Raises unless every global heap collection in the file at `path` is well formed."""
    st = os.stat(path)
    problem = _global_heap_problem(path, st.st_ino, st.st_size, st.st_mtime_ns)
    if problem is not None:
        raise damaged(path, "a global heap (where variable-length strings are kept)", problem)


@functools.lru_cache(maxsize=64)
def _global_heap_problem(path: str, inode: int, size: int, mtime_ns: int) -> str | None:
    """Walks every "GCOL" collection of the file the way HDF5 does (H5HG deserialize) and says
    what would make HDF5 loop or read outside it; None if all are sound. Files whose lengths
    are not 8 bytes (sluice's) are refused, since the walk assumes them."""
    if size == 0:
        return None
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        version = data[8] if size > 8 else -1
        length_size = data[14] if version in (0, 1) and size > 14 else data[10] if size > 10 else 0
        start = data.find(_HEAP_SIGNATURE)
        if start >= 0 and length_size != 8:
            return f"the file stores lengths in {length_size} bytes; sluice writes 8"
        while start >= 0:
            problem = _collection_problem(data, start, size)
            if problem is not None:
                return f"the collection at byte {start} {problem}"
            start = data.find(_HEAP_SIGNATURE, start + 1)
    return None


def _collection_problem(data: mmap.mmap, start: int, file_size: int) -> str | None:
    if start + _HEAP_HEADER > file_size or data[start + 4] != 1:
        return None  # not a collection HDF5 would accept: it checks the version itself
    (size,) = struct.unpack_from("<Q", data, start + 8)
    if size < _HEAP_HEADER or start + size > file_size:
        return f"declares {size} bytes, beyond the end of the file"
    offset = _HEAP_HEADER
    while offset < size:
        if offset + _OBJECT_HEADER > size:
            return None  # HDF5 takes a tail too small for an object as free space
        index, _, _, length = struct.unpack_from("<HHIQ", data, start + offset)
        need = _OBJECT_HEADER + (length + 7) // 8 * 8 if index > 0 else length
        if need < _OBJECT_HEADER or offset + need > size:
            return f"holds an object (index {index}) of {length} bytes that does not fit it"
        offset += need
    return None
