"""Ops that cut blocks out of a tensor: Slice and StridedSlice (with `Tensor.__getitem__`), the
TF1 wrappers `slice` and `strided_slice`, and StridedSliceGrad, which puts a slice's gradient
back in place.

`x[1:3, ::2]`, `x[..., -1]`, `x[None, :, t]` each become one StridedSlice op whose begin, end and
strides inputs and five bit masks say what the Python index said (`array_util.strided_slice_index`
turns them back into that index). Begin, end and strides are host inputs; for engines that trace
whole graphs the kernels also accept a traced begin when its traced entries are integer indices
(`x[t]` inside a jitted loop), which JAX indexes dynamically.
GatherV2, Select and Where live in `gather_ops`; `gather` and `where` are re-exported here.
"""

from __future__ import annotations

import builtins
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes, registry
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.kernel_context import HostValueRequired
from sluice.framework.ir.registry import register_gradient
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import fill_ops, join_ops
from sluice.framework.ops.array.gather_ops import gather, where, where_v2  # noqa: F401  (re-exported)
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import (
    INDEX_DTYPES,
    STRIDED_SLICE_MASKS,
    as_int_tensor,
    host_ints,
    int_values,
    maybe_host_value,
    register_array_op,
    require_index_dtype,
    require_vector,
    strided_slice_index,
)
from sluice.framework.ops.core.shape_rules import require_same_dtype

_py_slice = builtins.slice  # this module defines TF1's `slice`


def _index_values(tensors, what: str) -> list[list | None]:
    """The known entries of equally long 1-D index inputs, one list per input (None if unknown)."""
    values = []
    for t in tensors:
        require_index_dtype(t, what)
        require_vector(t, what)
        values.append(int_values(t))
    lengths = {len(v) for v in values if v is not None}
    if len(lengths) > 1:
        raise ValueError(f"{what} inputs must have equal lengths, got {sorted(lengths)}")
    return values


# -- Slice ----------------------------------------------------------------------------------------
def _slice_infer(op) -> list:
    x, begin, size = op.inputs
    b, s = _index_values([begin, size], "begin and size")
    n = next((len(v) for v in (b, s) if v is not None), None)
    rank = x.shape.rank if x.shape.rank is not None else n
    if rank is None:
        return [(x.dtype, TensorShape(None))]
    if n is not None and n != rank:
        raise ValueError(f"begin and size must have {rank} entries (the rank), got {n}")
    b, s = b or [None] * rank, s or [None] * rank
    out = []
    for i, (d, bi, si) in enumerate(zip(x.shape.dims or (None,) * rank, b, s)):
        if bi is not None and bi < 0 or si is not None and si < -1:
            raise ValueError(f"begin must be >= 0 and size >= -1, got {bi} and {si} in dim {i}")
        end = None if bi is None or si is None else (d if si == -1 else bi + si)
        if d is not None and end is not None and not bi <= end <= d:
            raise ValueError(f"Expected begin[{i}] + size[{i}] <= {d} (dim {i}), got {bi} + {si}")
        out.append(si if si != -1 else (None if d is None or bi is None else d - bi))
    return [(x.dtype, TensorShape(out))]


def _slice_kernel(x, begin, size, **_):
    size = host_ints(size, "Slice's size")
    b = maybe_host_value(begin)
    if b is None:  # a traced begin: JAX's dynamic slice (clamped to the bounds)
        if -1 in size:  # "to the end" of a run-time begin: see _slice_shaped_kernel
            raise HostValueRequired("Slice with size -1 needs its begin while compiling")
        return jax.lax.dynamic_slice(x, begin, size)
    b = [int(v) for v in b]
    ends = [d if s == -1 else bi + s for d, bi, s in zip(x.shape, b, size)]
    for i, (bi, end, d) in enumerate(zip(b, ends, x.shape)):
        if not 0 <= bi <= end <= d:
            raise ValueError(
                f"Slice: begin {bi} and size {size[i]} do not fit dimension {i} of size {d}"
            )
    return jax.lax.slice(x, b, ends)


register_array_op("Slice", infer=_slice_infer, kernel=_slice_kernel, host_inputs=(2,))


def _slice_shaped_kernel(op, x, begin, size, **_):
    """A traced begin with size -1 somewhere (`slice(v, [t, 0], [1, -1])`): the block's extent
    in those dimensions is the one shape inference knew (there the begin entry was a constant);
    None, so the step runs interpreted, where it did not know it."""
    sizes = op.outputs[0].shape.as_list() if op.outputs[0].shape.rank is not None else None
    if sizes is None or None in sizes:
        return None
    return jax.lax.dynamic_slice(x, begin, sizes)


registry.register_shaped_kernel("Slice", _slice_shaped_kernel)


@register_gradient("Slice")
def _slice_grad(op, grad):
    """Pads the gradient with zeros back to the input's shape: `begin` before, the rest after."""
    x, begin, _ = op.inputs
    x_shape, grad_shape = (fill_ops.shape(t, out_type=begin.dtype) for t in (x, grad))
    after = x_shape - grad_shape - begin
    dx = join_ops.pad(grad, join_ops.stack([begin, after], axis=1))
    dx.set_shape(x.shape)
    return [dx, None, None]


@export("slice")
def slice(input_: Any, begin: Any, size: Any, name: str | None = None) -> Tensor:
    """The block of `input_` that starts at `begin` and has `size` (-1: to the end)."""
    x = core_ops.convert_to_tensor(input_)
    begin = as_int_tensor(begin, "slice's begin")
    size = as_int_tensor(size, "slice's size", dtype=begin.dtype)
    return core_ops.apply_op("Slice", [x, begin, size], name=name).outputs[0]


# -- StridedSlice ---------------------------------------------------------------------------------
def _slice_length(d, begin, end, stride, begin_masked: bool, end_masked: bool) -> int | None:
    if stride == 0:
        raise ValueError("strides must be non-zero")
    if d is None or stride is None:
        return None
    if (begin is None and not begin_masked) or (end is None and not end_masked):
        return None
    start = None if begin_masked else begin
    stop = None if end_masked else end
    return len(builtins.range(*_py_slice(start, stop, stride).indices(d)))


def _strided_slice_shape(shape: TensorShape, b: list, e: list, s: list, masks: dict) -> TensorShape:
    """TF's sparse-to-dense walk over the slice spec, on static dims (None where unknown)."""
    if shape.rank is None:
        return TensorShape(None)
    dims, rank, n = shape.dims, shape.rank, len(b)
    ellipsis, new_axis = masks["ellipsis_mask"], masks["new_axis_mask"]
    if (ellipsis & ((1 << n) - 1)).bit_count() > 1:
        raise ValueError("Multiple ellipses in slice spec not allowed")
    consuming = [i for i in builtins.range(n) if not (ellipsis | new_axis) & (1 << i)]
    if len(consuming) > rank:
        raise ValueError(
            f"Index out of range: {len(consuming)} indices for a tensor of rank {rank}"
        )
    out: list = []
    j = 0  # the input dimension the next entry consumes
    for i in builtins.range(n):
        bit = 1 << i
        if ellipsis & bit:
            k = rank - len(consuming)
            out.extend(dims[j : j + k])
            j += k
        elif new_axis & bit:
            out.append(1)
        elif masks["shrink_axis_mask"] & bit:
            d, bi = dims[j], b[i]
            if d is not None and bi is not None and not -d <= bi < d:
                raise ValueError(f"slice index {bi} of dimension {j} out of bounds (size {d})")
            j += 1
        else:
            bm, em = bool(masks["begin_mask"] & bit), bool(masks["end_mask"] & bit)
            out.append(_slice_length(dims[j], b[i], e[i], s[i], bm, em))
            j += 1
    if not ellipsis & ((1 << n) - 1):
        out.extend(dims[j:])
    return TensorShape(out)


def _sliced_shape(x_shape: TensorShape, op) -> TensorShape:
    """The static shape of what a StridedSlice (or StridedSliceGrad) `op` cuts from `x_shape`."""
    begin, end, strides = op.inputs[1:4]
    require_same_dtype(begin, end, strides)
    values = _index_values([begin, end, strides], "begin, end and strides")
    n = next((len(v) for v in values if v is not None), None)
    if n is None:
        return TensorShape(None)
    b, e, s = (v if v is not None else [None] * n for v in values)
    masks = {k: op.get_attr(k) for k in STRIDED_SLICE_MASKS}
    return _strided_slice_shape(x_shape, b, e, s, masks)


def _strided_slice_infer(op) -> list:
    x = op.inputs[0]
    return [(x.dtype, _sliced_shape(x.shape, op))]


def _kernel_index(shape, begin, end, strides, attrs: dict) -> tuple:
    """The Python index a StridedSlice applies to a value of `shape` (checked when concrete)."""
    masks = {k: attrs[k] for k in STRIDED_SLICE_MASKS}
    strides = list(host_ints(strides, "StridedSlice's strides"))
    n = len(strides)
    b, e = maybe_host_value(begin), maybe_host_value(end)
    if b is not None and e is not None:
        index = strided_slice_index([int(v) for v in b], [int(v) for v in e], strides, **masks)
        try:  # NumPy checks integer indices (JAX would clamp them), here on a view of no data
            np.broadcast_to(np.bool_(False), shape)[index]
        except IndexError as err:
            raise IndexError(f"StridedSlice: {err}") from None
        return index
    # Traced by an engine that jits whole graphs: only integer indices (end ignored) may be traced.
    ranges = ~(masks["shrink_axis_mask"] | masks["ellipsis_mask"] | masks["new_axis_mask"])
    ranges &= (1 << n) - 1
    if (b is None and ranges & ~masks["begin_mask"]) or (e is None and ranges & ~masks["end_mask"]):
        raise HostValueRequired(
            "StridedSlice with traced begin or end supports traced integer indices only"
        )
    b = [begin[i] for i in builtins.range(n)] if b is None else [int(v) for v in b]
    e = [None] * n if e is None else [int(v) for v in e]
    return strided_slice_index(b, e, strides, **masks)


def _strided_slice_kernel(x, begin, end, strides, **attrs):
    return jnp.asarray(x)[_kernel_index(x.shape, begin, end, strides, attrs)]


register_array_op(
    "StridedSlice", infer=_strided_slice_infer, kernel=_strided_slice_kernel, host_inputs=(1, 2, 3)
)
registry.register_string_kernel(  # `t[i]` of a string tensor, with NumPy on the host
    "StridedSlice",
    lambda x, begin, end, strides, **attrs: np.asarray(x)[
        _kernel_index(np.shape(x), begin, end, strides, attrs)
    ],
)


def _dynamic_window(x_shape, out_dims, begin, strides, attrs: dict):
    """(starts, sizes, squeezed axes) of a StridedSlice with a traced begin cut to `out_dims`
    (its result's static dims), for `lax.dynamic_slice`; None unless every stride is 1 and there
    is no ellipsis or new axis."""
    if attrs["ellipsis_mask"] or attrs["new_axis_mask"]:
        return None
    steps = list(host_ints(strides, "StridedSlice's strides"))
    if any(step != 1 for step in steps) or len(steps) > len(x_shape):
        return None
    out_dims, starts, sizes, squeezed = iter(out_dims), [], [], []
    index_dtype = jnp.asarray(begin).dtype
    for i, dim in enumerate(x_shape):
        bit = 1 << i
        if i >= len(steps) or attrs["begin_mask"] & bit:
            start = jnp.zeros((), index_dtype)
        else:
            start = jnp.asarray(begin[i])
            start = jnp.where(start < 0, start + dim, start)  # from the end, as in Python
        if i < len(steps) and attrs["shrink_axis_mask"] & bit:
            size = 1
            squeezed.append(i)
        else:
            size = next(out_dims, None)
            if size is None:
                return None
        starts.append(start)
        sizes.append(size)
    if next(out_dims, None) is not None:
        return None
    return starts, sizes, tuple(squeezed)


def _strided_slice_shaped_kernel(op, x, begin, end, strides, **attrs):
    """A slice whose begin (and end) the compiled step only has traced, cut to the lengths the
    op's static shape fixes: TF1's PTB reader, `strided_slice(data, [0, i * n], [b, (i + 1) * n])`
    then `set_shape([b, n])`. As in TF, the static shape is trusted: a window that would run off
    the end is moved back inside (`lax.dynamic_slice` clamps its start), where TF would return
    fewer elements than `set_shape` claimed."""
    out_shape = op.outputs[0].shape
    if not out_shape.is_fully_defined():
        return None
    window = _dynamic_window(x.shape, out_shape.as_list(), begin, strides, attrs)
    if window is None:
        return None
    starts, sizes, squeezed = window
    return jnp.squeeze(jax.lax.dynamic_slice(x, starts, sizes), axis=squeezed)


registry.register_shaped_kernel("StridedSlice", _strided_slice_shaped_kernel)


@register_gradient("StridedSlice")
def _strided_slice_grad(op, grad):
    x, begin, end, strides = op.inputs
    inputs = [fill_ops.shape(x, out_type=begin.dtype), begin, end, strides, grad]
    attrs = {k: op.get_attr(k) for k in STRIDED_SLICE_MASKS}
    return [core_ops.apply_op("StridedSliceGrad", inputs, attrs).outputs[0], None, None, None]


def _strided_slice_grad_infer(op) -> list:
    shape, dy = op.inputs[0], op.inputs[4]
    require_index_dtype(shape, "shape")
    require_vector(shape, "shape")
    x_shape = TensorShape(int_values(shape))
    sliced = _sliced_shape(x_shape, op)
    if not sliced.is_compatible_with(dy.shape):
        raise ValueError(f"dy of shape {dy.shape} does not match the slice's shape {sliced}")
    return [(dy.dtype, x_shape)]


def _strided_slice_grad_kernel(shape, begin, end, strides, dy, **attrs):
    """Zeros of the input's `shape` with `dy` where StridedSlice read it."""
    shape = host_ints(shape, "StridedSliceGrad's shape")
    index = _kernel_index(shape, begin, end, strides, attrs)
    return jnp.zeros(shape, dy.dtype).at[index].set(dy)


register_array_op(
    "StridedSliceGrad",
    infer=_strided_slice_grad_infer,
    kernel=_strided_slice_grad_kernel,
    host_inputs=(0, 1, 2, 3),
)


def _strided_slice_grad_shaped_kernel(op, shape, begin, end, strides, dy, **attrs):
    """The gradient of `_strided_slice_shaped_kernel`: `dy` put back at the traced window."""
    shape = host_ints(shape, "StridedSliceGrad's shape")
    window = _dynamic_window(shape, dy.shape, begin, strides, attrs)
    if window is None:
        return None
    starts, sizes, _ = window
    return jax.lax.dynamic_update_slice(jnp.zeros(shape, dy.dtype), jnp.reshape(dy, sizes), starts)


registry.register_shaped_kernel("StridedSliceGrad", _strided_slice_grad_shaped_kernel)


@register_gradient("StridedSliceGrad")
def _strided_slice_grad_grad(op, grad):
    _, begin, end, strides, _ = op.inputs
    masks = {k: op.get_attr(k) for k in STRIDED_SLICE_MASKS}
    return [None, None, None, None, strided_slice(grad, begin, end, strides, **masks)]


@export("strided_slice")
def strided_slice(
    input_: Any,
    begin: Any,
    end: Any,
    strides: Any = None,
    begin_mask: int = 0,
    end_mask: int = 0,
    ellipsis_mask: int = 0,
    new_axis_mask: int = 0,
    shrink_axis_mask: int = 0,
    var: Any = None,
    name: str | None = None,
) -> Tensor:
    """`input_[begin:end:strides]` per dimension, with TF's masks: bit i of begin_mask/end_mask
    ignores begin[i]/end[i]; of ellipsis_mask makes entry i `...`; of new_axis_mask a new axis
    of size 1; of shrink_axis_mask the integer index begin[i] (the dimension is dropped)."""
    del var  # TF1 uses it only for sliced assignment
    x = core_ops.convert_to_tensor(input_)
    begin = as_int_tensor(begin, "strided_slice's begin")
    end = as_int_tensor(end, "strided_slice's end", dtype=begin.dtype)
    if strides is None:
        n = begin.shape[0] if begin.shape.rank == 1 else None
        if n is None:
            raise ValueError("strided_slice needs `strides` when the length of begin is unknown")
        strides = [1] * n
    strides = as_int_tensor(strides, "strided_slice's strides", dtype=begin.dtype)
    masks = (begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask)
    attrs = {k: int(v) for k, v in zip(STRIDED_SLICE_MASKS, masks)}
    return core_ops.apply_op("StridedSlice", [x, begin, end, strides], attrs, name).outputs[0]


def _index_entry(value: Any) -> int | Tensor | None:
    """A start/stop/step or integer index: a Python int, a scalar int Tensor, or None."""
    if value is None or isinstance(value, Tensor):
        if isinstance(value, Tensor) and (
            value.dtype not in INDEX_DTYPES or value.shape.rank not in (None, 0)
        ):
            raise TypeError(
                f"Tensor indices must be int32 or int64 scalars, got {value.dtype.name} of shape "
                f"{value.shape} (use sl.boolean_mask or sl.gather for masks and index lists)"
            )
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    raise TypeError(
        "Only integers, slices (`:`), ellipsis (`...`), None (new axis) and scalar int32/int64 "
        f"tensors are valid indices, got {value!r}"
    )


def _getitem(tensor: Tensor, key: Any) -> Tensor:
    """`tensor[key]` with NumPy's basic indexing, as one StridedSlice op."""
    key = key if isinstance(key, tuple) else (key,)
    begin, end, strides = [], [], []
    masks = dict.fromkeys(STRIDED_SLICE_MASKS, 0)
    for i, item in enumerate(key):
        bit = 1 << i
        if isinstance(item, _py_slice):
            start, stop, step = (_index_entry(v) for v in (item.start, item.stop, item.step))
            masks["begin_mask"] |= bit if start is None else 0
            masks["end_mask"] |= bit if stop is None else 0
            begin.append(0 if start is None else start)
            end.append(0 if stop is None else stop)
            strides.append(1 if step is None else step)
            continue
        if item is Ellipsis:
            if masks["ellipsis_mask"]:
                raise ValueError("An index can only have a single ellipsis ('...')")
            masks["ellipsis_mask"] |= bit
        elif item is None:
            masks["new_axis_mask"] |= bit
        else:
            index = _index_entry(item)
            masks["shrink_axis_mask"] |= bit
            begin.append(index)
            # end is ignored on shrink axes (TF's kernel uses begin + 1); a Tensor needs no Add op
            end.append(index if isinstance(index, Tensor) else index + 1)
            strides.append(1)
            continue
        begin.append(0)
        end.append(0)
        strides.append(1)
    kinds = {v.dtype for v in begin + end + strides if isinstance(v, Tensor)}
    if len(kinds) > 1:
        raise TypeError(f"Tensor indices mix dtypes {sorted(k.name for k in kinds)}")
    dtype = kinds.pop() if kinds else dtypes.int32
    with graph_lib.name_scope(None, "strided_slice", [tensor]) as scope:
        b, e, s = (as_int_tensor(v, "an index", dtype=dtype) for v in (begin, end, strides))
        return strided_slice(tensor, b, e, s, name=scope, **{k: masks[k] for k in masks})


Tensor.override_operator("__getitem__", _getitem)
