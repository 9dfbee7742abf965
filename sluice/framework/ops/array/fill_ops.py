"""Ops about shapes and new tensors: Shape, Size, Rank, Cast, Fill, ZerosLike, OnesLike, Range,
OneHot, with the TF1 wrappers `shape`, `size`, `rank`, `cast`, `to_float`, ..., `fill`, `zeros`,
`ones`, `zeros_like`, `ones_like`, `range` and `one_hot`.

`shape_rules.constant_value` follows Shape, Size and Rank, so the value of `shape(x)` is known
while the graph is built whenever the shape of `x` is.
"""

from __future__ import annotations

import math
from typing import Any

import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable, register_gradient
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import (
    as_int_tensor,
    host_ints,
    host_value,
    int_values,
    normalize_axis,
    register_array_op,
    require_index_dtype,
    require_vector,
)
from sluice.framework.ops.core.shape_rules import constant_value, require_rank, same_as_input


def _require_out_type(op) -> np.dtype:
    out_type = op.get_attr("out_type")
    if out_type not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"out_type must be int32 or int64, got {out_type.name}")
    return out_type


# -- Shape, Size, Rank ----------------------------------------------------------------------------
def _shape_infer(op) -> list:
    rank = op.inputs[0].shape.rank
    return [(_require_out_type(op), TensorShape([rank]))]


register_array_op(
    "Shape",
    infer=_shape_infer,
    kernel=lambda x, *, out_type, **_: jnp.asarray(x.shape, dtype=out_type),
    select_safe=True,
)
register_array_op(
    "Size",
    infer=lambda op: [(_require_out_type(op), TensorShape([]))],
    kernel=lambda x, *, out_type, **_: jnp.asarray(x.size, dtype=out_type),
    select_safe=True,
)
register_array_op(
    "Rank",
    infer=lambda op: [(dtypes.int32, TensorShape([]))],
    kernel=lambda x, **_: jnp.asarray(x.ndim, dtype=jnp.int32),
    select_safe=True,
)
not_differentiable("Shape", "Size", "Rank")


@export("shape")
def shape(input: Any, name: str | None = None, out_type: Any = dtypes.int32) -> Tensor:
    """The shape of `input` as a 1-D int tensor (a constant when the shape is fully known)."""
    x = core_ops.convert_to_tensor(input)
    out_type = dtypes.as_dtype(out_type)
    if x.shape.is_fully_defined():
        return core_ops.constant(x.shape.as_list(), out_type, name=name or "Shape")
    return _shape_query("Shape", x, {"out_type": out_type}, name)


@export("size")
def size(input: Any, name: str | None = None, out_type: Any = dtypes.int32) -> Tensor:
    """The number of elements of `input` as a scalar int tensor."""
    x = core_ops.convert_to_tensor(input)
    out_type = dtypes.as_dtype(out_type)
    if x.shape.is_fully_defined():
        return core_ops.constant(x.shape.num_elements(), out_type, name=name or "Size")
    return _shape_query("Size", x, {"out_type": out_type}, name)


@export("rank")
def rank(input: Any, name: str | None = None) -> Tensor:
    """The number of dimensions of `input` as a scalar int32 tensor."""
    x = core_ops.convert_to_tensor(input)
    if x.shape.rank is not None:
        return core_ops.constant(x.shape.rank, dtypes.int32, name=name or "Rank")
    return _shape_query("Rank", x, {}, name)


def _shape_query(op_type: str, x: Tensor, attrs: dict, name: str | None) -> Tensor:
    """Builds Shape/Size/Rank of `x` where the control-flow context wants it: a backward loop
    computes it in the forward loop, so only the small result is saved for every iteration."""
    g = x.graph
    ctx = g.control_flow_context
    home = ctx.shape_home(x) if ctx is not None else None
    if home is None:
        return core_ops.apply_op(op_type, [x], attrs, name).outputs[0]
    with g.in_control_flow_context(home):
        return core_ops.apply_op(op_type, [x], attrs, name).outputs[0]


# -- Cast -----------------------------------------------------------------------------------------
def _cast_infer(op) -> list:
    return [(op.get_attr("DstT"), op.inputs[0].shape)]


def _cast_kernel(x, *, DstT, **_):
    return jnp.asarray(x).astype(DstT)


register_array_op("Cast", infer=_cast_infer, kernel=_cast_kernel, select_safe=True)


@register_gradient("Cast")
def _cast_grad(op, grad):
    """The gradient cast back, between floating (or complex) dtypes; none to or from integers."""
    source = op.inputs[0].dtype
    if dtypes.is_differentiable(source) and dtypes.is_differentiable(op.outputs[0].dtype):
        return [cast(grad, source)]
    return [None]


@export("cast")
def cast(x: Any, dtype: Any, name: str | None = None) -> Tensor:
    """`x` converted to `dtype` (floats to integers truncate toward zero); `x` itself when it
    already has that dtype."""
    dtype = dtypes.as_dtype(dtype)
    x = core_ops.convert_to_tensor(x, preferred_dtype=dtype)
    if x.dtype == dtype:
        return x
    attrs = {"SrcT": x.dtype, "DstT": dtype, "Truncate": False}
    return core_ops.apply_op("Cast", [x], attrs, name or "Cast").outputs[0]


@export("to_float")
def to_float(x: Any, name: str = "ToFloat") -> Tensor:
    return cast(x, dtypes.float32, name=name)


@export("to_double")
def to_double(x: Any, name: str = "ToDouble") -> Tensor:
    return cast(x, dtypes.float64, name=name)


@export("to_int32")
def to_int32(x: Any, name: str = "ToInt32") -> Tensor:
    return cast(x, dtypes.int32, name=name)


@export("to_int64")
def to_int64(x: Any, name: str = "ToInt64") -> Tensor:
    return cast(x, dtypes.int64, name=name)


# -- Fill, zeros, ones ----------------------------------------------------------------------------
def _dims_shape(dims_tensor: Tensor, what: str) -> TensorShape:
    """The static shape described by a 1-D shape tensor; negative entries are an error."""
    require_index_dtype(dims_tensor, what)
    require_vector(dims_tensor, what)
    values = int_values(dims_tensor)
    if values is None:
        return TensorShape(None)
    if any(v is not None and v < 0 for v in values):
        raise ValueError(f"{what} must not be negative, got {values}")
    return TensorShape(values)


def _fill_infer(op) -> list:
    dims, value = op.inputs
    require_rank(value, 0, "value")
    return [(value.dtype, _dims_shape(dims, "dims"))]


def _fill_kernel(dims, value, **_):
    return jnp.full(host_ints(dims, "Fill's dims"), value, dtype=value.dtype)


register_array_op(
    "Fill", infer=_fill_infer, kernel=_fill_kernel, host_inputs=(0,), select_safe=True
)
# Fill's gradient sums with a reduction, a higher family: it is in array_grads.py


@export("fill")
def fill(dims: Any, value: Any, name: str | None = None) -> Tensor:
    """A tensor of shape `dims` filled with the scalar `value`."""
    dims = as_int_tensor(dims, "fill's dims")
    value = core_ops.convert_to_tensor(value)
    return core_ops.apply_op("Fill", [dims, value], name=name).outputs[0]


def _shape_vector(shape: Any) -> Any:
    """A scalar shape (`5` or a scalar int Tensor) as the vector TF1's zeros and ones make of
    it: `zeros(5)` has shape [5]."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        return [shape]
    if isinstance(shape, Tensor) and shape.shape.rank == 0:
        return core_ops.apply_op("Pack", [shape], {"axis": 0, "N": 1}).outputs[0]
    return shape


@export("zeros")
def zeros(shape: Any, dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    """A tensor of `shape` (an int, a list, TensorShape or int Tensor) filled with zeros (the
    empty string for `sl.string`, as TF1)."""
    dtype = dtypes.as_dtype(dtype)
    zero = core_ops.constant(b"" if dtype == dtypes.string else np.zeros([], dtype))
    return fill(_shape_vector(shape), zero, name=name or "zeros")


@export("ones")
def ones(shape: Any, dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    """A tensor of `shape` (an int, a list, TensorShape or int Tensor) filled with ones."""
    dtype = dtypes.as_dtype(dtype)
    one = core_ops.constant(np.ones([], dtype))
    return fill(_shape_vector(shape), one, name=name or "ones")


register_array_op(
    "ZerosLike", infer=same_as_input, kernel=lambda x, **_: jnp.zeros_like(x), select_safe=True
)
register_array_op(
    "OnesLike", infer=same_as_input, kernel=lambda x, **_: jnp.ones_like(x), select_safe=True
)
not_differentiable("ZerosLike", "OnesLike")


@export("zeros_like")
def zeros_like(tensor: Any, dtype: Any = None, name: str | None = None) -> Tensor:
    """Zeros with the shape of `tensor`, and its dtype unless `dtype` is given."""
    x = core_ops.convert_to_tensor(tensor)
    if dtype is not None and dtypes.as_dtype(dtype) != x.dtype:
        return zeros(shape(x), dtype, name=name)
    return core_ops.apply_op("ZerosLike", [x], name=name).outputs[0]


@export("ones_like")
def ones_like(tensor: Any, dtype: Any = None, name: str | None = None) -> Tensor:
    """Ones with the shape of `tensor`, and its dtype unless `dtype` is given."""
    x = core_ops.convert_to_tensor(tensor)
    if dtype is not None and dtypes.as_dtype(dtype) != x.dtype:
        return ones(shape(x), dtype, name=name)
    return core_ops.apply_op("OnesLike", [x], name=name).outputs[0]


# -- Range ----------------------------------------------------------------------------------------
def _range_length(start, limit, delta) -> int:
    """TF's Range length: ceil(|limit - start| / |delta|), with TF's checks."""
    if delta == 0:
        raise ValueError("Requires delta != 0")
    if delta > 0 and start > limit:
        raise ValueError(f"Requires start <= limit when delta > 0: {start}/{limit}")
    if delta < 0 and start < limit:
        raise ValueError(f"Requires start >= limit when delta < 0: {start}/{limit}")
    if isinstance(start, (int, np.integer)) and isinstance(delta, (int, np.integer)):
        return (abs(int(limit) - int(start)) + abs(int(delta)) - 1) // abs(int(delta))
    return math.ceil(abs((limit - start) / delta))


def _range_infer(op) -> list:
    start = op.inputs[0]
    for t, what in zip(op.inputs, ("start", "limit", "delta")):
        require_rank(t, 0, what)
        if t.dtype != start.dtype:
            raise TypeError(f"start, limit and delta must have one dtype, got {t.dtype.name}")
    values = [constant_value(t) for t in op.inputs]
    if any(v is None for v in values):
        return [(start.dtype, TensorShape([None]))]
    return [(start.dtype, TensorShape([_range_length(*(v.item() for v in values))]))]


def _range_kernel(start, limit, delta, **_):
    dtype = np.asarray(start).dtype
    start, limit, delta = (host_value(v, "Range's inputs").item() for v in (start, limit, delta))
    steps = jnp.arange(_range_length(start, limit, delta), dtype=dtype)
    return (start + delta * steps).astype(dtype)


register_array_op("Range", infer=_range_infer, kernel=_range_kernel, host_inputs=(0, 1, 2))
not_differentiable("Range")

_RANGE_DTYPE_ORDER = (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64)


@export("range")
def range(  # TF1's name, shadowing the builtin in this module
    start: Any, limit: Any = None, delta: Any = 1, dtype: Any = None, name: str = "range"
) -> Tensor:
    """The sequence start, start + delta, ... up to but excluding `limit` (`range(n)` counts
    from 0). The dtype is the widest of the inputs' (int32 < int64 < float32 < float64)."""
    if limit is None:
        start, limit = 0, start
    values = [start, limit, delta]
    if dtype is None:
        found = [v.dtype if isinstance(v, Tensor) else dtypes.infer_dtype(v) for v in values]
        dtype = max(
            found, key=lambda d: _RANGE_DTYPE_ORDER.index(d) if d in _RANGE_DTYPE_ORDER else 0
        )
    dtype = dtypes.as_dtype(dtype)
    tensors = [cast(v, dtype) for v in values]
    return core_ops.apply_op("Range", tensors, {"Tidx": dtype}, name).outputs[0]


# -- OneHot ---------------------------------------------------------------------------------------
def _one_hot_infer(op) -> list:
    indices, depth, on_value, off_value = op.inputs
    if indices.dtype not in (dtypes.uint8, dtypes.int32, dtypes.int64):
        raise TypeError(f"indices must be uint8, int32 or int64, got {indices.dtype.name}")
    if depth.dtype != dtypes.int32:
        raise TypeError(f"depth must be an int32 scalar, got {depth.dtype.name}")
    require_rank(depth, 0, "depth")
    require_rank(on_value, 0, "on_value")
    require_rank(off_value, 0, "off_value")
    if on_value.dtype != off_value.dtype:
        raise TypeError(
            f"on_value and off_value must have one dtype, got {on_value.dtype.name} and "
            f"{off_value.dtype.name}"
        )
    depth_value = constant_value(depth)
    if depth_value is not None and depth_value < 0:
        raise ValueError(f"depth must be non-negative, got {depth_value}")
    n = None if depth_value is None else int(depth_value)
    if indices.shape.rank is None:
        return [(on_value.dtype, TensorShape(None))]
    axis = op.get_attr("axis")
    dims = list(indices.shape.dims)
    if not -1 <= axis <= len(dims):
        raise ValueError(f"axis must be in [-1, {len(dims)}], got {axis}")
    dims.insert(len(dims) if axis == -1 else axis, n)
    return [(on_value.dtype, TensorShape(dims))]


def _one_hot_kernel(indices, depth, on_value, off_value, *, axis, **_):
    n = int(host_value(depth, "OneHot's depth"))
    hot = jnp.expand_dims(indices, -1) == jnp.arange(n, dtype=indices.dtype)
    if axis != -1:
        hot = jnp.moveaxis(hot, -1, normalize_axis(axis, hot.ndim))
    return jnp.where(hot, on_value, off_value)


register_array_op("OneHot", infer=_one_hot_infer, kernel=_one_hot_kernel, host_inputs=(1,))
not_differentiable("OneHot")


@export("one_hot")
def one_hot(
    indices: Any,
    depth: Any,
    on_value: Any = None,
    off_value: Any = None,
    axis: int | None = None,
    dtype: Any = None,
    name: str | None = None,
) -> Tensor:
    """A one-hot tensor: `on_value` where the index equals the position along the new axis
    (`axis`, last by default), `off_value` elsewhere; out-of-range indices give all `off_value`.
    The dtype is `dtype`, else that of `on_value`/`off_value`, else float32."""
    dtype = None if dtype is None else dtypes.as_dtype(dtype)
    given = core_ops.convert_n([v for v in (on_value, off_value) if v is not None], dtype=dtype)
    if dtype is None:
        dtype = given[0].dtype if given else dtypes.float32
    on = given.pop(0) if on_value is not None else core_ops.constant(1, dtype=dtype)
    off = given.pop(0) if off_value is not None else core_ops.constant(0, dtype=dtype)
    indices = core_ops.convert_to_tensor(indices)
    depth = cast(as_int_tensor(depth, "one_hot's depth"), dtypes.int32)
    attrs = {"axis": -1 if axis is None else int(axis)}
    return core_ops.apply_op("OneHot", [indices, depth, on, off], attrs, name).outputs[0]
