"""Index tuples into the leading dimensions of a tensor: GatherNd (`gather_nd`) reads the slices
they name, ScatterNd (`scatter_nd`) adds slices into zeros at them (repeated indices add up).
Each is the other's gradient, as in TF1. TensorScatterUpdate, TensorScatterAdd and
TensorScatterSub (`tensor_scatter_nd_update`, ...) write the slices into a copy of a tensor; the
variable functions `scatter_nd_update`/`scatter_nd_add`/`scatter_nd_sub` assign their result.

An index tuple is the last dimension of `indices` (length M <= rank of params): the output of
`gather_nd` has shape `indices.shape[:-1] + params.shape[M:]`.

>>> sl.Session().run(sl.gather_nd([[1, 2], [3, 4]], [[1, 0], [0, 1]])).tolist()
[3, 2]
>>> sl.Session().run(sl.scatter_nd([[1], [1]], [5, 6], [3])).tolist()
[0, 11, 0]
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from sluice._export import export
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import Check, register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import (
    INDEX_DTYPES,
    as_int_tensor,
    host_ints,
    int_values,
    require_vector,
)
from sluice.framework.ops.core.shape_rules import constant_value


def _require_indices(indices: Tensor) -> None:
    if indices.dtype not in INDEX_DTYPES:
        raise TypeError(f"indices must be int32 or int64, got {indices.dtype.name}")
    if indices.shape.rank == 0:
        raise ValueError("indices must have rank >= 1 (its last dimension holds index tuples)")


def _check_known_indices(indices: Tensor, dims: list, what: str) -> None:
    """Raises at graph construction when constant indices are out of range."""
    value = constant_value(indices)
    if value is None or not value.size:
        return
    for j, d in enumerate(dims):
        column = value[..., j]
        if d is not None and (column.min() < 0 or column.max() >= d):
            bad = column[(column < 0) | (column >= d)].flat[0]
            raise ValueError(
                f"{what}: indices contain {bad} in position {j}, which is not in [0, {d})"
            )


def _bad_index(indices, shape) -> tuple:
    """(an index tuple out of range of `shape`, the position of the first such tuple), as TF's
    CPU kernels check."""
    indices = jnp.asarray(indices)
    tuples = indices.reshape(-1, indices.shape[-1]) if indices.ndim else indices.reshape(1, -1)
    if tuples.shape[0] == 0 or tuples.shape[1] == 0:
        return jnp.asarray(False), jnp.asarray(0, jnp.int64)
    bound = jnp.asarray(shape)[: tuples.shape[1]]  # may be traced (ScatterNd's shape input)
    bad = jnp.any((tuples < 0) | (tuples >= bound), axis=1)
    return jnp.any(bad), jnp.argmax(bad).astype(jnp.int64)


def _bad_index_message(what: str, shape_of):
    def message(op, position: int) -> str:
        return (
            f"{what}: index tuple number {position} of indices is out of range for the shape "
            f"{shape_of(op)}"
        )

    return message


def _index_tuple(indices):
    return tuple(indices[..., j] for j in range(indices.shape[-1]))


# -- GatherNd -------------------------------------------------------------------------------------
def _gather_nd_infer(op) -> list:
    params, indices = op.inputs
    _require_indices(indices)
    p, i = params.shape, indices.shape
    if p.rank is None or i.rank is None or i.dims[-1] is None:
        return [(params.dtype, TensorShape(None))]
    m = i.dims[-1]
    if m > p.rank:
        raise ValueError(
            f"index tuples of length {m} (the last dimension of indices, shape "
            f"{i}) cannot index params of rank {p.rank} (shape {p})"
        )
    _check_known_indices(indices, p.dims[:m], "gather_nd")
    return [(params.dtype, TensorShape(list(i.dims[:-1]) + list(p.dims[m:])))]


def _gather_nd_kernel(params, indices, **_):
    # a traced out-of-range index reads zeros (TF's GPU behaviour); negatives are sent past the end
    bound = jnp.asarray(params.shape[: indices.shape[-1]], indices.dtype)
    indices = jnp.where(indices < 0, bound, indices)
    return jnp.asarray(params).at[_index_tuple(indices)].get(mode="fill", fill_value=0)


register_op(
    "GatherNd",
    infer=_gather_nd_infer,
    kernel=_gather_nd_kernel,
    check=Check(
        lambda params, indices, **_: _bad_index(indices, params.shape),
        _bad_index_message("GatherNd", lambda op: op.inputs[0].shape),
    ),
)


@register_gradient("GatherNd")
def _gather_nd_grad(op, grad):
    params, indices = op.inputs
    shape = fill_ops.shape(params, out_type=indices.dtype)
    return [scatter_nd(indices, grad, shape), None]


@export("gather_nd")
def gather_nd(params: Any, indices: Any, name: str | None = None, batch_dims: int = 0) -> Tensor:
    """The slices of `params` named by the index tuples in the last dimension of `indices` (TF1
    `tf.gather_nd`): `output[i...] = params[indices[i..., 0], ..., indices[i..., M-1], ...]`.

    Args:
      params: the tensor to read.
      indices: an int32/int64 tensor whose last dimension M is at most params' rank.
      name: the op's name.
      batch_dims: must be 0 (TF1's default; batched gathers are not supported here).

    Raises:
      ValueError: M exceeds the rank of params, or constant indices are out of range
        (at run time: InvalidArgumentError).
      TypeError: the indices are not int32/int64.
    """
    if batch_dims != 0:
        raise NotImplementedError("gather_nd: only batch_dims=0 is supported")
    params = core_ops.convert_to_tensor(params)
    indices = core_ops.convert_to_tensor(indices)
    return core_ops.apply_op("GatherNd", [params, indices], name=name).outputs[0]


# -- ScatterNd ------------------------------------------------------------------------------------
def _scatter_nd_infer(op) -> list:
    indices, updates, shape = op.inputs
    _require_indices(indices)
    if shape.dtype != indices.dtype:
        raise TypeError(
            f"shape must have the dtype of indices ({indices.dtype.name}), got {shape.dtype.name}"
        )
    require_vector(shape, "shape")
    dims = int_values(shape)
    out = TensorShape(dims)
    i, u = indices.shape, updates.shape
    if dims is None or i.rank is None or i.dims[-1] is None:
        return [(updates.dtype, out)]
    m = i.dims[-1]
    if m > len(dims):
        raise ValueError(
            f"index tuples of length {m} cannot index an output of rank {len(dims)} (shape {out})"
        )
    expected = TensorShape(list(i.dims[:-1]) + list(out.dims[m:]))
    if not u.is_compatible_with(expected):
        raise ValueError(
            f"updates must have shape indices.shape[:-1] + shape[{m}:] = {expected}, got {u}"
        )
    _check_known_indices(indices, dims[:m], "scatter_nd")
    return [(updates.dtype, out)]


def _scatter_nd_kernel(indices, updates, shape, **_):
    shape = host_ints(shape, "ScatterNd's shape")
    bound = jnp.asarray(shape[: indices.shape[-1]], indices.dtype)
    indices = jnp.where(indices < 0, bound, indices)  # a traced bad index is dropped
    zeros = jnp.zeros(shape, updates.dtype)
    return zeros.at[_index_tuple(indices)].add(updates, mode="drop")


register_op(
    "ScatterNd",
    infer=_scatter_nd_infer,
    kernel=_scatter_nd_kernel,
    host_inputs=(2,),
    check=Check(
        lambda indices, updates, shape, **_: _bad_index(indices, shape),
        _bad_index_message("ScatterNd", lambda op: op.outputs[0].shape),
    ),
)


@register_gradient("ScatterNd")
def _scatter_nd_grad(op, grad):
    return [None, gather_nd(grad, op.inputs[0]), None]


@export("scatter_nd")
def scatter_nd(indices: Any, updates: Any, shape: Any, name: str | None = None) -> Tensor:
    """Zeros of `shape` with `updates` added at the index tuples of `indices` (TF1
    `tf.scatter_nd`); repeated index tuples add up.

    Args:
      indices: an int32/int64 tensor whose last dimension M is at most len(shape).
      updates: a tensor of shape `indices.shape[:-1] + shape[M:]`.
      shape: the output shape (a vector of indices' dtype).
      name: the op's name.

    Raises:
      ValueError: mismatched shapes, or constant indices out of range.
    """
    indices = core_ops.convert_to_tensor(indices)
    updates = core_ops.convert_to_tensor(updates)
    shape = as_int_tensor(shape, "scatter_nd's shape", dtype=indices.dtype)
    return core_ops.apply_op("ScatterNd", [indices, updates, shape], name=name).outputs[0]


# -- TensorScatterUpdate, TensorScatterAdd, TensorScatterSub --------------------------------------
def _tensor_scatter_infer(op) -> list:
    tensor, indices, updates = op.inputs
    _require_indices(indices)
    if updates.dtype != tensor.dtype:
        raise TypeError(
            f"updates must have the dtype of the tensor ({tensor.dtype.name}), got "
            f"{updates.dtype.name}"
        )
    t, i = tensor.shape, indices.shape
    if t.rank is not None and i.rank is not None and i.dims[-1] is not None:
        m = i.dims[-1]
        if m > t.rank:
            raise ValueError(
                f"index tuples of length {m} cannot index a tensor of rank {t.rank} (shape {t})"
            )
        expected = TensorShape(list(i.dims[:-1]) + list(t.dims[m:]))
        if not updates.shape.is_compatible_with(expected):
            raise ValueError(
                f"updates must have shape indices.shape[:-1] + tensor.shape[{m}:] = "
                f"{expected}, got {updates.shape}"
            )
        _check_known_indices(indices, list(t.dims[:m]), op.type)
    return [(tensor.dtype, tensor.shape)]


def _tensor_scatter_kernel(combine: str):
    def kernel(tensor, indices, updates, **_):
        bound = jnp.asarray(tensor.shape[: indices.shape[-1]], indices.dtype)
        indices = jnp.where(indices < 0, bound, indices)  # a traced bad index is dropped
        target = jnp.asarray(tensor).at[_index_tuple(indices)]
        if combine == "sub":
            return target.add(-updates, mode="drop")
        return getattr(target, combine)(updates, mode="drop")

    return kernel


for _op_type, _combine in (
    ("TensorScatterUpdate", "set"),
    ("TensorScatterAdd", "add"),
    ("TensorScatterSub", "sub"),
):
    register_op(
        _op_type,
        infer=_tensor_scatter_infer,
        kernel=_tensor_scatter_kernel(_combine),
        check=Check(
            lambda tensor, indices, updates, **_: _bad_index(indices, tensor.shape),
            _bad_index_message(_op_type, lambda op: op.inputs[0].shape),
        ),
    )


@register_gradient("TensorScatterUpdate")
def _tensor_scatter_update_grad(op, grad):  # overwritten entries get no gradient
    indices, updates = op.inputs[1], op.inputs[2]
    cleared = tensor_scatter_nd_update(grad, indices, fill_ops.zeros_like(updates))
    return [cleared, None, gather_nd(grad, indices)]


@register_gradient("TensorScatterAdd")
def _tensor_scatter_add_grad(op, grad):
    return [grad, None, gather_nd(grad, op.inputs[1])]


@register_gradient("TensorScatterSub")
def _tensor_scatter_sub_grad(op, grad):
    return [grad, None, -gather_nd(grad, op.inputs[1])]


def _tensor_scatter(op_type: str, tensor, indices, updates, name) -> Tensor:
    tensor = core_ops.convert_to_tensor(tensor)
    indices = core_ops.convert_to_tensor(indices)
    updates = (
        updates
        if isinstance(updates, Tensor)
        else core_ops.convert_to_tensor(updates, preferred_dtype=tensor.dtype)
    )
    return core_ops.apply_op(op_type, [tensor, indices, updates], name=name).outputs[0]


@export("tensor_scatter_nd_update")
def tensor_scatter_nd_update(
    tensor: Any, indices: Any, updates: Any, name: str | None = None
) -> Tensor:
    """A copy of `tensor` with the slices at the index tuples of `indices` replaced by `updates`
    (TF `tf.tensor_scatter_nd_update`); with repeated index tuples one update wins."""
    return _tensor_scatter("TensorScatterUpdate", tensor, indices, updates, name)


@export("tensor_scatter_nd_add")
def tensor_scatter_nd_add(
    tensor: Any, indices: Any, updates: Any, name: str | None = None
) -> Tensor:
    """A copy of `tensor` with `updates` added at the index tuples of `indices` (repeats add)."""
    return _tensor_scatter("TensorScatterAdd", tensor, indices, updates, name)


@export("tensor_scatter_nd_sub")
def tensor_scatter_nd_sub(
    tensor: Any, indices: Any, updates: Any, name: str | None = None
) -> Tensor:
    """A copy of `tensor` with `updates` subtracted at the index tuples of `indices`."""
    return _tensor_scatter("TensorScatterSub", tensor, indices, updates, name)
