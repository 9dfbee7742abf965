"""Data types: sluice uses NumPy dtypes directly, with TF1 names re-exported.

`as_dtype` accepts a NumPy dtype, a type, a name ("float32") or a value and returns the canonical
`np.dtype`. Python scalars convert as TensorFlow 1.x does: float -> float32, int -> int32.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export

float16 = np.dtype("float16")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
int8 = np.dtype("int8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
uint8 = np.dtype("uint8")
bool_ = np.dtype("bool")
complex64 = np.dtype("complex64")

try:  # bfloat16 comes with JAX's ml_dtypes dependency.
    import ml_dtypes

    bfloat16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - jax always ships ml_dtypes
    bfloat16 = None

DType = np.dtype

for _name, _dtype in (
    ("float16", float16),
    ("float32", float32),
    ("float64", float64),
    ("bfloat16", bfloat16),
    ("int8", int8),
    ("int16", int16),
    ("int32", int32),
    ("int64", int64),
    ("uint8", uint8),
    ("bool", bool_),  # TF1's tf.bool (sl.bool shadows Python's bool in sluice's namespace)
    ("complex64", complex64),
):
    export(_name)(_dtype)

_FLOATING = {float16, float32, float64} | ({bfloat16} if bfloat16 is not None else set())
_INTEGER = {int8, int16, int32, int64, uint8}


# TF1's dtype names, with TF1's meaning where NumPy's differs ("float" is float32 in TF1 and
# float64 in NumPy); "<name>_ref" (TF1's reference dtypes) means the same dtype.
_TF1_NAMES = {
    "float16": float16,
    "half": float16,
    "float32": float32,
    "float": float32,
    "float64": float64,
    "double": float64,
    "bfloat16": bfloat16,
    "int8": int8,
    "int16": int16,
    "int32": int32,
    "int64": int64,
    "uint8": uint8,
    "uint16": np.dtype("uint16"),
    "uint32": np.dtype("uint32"),
    "uint64": np.dtype("uint64"),
    "bool": bool_,
    "complex64": complex64,
    "complex128": np.dtype("complex128"),
}
# TF1's DataType enum values (types.proto); value + 100 is the reference dtype.
_TF1_ENUM = {
    1: "float32",
    2: "float64",
    3: "int32",
    4: "uint8",
    5: "int16",
    6: "int8",
    8: "complex64",
    9: "int64",
    10: "bool",
    14: "bfloat16",
    17: "uint16",
    18: "complex128",
    19: "float16",
    22: "uint32",
    23: "uint64",
}
_UNSUPPORTED = {"string", "variant", "qint8", "quint8", "qint16", "quint16", "qint32"}


@export("as_dtype")
def as_dtype(value: Any) -> np.dtype:
    """Returns the canonical dtype for `value`: a dtype, a NumPy or Python type, a TF1 name
    ("float" is float32, "double" float64, "half" float16, "float32_ref" float32) or TF1
    DataType enum value, or another NumPy name."""
    if isinstance(value, np.dtype):
        return value
    if value is bool:
        return bool_
    if value is float:
        return float32
    if value is int:
        return int32
    if isinstance(value, str):
        name = value.removesuffix("_ref")
        if name in _TF1_NAMES and _TF1_NAMES[name] is not None:
            return _TF1_NAMES[name]
        if name in _UNSUPPORTED:
            raise TypeError(f"The TF1 dtype {value!r} is not supported by sluice.")
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        name = _TF1_ENUM.get(int(value) % 100 if int(value) > 100 else int(value))
        if name is None:
            raise TypeError(f"Cannot convert {value!r} to a dtype: not a TF1 DataType value.")
        return _TF1_NAMES[name]
    try:
        return np.dtype(value)
    except TypeError as err:
        raise TypeError(f"Cannot convert {value!r} to a dtype.") from err


def infer_dtype(value: Any) -> np.dtype:
    """The dtype TensorFlow 1.x gives a Python or NumPy value passed to `constant`."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype
    arr = np.asarray(value)
    if arr.dtype == np.float64:
        return float32
    if arr.dtype == np.int64:
        return int32
    return arr.dtype


def is_floating(dtype: np.dtype) -> bool:
    return as_dtype(dtype) in _FLOATING


def is_integer(dtype: np.dtype) -> bool:
    return as_dtype(dtype) in _INTEGER


def is_bool(dtype: np.dtype) -> bool:
    return as_dtype(dtype) == bool_


def is_differentiable(dtype: np.dtype) -> bool:
    """Only floating and complex values carry gradients (TF1: integer paths give None)."""
    dtype = as_dtype(dtype)
    return dtype in _FLOATING or dtype.kind == "c"


# Variable handles are Python strings inside the engines; they get their own dtype so no
# arithmetic op accepts them.
resource = np.dtype("O")
