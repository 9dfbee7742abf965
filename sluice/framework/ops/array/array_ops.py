"""Ops that change a tensor's layout: Reshape, Transpose (with InvertPermutation), ExpandDims,
Squeeze, ReverseV2; `boolean_mask`; and the TF1 `array_ops` names of the sibling modules.

Shapes, axes and permutations are int tensor inputs, as in TensorFlow; their values are used for
static shape inference whenever they are known while the graph is built
(`array_util.int_values`), and the kernels read them as host values (`OpDef.host_inputs`).
Sibling modules, re-exported here: `fill_ops` (shape, cast, zeros, fill, one_hot, ...; its `range`
is TF1's math_ops name and is not re-exported, so it does not shadow the builtin here),
`broadcast_ops` (tile, broadcast_to), `join_ops` (stack, unstack, concat, split, pad),
`slicing_ops` (slice, strided slices and `Tensor.__getitem__`) and `gather_ops` (gather, where).
"""

from __future__ import annotations

from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable, register_gradient
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.array.broadcast_ops import broadcast_to, tile  # noqa: F401  (re-exported)
from sluice.framework.ops.array.fill_ops import (  # noqa: F401  (re-exported: TF1's array_ops names)
    cast,
    fill,
    one_hot,
    ones,
    ones_like,
    rank,
    shape,
    size,
    to_double,
    to_float,
    to_int32,
    to_int64,
    zeros,
    zeros_like,
)
from sluice.framework.ops.array.gather_ops import gather, where, where_v2  # noqa: F401
from sluice.framework.ops.array.join_ops import concat, pad, split, stack, unstack  # noqa: F401
from sluice.framework.ops.array.slicing_ops import slice, strided_slice  # noqa: F401  (shadows builtin)
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import (
    as_int_tensor,
    host_ints,
    int_values,
    normalize_axis,
    register_array_op,
    require_index_dtype,
    require_vector,
    scalar_int_value,
)
from sluice.framework.ops.core.shape_rules import constant_value


# -- Reshape --------------------------------------------------------------------------------------
def _dim_of(entry: Tensor, x: Tensor) -> int | None:
    """i when `entry` is `shape(x)[i]` with a constant i (its value is x's dim i, even unknown)."""
    op = entry.op
    if op.type != "StridedSlice" or op.get_attr("shrink_axis_mask") != 1 or x.shape.rank is None:
        return None
    source = op.inputs[0].op
    begin = constant_value(op.inputs[1])
    if source.type != "Shape" or source.inputs[0] is not x or begin is None or begin.size != 1:
        return None
    return int(begin.reshape(-1)[0]) % x.shape.rank


def _reshape_infer(op) -> list:
    x, shape = op.inputs
    require_index_dtype(shape, "shape")
    require_vector(shape, "shape")
    dims = int_values(shape)
    if dims is None:
        return [(x.dtype, TensorShape(None))]
    if sum(d == -1 for d in dims) > 1:
        raise ValueError(f"shape may contain at most one -1, got {dims}")
    if any(d is not None and d < -1 for d in dims):
        raise ValueError(f"shape entries must be >= -1, got {dims}")
    out = [None if d == -1 else d for d in dims]
    # An entry `shape(x)[i]` (flatten: `reshape(x, [shape(x)[0], -1])`) cancels x's dim i, so the
    # other entries can still be checked and the -1 resolved when x's remaining dims are known.
    matched: list[int] = []
    if shape.op.type == "Pack" and x.shape.rank is not None:
        for k, entry in enumerate(shape.op.inputs):
            i = _dim_of(entry, x) if dims[k] is None else None
            if i is not None and i not in matched and x.shape[i] is None:
                matched.append(i)
                dims[k] = 1
    rest = None if x.shape.rank is None else [d for i, d in enumerate(x.shape) if i not in matched]
    n = None if rest is None or None in rest else int(np.prod(rest))
    known = [d for d in dims if d is not None and d != -1]
    known_product = int(np.prod(known))
    what = f"Cannot reshape a tensor of shape {x.shape} to shape {int_values(shape)}"
    if n is not None and len(known) == len(dims) and known_product != n:
        raise ValueError(f"{what}: {n} elements are not {known_product}")
    if n is not None and -1 in dims and None not in dims and known_product > 0:
        if n % known_product:
            raise ValueError(f"{what}: {n} elements are not divisible by {known_product}")
        out[dims.index(-1)] = n // known_product
    if n is None and len(known) == len(dims) and rest is not None:
        rest_known = int(np.prod([d for d in rest if d is not None]))
        if rest_known and known_product % rest_known:
            raise ValueError(f"{what}: {known_product} elements are not a multiple of {rest_known}")
    return [(x.dtype, TensorShape(out))]


def _reshape_kernel(x, shape: list):
    # to its own shape: x itself (a gradient's reshape to its input's shape usually is), so that
    # a loop saving both sees one value
    if isinstance(x, jax.Array) and list(np.shape(x)) == list(shape):
        return x
    return jnp.reshape(x, shape)


register_array_op(
    "Reshape",
    infer=_reshape_infer,
    kernel=lambda x, shape, **_: _reshape_kernel(x, host_ints(shape, "Reshape's shape")),
    host_inputs=(1,),
    select_safe=True,
)


@register_gradient("Reshape")
def _reshape_grad(op, grad):
    return [reshape(grad, fill_ops.shape(op.inputs[0])), None]


@export("reshape")
def reshape(tensor: Any, shape: Any, name: str | None = None) -> Tensor:
    """`tensor` with its elements in row-major order laid out as `shape` (a list, TensorShape or
    1-D int Tensor; one entry may be -1, inferred from the element count)."""
    x = core_ops.convert_to_tensor(tensor)
    shape = as_int_tensor(shape, "reshape's shape")
    return core_ops.apply_op("Reshape", [x, shape], name=name).outputs[0]


# -- Transpose ------------------------------------------------------------------------------------
def _transpose_infer(op) -> list:
    x, perm = op.inputs
    require_index_dtype(perm, "perm")
    require_vector(perm, "perm")
    values = int_values(perm)
    rank = x.shape.rank if x.shape.rank is not None else (None if values is None else len(values))
    if rank is None:
        return [(x.dtype, TensorShape(None))]
    if values is None or None in values:
        return [(x.dtype, TensorShape([None] * rank))]
    if sorted(v % rank if -rank <= v < rank else v for v in values) != list(range(rank)):
        raise ValueError(f"perm must be a permutation of 0..{rank - 1}, got {values}")
    dims = x.shape.dims or (None,) * rank
    return [(x.dtype, TensorShape([dims[v] for v in values]))]


register_array_op(
    "Transpose",
    infer=_transpose_infer,
    kernel=lambda x, perm, **_: jnp.transpose(x, host_ints(perm, "Transpose's perm")),
    host_inputs=(1,),
)


@register_gradient("Transpose")
def _transpose_grad(op, grad):
    return [transpose(grad, invert_permutation(op.inputs[1])), None]


def _invert_permutation_infer(op) -> list:
    perm = op.inputs[0]
    require_index_dtype(perm, "x")
    require_vector(perm, "x")
    return [(perm.dtype, perm.shape)]


register_array_op(
    "InvertPermutation",
    infer=_invert_permutation_infer,
    kernel=lambda x, **_: jnp.argsort(x % x.shape[0]).astype(x.dtype),
)
not_differentiable("InvertPermutation")


def invert_permutation(x: Any, name: str | None = None) -> Tensor:
    """The permutation y with y[x[i]] = i (a constant when `x` is known statically)."""
    perm = as_int_tensor(x, "invert_permutation's x")
    values = int_values(perm)
    if values is not None and None not in values:
        rank = len(values)
        values = [normalize_axis(v, rank, "permutation entry") for v in values]
        return core_ops.constant(np.argsort(values), perm.dtype, name=name or "InvertPermutation")
    return core_ops.apply_op("InvertPermutation", [perm], name=name).outputs[0]


@export("transpose")
def transpose(a: Any, perm: Any = None, name: str = "transpose", conjugate: bool = False) -> Tensor:
    """`a` with its dimensions permuted: output dim i is input dim `perm[i]` (reversed when
    `perm` is None)."""
    x = core_ops.convert_to_tensor(a)
    if conjugate and x.dtype.kind == "c":
        raise NotImplementedError("transpose(conjugate=True) of complex tensors is not supported")
    if perm is None and x.shape.rank is not None:
        perm = list(reversed(range(x.shape.rank)))
    elif perm is None:
        perm = reverse(fill_ops.range(rank(x)), [0])
    perm = as_int_tensor(perm, "transpose's perm")
    return core_ops.apply_op("Transpose", [x, perm], name=name).outputs[0]


# -- ExpandDims, Squeeze --------------------------------------------------------------------------
def _expand_dims_infer(op) -> list:
    x, axis = op.inputs
    rank = x.shape.rank
    require_index_dtype(axis, "axis")
    if axis.shape.num_elements() not in (None, 1):
        raise ValueError(f"axis must hold one value, got shape {axis.shape}")
    value = scalar_int_value(axis)
    if rank is None:
        return [(x.dtype, TensorShape(None))]
    if value is None:
        return [(x.dtype, TensorShape([None] * (rank + 1)))]
    dims = list(x.shape.dims)
    dims.insert(normalize_axis(value, rank + 1), 1)
    return [(x.dtype, TensorShape(dims))]


def _expand_dims_kernel(x, axis, **_):
    (axis,) = host_ints(axis, "ExpandDims's axis")
    return jnp.expand_dims(x, axis)


register_array_op(
    "ExpandDims",
    infer=_expand_dims_infer,
    kernel=_expand_dims_kernel,
    host_inputs=(1,),
    select_safe=True,
)


@register_gradient("ExpandDims")
def _expand_dims_grad(op, grad):
    return [reshape(grad, fill_ops.shape(op.inputs[0])), None]


@export("expand_dims")
def expand_dims(input: Any, axis: Any = None, name: str | None = None, dim: Any = None) -> Tensor:
    """`input` with a new dimension of size 1 inserted at `axis` (negative counts from the end:
    -1 appends)."""
    if axis is None:
        axis = dim
    if axis is None:
        raise ValueError("expand_dims needs `axis`.")
    x = core_ops.convert_to_tensor(input)
    axis = as_int_tensor(axis, "expand_dims's axis")
    return core_ops.apply_op("ExpandDims", [x, axis], name=name).outputs[0]


def _squeeze_infer(op) -> list:
    x = op.inputs[0]
    axes = op.get_attr("squeeze_dims")
    if x.shape.rank is None:
        return [(x.dtype, TensorShape(None))]
    rank = x.shape.rank
    dims = x.shape.dims
    if not axes:
        if any(d is None for d in dims):  # an unknown dim may or may not be squeezed
            return [(x.dtype, TensorShape(None))]
        return [(x.dtype, TensorShape([d for d in dims if d != 1]))]
    drop = {normalize_axis(a, rank, "squeeze axis") for a in axes}
    for i in sorted(drop):
        if dims[i] not in (None, 1):
            raise ValueError(f"Can not squeeze dim[{i}], expected a dimension of 1, got {dims[i]}")
    return [(x.dtype, TensorShape([d for i, d in enumerate(dims) if i not in drop]))]


def _squeeze_kernel(x, *, squeeze_dims, **_):
    return jnp.squeeze(x, axis=tuple(squeeze_dims) if squeeze_dims else None)


register_array_op("Squeeze", infer=_squeeze_infer, kernel=_squeeze_kernel, select_safe=True)


@register_gradient("Squeeze")
def _squeeze_grad(op, grad):
    return [reshape(grad, fill_ops.shape(op.inputs[0]))]


@export("squeeze")
def squeeze(
    input: Any, axis: int | Sequence[int] | None = None, name: str | None = None, squeeze_dims=None
) -> Tensor:
    """`input` without dimensions of size 1: all of them, or those in `axis` (which must be 1)."""
    if axis is None:
        axis = squeeze_dims
    axes = () if axis is None else tuple(np.reshape(axis, [-1]).tolist())
    x = core_ops.convert_to_tensor(input)
    attrs = {"squeeze_dims": tuple(int(a) for a in axes)}
    return core_ops.apply_op("Squeeze", [x], attrs, name).outputs[0]


# -- ReverseV2 ------------------------------------------------------------------------------------
def _reverse_infer(op) -> list:
    x, axis = op.inputs
    require_index_dtype(axis, "axis")
    require_vector(axis, "axis")
    values = int_values(axis)
    if values is not None and None not in values and x.shape.rank is not None:
        axes = [normalize_axis(a, x.shape.rank) for a in values]
        if len(set(axes)) != len(axes):
            raise ValueError(f"axis {values} names a dimension more than once")
    return [(x.dtype, x.shape)]


register_array_op(
    "ReverseV2",
    infer=_reverse_infer,
    kernel=lambda x, axis, **_: jnp.flip(x, axis=host_ints(axis, "ReverseV2's axis")),
    host_inputs=(1,),
)


@register_gradient("ReverseV2")
def _reverse_grad(op, grad):
    return [reverse(grad, op.inputs[1]), None]


@export("reverse", "reverse_v2")
def reverse(tensor: Any, axis: Any, name: str | None = None) -> Tensor:
    """`tensor` with the order of elements reversed along each dimension in `axis` (a list)."""
    x = core_ops.convert_to_tensor(tensor)
    axis = as_int_tensor(axis, "reverse's axis")
    return core_ops.apply_op("ReverseV2", [x, axis], name=name).outputs[0]


# -- boolean_mask ---------------------------------------------------------------------------------
@export("boolean_mask")
def boolean_mask(
    tensor: Any, mask: Any, name: str = "boolean_mask", axis: int | None = None
) -> Tensor:
    """The elements (or slices) of `tensor` where the bool `mask` is true, in row-major order.

    `mask` (static rank k >= 1) covers dimensions axis..axis+k-1 of `tensor`; those collapse into
    one dimension of unknown size. Built as reshape + where + gather, as TF1 does.
    """
    with graph_lib.name_scope(name, "boolean_mask", [tensor, mask]):
        x = core_ops.convert_to_tensor(tensor)
        m = core_ops.convert_to_tensor(mask)
        if m.dtype != dtypes.bool_:
            raise TypeError(f"boolean_mask needs a bool mask, got {m.dtype.name}")
        k = m.shape.rank
        if k is None:
            raise ValueError(
                "Number of mask dimensions must be specified, even if some dimensions are None"
            )
        if k == 0:
            raise ValueError("mask cannot be scalar.")
        axis = 0 if axis is None else int(axis)
        if x.shape.rank is not None:
            if axis < 0:
                axis += x.shape.rank
            if axis + k > x.shape.rank:
                raise ValueError(f"mask of rank {k} at axis {axis} does not fit shape {x.shape}")
            masked = TensorShape(x.shape.dims[axis : axis + k])
            if not masked.is_compatible_with(m.shape):
                raise ValueError(
                    f"mask of shape {m.shape} does not match dims {masked} of {x.shape}"
                )
        if x.shape.is_fully_defined():
            dims = x.shape.as_list()
            flat_shape = dims[:axis] + [-1] + dims[axis + k :]
        else:
            full = shape(x)
            flat_shape = concat([full[:axis], [-1], full[axis + k :]], 0)
        flat = reshape(x, flat_shape)
        indices = squeeze(where(reshape(m, [-1])), axis=[1])
        return gather(flat, indices, axis=axis)
