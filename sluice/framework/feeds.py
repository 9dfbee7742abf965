"""How `Session.run` reads its `feed_dict`, as TF1's `Session.run` does
(tensorflow/python/client/session.py, `_run`).

A key is a Tensor (or anything that names one: "x:0", a Variable), an `IndexedSlices` (fed
from `(values, indices[, dense_shape])`), a `SparseTensor` (fed from a `SparseTensorValue` or
`(indices, values, dense_shape)`; a dense shape fixed by a constant is checked, not fed), or a
nested tuple of those: an `LSTMStateTuple`, a
tuple of them, any namedtuple. A nested key is fed element by element from a value of the same
structure (TF1's `nest.flatten_dict_items`):

    feed_dict={cell_state: LSTMStateTuple(c=c_value, h=h_value)}
    feed_dict={(state_0, state_1): previous_states}     # the states a run returned

Each value becomes `np.asarray(value, dtype=<the tensor's dtype>)`: a Python list, a scalar, an
array of another dtype are converted as NumPy converts them (float64 labels fed to an int32
placeholder are truncated, as in TF1), and must fit the tensor's static shape.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from sluice.framework.ir import dtypes, string_values
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.core.shape_rules import constant_value
from sluice.framework.ops.math.indexed_slices import IndexedSlices
from sluice.framework.ops.sparse.sparse_tensor import SparseTensor


def flatten_feed_dict(feed_dict: dict) -> list[tuple[Any, Any]]:
    """(key, value) pairs of `feed_dict`, a nested key paired element-wise with its value.

    Raises:
      ValueError: a nested key whose value has another structure, or a key that the flattened
        feeds hold twice.
    """
    flat: dict = {}
    for key, value in feed_dict.items():
        for k, v in _pairs(key, value):
            if k in flat:
                raise ValueError(
                    f"Could not flatten feed_dict: key {k!r} is not unique (it is "
                    "fed twice, once inside a nested key)."
                )
            flat[k] = v
    return list(flat.items())


def convert_feed_value(t: Tensor, value: Any) -> Any:
    """`value` as an array of `t`'s dtype (TF1: `np.asarray(value, dtype=t.dtype)`), checked
    against `t`'s shape. A JAX array of that dtype is kept as it is, on its device.

    Raises:
      TypeError: `t` is a variable handle, `value` is a Tensor, or a Python int that `t`'s dtype
        cannot hold; numpy's TypeError or ValueError (naming the tensor and the dtypes) for a
        value that does not convert at all, such as a string fed as a float or a ragged list.
      ValueError: the value's shape does not fit `t`'s.
    """
    dtype = t.dtype
    if dtype == dtypes.resource:
        raise TypeError(f"Tensor {t.name} is a variable handle and cannot be fed.")
    if isinstance(value, Tensor) or hasattr(value, "_as_graph_element"):
        raise TypeError(
            f"The value of a feed cannot be a sl.Tensor object ({value!r}, fed for {t.name!r}). "
            "Acceptable feed values include Python scalars, lists, NumPy arrays and JAX arrays; "
            "run the tensor first and feed its value."
        )
    if dtype == dtypes.string:
        try:
            array = string_values.as_bytes_array(value)
        except (TypeError, ValueError) as err:
            raise type(err)(
                f"Cannot convert the value fed for Tensor {t.name!r} to a string tensor: {err}"
            ) from None
    elif isinstance(value, jax.Array) and value.dtype == dtype:
        array = value
    else:
        if isinstance(value, int) and not isinstance(value, bool):
            _check_int_fits(t, value)
        try:
            array = np.asarray(value, dtype=dtype)
        except (TypeError, ValueError, OverflowError) as err:
            source = _dtype_name(value)
            raise type(err)(
                f"Cannot convert the value fed for Tensor {t.name!r} ({source}) to its dtype "
                f"{dtype.name}: {err}"
            ) from None
    if not t.shape.is_compatible_with(array.shape):
        raise ValueError(
            f"Cannot feed value of shape {tuple(array.shape)} for Tensor {t.name!r}, which has "
            f"shape {t.shape}."
        )
    return array


def _pairs(key: Any, value: Any) -> list[tuple[Any, Any]]:
    """`key`'s tensors (or names) paired with their values: the key's own structure first,
    else, as TF1, the two flattened with as many leaves each."""
    if isinstance(key, IndexedSlices):
        parts = [key.values, key.indices] + ([] if key.dense_shape is None else [key.dense_shape])
        if not _is_sequence(value):
            raise ValueError(
                f"An IndexedSlices feed_dict key ({key.name}) needs a value of "
                f"(values, indices[, dense_shape]), got {_describe(value)}."
            )
        return list(zip(parts, value))
    if isinstance(key, SparseTensor):
        return _sparse_pairs(key, value)
    if not _is_sequence(key):
        return [(key, value)]
    try:
        return _pairs_up_to(key, value)
    except _Mismatch:
        pass
    keys, values = _flatten(key), _flatten(value)
    if len(keys) != len(values):
        raise ValueError(
            f"Could not flatten feed_dict: the key {_describe(key)} holds {len(keys)} tensors, "
            f"but its value {_describe(value)} has {len(values)} elements. A nested key is fed "
            "from a value of the same structure, such as the value a run returned for it."
        )
    return [pair for k, v in zip(keys, values) for pair in _pairs(k, v)]


def _sparse_pairs(key: SparseTensor, value: Any) -> list[tuple[Any, Any]]:
    """A SparseTensor key's three tensors with the parts of a SparseTensorValue or a 3-tuple."""
    if not _is_sequence(value) or len(value) != 3:
        raise TypeError(
            f"A SparseTensor feed_dict key ({key.name}) needs a SparseTensorValue or an "
            f"(indices, values, dense_shape) tuple, got {_describe(value)}."
        )
    indices, values, dense_shape = value
    pairs = [(key.indices, indices), (key.values, values)]
    fixed = constant_value(key.dense_shape)
    if fixed is None:
        return pairs + [(key.dense_shape, dense_shape)]
    fed = np.asarray(dense_shape, np.int64).reshape(-1)
    if fed.shape != fixed.shape or (fed != fixed).any():
        raise ValueError(
            f"Cannot feed dense_shape {fed.tolist()} for the SparseTensor {key.name}, whose "
            f"dense shape is fixed to {fixed.tolist()}."
        )
    return pairs


class _Mismatch(Exception):
    pass


def _pairs_up_to(key: Any, value: Any) -> list[tuple[Any, Any]]:
    if not _is_sequence(key):
        return _pairs(key, value)
    if not _is_sequence(value) or len(value) != len(key):
        raise _Mismatch
    return [pair for k, v in zip(key, value) for pair in _pairs_up_to(k, v)]


def _is_sequence(x: Any) -> bool:
    return isinstance(x, (tuple, list))  # namedtuples (LSTMStateTuple) included; arrays are leaves


def _flatten(x: Any) -> list:
    return [leaf for item in x for leaf in _flatten(item)] if _is_sequence(x) else [x]


def _describe(x: Any) -> str:
    """A short rendering of a key's or value's structure: `LSTMStateTuple(c:0, array(2, 3))`."""
    if _is_sequence(x):
        inner = ", ".join(_describe(item) for item in x[:6]) + (", ..." if len(x) > 6 else "")
        return f"{type(x).__name__}({inner})" if isinstance(x, tuple) else f"[{inner}]"
    if isinstance(x, (Tensor, IndexedSlices, SparseTensor)):
        return x.name
    if isinstance(x, (np.ndarray, jax.Array)):
        return f"array{tuple(x.shape)}"
    return repr(x) if isinstance(x, (str, int, float)) else type(x).__name__


def _dtype_name(value: Any) -> str:
    dtype = getattr(value, "dtype", None)
    if dtype is not None:
        return f"dtype {np.dtype(dtype).name}"
    return f"a Python {type(value).__name__}"


def _check_int_fits(t: Tensor, value: int) -> None:
    """TF1 refuses a Python int that the tensor's dtype would change (2**40 fed as int32)."""
    try:
        fits = t.dtype.type(value).item() == value
    except (OverflowError, ValueError):
        fits = False
    if not fits:
        raise TypeError(
            f"Type of feed value {value} with type {type(value)} is not compatible with Tensor "
            f"{t.name!r} of type {t.dtype.name}. Try explicitly setting the type of the feed "
            "tensor to a larger type (e.g. int64)."
        )
