"""The attr codec: an op's attrs as typed JSON, and back, with no pickle and no eval.

Every encoded value is a one-key object naming its type, so a decoded attr has exactly the Python
type the builder gave it (a `tuple` stays a tuple, an `np.int64` stays one):

    {"none": null}   {"b": true}   {"i": 3}   {"f": 0.5} ("nan", "inf", "-inf" as strings)
    {"s": "SAME"}    {"bytes": "<base64>"}    {"dtype": "float32"} ("resource" for handles)
    {"shape": null | [2, null]}               {"scalar": {"dtype": "int64", "value": 7}}
    {"tensor": {"dtype": "float32", "shape": [2, 3], "b64": "<little-endian bytes>"}}
    {"tuple": [...]}  {"list": [...]}  {"dict": [[key, value], ...]}
    {"ext": {"kind": "update_rule", "value": {...}}}   (a type registered below)

Types other packages own (an optimizer's `UpdateRule`) register an encoder and a decoder with
`register_attr_type`, as ops register kernels: the framework cannot import them. A value no
rule covers (a Python callable, a generator) cannot be saved: `encode` raises
`UnserializableAttrError`, and the exporter names the op and the attr.
"""

from __future__ import annotations

import base64
import math
import re
from typing import Any, Callable, NamedTuple

import numpy as np

from sluice.framework.ir import dtypes
from sluice.framework.ir.tensor_shape import TensorShape

# Limits on untrusted input: ranks and dimensions no real graph has, constants no file should
# claim (the importer also caps the file's size).
MAX_RANK = 64
MAX_DIM = 1 << 40
MAX_TENSOR_BYTES = 1 << 31
MAX_DEPTH = 32

_DTYPE_NAME = re.compile(r"^([a-z][a-z0-9]*|[<>|=]?[US][0-9]{1,6})$")


class UnserializableAttrError(TypeError):
    """An attr value with no JSON form (a Python callable, an object of an unregistered type)."""


class AttrFormatError(ValueError):
    """An encoded attr that sluice would not have written."""


class _ExtType(NamedTuple):
    cls: type
    encode: Callable[[Any], Any]
    decode: Callable[[Any], Any]


_EXT_BY_KIND: dict[str, _ExtType] = {}
_KIND_BY_CLASS: dict[type, str] = {}


def register_attr_type(
    kind: str, cls: type, encode: Callable[[Any], Any], decode: Callable[[Any], Any]
) -> None:
    """Lets attrs of class `cls` be saved: `encode(value)` returns plain JSON (dicts, lists,
    str, numbers, bools, None); `decode(json)` rebuilds an equal value or raises ValueError."""
    if kind in _EXT_BY_KIND:
        raise KeyError(f"An attr type {kind!r} is already registered.")
    _EXT_BY_KIND[kind] = _ExtType(cls, encode, decode)
    _KIND_BY_CLASS[cls] = kind


# -- dtypes and shapes ----------------------------------------------------------------------------
def encode_dtype(dtype: np.dtype) -> str:
    if dtype == dtypes.resource:
        return "resource"
    if dtype.kind in "US":
        return dtype.str
    return dtype.name


def decode_dtype(name: Any) -> np.dtype:
    if not isinstance(name, str) or not _DTYPE_NAME.match(name):
        raise AttrFormatError(f"{name!r} is not a dtype name")
    if name == "resource":
        return dtypes.resource
    if name == "string":
        return dtypes.string
    try:
        # NumPy text (an attr's array of str): not the tensor dtype sl.string
        dtype = np.dtype(name) if name.lstrip("<>|=")[0] in "US" else dtypes.as_dtype(name)
    except TypeError as err:
        raise AttrFormatError(f"{name!r} is not a dtype sluice knows") from err
    # only the names encode_dtype writes: no aliases ("float" is float32 in TF1, float64 in
    # NumPy), no float128, dates or empty strings that no kernel takes
    if not _holdable(dtype) or encode_dtype(dtype) != name:
        raise AttrFormatError(f"{name!r} is not a dtype a graph may hold")
    return dtype


_NUMBER_NAMES = {
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


def _holdable(dtype: np.dtype) -> bool:
    """Numbers, bools, non-empty strings and bfloat16; not Python objects, raw records, dates or
    extended precision."""
    if dtype.kind in "US":
        return dtype.itemsize > 0
    return dtype.name in _NUMBER_NAMES


def encode_shape(shape: TensorShape) -> list | None:
    return None if shape.rank is None else list(shape.as_list())


def decode_shape(dims: Any) -> TensorShape:
    if dims is None:
        return TensorShape(None)
    if not isinstance(dims, list) or len(dims) > MAX_RANK:
        raise AttrFormatError(
            f"a shape must be null or a list of at most {MAX_RANK} dimensions, got {_short(dims)}"
        )
    for d in dims:
        if d is not None and (type(d) is not int or not 0 <= d <= MAX_DIM):
            raise AttrFormatError(
                f"a shape's dimensions are null or ints in [0, {MAX_DIM}], got {_short(dims)}"
            )
    return TensorShape(dims)


# -- values -------------------------------------------------------------------------------------
def encode(value: Any) -> dict:
    """`value` as typed JSON; raises UnserializableAttrError for values with no JSON form."""
    if value is None:
        return {"none": None}
    if isinstance(value, bool):
        return {"b": value}
    if type(value) is int:
        return {"i": value}
    if type(value) is float:
        return {"f": _float_json(value)}
    if type(value) is complex:
        return {"c": [_float_json(value.real), _float_json(value.imag)]}
    if type(value) is str:
        return {"s": value}
    if type(value) is bytes:
        return {"bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, (np.dtype, dtypes.DType)):
        return {"dtype": encode_dtype(value)}
    if isinstance(value, TensorShape):
        return {"shape": encode_shape(value)}
    if isinstance(value, np.generic):
        return {"scalar": {"dtype": encode_dtype(value.dtype), "value": encode(value.item())}}
    if isinstance(value, np.ndarray):
        return {"tensor": encode_array(value)}
    if type(value) is tuple:
        return {"tuple": [encode(v) for v in value]}
    if type(value) is list:
        return {"list": [encode(v) for v in value]}
    if type(value) is dict:
        return {"dict": [[encode(k), encode(v)] for k, v in value.items()]}
    kind = _KIND_BY_CLASS.get(type(value))
    if kind is not None:
        return {"ext": {"kind": kind, "value": _EXT_BY_KIND[kind].encode(value)}}
    raise UnserializableAttrError(
        f"a value of type {type(value).__name__} ({_short(value)}) has no saved form"
        + (": a Python function cannot be saved in a graph" if callable(value) else "")
    )


def encode_array(value: np.ndarray) -> dict:
    if value.dtype.kind == "O" and all(type(v) is bytes for v in value.flat):
        return _encode_strings(value)
    if not _holdable(value.dtype):
        raise UnserializableAttrError(f"an array of dtype {value.dtype} has no saved form")
    data = np.ascontiguousarray(value).astype(value.dtype.newbyteorder("<"), copy=False)
    return {
        "dtype": encode_dtype(value.dtype),
        "shape": list(value.shape),
        "b64": base64.b64encode(data.tobytes()).decode("ascii"),
    }


def _encode_strings(value: np.ndarray) -> dict:
    """A string tensor (object array of bytes): each element's length (uint32), then the bytes."""
    items = list(value.flat)
    lengths = np.asarray([len(v) for v in items], "<u4")
    data = lengths.tobytes() + b"".join(items)
    return {
        "dtype": "string",
        "shape": list(value.shape),
        "b64": base64.b64encode(data).decode("ascii"),
    }


def _decode_strings(shape: TensorShape, b64: str) -> np.ndarray:
    count = math.prod(shape.as_list())
    if count > MAX_DIM or len(b64) > 4 * ((MAX_TENSOR_BYTES + 2) // 3):
        raise AttrFormatError(f"a string tensor of shape {shape} is larger than the limit")
    try:
        data = base64.b64decode(b64, validate=True)
    except ValueError as err:
        raise AttrFormatError(f"a tensor's data is not base64: {err}") from None
    lengths = np.frombuffer(data[: 4 * count], "<u4") if len(data) >= 4 * count else None
    if lengths is None or 4 * count + int(lengths.sum(dtype=np.int64)) != len(data):
        raise AttrFormatError(
            f"a string tensor of shape {shape} holds {len(data)} bytes of data, which its "
            "element lengths do not account for"
        )
    out = np.empty(count, dtype=object)
    start = 4 * count
    for i, n in enumerate(lengths.tolist()):
        out[i] = data[start : start + n]
        start += n
    return out.reshape(shape.as_list())


def decode_array(obj: Any) -> np.ndarray:
    if not isinstance(obj, dict) or set(obj) != {"dtype", "shape", "b64"}:
        raise AttrFormatError(f"a tensor has keys dtype, shape, b64; got {_short(obj)}")
    dtype = decode_dtype(obj["dtype"])
    shape = decode_shape(obj["shape"])
    if shape.rank is None or not isinstance(obj["b64"], str):
        raise AttrFormatError("a tensor needs a known shape and base64 data")
    if dtype is dtypes.string:
        return _decode_strings(shape, obj["b64"])
    count = math.prod(shape.as_list())
    claimed = count * dtype.itemsize
    if claimed > MAX_TENSOR_BYTES or math.prod(max(d, 1) for d in shape.as_list()) > MAX_DIM:
        # (an empty tensor's other dimensions are bounded too: NumPy refuses a huge empty shape)
        raise AttrFormatError(
            f"a tensor of shape {shape} and dtype {dtype} claims {claimed} "
            f"bytes, more than the limit of {MAX_TENSOR_BYTES}"
        )
    if len(obj["b64"]) != 4 * ((claimed + 2) // 3):
        raise AttrFormatError(
            f"a tensor of shape {shape} and dtype {dtype} needs {claimed} "
            f"bytes of data, the file holds base64 of length {len(obj['b64'])}"
        )
    try:
        data = base64.b64decode(obj["b64"], validate=True)
    except ValueError as err:
        raise AttrFormatError(f"a tensor's data is not base64: {err}") from None
    array = np.frombuffer(data, dtype=dtype.newbyteorder("<")).astype(dtype)
    return array.reshape(shape.as_list())


def decode(obj: Any, depth: int = 0) -> Any:
    """The value `encode` gave `obj`; raises AttrFormatError for anything else."""
    if depth > MAX_DEPTH:
        raise AttrFormatError(f"attr values nest deeper than {MAX_DEPTH} levels")
    if not isinstance(obj, dict) or len(obj) != 1:
        raise AttrFormatError(f"an attr value is an object with one key, got {_short(obj)}")
    ((tag, v),) = obj.items()
    decoder = _DECODERS.get(tag)
    if decoder is None:
        raise AttrFormatError(f"unknown attr type {tag!r}")
    return decoder(v, depth + 1)


def _expect(kind: type, v: Any, tag: str) -> Any:
    if type(v) is not kind:
        raise AttrFormatError(f"a {tag!r} attr holds a {kind.__name__}, got {_short(v)}")
    return v


def _decode_none(v: Any, _: int) -> None:
    if v is not None:
        raise AttrFormatError(f"a 'none' attr holds null, got {_short(v)}")


def _decode_float(v: Any, _: int) -> float:
    if isinstance(v, str) and v in ("nan", "inf", "-inf"):
        return float(v)
    if type(v) is int:
        return float(v)
    return _expect(float, v, "f")


def _decode_bytes(v: Any, _: int) -> bytes:
    try:
        return base64.b64decode(_expect(str, v, "bytes"), validate=True)
    except ValueError as err:
        raise AttrFormatError(f"a 'bytes' attr is not base64: {err}") from None


def _decode_scalar(v: Any, depth: int) -> np.generic:
    if not isinstance(v, dict) or set(v) != {"dtype", "value"}:
        raise AttrFormatError(f"a scalar has keys dtype and value, got {_short(v)}")
    dtype = decode_dtype(v["dtype"])
    value = decode(v["value"], depth)
    if not isinstance(value, (bool, int, float, complex, str, bytes)):
        raise AttrFormatError(f"a scalar's value is a number, got {_short(value)}")
    try:
        with np.errstate(all="raise"):
            return dtype.type(value)
    except (ValueError, TypeError, OverflowError, FloatingPointError) as err:
        raise AttrFormatError(f"a {dtype.name} scalar cannot hold {_short(value)}: {err}") from None


def _decode_dict(v: Any, depth: int) -> dict:
    items = _expect(list, v, "dict")
    out = {}
    for item in items:
        if not isinstance(item, list) or len(item) != 2:
            raise AttrFormatError(f"a dict attr holds [key, value] pairs, got {_short(item)}")
        key = decode(item[0], depth)
        if not isinstance(key, (str, int, bool, type(None))):
            raise AttrFormatError(f"a dict attr's keys are str or int, got {_short(key)}")
        out[key] = decode(item[1], depth)
    return out


def _decode_ext(v: Any, _: int) -> Any:
    if not isinstance(v, dict) or set(v) != {"kind", "value"}:
        raise AttrFormatError(f"an ext attr has keys kind and value, got {_short(v)}")
    ext = _EXT_BY_KIND.get(v["kind"]) if isinstance(v["kind"], str) else None
    if ext is None:
        raise AttrFormatError(f"unknown attr kind {v['kind']!r} (known: {sorted(_EXT_BY_KIND)})")
    try:
        return ext.decode(v["value"])
    except (KeyError, TypeError, ValueError) as err:
        raise AttrFormatError(f"a {v['kind']} attr cannot be rebuilt: {err}") from None


def _decode_complex(v: Any, _: int) -> complex:
    pair = _expect(list, v, "c")
    if len(pair) != 2:
        raise AttrFormatError(f"a complex attr is [re, im], got {_short(v)}")
    return complex(_decode_float(pair[0], 0), _decode_float(pair[1], 0))


_DECODERS: dict[str, Callable[[Any, int], Any]] = {
    "none": _decode_none,
    "b": lambda v, _: _expect(bool, v, "b"),
    "i": lambda v, _: _expect(int, v, "i"),
    "f": _decode_float,
    "c": _decode_complex,
    "s": lambda v, _: _expect(str, v, "s"),
    "bytes": _decode_bytes,
    "dtype": lambda v, _: decode_dtype(v),
    "shape": lambda v, _: decode_shape(v),
    "scalar": _decode_scalar,
    "tensor": lambda v, _: decode_array(v),
    "tuple": lambda v, d: tuple(decode(x, d) for x in _expect(list, v, "tuple")),
    "list": lambda v, d: [decode(x, d) for x in _expect(list, v, "list")],
    "dict": _decode_dict,
    "ext": _decode_ext,
}


def _float_json(x: float) -> Any:
    return x if math.isfinite(x) else repr(x)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
