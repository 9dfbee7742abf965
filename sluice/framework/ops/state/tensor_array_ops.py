"""The ops of `TensorArray`: the array is a value, a dense buffer [size, *element_shape].

TF1's TensorArray is a resource (a vector of tensors) with a scalar "flow" that orders its ops.
Here the array *is* its flow: every op takes the buffer and returns a new one, so a TensorArray
passes through `while_loop` and `cond` as an ordinary loop variable or branch output, and the
backward loop saves what its gradient needs by the usual rules (no TensorArray-specific ones).

  TensorArrayV3(size)                        zeros [size, *element_shape]
  TensorArrayV3(size, shape_to_prepend)      a gradient array whose elements are the forward
                                             elements with dims prepended (TF1's
                                             TensorArrayGradWithShape): the element_shape attr
                                             has None for them, the kernel takes their values
  TensorArrayWriteV3(buffer, index, value)   the buffer with row `index` set to `value`
  TensorArrayReadV3(buffer, index)           row `index` (zeros when never written, as TF1)
  TensorArrayGatherV3 / TensorArrayScatterV3 rows at `indices`
  TensorArrayStackV3, TensorArrayConcatV3, TensorArraySizeV3
  TensorArrayGrowWriteV3 / GrowScatterV3     for dynamic_size=True: a write past the end grows
                                             the buffer. The index is a host value; a compiled
                                             loop presizes the buffer where it can
                                             (`compiler.tensor_arrays`), else runs interpreted.
  TensorArrayAddWriteV3                      a gradient array's write: adds to the row
  TensorArraySplitV3(buffer, value, lengths) a split by lengths known only at run time
  TensorArrayError(flow)                     fails when it runs: TF1's run-time errors that
                                             are known while building (a write twice)
  TensorArrayReadOnce(index, *earlier)       fails when `index` was read before
                                             (clear_after_read)
  TensorArrayElements(*values)               the flow of an array kept as a list
                                             (`control_flow.tensor_array_list`)
  TensorArrayElement(value)                  a list element read, with the array's shape

An element shape unknown when the array is built is told to its creation op by the first write
(`Operation.set_attr`). If it is still not fully known when the op runs, the buffer starts
unallocated (zero elements, shape [size, d or 0, ...]) and the first write allocates it with the
value's shape. A compiled loop cannot carry a buffer whose shape changes, so such a loop runs
interpreted (the session says so once).

Gradients use indices and shapes only, never the forward buffer, so a backward loop saves an
index per iteration, not a buffer. TF1 raises on a second write to one index; sluice detects it
only for constant indices, so the gradient of a write zeroes the rows it wrote in the buffer's
gradient: an element overwritten (as the forward value has it, the last write wins) gets none.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sluice.framework.ir import dtypes, errors
from sluice.framework.ir.registry import (
    Check,
    not_differentiable,
    register_gradient,
    register_op,
    register_string_kernel,
)
from sluice.framework.ir.tensor_shape import TensorShape, as_shape
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import host_ints, maybe_host_value
from sluice.framework.ops.core.shape_rules import constant_value
from sluice.framework.ops.state import buffer_ops

_INDEX_DTYPES = (dtypes.int32, dtypes.int64)
_SHIFT = 1 << 32  # a Check's detail holds (index, size) as index * _SHIFT + size


# -- shared rules ---------------------------------------------------------------------------------
def _require_index(t, what: str, rank: int) -> None:
    if t.dtype not in _INDEX_DTYPES:
        raise TypeError(f"{what} must be int32 or int64, got {t.dtype.name}")
    if t.shape.rank not in (None, rank):
        raise ValueError(f"{what} must have rank {rank}, got shape {t.shape}")


def array_name(op) -> str:
    """The name of the array whose buffer is `op`'s first input (for messages): the creation
    op's, found through writes, loop and cond primitives and identities."""
    t = op.inputs[0]
    while t.op.type != "TensorArrayV3" and t.op.inputs:
        t = t.op.inputs[0]
    return t.op.get_attr("tensor_array_name") if t.op.type == "TensorArrayV3" else t.op.name


def _rows_of(buffer) -> int | None:
    return buffer.shape[0] if buffer.shape.rank is not None else None


def _element_of(buffer) -> TensorShape:
    return buffer.shape[1:] if buffer.shape.rank is not None else TensorShape(None)


def _array_shape(rows: int | None, element: TensorShape) -> TensorShape:
    return TensorShape([rows]).concatenate(element)


def _require_value(op, buffer, dtype, row_shape: TensorShape, element: TensorShape) -> None:
    """A value (or each row of a scattered value) of `dtype` and `row_shape` fits the array."""
    name = array_name(op)
    if dtype != buffer.dtype:
        raise TypeError(
            f"TensorArray {name} has dtype {buffer.dtype.name}, but the value to "
            f"write has dtype {dtype.name}"
        )
    if not element.is_compatible_with(row_shape):
        raise ValueError(
            f"TensorArray {name} has element shape {element}, but the value to "
            f"write has element shape {row_shape}"
        )


def _range_check(what: str, grows: bool) -> Check:
    """Indices within [0, size) (within [0, inf) for an array that grows), as TF1's kernels."""

    def fails(buffer, indices, *_, **__):
        flat = jnp.reshape(jnp.asarray(indices), [-1])
        rows = buffer.shape[0]
        if flat.shape[0] == 0:
            return jnp.asarray(False), jnp.asarray(rows, jnp.int64)
        bad = flat < 0 if grows else (flat < 0) | (flat >= rows)
        first = flat[jnp.argmax(bad)]  # the first bad index
        return jnp.any(bad), first.astype(jnp.int64) * _SHIFT + rows

    def message(op, detail: int) -> str:
        size, index = detail % _SHIFT, detail // _SHIFT
        resizeable = "" if grows or what == "read from" else " is not resizeable and"
        return (
            f"TensorArray {array_name(op)}: Tried to {what} index {index} "
            f"but array{resizeable} size is: {size}"
        )

    return Check(fails, message)


def _allocated(buffer, element: tuple):
    """`buffer`, or zeros of [rows, *element] when it is still unallocated (no elements)."""
    if tuple(buffer.shape[1:]) == tuple(element):
        return buffer
    if math.prod(buffer.shape) == 0:
        return jnp.zeros((buffer.shape[0],) + tuple(element), buffer.dtype)
    raise ValueError(  # TF1's message, without the index (a compiled write has no value)
        f"Could not write to TensorArray: the value shape is {_dims_text(element)} which is "
        "incompatible with the TensorArray's inferred element shape: "
        f"{_dims_text(buffer.shape[1:])} (consider setting infer_shape=False)"
    )


def _dims_text(dims) -> str:
    return "[" + ",".join(str(d) for d in dims) + "]"


def _grown(buffer, rows: int):
    """`buffer` padded with zero rows up to `rows` rows."""
    if rows <= buffer.shape[0]:
        return buffer
    pad = jnp.zeros((rows - buffer.shape[0],) + tuple(buffer.shape[1:]), buffer.dtype)
    return jnp.concatenate([buffer, pad], axis=0)


def _require_allocated(buffer, element: TensorShape, what: str) -> None:
    """TF1 reads an unwritten element as zeros only when its shape is fully known."""
    if math.prod(buffer.shape) != 0 or buffer.shape[0] == 0:
        return
    if element.rank is not None and all(
        d is not None or actual != 0 for d, actual in zip(element.dims, buffer.shape[1:])
    ):
        return
    raise ValueError(
        f"Could not {what} of the TensorArray: no element was written, and the element shape "
        f"is not fully defined: {element}. Give the TensorArray a full element_shape to read "
        "unwritten elements as zeros."
    )


# -- TensorArrayV3: a new array -------------------------------------------------------------------
def _create_infer(op) -> list:
    size = op.inputs[0]
    _require_index(size, "TensorArray's size", 0)
    if len(op.inputs) > 1:
        _require_index(op.inputs[1], "the shape to prepend to a gradient array's elements", 1)
    value = constant_value(size)
    rows = None if value is None or op.get_attr("dynamic_size") else int(value)
    if value is not None and int(value) < 0:
        raise ValueError(f"TensorArray's size must not be negative, got {int(value)}")
    return [(op.get_attr("dtype"), _array_shape(rows, op.get_attr("element_shape")))]


def _create_kernel(size, *prepend, dtype, element_shape, **_):
    rows = host_ints(size, "TensorArray's size")[0]
    if prepend and element_shape.rank is not None:
        dims = host_ints(prepend[0], "the shape to prepend to a gradient array's elements")
        element_shape = TensorShape(list(dims) + list(element_shape.dims[len(dims) :]))
    if element_shape.is_fully_defined():
        return jnp.zeros((rows,) + element_shape.as_tuple(), dtype)
    # unallocated: the first write gives the element shape (see the module docstring)
    dims = element_shape.dims if element_shape.rank is not None else (None,)
    return jnp.zeros((rows,) + tuple(0 if d is None else d for d in dims), dtype)


register_op("TensorArrayV3", infer=_create_infer, kernel=_create_kernel, host_inputs=(0, 1))
not_differentiable("TensorArrayV3")


def create(
    size: Any,
    dtype: Any,
    element_shape: TensorShape,
    dynamic_size: bool,
    name: str,
    prepend: Any = None,
) -> Any:
    """A new array's buffer (its creation op is `buffer.op`). `prepend`: an int32 vector, the
    dims a gradient array's elements have before `element_shape`'s (whose first len(prepend)
    dims are None then, see the module docstring)."""
    size = core_ops.convert_to_tensor(size, dtype=dtypes.int32)
    inputs = [size] if prepend is None else [size, prepend]
    attrs = {
        "dtype": dtypes.as_dtype(dtype),
        "element_shape": as_shape(element_shape),
        "dynamic_size": bool(dynamic_size),
        "tensor_array_name": name,
    }
    return core_ops.apply_op("TensorArrayV3", inputs, attrs, name="TensorArray").outputs[0]


# -- write ----------------------------------------------------------------------------------------
def _write_infer(op) -> list:
    buffer, index, value = op.inputs
    _require_index(index, "the index of a TensorArray write", 0)
    element = _element_of(buffer)
    _require_value(op, buffer, value.dtype, value.shape, element)
    rows = None if op.type == "TensorArrayGrowWriteV3" else _rows_of(buffer)
    return [(buffer.dtype, _array_shape(rows, element.merge_with(value.shape)))]


def _write_kernel(buffer, index, value, **_):
    buffer = _allocated(buffer, value.shape)
    if buffer.shape[0] == 0:
        return buffer  # any index is out of range: the op's Check reports it
    return jax.lax.dynamic_update_index_in_dim(buffer, value.astype(buffer.dtype), index, 0)


def _grow_write_kernel(buffer, index, value, **_):
    i = host_ints(index, "the index of a write to a dynamic_size TensorArray")[0]
    buffer = _grown(_allocated(buffer, value.shape), i + 1)
    return buffer.at[i].set(value.astype(buffer.dtype))


write_kernel = _write_kernel  # the compiled engine's in-place write of a presized array


register_op(
    "TensorArrayWriteV3",
    infer=_write_infer,
    kernel=_write_kernel,
    check=_range_check("write to", grows=False),
)
register_op(
    "TensorArrayGrowWriteV3",
    infer=_write_infer,
    kernel=_grow_write_kernel,
    host_inputs=(1,),
    check=_range_check("write to", grows=True),
)


@register_gradient("TensorArrayWriteV3")
def _write_grad(op, grad):
    _, index, _ = op.inputs
    value_grad = buffer_ops.read_row(grad, index)
    return [_without_row(grad, index, value_grad), None, value_grad]


@register_gradient("TensorArrayGrowWriteV3")
def _grow_write_grad(op, grad):
    buffer, index, _ = op.inputs
    value_grad = buffer_ops.read_row(grad, index)
    return [_shaped_like(_without_row(grad, index, value_grad), buffer), None, value_grad]


def _without_row(grad: Any, index: Any, value_grad: Any) -> Any:
    """`grad` with row `index` zeroed: the value there before the write is overwritten."""
    return buffer_ops.write_row(grad, index, fill_ops.zeros_like(value_grad))


def write(buffer: Any, index: Any, value: Any, dynamic_size: bool) -> Any:
    op_type = "TensorArrayGrowWriteV3" if dynamic_size else "TensorArrayWriteV3"
    return core_ops.apply_op(op_type, [buffer, index, value], name="TensorArrayWrite").outputs[0]


# -- the gradient of a write that may have grown (or allocated) the buffer -------------------------
def _shaped_like_infer(op) -> list:
    grad, _ = op.inputs
    return [(grad.dtype, TensorShape(None))]


def _shaped_like_kernel(grad, shape, **_):
    """`grad`'s first rows when the input had fewer; zeros when the input was unallocated."""
    shape = host_ints(shape, "the shape of a TensorArray")
    if tuple(grad.shape[1:]) != tuple(shape[1:]):
        return jnp.zeros(shape, grad.dtype)
    return grad[: shape[0]]


register_op(
    "TensorArrayGradShapedLike",
    infer=_shaped_like_infer,
    kernel=_shaped_like_kernel,
    host_inputs=(1,),
)
not_differentiable("TensorArrayGradShapedLike")


def _shaped_like(grad: Any, buffer: Any) -> Any:
    out = core_ops.apply_op(
        "TensorArrayGradShapedLike",
        [grad, fill_ops.shape(buffer)],
        name="TensorArrayGradShapedLike",
    ).outputs[0]
    out.set_shape(buffer.shape)
    return out


def _zeros_like(buffer: Any) -> Any:
    """Zeros shaped like `buffer`, from its static shape when known, else from its Shape."""
    if buffer.shape.is_fully_defined():
        return fill_ops.zeros(buffer.shape.as_list(), buffer.dtype)
    zeros = fill_ops.zeros(fill_ops.shape(buffer), buffer.dtype)
    zeros.set_shape(buffer.shape)
    return zeros


# -- read -----------------------------------------------------------------------------------------
def _read_infer(op) -> list:
    buffer, index = op.inputs
    _require_index(index, "the index of a TensorArray read", 0)
    return [(buffer.dtype, _element_of(buffer).merge_with(op.get_attr("element_shape")))]


def _read_kernel(buffer, index, *, element_shape, **_):
    known = maybe_host_value(index)
    outside = known is not None and not 0 <= int(known) < buffer.shape[0]
    if buffer.shape[0] == 0 or outside:  # out of range: the Check reports it (TF1's error first)
        return jnp.zeros(buffer.shape[1:], buffer.dtype)
    _require_allocated(buffer, element_shape, "read an element")
    return jax.lax.dynamic_index_in_dim(buffer, index, 0, keepdims=False)


register_op(
    "TensorArrayReadV3",
    infer=_read_infer,
    kernel=_read_kernel,
    check=_range_check("read from", grows=False),
)


@register_gradient("TensorArrayReadV3")
def _read_grad(op, grad):
    buffer, index = op.inputs
    return [buffer_ops.write_row(_zeros_like(buffer), index, grad), None]


def read(buffer: Any, index: Any, element_shape: TensorShape) -> Any:
    attrs = {"element_shape": element_shape}
    return core_ops.apply_op(
        "TensorArrayReadV3", [buffer, index], attrs, name="TensorArrayRead"
    ).outputs[0]


# -- gather and scatter ---------------------------------------------------------------------------
def _gather_infer(op) -> list:
    buffer, indices = op.inputs
    _require_index(indices, "the indices of a TensorArray gather", 1)
    element = _element_of(buffer).merge_with(op.get_attr("element_shape"))
    return [
        (
            buffer.dtype,
            TensorShape([indices.shape[0] if indices.shape.rank else None]).concatenate(element),
        )
    ]


def _gather_kernel(buffer, indices, *, element_shape, **_):
    _require_allocated(buffer, element_shape, "gather the elements")
    if buffer.shape[0] == 0:  # out of range unless there are no indices: the Check reports it
        return jnp.zeros(tuple(indices.shape) + tuple(buffer.shape[1:]), buffer.dtype)
    return jnp.take(buffer, indices, axis=0, mode="clip")


register_op(
    "TensorArrayGatherV3",
    infer=_gather_infer,
    kernel=_gather_kernel,
    check=_range_check("read from", grows=False),
)


@register_gradient("TensorArrayGatherV3")
def _gather_grad(op, grad):
    buffer, indices = op.inputs
    return [_scatter_add(_zeros_like(buffer), indices, grad), None]


def gather(buffer: Any, indices: Any, element_shape: TensorShape) -> Any:
    attrs = {"element_shape": element_shape}
    return core_ops.apply_op(
        "TensorArrayGatherV3", [buffer, indices], attrs, name="TensorArrayGather"
    ).outputs[0]


def _scatter_add_infer(op) -> list:
    base, indices, updates = op.inputs
    _require_index(indices, "the indices of a scatter-add", 1)
    return [(base.dtype, base.shape)]


register_op(
    "TensorArrayScatterAdd",
    infer=_scatter_add_infer,
    kernel=lambda base, indices, updates: base.at[indices].add(updates),
)


@register_gradient("TensorArrayScatterAdd")
def _scatter_add_grad(op, grad):
    _, indices, _ = op.inputs
    return [grad, None, gather_ops.gather(grad, indices)]


def _scatter_add(base: Any, indices: Any, updates: Any) -> Any:
    """`base` with `updates[k]` added to row `indices[k]` (repeated indices add up)."""
    return core_ops.apply_op(
        "TensorArrayScatterAdd", [base, indices, updates], name="TensorArrayScatterAdd"
    ).outputs[0]


def _scatter_infer(op) -> list:
    buffer, indices, value = op.inputs
    _require_index(indices, "the indices of a TensorArray scatter", 1)
    if value.shape.rank == 0:
        raise ValueError("the value scattered into a TensorArray must have rank >= 1")
    if not TensorShape([indices.shape[0] if indices.shape.rank else None]).is_compatible_with(
        value.shape[:1] if value.shape.rank is not None else TensorShape([None])
    ):
        raise ValueError(
            f"{indices.shape} indices for a value of shape {value.shape}: the "
            "value's first dimension must be the number of indices"
        )
    element = _element_of(buffer)
    row_shape = value.shape[1:] if value.shape.rank is not None else TensorShape(None)
    _require_value(op, buffer, value.dtype, row_shape, element)
    rows = None if op.type == "TensorArrayGrowScatterV3" else _rows_of(buffer)
    return [(buffer.dtype, _array_shape(rows, element.merge_with(row_shape)))]


def _scatter_kernel(buffer, indices, value, **_):
    buffer = _allocated(buffer, value.shape[1:])
    return buffer.at[indices].set(value.astype(buffer.dtype), mode="drop")


def _grow_scatter_kernel(buffer, indices, value, **_):
    wanted = host_ints(indices, "the indices of a scatter into a dynamic_size TensorArray")
    buffer = _allocated(buffer, value.shape[1:])
    buffer = _grown(buffer, max(wanted, default=-1) + 1)
    return buffer.at[jnp.asarray(wanted, jnp.int32)].set(value.astype(buffer.dtype))


register_op(
    "TensorArrayScatterV3",
    infer=_scatter_infer,
    kernel=_scatter_kernel,
    check=_range_check("write to", grows=False),
)
register_op(
    "TensorArrayGrowScatterV3",
    infer=_scatter_infer,
    kernel=_grow_scatter_kernel,
    host_inputs=(1,),
    check=_range_check("write to", grows=True),
)


@register_gradient("TensorArrayScatterV3")
def _scatter_grad(op, grad):
    _, indices, _ = op.inputs
    value_grad = gather_ops.gather(grad, indices)
    return [_without_rows(grad, indices, value_grad), None, value_grad]


@register_gradient("TensorArrayGrowScatterV3")
def _grow_scatter_grad(op, grad):
    buffer, indices, _ = op.inputs
    value_grad = gather_ops.gather(grad, indices)
    return [_shaped_like(_without_rows(grad, indices, value_grad), buffer), None, value_grad]


def _without_rows(grad: Any, indices: Any, value_grad: Any) -> Any:
    """`grad` with the rows at `indices` zeroed: the values there before the scatter are
    overwritten."""
    return core_ops.apply_op(
        "TensorArrayScatterV3",
        [grad, indices, fill_ops.zeros_like(value_grad)],
        name="TensorArrayScatterGrad",
    ).outputs[0]


def scatter(buffer: Any, indices: Any, value: Any, dynamic_size: bool) -> Any:
    op_type = "TensorArrayGrowScatterV3" if dynamic_size else "TensorArrayScatterV3"
    return core_ops.apply_op(op_type, [buffer, indices, value], name="TensorArrayScatter").outputs[
        0
    ]


# -- stack, concat, size --------------------------------------------------------------------------
def _stack_infer(op) -> list:
    (buffer,) = op.inputs
    element = _element_of(buffer).merge_with(op.get_attr("element_shape"))
    return [(buffer.dtype, _array_shape(_rows_of(buffer), element))]


def _stack_kernel(buffer, *, element_shape, **_):
    if buffer.shape[0] == 0 and not element_shape.is_fully_defined():
        raise ValueError(
            f"TensorArray has size zero, but element shape {element_shape} "
            "is not fully defined. Currently only static shapes are supported when packing "
            "zero-size TensorArrays."
        )
    _require_allocated(buffer, element_shape, "stack the elements")
    return buffer


register_op("TensorArrayStackV3", infer=_stack_infer, kernel=_stack_kernel)


@register_gradient("TensorArrayStackV3")
def _stack_grad(op, grad):
    return [grad]


def stack(buffer: Any, element_shape: TensorShape) -> Any:
    attrs = {"element_shape": element_shape}
    return core_ops.apply_op(
        "TensorArrayStackV3", [buffer], attrs, name="TensorArrayStack"
    ).outputs[0]


def _concat_infer(op) -> list:
    (buffer,) = op.inputs
    element = _element_of(buffer).merge_with(op.get_attr("element_shape"))
    if element.rank == 0:
        raise ValueError(
            f"TensorArray {array_name(op)}: concat needs "
            "elements of rank >= 1, but they are scalars"
        )
    rows = _rows_of(buffer)
    if element.rank is None:
        return [(buffer.dtype, TensorShape(None))]
    first = rows * element[0] if rows is not None and element[0] is not None else None
    return [(buffer.dtype, TensorShape([first]).concatenate(element[1:]))]


def _concat_kernel(buffer, *, element_shape, **_):
    _require_allocated(buffer, element_shape, "concatenate the elements")
    return jnp.reshape(buffer, (buffer.shape[0] * buffer.shape[1],) + tuple(buffer.shape[2:]))


register_op("TensorArrayConcatV3", infer=_concat_infer, kernel=_concat_kernel)


@register_gradient("TensorArrayConcatV3")
def _concat_grad(op, grad):
    (buffer,) = op.inputs
    shape = buffer.shape.as_list() if buffer.shape.is_fully_defined() else fill_ops.shape(buffer)
    return [array_ops.reshape(grad, shape)]


def concat(buffer: Any, element_shape: TensorShape) -> Any:
    attrs = {"element_shape": element_shape}
    return core_ops.apply_op(
        "TensorArrayConcatV3", [buffer], attrs, name="TensorArrayConcat"
    ).outputs[0]


register_op(
    "TensorArraySizeV3",
    infer=lambda op: [(dtypes.int32, TensorShape([]))],
    kernel=lambda buffer: jnp.asarray(buffer.shape[0], jnp.int32),
)
not_differentiable("TensorArraySizeV3")


def size(buffer: Any) -> Any:
    return core_ops.apply_op("TensorArraySizeV3", [buffer], name="TensorArraySize").outputs[0]


# -- an error TF1 raises when the op runs: a write twice, an aggregate of two shapes -------------
def _fail_infer(op) -> list:
    (flow,) = op.inputs
    return [(flow.dtype, flow.shape)]


register_op(
    "TensorArrayError",
    infer=_fail_infer,
    kernel=lambda flow, **_: flow,
    check=Check(
        lambda flow, **_: (jnp.asarray(True), jnp.asarray(0, jnp.int64)),
        lambda op, _: op.get_attr("message"),
    ),
)
not_differentiable("TensorArrayError")


def error(flow: Any, message: str) -> Any:
    """`flow`, through an op that raises InvalidArgumentError(`message`) when it runs (TF1 raises
    these errors when the array's op runs, not while the graph is built)."""
    return core_ops.apply_op(
        "TensorArrayError", [flow], {"message": message}, name="TensorArrayError"
    ).outputs[0]


# -- clear_after_read: a second read of one index fails ------------------------------------------
def _read_once_infer(op) -> list:
    index = op.inputs[0]
    for t in op.inputs:
        _require_index(t, "the index of a TensorArray read", 0)
    return [(index.dtype, TensorShape([]))]


def _read_once_fails(index, *earlier, **_):
    if not earlier:
        return jnp.asarray(False), jnp.asarray(index, jnp.int64)
    again = jnp.any(jnp.stack([jnp.asarray(e) for e in earlier]) == index)
    return again, jnp.asarray(index, jnp.int64)


register_op(
    "TensorArrayReadOnce",
    infer=_read_once_infer,
    kernel=lambda index, *earlier, **_: index,
    check=Check(
        _read_once_fails,
        lambda op, index: (
            f"TensorArray {op.get_attr('array')}: Could not read index {index} twice because it "
            "was cleared after a previous read (perhaps try setting clear_after_read = false?)"
        ),
    ),
)
not_differentiable("TensorArrayReadOnce")


def read_once(index: Any, earlier: list, array: str) -> Any:
    """`index`, through an op that fails when it equals one of the `earlier` read indices (the
    reads of an array with clear_after_read=True)."""
    return core_ops.apply_op(
        "TensorArrayReadOnce", [index, *earlier], {"array": array}, name="TensorArrayReadOnce"
    ).outputs[0]


# -- the flow of an array kept as a trace-time list (elements of different shapes) ----------------
register_op(
    "TensorArrayElements",
    infer=lambda op: [(dtypes.float32, TensorShape([]))],
    kernel=lambda *elements, **_: jnp.zeros((), jnp.float32),
)
not_differentiable("TensorArrayElements")


def elements_flow(elements: list) -> Any:
    """A scalar that is computed after all `elements` (the flow of a list-kept array: fetching it
    runs the writes, and their errors, as TF1's flow does)."""
    return core_ops.apply_op(
        "TensorArrayElements", list(elements), name="TensorArrayElements"
    ).outputs[0]


def _element_shaped_infer(op) -> list:
    (x,) = op.inputs
    return [(x.dtype, op.get_attr("element_shape"))]


register_op("TensorArrayElement", infer=_element_shaped_infer, kernel=lambda x, **_: x)


@register_gradient("TensorArrayElement")
def _element_grad(op, grad):
    return [grad]


def element(value: Any, element_shape: TensorShape) -> Any:
    """`value` read out of a list-kept array; its static shape is the array's element shape, as
    TF1's read has it (the value's own shape may be more precise)."""
    if not element_shape.is_compatible_with(value.shape):
        element_shape = TensorShape(None)
    return core_ops.apply_op(
        "TensorArrayElement", [value], {"element_shape": element_shape}, name="TensorArrayRead"
    ).outputs[0]


# -- the writes of a gradient array add up (TF1's multiple_writes_aggregate) ----------------------
def _add_write_kernel(buffer, index, value, **_):
    buffer = _allocated(buffer, value.shape)
    if buffer.shape[0] == 0:
        return buffer
    row = jax.lax.dynamic_index_in_dim(buffer, index, 0, keepdims=False)
    return jax.lax.dynamic_update_index_in_dim(buffer, row + value.astype(buffer.dtype), index, 0)


register_op(
    "TensorArrayAddWriteV3",
    infer=_write_infer,
    kernel=_add_write_kernel,
    check=_range_check("write to", grows=False),
)


@register_gradient("TensorArrayAddWriteV3")
def _add_write_grad(op, grad):
    _, index, _ = op.inputs
    return [grad, None, buffer_ops.read_row(grad, index)]


def add_write(buffer: Any, index: Any, value: Any) -> Any:
    return core_ops.apply_op(
        "TensorArrayAddWriteV3", [buffer, index, value], name="TensorArrayWrite"
    ).outputs[0]


# -- split by lengths known only at run time ------------------------------------------------------
def _split_infer(op) -> list:
    buffer, value, lengths = op.inputs
    if value.dtype != buffer.dtype:
        raise TypeError(
            f"TensorArray {array_name(op)} has dtype {buffer.dtype.name}, but the value to "
            f"split has dtype {value.dtype.name}"
        )
    rows = None if op.get_attr("dynamic_size") else _rows_of(buffer)
    rest = value.shape[1:] if value.shape.rank is not None else TensorShape(None)
    element = TensorShape([None]).concatenate(rest) if rest.rank is not None else rest
    return [(buffer.dtype, _array_shape(rows, _element_of(buffer).merge_with(element)))]


def _split_kernel(buffer, value, lengths, *, array, dynamic_size, **_):
    if np.ndim(lengths) != 1:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Expected lengths to be a vector, received shape: {list(np.shape(lengths))}",
        )
    if np.ndim(value) == 0:
        raise errors.InvalidArgumentError(
            None, None, "Expected value to be at least a vector, but received shape: []"
        )
    sizes = [int(n) for n in host_ints(lengths, "the lengths of a TensorArray split")]
    if sum(sizes) != value.shape[0]:
        raise errors.InvalidArgumentError(
            None,
            None,
            "Expected sum of lengths to be equal to values.shape[0], but sum of lengths is "
            f"{sum(sizes)} and value's shape is: {list(value.shape)}",
        )
    if not dynamic_size and len(sizes) != buffer.shape[0]:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"TensorArray's size is not equal to the size of lengths ({buffer.shape[0]} vs. "
            f"{len(sizes)}), and the TensorArray is not marked as dynamically resizeable",
        )
    if len(set(sizes)) > 1:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"TensorArray {array}: split into pieces of different lengths {sizes} known only at "
            "run time; sluice keeps a TensorArray of differently shaped elements as a list "
            "while the graph is built, so it needs such lengths as constants",
        )
    length = sizes[0] if sizes else 0
    pieces = jnp.reshape(value, (len(sizes), length) + tuple(value.shape[1:]))
    buffer = _grown(_allocated(buffer, pieces.shape[1:]), len(sizes))
    return buffer.at[: len(sizes)].set(pieces.astype(buffer.dtype))


register_op("TensorArraySplitV3", infer=_split_infer, kernel=_split_kernel, host_inputs=(2,))


@register_gradient("TensorArraySplitV3")
def _split_grad(op, grad):
    _, value, lengths = op.inputs
    count = fill_ops.shape(lengths)[0]
    rows = array_ops.reshape(gather_ops.gather(grad, fill_ops.range(count)), fill_ops.shape(value))
    return [None, rows, None]


def split(buffer: Any, value: Any, lengths: Any, dynamic_size: bool, array: str) -> Any:
    attrs = {"dynamic_size": bool(dynamic_size), "array": array}
    return core_ops.apply_op(
        "TensorArraySplitV3", [buffer, value, lengths], attrs, name="TensorArraySplit"
    ).outputs[0]


# -- strings ------------------------------------------------------------------------------------
def _on_codes(kernel: Any, string_outputs: tuple[int, ...]) -> Any:
    """A TensorArray op's string kernel (`registry.register_string_kernel`): the op's own kernel
    run on int32 codes of the strings (code 0 is b"", so the kernel's zero rows are TF1's empty
    strings), its string outputs decoded back to NumPy object arrays of bytes."""

    def run(*inputs: Any, **attrs: Any) -> Any:
        texts = [x for x in inputs if isinstance(x, np.ndarray) and x.dtype == object]
        vocabulary = [b""] + sorted({s for x in texts for s in x.ravel().tolist()} - {b""})
        code_of = {s: i for i, s in enumerate(vocabulary)}

        def encode(x: Any) -> Any:
            if not (isinstance(x, np.ndarray) and x.dtype == object):
                return x
            codes = [code_of[s] for s in x.ravel().tolist()]
            return jnp.asarray(np.asarray(codes, np.int32).reshape(x.shape))

        if attrs.get("dtype") == dtypes.string:
            attrs = {**attrs, "dtype": dtypes.int32}
        outputs = kernel(*[encode(x) for x in inputs], **attrs)
        table = np.asarray(vocabulary + [b""], dtype=object)[:-1]  # 1-d even for one string
        decoded = list(outputs) if isinstance(outputs, tuple) else [outputs]
        for i in string_outputs:
            decoded[i] = table[np.asarray(decoded[i])]
        return tuple(decoded) if isinstance(outputs, tuple) else decoded[0]

    return run


for _op_type, _kernel, _string_outputs in (
    ("TensorArrayV3", _create_kernel, (0,)),
    ("TensorArrayWriteV3", _write_kernel, (0,)),
    ("TensorArrayGrowWriteV3", _grow_write_kernel, (0,)),
    ("TensorArrayReadV3", _read_kernel, (0,)),
    ("TensorArrayGatherV3", _gather_kernel, (0,)),
    ("TensorArrayScatterV3", _scatter_kernel, (0,)),
    ("TensorArrayGrowScatterV3", _grow_scatter_kernel, (0,)),
    ("TensorArrayStackV3", _stack_kernel, (0,)),
    ("TensorArrayConcatV3", _concat_kernel, (0,)),
    ("TensorArraySplitV3", _split_kernel, (0,)),
):
    register_string_kernel(_op_type, _on_codes(_kernel, _string_outputs))
register_string_kernel("TensorArraySizeV3", lambda buffer: np.int32(buffer.shape[0]))
register_string_kernel("TensorArrayError", lambda flow, **_: flow)
register_string_kernel("TensorArrayElement", lambda x, **_: x)
register_string_kernel("TensorArrayElements", lambda *elements, **_: np.float32(0))
