"""Data types: TF1's `DType` objects, each a thin, interned view of one NumPy dtype.

`sl.float32` is a `DType` with TF1's attributes (`as_numpy_dtype`, `base_dtype`, `is_floating`,
`min`, `max`, `size`, `as_datatype_enum`, ...). It compares and hashes equal to its NumPy dtype
and compares equal to anything `as_dtype` turns into the same dtype (`sl.float32 == np.float32`,
`sl.float32 == "float32"`), so NumPy dtypes and DTypes mix freely as dict keys and in `==`. NumPy
and JAX accept a DType wherever they take a dtype (it carries the NumPy dtype as `.dtype`), and
NumPy's dtype attributes (`kind`, `itemsize`, `type`, ...) read through.

`as_dtype` accepts a DType, a NumPy dtype, a type, a name ("float32") or a TF1 DataType enum value
and returns the interned DType. Python scalars convert as TensorFlow 1.x does: float -> float32,
int -> int32.

    >>> import numpy as np
    >>> import sluice as sl
    >>> sl.float32 == np.float32, sl.as_dtype("float") is sl.float32
    (True, True)
    >>> sl.int8.max, sl.float16.as_datatype_enum, sl.complex64.real_dtype
    (127, 19, sl.float32)

`sl.string` holds TF1's strings: a string tensor's values are NumPy object arrays of `bytes`
(`sess.run` returns `bytes` for a scalar), and string ops run on the host, never in JAX.

Where sluice differs from TF1: there are no `_ref` dtypes (a Variable's dtype is its value's, as a
resource variable's is in TF1), `str(dtype)` is the bare name ("float32", TF1 writes
"<dtype: 'float32'>"), and `hash(dtype)` is the NumPy dtype's (TF1 hashes the enum number).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export

try:  # bfloat16 comes with JAX's ml_dtypes dependency.
    import ml_dtypes
except ImportError:  # pragma: no cover - jax always ships ml_dtypes
    ml_dtypes = None

# TF1's DataType enum numbers (types.proto) by NumPy dtype name; the value + 100 is TF1's
# reference dtype, which sluice reads as the same dtype.
_ENUM_BY_NAME = {
    "float32": 1,
    "float64": 2,
    "int32": 3,
    "uint8": 4,
    "int16": 5,
    "int8": 6,
    "string": 7,
    "complex64": 8,
    "int64": 9,
    "bool": 10,
    "bfloat16": 14,
    "uint16": 17,
    "complex128": 18,
    "float16": 19,
    "resource": 20,
    "uint32": 22,
    "uint64": 23,
}
_NAME_BY_ENUM = {enum: name for name, enum in _ENUM_BY_NAME.items()}


@export("DType", "dtypes.DType")
class DType:
    """A TF1 data type: a view of one NumPy dtype with TF1's attributes.

    DTypes are interned: `as_dtype` returns the same object for the same dtype. Construct them
    with `sl.as_dtype`; `DType(np.dtype(...))` is for the module itself.
    """

    __slots__ = ("_np", "_name")

    def __init__(self, np_dtype: np.dtype, name: str | None = None):
        # `name` tells apart dtypes that share a NumPy dtype (string and resource: object)
        object.__setattr__(self, "_np", np.dtype(np_dtype))
        object.__setattr__(self, "_name", name or self._np.name)

    # -- NumPy and JAX read `.dtype` to accept this object as a dtype
    @property
    def dtype(self) -> np.dtype:
        return self._np

    def __getattr__(self, attr: str) -> Any:
        # NumPy's dtype attributes (kind, itemsize, type, char, str, ...) read through
        if attr.startswith("__"):
            raise AttributeError(attr)
        return getattr(object.__getattribute__(self, "_np"), attr)

    def __setattr__(self, attr: str, value: Any) -> None:
        raise AttributeError(f"DType {self.name} is immutable.")

    # -- TF1's attributes
    @property
    def name(self) -> str:
        return self._name

    @property
    def as_numpy_dtype(self) -> type:
        """The NumPy scalar type (`np.float32` for `sl.float32`; `object` for `sl.string`)."""
        return object if self._name == "string" else self._np.type

    @property
    def as_datatype_enum(self) -> int:
        """TF1's DataType enum number (types.proto): float32 is 1, int32 3, float16 19."""
        try:
            return _ENUM_BY_NAME[self.name]
        except KeyError:
            raise TypeError(f"dtype {self.name} has no TF1 DataType number.") from None

    @property
    def base_dtype(self) -> DType:
        return self

    @property
    def real_dtype(self) -> DType:
        """The dtype of the real part: float32 for complex64, float64 for complex128."""
        if self._np.kind == "c":
            return as_dtype(np.dtype(f"float{self._np.itemsize * 4}"))
        return self

    @property
    def is_numpy_compatible(self) -> bool:
        return self._name != "resource"

    @property
    def is_floating(self) -> bool:
        return self._np.kind == "f" or self.name == "bfloat16"

    @property
    def is_integer(self) -> bool:
        return self._np.kind in "iu"

    @property
    def is_complex(self) -> bool:
        return self._np.kind == "c"

    @property
    def is_bool(self) -> bool:
        return self._np.kind == "b"

    @property
    def is_unsigned(self) -> bool:
        return self._np.kind == "u"

    @property
    def is_quantized(self) -> bool:
        return False

    def _info(self) -> Any:
        if self._np.kind in "iu":
            return np.iinfo(self._np)
        if self.is_floating:
            return (ml_dtypes.finfo if ml_dtypes is not None else np.finfo)(self._np)
        raise TypeError(f"Cannot find minimum or maximum value of {self.name}.")

    @property
    def min(self) -> Any:
        """The lowest finite value; a TypeError for bool, complex and resource (as TF1)."""
        info = self._info()
        return info.min if self.is_integer else self.as_numpy_dtype(info.min)

    @property
    def max(self) -> Any:
        """The highest finite value; a TypeError for bool, complex and resource (as TF1)."""
        info = self._info()
        return info.max if self.is_integer else self.as_numpy_dtype(info.max)

    @property
    def limits(self) -> tuple[Any, Any]:
        """(min, max) of an integer or floating dtype, (False, True) for bool."""
        if self.is_bool:
            return (False, True)
        return (self.min, self.max)

    @property
    def size(self) -> int:
        """Bytes per element (1 for resource handles, as TF1)."""
        return 1 if self.name == "resource" else self._np.itemsize

    def is_compatible_with(self, other: Any) -> bool:
        """True when a value of dtype `other` may be used where this dtype is expected."""
        return self == as_dtype(other)

    # -- comparison and hashing: equal to the NumPy dtype, and to whatever names the same dtype
    def __eq__(self, other: Any) -> bool:
        if isinstance(other, DType):
            return self is other or (self._np == other._np and self._name == other._name)
        if other is None or other is int:  # TF1: `as_dtype(int)` is no dtype, so never equal
            return False
        try:
            return self.__eq__(as_dtype(other))
        except (TypeError, ValueError):
            return False

    def __ne__(self, other: Any) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self._np)

    def __repr__(self) -> str:
        return f"sl.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __reduce__(self) -> tuple[Any, ...]:
        return (as_dtype, (self.name,))

    def __copy__(self) -> DType:
        return self

    def __deepcopy__(self, memo: Any) -> DType:
        return self


_INTERNED: dict[np.dtype, DType] = {}


def _intern(np_dtype: np.dtype) -> DType:
    if np_dtype.kind in "USO":  # NumPy's bytes, str and object arrays hold TF1's strings
        np_dtype = np.dtype("O")
    dtype = _INTERNED.get(np_dtype)
    if dtype is None:
        dtype = _INTERNED[np_dtype] = DType(np_dtype)
    return dtype


float16 = _intern(np.dtype("float16"))
float32 = _intern(np.dtype("float32"))
float64 = _intern(np.dtype("float64"))
int8 = _intern(np.dtype("int8"))
int16 = _intern(np.dtype("int16"))
int32 = _intern(np.dtype("int32"))
int64 = _intern(np.dtype("int64"))
uint8 = _intern(np.dtype("uint8"))
uint16 = _intern(np.dtype("uint16"))
uint32 = _intern(np.dtype("uint32"))
uint64 = _intern(np.dtype("uint64"))
bool_ = _intern(np.dtype("bool"))
complex64 = _intern(np.dtype("complex64"))
complex128 = _intern(np.dtype("complex128"))
bfloat16 = _intern(np.dtype(ml_dtypes.bfloat16)) if ml_dtypes is not None else None
# TF1's strings: NumPy object arrays of `bytes`, computed on the host only (see
# `ops.host.string_ops`). A NumPy object dtype reads as string, as in TF1.
string = _INTERNED[np.dtype("O")] = DType(np.dtype("O"), "string")
# Variable handles are Python strings inside the engines; they get their own dtype so no
# arithmetic op accepts them.
resource = DType(np.dtype("O"), "resource")

for _name, _dtype in (
    ("float16", float16),
    ("half", float16),
    ("float32", float32),
    ("float64", float64),
    ("double", float64),
    ("bfloat16", bfloat16),
    ("int8", int8),
    ("int16", int16),
    ("int32", int32),
    ("int64", int64),
    ("uint8", uint8),
    ("uint16", uint16),
    ("uint32", uint32),
    ("uint64", uint64),
    ("bool", bool_),  # TF1's tf.bool (sl.bool shadows Python's bool in sluice's namespace)
    ("complex64", complex64),
    ("complex128", complex128),
    ("string", string),
    ("resource", resource),
):
    export(_name, f"dtypes.{_name}")(_dtype)

_FLOATING = {float16, float32, float64} | ({bfloat16} if bfloat16 is not None else set())
_INTEGER = {int8, int16, int32, int64, uint8, uint16, uint32, uint64}


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
    "uint16": uint16,
    "uint32": uint32,
    "uint64": uint64,
    "bool": bool_,
    "complex64": complex64,
    "complex128": complex128,
    "string": string,
    "resource": resource,
}
_UNSUPPORTED = {"variant", "qint8", "quint8", "qint16", "quint16", "qint32"}


@export("as_dtype", "dtypes.as_dtype")
def as_dtype(value: Any) -> DType:
    """Returns the interned DType for `value`: a DType, a NumPy dtype or type, a Python type
    (float is float32, int int32), a TF1 name ("float" is float32, "double" float64, "half"
    float16, "float32_ref" float32), a TF1 DataType enum number, or another NumPy name.

    Raises:
        TypeError: `value` names no dtype, or one sluice does not support (TF1's variant and
            quantized types)."""
    if isinstance(value, DType):
        return value
    if isinstance(value, np.dtype) and value.fields is None:
        return _intern(value)
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
        name = _NAME_BY_ENUM.get(int(value) - 100 if int(value) > 100 else int(value))
        if name is None:
            raise TypeError(f"Cannot convert {value!r} to a dtype: not a TF1 DataType value.")
        return _TF1_NAMES[name]
    if isinstance(value, (tuple, list, dict)):
        raise TypeError(f"Cannot convert {value!r} to a dtype.")
    if isinstance(value, type) and issubclass(value, np.generic):
        np_dtype = np.dtype(value)
    elif not isinstance(value, str) and hasattr(value, "dtype"):  # an array, a class with one
        return as_dtype(value.dtype)
    else:
        try:
            np_dtype = np.dtype(value)
        except TypeError as err:
            raise TypeError(f"Cannot convert {value!r} to a dtype.") from err
    if np_dtype.fields is not None:
        raise TypeError(f"Cannot convert the structured NumPy dtype {np_dtype} to a dtype.")
    return _intern(np_dtype)


def infer_dtype(value: Any) -> DType:
    """The dtype TensorFlow 1.x gives a Python or NumPy value passed to `constant`."""
    if isinstance(value, (np.ndarray, np.generic)):
        return _intern(value.dtype)
    arr = np.asarray(value)
    if arr.dtype == np.float64:
        return float32
    if arr.dtype == np.int64:
        return int32
    return _intern(arr.dtype)


def is_floating(dtype: Any) -> bool:
    return as_dtype(dtype) in _FLOATING


def is_integer(dtype: Any) -> bool:
    return as_dtype(dtype) in _INTEGER


def is_bool(dtype: Any) -> bool:
    return as_dtype(dtype) == bool_


def is_differentiable(dtype: Any) -> bool:
    """Only floating and complex values carry gradients (TF1: integer paths give None)."""
    dtype = as_dtype(dtype)
    return dtype in _FLOATING or dtype.kind == "c"
