"""Index tuples into the leading dimensions of a tensor: GatherNd (`gather_nd`) reads the slices
they name, ScatterNd (`scatter_nd`) adds slices into zeros at them (repeated indices add up).
Each is the other's gradient, as in TF1.

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

from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import register_gradient
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops import core_ops, fill_ops
from sluice.framework.ops.array_util import (
    INDEX_DTYPES,
    as_int_tensor,
    host_ints,
    int_values,
    maybe_host_value,
    register_array_op,
    require_vector,
)
from sluice.framework.ops.shape_rules import constant_value


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
            raise ValueError(f"{what}: indices contain {bad} in position {j}, which is not in "
                             f"[0, {d})")


def _check_concrete(indices, shape, what: str) -> None:
    concrete = maybe_host_value(indices)
    if concrete is None or not concrete.size:
        return
    bound = jnp.asarray(shape[: concrete.shape[-1]])
    if (concrete < 0).any() or (concrete >= bound).any():
        raise ValueError(f"{what}: indices {concrete.tolist()} are out of range for shape "
                         f"{tuple(shape)}")


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
        raise ValueError(f"index tuples of length {m} (the last dimension of indices, shape "
                         f"{i}) cannot index params of rank {p.rank} (shape {p})")
    _check_known_indices(indices, p.dims[:m], "gather_nd")
    return [(params.dtype, TensorShape(list(i.dims[:-1]) + list(p.dims[m:])))]


def _gather_nd_kernel(params, indices, **_):
    _check_concrete(indices, params.shape, "GatherNd")
    # a traced out-of-range index reads zeros (TF's GPU behaviour); negatives are sent past the end
    bound = jnp.asarray(params.shape[: indices.shape[-1]], indices.dtype)
    indices = jnp.where(indices < 0, bound, indices)
    return jnp.asarray(params).at[_index_tuple(indices)].get(mode="fill", fill_value=0)


register_array_op("GatherNd", infer=_gather_nd_infer, kernel=_gather_nd_kernel)


@register_gradient("GatherNd")
def _gather_nd_grad(op, grad):
    params, indices = op.inputs
    shape = fill_ops.shape(params, out_type=indices.dtype)
    return [scatter_nd(indices, grad, shape), None]


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
        raise TypeError(f"shape must have the dtype of indices ({indices.dtype.name}), got "
                        f"{shape.dtype.name}")
    require_vector(shape, "shape")
    dims = int_values(shape)
    out = TensorShape(dims)
    i, u = indices.shape, updates.shape
    if dims is None or i.rank is None or i.dims[-1] is None:
        return [(updates.dtype, out)]
    m = i.dims[-1]
    if m > len(dims):
        raise ValueError(f"index tuples of length {m} cannot index an output of rank "
                         f"{len(dims)} (shape {out})")
    expected = TensorShape(list(i.dims[:-1]) + list(out.dims[m:]))
    if not u.is_compatible_with(expected):
        raise ValueError(f"updates must have shape indices.shape[:-1] + shape[{m}:] = {expected}, "
                         f"got {u}")
    _check_known_indices(indices, dims[:m], "scatter_nd")
    return [(updates.dtype, out)]


def _scatter_nd_kernel(indices, updates, shape, **_):
    shape = host_ints(shape, "ScatterNd's shape")
    _check_concrete(indices, shape, "ScatterNd")
    bound = jnp.asarray(shape[: indices.shape[-1]], indices.dtype)
    indices = jnp.where(indices < 0, bound, indices)  # a traced bad index is dropped
    zeros = jnp.zeros(shape, updates.dtype)
    return zeros.at[_index_tuple(indices)].add(updates, mode="drop")


register_array_op("ScatterNd", infer=_scatter_nd_infer, kernel=_scatter_nd_kernel,
                  host_inputs=(2,))


@register_gradient("ScatterNd")
def _scatter_nd_grad(op, grad):
    return [None, gather_nd(grad, op.inputs[0]), None]


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
