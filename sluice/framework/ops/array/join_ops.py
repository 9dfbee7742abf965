"""Ops that join and cut tensors: Pack (`stack`), Unpack (`unstack`), ConcatV2 (`concat`),
Split and SplitV (`split`), and Pad, PadV2, MirrorPad (`pad`) with MirrorPadGrad.

Axes, sizes and paddings are int tensor inputs, as in TensorFlow, read by the kernels as host
values and used for static shape inference whenever they are known.
"""

from __future__ import annotations

from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import register_gradient, register_shaped_kernel
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import (
    as_int_tensor,
    host_ints,
    int_values,
    normalize_axis,
    one_or_tuple,
    register_array_op,
    require_index_dtype,
    require_vector,
    static_axis,
)
from sluice.framework.ops.core.shape_rules import constant_value, require_rank, require_same_dtype


# -- Pack, Unpack ---------------------------------------------------------------------------------
def _merged_shape(tensors: Sequence[Tensor], what: str) -> TensorShape:
    shape = TensorShape(None)
    for t in tensors:
        if not shape.is_compatible_with(t.shape):
            raise ValueError(f"{what} must have compatible shapes, got {shape} and {t.shape}")
        shape = shape.merge_with(t.shape)
    return shape


def _pack_infer(op) -> list:
    values = op.inputs
    if not values:
        raise ValueError("stack needs at least one value")
    require_same_dtype(*values)
    shape = _merged_shape(values, "all values to stack")
    if shape.rank is None:
        return [(values[0].dtype, TensorShape(None))]
    dims = list(shape.dims)
    dims.insert(normalize_axis(op.get_attr("axis"), len(dims) + 1), len(values))
    return [(values[0].dtype, TensorShape(dims))]


register_array_op(
    "Pack", infer=_pack_infer, kernel=lambda *values, axis, **_: jnp.stack(values, axis=axis)
)


@register_gradient("Pack")
def _pack_grad(op, grad):
    return unstack(grad, num=op.get_attr("N"), axis=op.get_attr("axis"))


@export("stack")
def stack(values: Sequence[Any], axis: int = 0, name: str = "stack") -> Tensor:
    """The tensors `values` (all of one shape) stacked along a new dimension `axis`."""
    tensors = core_ops.convert_n(values)
    attrs = {"axis": int(axis), "N": len(tensors)}
    return core_ops.apply_op("Pack", tensors, attrs, name).outputs[0]


def _unpack_infer(op) -> list:
    x = op.inputs[0]
    num = op.get_attr("num")
    if x.shape.rank is None:
        return [(x.dtype, TensorShape(None))] * num
    axis = normalize_axis(op.get_attr("axis"), x.shape.rank)
    dims = list(x.shape.dims)
    if dims[axis] not in (None, num):
        raise ValueError(f"cannot unstack dimension {axis} of size {dims[axis]} into {num} values")
    del dims[axis]
    return [(x.dtype, TensorShape(dims))] * num


def _unpack_kernel(x, *, num, axis, **_):
    return one_or_tuple([jnp.moveaxis(x, axis, 0)[i] for i in range(num)])


register_array_op("Unpack", infer=_unpack_infer, kernel=_unpack_kernel)


@register_gradient("Unpack")
def _unpack_grad(op, *grads):
    return [stack(grads, axis=op.get_attr("axis"))]


@export("unstack")
def unstack(value: Any, num: int | None = None, axis: int = 0, name: str = "unstack") -> list:
    """The slices of `value` along `axis`, as a list of `num` tensors (inferred when static)."""
    x = core_ops.convert_to_tensor(value)
    if num is None:
        if x.shape.rank is None:
            raise ValueError(f"Cannot infer num from shape {x.shape}")
        num = x.shape[normalize_axis(axis, x.shape.rank)]
        if num is None:
            raise ValueError(f"Cannot infer num from shape {x.shape}")
    attrs = {"num": int(num), "axis": int(axis)}
    return list(core_ops.apply_op("Unpack", [x], attrs, name).outputs)


# -- ConcatV2 -------------------------------------------------------------------------------------
def _concat_infer(op) -> list:
    values, axis_tensor = op.inputs[:-1], op.inputs[-1]
    require_same_dtype(*values)
    ranks = {t.shape.rank for t in values} - {None}
    if len(ranks) > 1:
        raise ValueError(f"all values must have the same rank, got ranks {sorted(ranks)}")
    rank = ranks.pop() if ranks else None
    if rank == 0:
        raise ValueError("cannot concatenate scalars (rank 0); use stack")
    axis = static_axis(axis_tensor, rank)
    if rank is None:
        return [(values[0].dtype, TensorShape(None))]
    if axis is None:
        return [(values[0].dtype, TensorShape([None] * rank))]
    out = [None] * rank
    total = 0
    for t in values:
        if t.shape.rank is None:
            total = None
            continue
        for i, d in enumerate(t.shape.dims):
            if i == axis:
                continue
            if out[i] is not None and d is not None and out[i] != d:
                raise ValueError(
                    f"Dimension {i} in both shapes must be equal, but are {out[i]} and {d}: "
                    f"concat along axis {axis} needs all other dimensions to match"
                )
            out[i] = d if out[i] is None else out[i]
        d = t.shape[axis]
        total = None if total is None or d is None else total + d
    out[axis] = total
    return [(values[0].dtype, TensorShape(out))]


def _concat_kernel(*args, **_):
    (axis,) = host_ints(args[-1], "ConcatV2's axis")
    return jnp.concatenate(args[:-1], axis=axis)


register_array_op("ConcatV2", infer=_concat_infer, kernel=_concat_kernel, host_inputs=(-1,))


@register_gradient("ConcatV2")
def _concat_grad(op, grad):
    """Splits the gradient into pieces as long as the inputs were along `axis` (their static
    lengths where known, else read from their shapes at run time)."""
    values, axis_tensor = op.inputs[:-1], op.inputs[-1]
    axis = static_axis(axis_tensor, op.outputs[0].shape.rank)
    sizes = []
    for v in values:
        known = None if axis is None or v.shape.rank is None else v.shape[axis]
        index = axis_tensor if axis is None else axis
        sizes.append(known if known is not None else fill_ops.shape(v)[index])
    return [*split(grad, sizes, axis_tensor), None]


@export("concat")
def concat(values: Sequence[Any], axis: Any, name: str = "concat") -> Tensor:
    """The tensors `values` joined along dimension `axis` (negative counts from the end)."""
    tensors = core_ops.convert_n(values)
    if len(tensors) == 1:
        return core_ops.identity(tensors[0], name=name)
    axis = as_int_tensor(axis, "concat's axis")
    attrs = {"N": len(tensors)}
    return core_ops.apply_op("ConcatV2", [*tensors, axis], attrs, name).outputs[0]


# -- Split, SplitV --------------------------------------------------------------------------------
def _split_infer(op) -> list:
    axis_tensor, x = op.inputs
    num = op.get_attr("num_split")
    if num < 1:
        raise ValueError(f"num_split must be >= 1, got {num}")
    axis = static_axis(axis_tensor, x.shape.rank)
    if x.shape.rank is None:
        return [(x.dtype, TensorShape(None))] * num
    dims = list(x.shape.dims)
    if axis is None:
        return [(x.dtype, TensorShape([None] * len(dims)))] * num
    if dims[axis] is not None:
        if dims[axis] % num:
            raise ValueError(
                f"Dimension {axis} of size {dims[axis]} cannot be split evenly into {num} parts"
            )
        dims[axis] //= num
    return [(x.dtype, TensorShape(dims))] * num


def _split_kernel(axis, x, *, num_split, **_):
    (axis,) = host_ints(axis, "Split's axis")
    return one_or_tuple(jnp.split(x, num_split, axis=axis))


register_array_op("Split", infer=_split_infer, kernel=_split_kernel, host_inputs=(0,))


@register_gradient("Split")
def _split_grad(op, *grads):
    return [None, concat(grads, op.inputs[0])]


def _split_v_sizes(sizes: list, dim: int | None) -> list:
    """The sizes of SplitV's pieces with a -1 resolved; checks that they add up to `dim`."""
    if sum(s == -1 for s in sizes) > 1:
        raise ValueError(f"size_splits may contain at most one -1, got {sizes}")
    if any(s < -1 for s in sizes):
        raise ValueError(f"size_splits entries must be >= -1, got {sizes}")
    known = sum(s for s in sizes if s != -1)
    if dim is None:
        return [None if s == -1 else s for s in sizes]
    if -1 in sizes:
        if known > dim:
            raise ValueError(f"size_splits {sizes} add up to more than the dimension {dim}")
        return [dim - known if s == -1 else s for s in sizes]
    if known != dim:
        raise ValueError(f"size_splits {sizes} add up to {known}, not to the dimension {dim}")
    return list(sizes)


def _split_v_infer(op) -> list:
    x, size_splits, axis_tensor = op.inputs
    num = op.get_attr("num_split")
    require_index_dtype(size_splits, "size_splits")
    require_vector(size_splits, "size_splits")
    axis = static_axis(axis_tensor, x.shape.rank)
    sizes = int_values(size_splits)
    if sizes is not None and len(sizes) != num:
        raise ValueError(f"size_splits has {len(sizes)} entries, but num_split is {num}")
    if x.shape.rank is None:
        return [(x.dtype, TensorShape(None))] * num
    if axis is None:
        return [(x.dtype, TensorShape([None] * x.shape.rank))] * num
    if sizes is None or None in sizes:
        sizes = [None] * num
    else:
        sizes = _split_v_sizes(sizes, x.shape[axis])
    outputs = []
    for s in sizes:
        dims = list(x.shape.dims)
        dims[axis] = s
        outputs.append((x.dtype, TensorShape(dims)))
    return outputs


def _split_v_kernel(x, size_splits, axis, **_):
    (axis,) = host_ints(axis, "SplitV's axis")
    axis %= x.ndim
    sizes = _split_v_sizes(list(host_ints(size_splits, "SplitV's size_splits")), x.shape[axis])
    return one_or_tuple(jnp.split(x, np.cumsum(sizes)[:-1].tolist(), axis=axis))


register_array_op("SplitV", infer=_split_v_infer, kernel=_split_v_kernel, host_inputs=(1, 2))


@register_gradient("SplitV")
def _split_v_grad(op, *grads):
    return [concat(grads, op.inputs[2]), None, None]


@export("split")
def split(
    value: Any, num_or_size_splits: Any, axis: Any = 0, num: int | None = None, name: str = "split"
) -> list:
    """`value` cut along `axis` into `num_or_size_splits` equal pieces (an int), or into pieces
    of the given sizes (a list or 1-D Tensor; one may be -1). Returns a list of tensors."""
    x = core_ops.convert_to_tensor(value)
    axis = as_int_tensor(axis, "split's axis")
    if isinstance(num_or_size_splits, (int, np.integer)):
        attrs = {"num_split": int(num_or_size_splits)}
        return list(core_ops.apply_op("Split", [axis, x], attrs, name).outputs)
    sizes = as_int_tensor(num_or_size_splits, "split's size_splits")
    if num is None:
        num = sizes.shape[0] if sizes.shape.rank == 1 else None
        if num is None:
            raise ValueError(f"Cannot infer num from shape {sizes.shape}")
    attrs = {"num_split": int(num)}
    return list(core_ops.apply_op("SplitV", [x, sizes, axis], attrs, name).outputs)


# -- Pad, PadV2, MirrorPad ------------------------------------------------------------------------
def _pad_infer(op) -> list:
    x, paddings = op.inputs[:2]
    require_index_dtype(paddings, "paddings")
    rank = x.shape.rank
    want = TensorShape([rank, 2])
    if not paddings.shape.is_compatible_with(want):
        raise ValueError(f"paddings must have shape {want}, got {paddings.shape}")
    if op.type == "PadV2":
        require_rank(op.inputs[2], 0, "constant_values")
        require_same_dtype(x, op.inputs[2])
    if rank is None:
        rank = paddings.shape[0] if paddings.shape.rank == 2 else None
    if rank is None:
        return [(x.dtype, TensorShape(None))]
    value = constant_value(paddings)
    if value is None:
        return [(x.dtype, TensorShape([None] * rank))]
    if (value < 0).any():
        raise ValueError(f"paddings must not be negative, got {value.tolist()}")
    mode = op.get_attr("mode") if op.type == "MirrorPad" else "CONSTANT"
    out = []
    for i, (d, (before, after)) in enumerate(zip(x.shape.dims or (None,) * rank, value.tolist())):
        limit = None if d is None else {"REFLECT": d - 1, "SYMMETRIC": d}.get(mode)
        if limit is not None and max(before, after) > limit:
            raise ValueError(
                f"{mode} paddings of dimension {i} (size {d}) must be at most {limit}, got "
                f"{[before, after]}"
            )
        out.append(None if d is None else d + before + after)
    return [(x.dtype, TensorShape(out))]


def _pad_widths(paddings) -> list:
    return np.reshape(host_ints(paddings, "the paddings of a pad"), [-1, 2]).tolist()


register_array_op(
    "Pad",
    infer=_pad_infer,
    kernel=lambda x, paddings, **_: jnp.pad(x, _pad_widths(paddings)),
    host_inputs=(1,),
)
register_array_op(
    "PadV2",
    infer=_pad_infer,
    kernel=lambda x, paddings, value, **_: jnp.pad(x, _pad_widths(paddings), constant_values=value),
    host_inputs=(1,),
)
# Pad's and PadV2's gradient sums with a reduction, a higher family: it is in array_grads.py


def _pad_shaped_kernel(op, x, paddings, value=None, **_):
    """Paddings known only at run time (the gradient of a Slice at a loop's counter pads back to
    the input's shape): x written at its `before` paddings into a block of the output's static
    shape. None, so the step runs interpreted, where that shape is not known."""
    shape = op.outputs[0].shape
    if not shape.is_fully_defined():
        return None
    fill = jnp.zeros((), x.dtype) if value is None else jnp.asarray(value, x.dtype)
    base = jnp.full(shape.as_list(), fill, x.dtype)
    return jax.lax.dynamic_update_slice(base, x, list(jnp.asarray(paddings)[:, 0]))


register_shaped_kernel("Pad", _pad_shaped_kernel)
register_shaped_kernel("PadV2", _pad_shaped_kernel)


register_array_op(
    "MirrorPad",
    infer=_pad_infer,
    kernel=lambda x, paddings, *, mode, **_: jnp.pad(x, _pad_widths(paddings), mode=mode.lower()),
    host_inputs=(1,),
)


@register_gradient("MirrorPad")
def _mirror_pad_grad(op, grad):
    attrs = {"mode": op.get_attr("mode")}
    return [core_ops.apply_op("MirrorPadGrad", [grad, op.inputs[1]], attrs).outputs[0], None]


def _mirror_pad_grad_infer(op) -> list:
    dy, paddings = op.inputs
    require_index_dtype(paddings, "paddings")
    value = constant_value(paddings)
    if dy.shape.rank is None or value is None:
        return [(dy.dtype, TensorShape(None if dy.shape.rank is None else [None] * dy.shape.rank))]
    dims = [
        None if d is None else d - before - after
        for d, (before, after) in zip(dy.shape.dims, value.tolist())
    ]
    return [(dy.dtype, TensorShape(dims))]


def _mirror_pad_grad_kernel(dy, paddings, *, mode, **_):
    """Folds the mirrored borders of `dy` back onto the elements they copy (JAX's vjp of pad)."""
    widths = _pad_widths(paddings)
    shape = [d - before - after for d, (before, after) in zip(dy.shape, widths)]
    _, vjp = jax.vjp(lambda x: jnp.pad(x, widths, mode=mode.lower()), jnp.zeros(shape, dy.dtype))
    return vjp(dy)[0]


register_array_op(
    "MirrorPadGrad", infer=_mirror_pad_grad_infer, kernel=_mirror_pad_grad_kernel, host_inputs=(1,)
)


@register_gradient("MirrorPadGrad")
def _mirror_pad_grad_grad(op, grad):
    paddings = op.inputs[1]
    attrs = {"mode": op.get_attr("mode")}
    return [core_ops.apply_op("MirrorPad", [grad, paddings], attrs).outputs[0], None]


@export("pad")
def pad(
    tensor: Any,
    paddings: Any,
    mode: str = "CONSTANT",
    name: str | None = None,
    constant_values: Any = 0,
) -> Tensor:
    """`tensor` padded by `paddings[i] = [before, after]` values along each dimension i.

    Modes: "CONSTANT" (pads with `constant_values`), "REFLECT" (mirrors without the edge; pads
    must be smaller than the dimension), "SYMMETRIC" (mirrors with the edge; at most the dim).
    """
    x = core_ops.convert_to_tensor(tensor)
    paddings = as_int_tensor(paddings, "pad's paddings")
    mode = mode.upper()
    if mode == "CONSTANT":
        if not isinstance(constant_values, Tensor) and np.all(np.asarray(constant_values) == 0):
            return core_ops.apply_op("Pad", [x, paddings], name=name).outputs[0]
        value = core_ops.convert_to_tensor(constant_values, dtype=x.dtype)
        return core_ops.apply_op("PadV2", [x, paddings, value], name=name).outputs[0]
    if mode not in ("REFLECT", "SYMMETRIC"):
        raise ValueError(f'pad mode must be "CONSTANT", "REFLECT" or "SYMMETRIC", got {mode!r}')
    attrs = {"mode": mode}
    return core_ops.apply_op("MirrorPad", [x, paddings], attrs, name).outputs[0]
