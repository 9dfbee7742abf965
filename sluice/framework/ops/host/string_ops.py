"""TF1's string ops: join, reduce_join, as_string, to_number, length.

A string tensor holds NumPy object arrays of bytes (`sl.string`, see `ir.string_values`);
these ops run on the host with NumPy kernels, in both engines (the compiled engine hands a
graph with strings to the interpreted one, as it does host-only ops). Their kernels are
registered as the ops' kernels and as their string kernels (`registry.register_string_kernel`),
so an op on strings always finds one. None of them is differentiable, as in TF1.

    >>> import sluice as sl
    >>> with sl.Graph().as_default(), sl.Session() as sess:
    ...     sess.run(sl.strings.join(["a", sl.as_string(3)], separator="-"))
    b'a-3'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.registry import (
    not_differentiable,
    register_op,
    register_string_kernel,
)
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import as_int_tensor, host_ints, int_values


def _register_string_op(name: str, infer: Any, kernel: Any) -> None:
    register_op(name, infer=infer, kernel=kernel, jit=False)
    register_string_kernel(name, kernel)
    not_differentiable(name)


def _require_string(tensor: Any, what: str) -> None:
    if tensor.dtype != dtypes.string:
        raise TypeError(f"{what} must be a string tensor, got {tensor.dtype.name}")


def _join_elements(separator: bytes, *parts: Any) -> bytes:
    return separator.join(parts)


# -- StringJoin ---------------------------------------------------------------------------------
def _string_join_infer(op) -> list:
    shape = TensorShape([])
    for i, t in enumerate(op.inputs):
        _require_string(t, f"input {i}")
        shape = _broadcast_strings(shape, t, i)
    return [(dtypes.string, shape)]


def _broadcast_strings(shape: TensorShape, t: Any, i: int) -> TensorShape:
    """TF1's StringJoin rule: scalars broadcast, every other input has one shape."""
    if t.shape.rank == 0:
        return shape
    if shape.rank == 0:
        return t.shape
    if not shape.is_compatible_with(t.shape):
        raise ValueError(
            f"input {i} has shape {t.shape}, but an earlier input has {shape}: inputs must be "
            "scalars or all of one shape"
        )
    return shape.merge_with(t.shape)


def _string_join_kernel(*inputs: Any, separator: str = "", **_: Any) -> np.ndarray:
    shapes = {np.shape(x) for x in inputs if np.ndim(x)}
    if len(shapes) > 1:
        raise ValueError(f"StringJoin: inputs must be scalars or all of one shape, got {shapes}")
    join = np.frompyfunc(lambda *parts: _join_elements(separator.encode(), *parts), len(inputs), 1)
    return np.asarray(join(*[np.asarray(x, dtype=object) for x in inputs]), dtype=object)


_register_string_op("StringJoin", _string_join_infer, _string_join_kernel)


@export("strings.join", "string_join")
def string_join(inputs: Any, separator: str = "", name: str | None = None) -> Any:
    """Joins the strings of `inputs` elementwise with `separator`; scalar inputs broadcast.

    >>> import sluice as sl
    >>> with sl.Graph().as_default(), sl.Session() as sess:
    ...     sess.run(sl.strings.join([["a", "b"], "!"]))
    array([b'a!', b'b!'], dtype=object)
    """
    tensors = [core_ops.convert_to_tensor(x, dtype=dtypes.string) for x in inputs]
    attrs = {"separator": separator, "N": len(tensors)}
    return core_ops.apply_op("StringJoin", tensors, attrs, name=name).outputs[0]


# -- ReduceJoin ---------------------------------------------------------------------------------
def _reduce_join_infer(op) -> list:
    x, axes = op.inputs
    _require_string(x, "inputs")
    keep = op.get_attr("keep_dims")
    values = int_values(axes)
    rank = x.shape.rank
    if values is None or None in values or rank is None:
        return [(dtypes.string, TensorShape(None))]
    dropped = _reduction_dims(values, rank)
    dims = x.shape.dims
    out = [1 if i in dropped else d for i, d in enumerate(dims)] if keep else None
    if out is None:
        out = [d for i, d in enumerate(dims) if i not in dropped]
    return [(dtypes.string, TensorShape(out))]


def _reduction_dims(values: list[int], rank: int) -> list[int]:
    """The reduction dims in [0, rank), in their order (TF1's errors for bad ones)."""
    dims = []
    for a in values:
        if not -rank <= a < rank:
            raise ValueError(f"Invalid reduction dimension {a} for input with {rank} dimensions.")
        if a % rank in dims:
            raise ValueError(f"Duplicate reduction dimension {a % rank}")
        dims.append(a % rank)
    return dims


def _reduce_join_kernel(
    x: Any, axes: Any, *, keep_dims: bool = False, separator: str = "", **_: Any
) -> np.ndarray:
    array = np.asarray(x, dtype=object)
    order = _reduction_dims(list(host_ints(axes, "ReduceJoin's axes")), array.ndim)
    sep = separator.encode()
    for axis in order:  # each in the order given (TF1: [0, 1] joins columns first)
        moved = np.moveaxis(array, axis, -1)
        joined = np.empty(moved.shape[:-1], dtype=object)
        for index in np.ndindex(joined.shape):
            joined[index] = sep.join(moved[index])
        array = np.expand_dims(joined, axis)
    if not keep_dims and order:
        array = np.squeeze(array, axis=tuple(sorted(set(order))))
    return np.asarray(array, dtype=object)


_register_string_op("ReduceJoin", _reduce_join_infer, _reduce_join_kernel)


@export("strings.reduce_join", "reduce_join")
def reduce_join(
    inputs: Any,
    axis: Any = None,
    keep_dims: bool | None = None,
    separator: str = "",
    name: str | None = None,
    reduction_indices: Any = None,
    keepdims: bool | None = None,
) -> Any:
    """Joins the strings of `inputs` along `axis` (all axes, in row-major order, when None)
    with `separator`, as TF1's `tf.reduce_join`.

    >>> import sluice as sl
    >>> with sl.Graph().as_default(), sl.Session() as sess:
    ...     sess.run(sl.reduce_join([["a", "b"], ["c", "d"]], axis=0))
    array([b'ac', b'bd'], dtype=object)
    """
    x = core_ops.convert_to_tensor(inputs, dtype=dtypes.string)
    if axis is None:
        axis = reduction_indices
    if axis is None:
        if x.shape.rank is None:
            raise ValueError("reduce_join with axis=None needs an input of known rank.")
        axis = list(range(x.shape.rank - 1, -1, -1))  # TF1: the last axis first
    axes = as_int_tensor(np.ravel(axis) if not hasattr(axis, "op") else axis, "reduce_join's axis")
    keep = bool(keepdims if keepdims is not None else keep_dims)
    attrs = {"keep_dims": keep, "separator": separator}
    return core_ops.apply_op("ReduceJoin", [x, axes], attrs, name=name).outputs[0]


# -- AsString -----------------------------------------------------------------------------------
def _as_string_infer(op) -> list:
    x = op.inputs[0]
    dtype = x.dtype
    if not (dtype.is_integer or dtype.is_floating or dtype.is_bool or dtype.is_complex):
        raise TypeError(f"input must be a number or bool tensor, got {dtype.name}")
    return [(dtypes.string, x.shape)]


def _as_string_format(
    dtype: Any,
    precision: int = -1,
    scientific: bool = False,
    shortest: bool = False,
    width: int = -1,
    fill: str = "",
    **_: Any,
) -> str:
    """The printf format TF's AsString kernel builds for `dtype` (as_string_op.cc)."""
    dtype = dtypes.as_dtype(dtype)
    if scientific and shortest:
        raise ValueError("Cannot select both scientific and shortest notation")
    if len(fill) > 1:
        raise ValueError(f"Fill string must be one or fewer characters: {fill!r}")
    if fill and fill not in " +-0#":
        raise ValueError(f"Fill argument not supported: {fill!r}")
    inexact = dtype.is_floating or dtype.is_complex
    if not inexact and (precision > -1 or scientific or shortest):
        what = "precision" if precision > -1 else "scientific and shortest"
        raise ValueError(f"{what} not supported for datatype {dtype.name}")
    form = "%" + fill + (str(width) if width > -1 else "")
    form += f".{precision}" if precision > -1 else ""
    if dtype.is_bool:
        return form + "s"
    if not inexact:
        return form + "d"
    return form + ("e" if scientific else "g" if shortest else "f")


def _as_string_kernel(x: Any, **attrs: Any) -> np.ndarray:
    array = np.asarray(x)
    form = _as_string_format(array.dtype, **attrs)
    if array.dtype == np.bool_:
        texts = ((form % ("true" if v else "false")) for v in array.flat)
    elif array.dtype.kind == "c":
        texts = (f"({form % v.real},{form % v.imag})" for v in array.flat)
    else:
        texts = (form % v for v in array.flat)
    out = np.empty(array.shape, dtype=object)
    out.reshape(-1)[:] = [t.encode() for t in texts] if array.size else []
    return out


_register_string_op("AsString", _as_string_infer, _as_string_kernel)


@export("as_string", "strings.as_string", "dtypes.as_string")
def as_string(
    input: Any,
    precision: int = -1,
    scientific: bool = False,
    shortest: bool = False,
    width: int = -1,
    fill: str = "",
    name: str | None = None,
) -> Any:
    """Each number (or bool) of `input` formatted as a string, as C's printf: `%f` for floats
    (`%e` with `scientific`, `%g` with `shortest`), `%d` for integers, "true"/"false".

    >>> import sluice as sl
    >>> with sl.Graph().as_default(), sl.Session() as sess:
    ...     sess.run(sl.as_string([1.5, 2.0], precision=2))
    array([b'1.50', b'2.00'], dtype=object)
    """
    x = core_ops.convert_to_tensor(input)
    attrs = {
        "precision": int(precision),
        "scientific": bool(scientific),
        "shortest": bool(shortest),
        "width": int(width),
        "fill": fill,
    }
    return core_ops.apply_op("AsString", [x], attrs, name=name).outputs[0]


# -- StringToNumber -----------------------------------------------------------------------------
def _string_to_number_infer(op) -> list:
    x = op.inputs[0]
    _require_string(x, "string_tensor")
    out_type = dtypes.as_dtype(op.get_attr("out_type"))
    if out_type not in (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64):
        raise TypeError(f"out_type must be float32, float64, int32 or int64, got {out_type.name}")
    return [(out_type, x.shape)]


def _string_to_number_kernel(x: Any, *, out_type: Any, **_: Any) -> np.ndarray:
    out_type = dtypes.as_dtype(out_type)
    parse = _parse_float if out_type.is_floating else _parse_int
    array = np.asarray(x, dtype=object)
    out = np.empty(array.shape, dtype=out_type.as_numpy_dtype)
    with np.errstate(over="ignore"):  # beyond float32's range is inf, as strtof gives
        for index, text in np.ndenumerate(array):
            value = parse(text)
            if (
                value is None
                or not out_type.is_floating
                and not (out_type.min <= value <= out_type.max)
            ):
                raise ValueError(
                    "StringToNumberOp could not correctly convert string: "
                    + text.decode(errors="replace")
                )
            out[index] = value
    return out


def _parse_float(text: bytes) -> float | None:
    """C's strtod on the whole string (surrounding spaces allowed): decimal, hex, inf, nan."""
    word = text.strip()
    if b"_" in word:
        return None
    try:
        return float(word)
    except ValueError:
        pass
    try:
        return float.fromhex(word.decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        return None


def _parse_int(text: bytes) -> int | None:
    """C's strtol in base 10 on the whole string (surrounding spaces allowed)."""
    word = text.strip()
    if not word.lstrip(b"+-").isdigit() or word[1:].lstrip(b"0123456789"):
        return None
    return int(word)


_register_string_op("StringToNumber", _string_to_number_infer, _string_to_number_kernel)


@export("strings.to_number", "string_to_number")
def string_to_number(
    string_tensor: Any, out_type: Any = dtypes.float32, name: str | None = None
) -> Any:
    """Parses each string of `string_tensor` as a number of `out_type` (float32, float64, int32
    or int64); a string that is not one fails the run with InvalidArgumentError, as TF1.

    >>> import sluice as sl
    >>> with sl.Graph().as_default(), sl.Session() as sess:
    ...     sess.run(sl.strings.to_number(["1.5", "-2"]))
    array([ 1.5, -2. ], dtype=float32)
    """
    x = core_ops.convert_to_tensor(string_tensor, dtype=dtypes.string)
    attrs = {"out_type": dtypes.as_dtype(out_type)}
    return core_ops.apply_op("StringToNumber", [x], attrs, name=name).outputs[0]


# -- StringLength -------------------------------------------------------------------------------
def _string_length_infer(op) -> list:
    x = op.inputs[0]
    _require_string(x, "input")
    if op.get_attr("unit") not in ("BYTE", "UTF8_CHAR"):  # TF1's words
        raise ValueError(
            f"Attr 'unit' of 'StringLength' Op passed string '{op.get_attr('unit')}' not in: "
            '"BYTE", "UTF8_CHAR".'
        )
    return [(dtypes.int32, x.shape)]


def _string_length_kernel(x: Any, *, unit: str = "BYTE", **_: Any) -> np.ndarray:
    array = np.asarray(x, dtype=object)
    if unit == "BYTE":
        count = len
    else:  # code points: the bytes that do not continue a UTF-8 sequence
        count = lambda b: sum((c & 0xC0) != 0x80 for c in b)  # noqa: E731
    out = np.empty(array.shape, dtype=np.int32)
    for index, text in np.ndenumerate(array):
        out[index] = count(text)
    return out


_register_string_op("StringLength", _string_length_infer, _string_length_kernel)


@export("strings.length")
def string_length(input: Any, name: str | None = None, unit: str = "BYTE") -> Any:
    """The length of each string of `input`: in bytes, or in UTF-8 characters with
    `unit="UTF8_CHAR"`.

    >>> import sluice as sl
    >>> with sl.Graph().as_default(), sl.Session() as sess:
    ...     sess.run(sl.strings.length(["ab", "\u00e9"], unit="UTF8_CHAR"))
    array([2, 1], dtype=int32)
    """
    x = core_ops.convert_to_tensor(input, dtype=dtypes.string)
    return core_ops.apply_op("StringLength", [x], {"unit": unit}, name=name).outputs[0]
