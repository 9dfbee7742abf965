"""Helpers shared by the array op modules (`array_ops`, `broadcast_ops`, `fill_ops`, `join_ops`,
`slicing_ops`, `gather_ops`).

Host inputs: many array ops take shapes, axes, paddings or depths as int tensor inputs (as in
TensorFlow, where they live in host memory) and their kernels read those as concrete values. Such
ops register with `jit=False`, since their output shapes depend on input values, and record which
inputs are host inputs in their registry entry (`OpDef.host_inputs`; negative indices count from
the end), so an engine that compiles whole graphs knows which values it must have statically.
"""

from __future__ import annotations

from typing import Any, Sequence

import jax
import numpy as np

from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.kernel_context import HostValueRequired
from sluice.framework.ir.registry import InferFn, KernelFn, OpDef, register_op
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.shape_rules import constant_value, require_rank

INDEX_DTYPES = (dtypes.int32, dtypes.int64)


def register_array_op(
    name: str,
    *,
    infer: InferFn,
    kernel: KernelFn,
    host_inputs: Sequence[int] = (),
    jit: bool = True,
    select_safe: bool = False,
) -> OpDef:
    """`register_op` for an op whose kernel reads `host_inputs` as concrete values (then it is
    not jitted per op)."""
    return register_op(
        name,
        infer=infer,
        kernel=kernel,
        jit=jit,
        host_inputs=tuple(host_inputs),
        select_safe=select_safe,
    )


def one_or_tuple(values: Sequence[Any]) -> Any:
    """A kernel's result for ops with a variable number of outputs (Split, Unpack): the value
    itself when there is one output, as the kernel contract asks."""
    return values[0] if len(values) == 1 else tuple(values)


def host_value(value: Any, what: str) -> np.ndarray:
    """`value` as a NumPy array; a clear error when a kernel gets a traced value instead."""
    try:
        return np.asarray(value)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        raise HostValueRequired(
            f"{what} must be a concrete value when the kernel runs (a host input); it was traced "
            "by jax.jit"
        ) from None


def host_ints(value: Any, what: str) -> tuple[int, ...]:
    return tuple(int(v) for v in host_value(value, what).reshape(-1))


def maybe_host_value(value: Any) -> np.ndarray | None:
    """`value` as a NumPy array, or None when it is a tracer."""
    if isinstance(value, jax.core.Tracer):
        return None
    return np.asarray(value)


# -- static values of index tensors ---------------------------------------------------------------
def require_index_dtype(tensor: Tensor, what: str) -> None:
    if tensor.dtype not in INDEX_DTYPES:
        raise TypeError(f"{what} must be an int32 or int64 tensor, got {tensor.dtype.name}")


def require_vector(tensor: Tensor, what: str) -> None:
    if tensor.shape.rank not in (None, 1):
        raise ValueError(f"{what} must be a vector (rank 1), got shape {tensor.shape}")


def scalar_int_value(tensor: Tensor) -> int | None:
    """The value of a scalar int tensor if it is known while the graph is built."""
    value = constant_value(tensor)
    if value is not None:
        return int(np.reshape(value, [-1])[0]) if np.size(value) == 1 else None
    op = tensor.op
    if op.type in ("Identity", "Cast"):
        return scalar_int_value(op.inputs[0])
    if op.type == "StridedSlice" and tensor.shape.rank == 0:  # e.g. `shape(x)[0]`
        values = _sliced_source(op)
        index = _constant_slice_index(op)
        if values is not None and index is not None:
            try:
                return values[index]
            except IndexError:
                return None
    return None


def int_values(tensor: Tensor) -> list | None:
    """The entries of a 1-D int tensor as far as they are known while the graph is built.

    Returns a list of int-or-None (None: that entry is unknown), or None when even the length is
    unknown. Negative entries are kept as given (reshape's -1). Follows Const, Shape (unknown
    dims), Pack, ConcatV2, Identity, Cast and constant StridedSlice (`shape(x)[1:]`).
    """
    value = constant_value(tensor)
    if value is not None:
        return [int(v) for v in np.reshape(value, [-1])]
    op = tensor.op
    if op.type == "Shape":
        dims = op.inputs[0].shape.dims
        return None if dims is None else list(dims)
    if op.type == "Pack" and op.get_attr("axis") == 0:
        return [scalar_int_value(t) for t in op.inputs]
    if op.type in ("Identity", "Cast"):
        return int_values(op.inputs[0])
    if op.type == "ConcatV2" and scalar_int_value(op.inputs[-1]) in (0, -1):
        parts = [int_values(t) for t in op.inputs[:-1]]
        return None if any(p is None for p in parts) else [v for p in parts for v in p]
    if op.type == "StridedSlice" and tensor.shape.rank == 1:  # e.g. `shape(x)[1:]`
        values = _sliced_source(op)
        index = _constant_slice_index(op)
        if values is not None and index is not None:
            return list(values[index])
    n = tensor.shape[0] if tensor.shape.rank == 1 else None
    return None if n is None else [None] * n


def _sliced_source(op) -> np.ndarray | None:
    """The known entries (int or None) of a StridedSlice's input, as an object array."""
    source = op.inputs[0]
    value = constant_value(source)
    if value is not None:
        return np.array(value, dtype=object)
    values = int_values(source) if source.shape.rank == 1 else None
    return None if values is None else np.array(values, dtype=object)


def _constant_slice_index(op) -> tuple | None:
    begin, end, strides = (constant_value(t) for t in op.inputs[1:])
    if begin is None or end is None or strides is None:
        return None
    masks = {k: op.get_attr(k) for k in STRIDED_SLICE_MASKS}
    return strided_slice_index(list(begin), list(end), list(strides), **masks)


def as_int_tensor(value: Any, what: str, dtype: Any = None) -> Tensor:
    """A 1-D (or scalar) int tensor for a shape-like value: a Tensor, a TensorShape (fully
    defined), a NumPy array, or a list/tuple whose entries may themselves be scalar Tensors (they
    are stacked, as TF1's auto-packing does)."""
    if isinstance(value, Tensor) or hasattr(value, "_as_tensor"):
        tensor = core_ops.convert_to_tensor(value)
        require_index_dtype(tensor, what)
        return tensor
    if hasattr(value, "as_list"):  # TensorShape
        if not value.is_fully_defined():
            raise ValueError(f"{what} must be fully defined, got {value}")
        value = value.as_list()
    if isinstance(value, (list, tuple)) and core_ops.holds_tensor(value):
        kinds = {v.dtype for v in _leaves(value) if isinstance(v, Tensor)}
        if len(kinds) > 1:
            raise TypeError(f"{what} mixes tensors of dtypes {sorted(k.name for k in kinds)}")
        for t in _leaves(value):
            if isinstance(t, Tensor) and t.shape.rank not in (None, 0):
                raise ValueError(f"{what} entries must be scalars, got shape {t.shape}")
        tensor = core_ops.convert_to_tensor(value)  # packed, nested lists too (pad's paddings)
        require_index_dtype(tensor, what)
        return tensor
    array = np.asarray(value)
    if array.size == 0:
        array = array.astype(np.int32)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{what} must hold integers, got {value!r}")
    if dtype is None:  # Python ints are int32, as in TF1; NumPy int64 arrays stay int64
        dtype = np.int64 if isinstance(value, np.ndarray) and array.dtype == np.int64 else np.int32
    return core_ops.constant(array, dtype=dtype)


def _leaves(value: Any) -> list:
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def static_axis(axis_tensor: Tensor, rank: int | None, what: str = "axis") -> int | None:
    """The value of a scalar axis input in [0, rank), or None when it or the rank is unknown."""
    require_index_dtype(axis_tensor, what)
    require_rank(axis_tensor, 0, what)
    axis = scalar_int_value(axis_tensor)
    if axis is None or rank is None:
        return None
    return normalize_axis(axis, rank, what)


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    """`axis` in [0, rank), accepting negative axes; raises when out of range."""
    if not -rank <= axis < rank:
        raise ValueError(f"{what} {axis} is out of range for a tensor of rank {rank}")
    return axis % rank


# -- strided slices -------------------------------------------------------------------------------
STRIDED_SLICE_MASKS = (
    "begin_mask",
    "end_mask",
    "ellipsis_mask",
    "new_axis_mask",
    "shrink_axis_mask",
)


def strided_slice_index(
    begin: list,
    end: list,
    strides: list,
    *,
    begin_mask: int,
    end_mask: int,
    ellipsis_mask: int,
    new_axis_mask: int,
    shrink_axis_mask: int,
) -> tuple:
    """The Python index that a StridedSlice spec stands for (NumPy semantics equal TF's).

    Entry i is `...` if bit i of ellipsis_mask is set, else `None` (new axis) for new_axis_mask,
    else the integer `begin[i]` for shrink_axis_mask (end[i] is ignored, as TF's kernel does),
    else `slice(begin[i], end[i], strides[i])` with begin/end replaced by None where masked.
    Entries of `begin`/`end` may be None (unknown) only where they are masked or ignored.
    """
    index: list = []
    for i in range(len(begin)):
        bit = 1 << i
        if ellipsis_mask & bit:
            index.append(Ellipsis)
        elif new_axis_mask & bit:
            index.append(None)
        elif shrink_axis_mask & bit:
            index.append(begin[i])
        else:
            start = None if begin_mask & bit else begin[i]
            stop = None if end_mask & bit else end[i]
            index.append(slice(start, stop, strides[i]))
    return tuple(index)
