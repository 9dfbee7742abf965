"""Values of `sl.string` tensors: NumPy object arrays of `bytes`, as TF1's `sess.run` returns.

A `str` becomes its UTF-8 bytes (TF1's `compat.as_bytes`); NumPy's `str_` and `bytes_`
arrays convert element by element. Nothing else is a string: TF1 refuses `tf.constant(1,
tf.string)` with a TypeError, and so does `as_bytes_array`.

    >>> as_bytes_array([["a", b"b"]])
    array([[b'a', b'b']], dtype=object)
"""

from __future__ import annotations

from typing import Any

import numpy as np


def on_strings(op: Any) -> bool:
    """Whether `op` takes or makes a string tensor (its kernel then runs on the host)."""
    return any(t.dtype.name == "string" for t in op.inputs) or any(
        t.dtype.name == "string" for t in op.outputs
    )


def as_bytes(value: Any) -> bytes:
    """One string element as bytes (str is encoded as UTF-8).

    Raises:
      TypeError: `value` is not a str or bytes (TF1: "Expected string, got 1 of type 'int'")."""
    if isinstance(value, bytes):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    raise TypeError(f"Expected string, got {value!r} of type '{type(value).__name__}' instead.")


def as_bytes_array(value: Any) -> np.ndarray:
    """`value` (a str, bytes, nested lists of them, or a NumPy str/bytes/object array) as an
    object array of bytes of the same shape.

    Raises:
      TypeError: an element is not a str or bytes.
      ValueError: nested lists of different lengths."""
    if isinstance(value, (str, bytes)):
        array = np.empty((), dtype=object)
        array[()] = as_bytes(value)
        return array
    source = value if isinstance(value, np.ndarray) else _object_array(value)
    if source.dtype.kind == "S":
        return source.astype(object)
    out = np.empty(source.shape, dtype=object)
    for index, element in np.ndenumerate(source):
        out[index] = as_bytes(element.item() if isinstance(element, np.generic) else element)
    return out


def _object_array(value: Any) -> np.ndarray:
    """Nested lists as an object array whose elements are the leaves (NumPy would turn a list of
    bytes of different lengths into an `S` array, and a ragged list into a list of lists)."""
    if isinstance(value, (list, tuple)) and not any(isinstance(v, (list, tuple)) for v in value):
        out = np.empty(len(value), dtype=object)
        out[:] = list(value)
        return out
    array = np.asarray(value, dtype=object)
    if any(isinstance(v, (list, tuple)) for v in array.flat):
        raise ValueError(f"Cannot convert a ragged nested list to a string tensor: {value!r}")
    return array


def fetched(value: Any) -> Any:
    """What `Session.run` returns for a string tensor: an object array of bytes, or `bytes`
    for a scalar (as TF1)."""
    array = np.asarray(value, dtype=object)
    return array.item() if array.ndim == 0 else array
