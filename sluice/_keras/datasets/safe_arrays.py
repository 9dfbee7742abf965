"""Reading the arrays of data set files without letting the file run code.

Keras's files are untrusted input here. Numeric `.npy` members load with pickling off. Two
formats need pickle all the same: the IMDB and Reuters `.npz` files store ragged sequences as
object arrays (NumPy can only save those as a pickle stream), and the CIFAR batches are Python
pickles of dicts holding a NumPy array. `SafeUnpickler` reads both: a pickle stream can only
build plain values (dicts, lists, tuples, str, bytes, numbers) on its own; anything else it
must name as a global, and the only globals allowed are the three NumPy callables that rebuild
an array (`ndarray`, `dtype`, `_reconstruct`), plus the latin-1 `_codecs.encode` that
protocol-2 pickles written by Python 3 use for bytes, so a tampered file that names `os.system`
or `builtins.eval` is refused instead of run.
"""

from __future__ import annotations

import io
import pickle
import zipfile
from typing import Any, BinaryIO

import numpy as np

__all__ = ["SafeUnpickler", "read_npz", "safe_pickle_load"]

# NumPy's `multiarray._reconstruct`, the callable an array's pickle names, taken from an array's
# own `__reduce__` so no private module path (`numpy.core` in NumPy 1, `numpy._core` in 2) is used.
_RECONSTRUCT = np.zeros(0).__reduce__()[0]


def _latin1_bytes(text: str, encoding: str = "latin1") -> bytes:
    """What a protocol-2 pickle written by Python 3 names (`_codecs.encode`) to rebuild bytes;
    only the latin-1 form pickle itself emits is accepted."""
    if not isinstance(text, str) or encoding != "latin1":
        raise pickle.UnpicklingError("Refusing `_codecs.encode` with anything but (str, 'latin1').")
    return text.encode("latin1")


# Both spellings, so files pickled by either NumPy load; the objects come from this table,
# never from importing the name the file gives.
_ALLOWED_GLOBALS = {
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("numpy.core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy._core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("_codecs", "encode"): _latin1_bytes,
}
# An .npz member that declares more than this many bytes, and more than 100 times what it
# stores, is a decompression bomb rather than data.
_BOMB_FLOOR = 1 << 32
_BOMB_RATIO = 100


class SafeUnpickler(pickle.Unpickler):
    """A `pickle.Unpickler` that builds plain values and NumPy arrays only."""

    def find_class(self, module: str, name: str) -> Any:
        found = _ALLOWED_GLOBALS.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(
                f"Refusing to load `{module}.{name}` from a data set file: only NumPy arrays "
                "and plain values are allowed (the file is corrupted or was tampered with)."
            )
        return found


def safe_pickle_load(stream: BinaryIO, encoding: str = "ASCII") -> Any:
    """`pickle.load` through `SafeUnpickler` (encoding "bytes" for Python 2 pickles)."""
    return SafeUnpickler(stream, encoding=encoding).load()


def _read_npy(stream: BinaryIO, name: str, allow_objects: bool) -> np.ndarray:
    version = np.lib.format.read_magic(stream)
    header = (
        np.lib.format.read_array_header_1_0
        if version == (1, 0)
        else np.lib.format.read_array_header_2_0
    )
    shape, fortran_order, dtype = header(stream)
    if not dtype.hasobject:
        stream.seek(0)
        return np.lib.format.read_array(stream, allow_pickle=False)
    if not allow_objects:
        raise ValueError(f"{name}: an object array where numbers were expected.")
    array = safe_pickle_load(stream)
    if not isinstance(array, np.ndarray) or array.shape != tuple(shape):
        raise ValueError(f"{name}: its pickled payload is not the {shape} array its header says.")
    return array


def read_npz(path: str, allow_objects: bool = False) -> dict[str, np.ndarray]:
    """Every `.npy` member of the `.npz` file at `path`, by name without `.npy`.

    Args:
      allow_objects: read object arrays (through `SafeUnpickler`) instead of refusing them.

    Raises:
      ValueError: not an npz file, a decompression bomb, or a member that is not a NumPy array.
    """
    arrays = {}
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise ValueError(f"{path} is not a readable .npz file ({e}).") from e
    with archive:
        for info in archive.infolist():
            if not info.filename.endswith(".npy"):
                continue
            if info.file_size > _BOMB_FLOOR and info.file_size > _BOMB_RATIO * info.compress_size:
                raise ValueError(
                    f"{path}: member {info.filename} declares {info.file_size} "
                    f"bytes from {info.compress_size} stored; refusing it."
                )
            with archive.open(info) as member:
                stream = io.BytesIO(member.read())
            where = f"{path}:{info.filename}"
            try:
                arrays[info.filename[: -len(".npy")]] = _read_npy(stream, where, allow_objects)
            except (pickle.UnpicklingError, EOFError, TypeError) as e:
                raise ValueError(f"{where} is not a valid NumPy array ({e}).") from e
    return arrays


def require(arrays: dict, keys: tuple[str, ...], path: str) -> None:
    """Raises ValueError naming the missing keys of a data set file."""
    missing = [k for k in keys if k not in arrays]
    if missing:
        raise ValueError(
            f"{path} lacks the arrays {missing}; it has {sorted(arrays)} "
            f"(expected {list(keys)}, as in Keras's file)."
        )
