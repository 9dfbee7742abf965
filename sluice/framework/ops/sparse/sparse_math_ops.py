"""Sparse elementwise arithmetic and softmax: SparseAdd (and its gradient op),
SparseTensorDenseAdd, SparseSoftmax (TF1 `tf.sparse_add`, `tf.sparse_softmax`).

SparseTensorDenseAdd and SparseSoftmax keep the number of entries and are jitted. SparseAdd of
two sparse tensors gives as many entries as the data say: it runs on host values, as `unique`
(always interpreted; compiled from constants). Gradients are TF1's (`sparse_grad.py`), with
respect to the values and the dense operand.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.registry import (
    Check,
    not_differentiable,
    register_gradient,
    register_op,
)
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import scatter_nd_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import host_value, register_array_op
from sluice.framework.ops.core.shape_rules import partial_shape_value
from sluice.framework.ops.sparse.sparse_tensor import SparseTensor, convert_to_sparse, is_sparse
from sluice.framework.ops.sparse.sparse_util import (
    bad_dense_shape,
    bad_dense_shape_message,
    distinct_rows,
    require_same_dtype,
    require_sparse_parts,
    row_groups,
)


# -- SparseAdd: sparse + sparse ------------------------------------------------------------------
def _add_infer(op) -> list:
    a_ind, a_val, a_shape, b_ind, b_val, b_shape, thresh = op.inputs
    ra = require_sparse_parts("SparseAdd a", a_ind, a_val, a_shape)
    rb = require_sparse_parts("SparseAdd b", b_ind, b_val, b_shape)
    if None not in (ra, rb) and ra != rb:
        raise ValueError(f"Operands do not have the same ranks; got ranks {ra} and {rb}")
    require_same_dtype("SparseAdd", a_val, b_val)
    if thresh.shape.rank not in (None, 0):
        raise ValueError(f"thresh must be a scalar, got shape {thresh.shape}")
    rank = ra if ra is not None else rb
    return [
        (dtypes.int64, TensorShape([None, rank])),
        (a_val.dtype, TensorShape([None])),
        (dtypes.int64, TensorShape([rank])),
    ]


def _add_kernel(a_ind, a_val, a_shape, b_ind, b_val, b_shape, thresh):
    a_ind = host_value(a_ind, "SparseAdd's a_indices").astype(np.int64)
    b_ind = host_value(b_ind, "SparseAdd's b_indices").astype(np.int64)
    a_val, b_val = host_value(a_val, "SparseAdd's a"), host_value(b_val, "SparseAdd's b")
    a_shape, b_shape = host_value(a_shape, "a_shape"), host_value(b_shape, "b_shape")
    if a_shape.shape != b_shape.shape or (a_shape != b_shape).any():
        raise ValueError(
            f"Operands' shapes do not match: got {a_shape.tolist()} and {b_shape.tolist()}"
        )
    rows, (ia, ib) = distinct_rows(a_ind, b_ind)
    sums = np.zeros(rows.shape[0], a_val.dtype)
    np.add.at(sums, ia, a_val)
    np.add.at(sums, ib, b_val)
    # As TF's merge: only an index that both operands hold is dropped below the threshold.
    in_both = np.zeros(rows.shape[0], bool)
    in_both[np.intersect1d(ia, ib)] = True
    keep = ~in_both | (np.abs(sums) >= np.asarray(thresh))
    return rows[keep], sums[keep], a_shape.astype(np.int64)


register_array_op("SparseAdd", infer=_add_infer, kernel=_add_kernel, jit=False)


def _add_grad_infer(op) -> list:
    grad, a_ind, b_ind, _ = op.inputs
    return [
        (grad.dtype, TensorShape([a_ind.shape[0] if a_ind.shape.rank else None])),
        (grad.dtype, TensorShape([b_ind.shape[0] if b_ind.shape.rank else None])),
    ]


def _add_grad_kernel(grad, a_ind, b_ind, sum_ind):
    """The gradient of each operand's values: the sum's gradient where its index went, 0 where
    the threshold dropped it (TF's SparseAddGrad)."""
    grad = host_value(grad, "SparseAddGrad's backprop_val_grad")
    blocks = [
        host_value(x, "SparseAddGrad's indices").astype(np.int64) for x in (sum_ind, a_ind, b_ind)
    ]
    rows, (isum, ia, ib) = distinct_rows(*blocks)
    where = np.full(rows.shape[0], -1)
    where[isum] = np.arange(isum.size)
    out = []
    for ids in (ia, ib):
        at = where[ids]
        out.append(
            np.where(at >= 0, grad[np.maximum(at, 0)] if grad.size else 0, 0).astype(grad.dtype)
        )
    return tuple(out)


register_array_op("SparseAddGrad", infer=_add_grad_infer, kernel=_add_grad_kernel, jit=False)
not_differentiable("SparseAddGrad")


@register_gradient("SparseAdd")
def _add_grad(op, _grad_indices, grad_values, _grad_shape):
    a_ind, b_ind, sum_ind = op.inputs[0], op.inputs[3], op.outputs[0]
    a_grad, b_grad = core_ops.apply_op(
        "SparseAddGrad", [grad_values, a_ind, b_ind, sum_ind]
    ).outputs
    return [None, a_grad, None, None, b_grad, None, None]


# -- SparseTensorDenseAdd: sparse + dense --------------------------------------------------------
def _dense_add_infer(op) -> list:
    ind, val, shape, b = op.inputs
    rank = require_sparse_parts("SparseTensorDenseAdd", ind, val, shape)
    require_same_dtype("SparseTensorDenseAdd", val, b)
    if None not in (rank, b.shape.rank) and rank != b.shape.rank:
        raise ValueError(f"the sparse operand has rank {rank}, the dense one shape {b.shape}")
    static = partial_shape_value(shape)
    if not b.shape.is_compatible_with(static):
        raise ValueError(f"the sparse operand's shape {static} is not the dense one's {b.shape}")
    return [(b.dtype, b.shape.merge_with(static))]


def _dense_add_kernel(ind, val, shape, b):
    return jnp.asarray(b).at[tuple(jnp.asarray(ind).T)].add(val, mode="drop")


register_op("SparseTensorDenseAdd", infer=_dense_add_infer, kernel=_dense_add_kernel)


@register_gradient("SparseTensorDenseAdd")
def _dense_add_grad(op, grad):
    return [None, scatter_nd_ops.gather_nd(grad, op.inputs[0]), None, grad]


@export("sparse_add", "sparse.add")
def sparse_add(a: Any, b: Any, thresh: Any = 0, threshold: Any = None) -> Any:
    """`a + b` where one or both are sparse (TF1 `tf.sparse_add`).

    Two SparseTensors give a SparseTensor in row-major order (their indices should be in that
    order, as TF1 asks); an index both hold is dropped when the sum's magnitude is below
    `thresh`. A SparseTensor and a dense Tensor give a dense Tensor.

    Raises:
      TypeError: neither is sparse.

    >>> a = sl.SparseTensor([[0, 0], [1, 1]], [1.0, 2.0], [2, 2])
    >>> b = sl.SparseTensor([[1, 1]], [-1.9], [2, 2])
    >>> v = sl.Session().run(sl.sparse_add(a, b, thresh=0.5))
    >>> v.indices.tolist(), v.values.tolist()
    ([[0, 0]], [1.0])
    """
    if threshold is not None:
        thresh = threshold
    sparse_a, sparse_b = is_sparse(a), is_sparse(b)
    if not (sparse_a or sparse_b):
        raise TypeError("At least one input should be SparseTensor; do you mean to use tf.add()?")
    if sparse_a and sparse_b:
        a, b = convert_to_sparse(a, "sparse_add: a"), convert_to_sparse(b, "sparse_add: b")
        ranks = {a.shape.rank, b.shape.rank} - {None}
        if len(ranks) > 1:
            raise ValueError(
                "sparse_add: Operands do not have the same ranks; got shapes: "
                f"{a.shape} and {b.shape}."
            )
        if not a.shape.is_compatible_with(b.shape):
            raise ValueError(f"sparse_add: Operands' shapes do not match: {a.shape} and {b.shape}.")
        thresh = core_ops.convert_to_tensor(thresh, dtype=_real(a.dtype), name="threshold")
        op = core_ops.apply_op(
            "SparseAdd",
            [a.indices, a.values, a.dense_shape, b.indices, b.values, b.dense_shape, thresh],
            name="SparseAdd",
        )
        result = SparseTensor(*op.outputs)
        result.set_shape(a.shape.merge_with(b.shape))
        return result
    sp, dense = (a, b) if sparse_a else (b, a)
    sp = convert_to_sparse(sp, "sparse_add")
    dense = core_ops.convert_to_tensor(dense, dtype=sp.dtype, name="b")
    return core_ops.apply_op(
        "SparseTensorDenseAdd", [sp.indices, sp.values, sp.dense_shape, dense]
    ).outputs[0]


def _real(dtype: Any) -> Any:
    return np.real(np.zeros((), dtype)).dtype


# -- SparseSoftmax -------------------------------------------------------------------------------
def _softmax_infer(op) -> list:
    ind, val, shape = op.inputs
    rank = require_sparse_parts("SparseSoftmax", ind, val, shape)
    if rank is not None and rank < 2:
        raise ValueError(f"Input should have rank >= 2, but received shape: {ind.shape}")
    if not dtypes.is_floating(val.dtype):
        raise TypeError(f"SparseSoftmax: values must be floating, got {val.dtype.name}")
    return [(val.dtype, val.shape)]


def _softmax_kernel(ind, val, shape):
    ind, val = jnp.asarray(ind), jnp.asarray(val)
    n = val.shape[0]
    groups = row_groups(ind)
    top = jax.ops.segment_max(val, groups, num_segments=n)
    e = jnp.exp(val - top[groups])
    return e / jax.ops.segment_sum(e, groups, num_segments=n)[groups]


register_op(
    "SparseSoftmax",
    infer=_softmax_infer,
    kernel=_softmax_kernel,
    check=Check(lambda ind, val, shape: bad_dense_shape(shape), bad_dense_shape_message),
)


def _softmax_grad_kernel(ind, out, grad):
    groups = row_groups(jnp.asarray(ind))
    n = out.shape[0]
    dot = jax.ops.segment_sum(out * grad, groups, num_segments=n)
    return (grad - dot[groups]) * out


register_op(
    "SparseSoftmaxGrad",
    infer=lambda op: [(op.inputs[1].dtype, op.inputs[1].shape)],
    kernel=_softmax_grad_kernel,
)
not_differentiable("SparseSoftmaxGrad")


@register_gradient("SparseSoftmax")
def _softmax_grad(op, grad):
    values_grad = core_ops.apply_op(
        "SparseSoftmaxGrad", [op.inputs[0], op.outputs[0], grad]
    ).outputs[0]
    return [None, values_grad, None]


@export("sparse_softmax", "sparse.softmax")
def sparse_softmax(sp_input: Any, name: str | None = None) -> SparseTensor:
    """Softmax over the last dimension of `sp_input`, over the entries it stores only (the
    missing ones are not zeros, they are left out) (TF1 `tf.sparse_softmax`).

    Raises:
      ValueError: `sp_input` has rank < 2. TypeError: its values are not floating point.

    >>> st = sl.SparseTensor([[0, 0], [0, 2], [1, 1]], [1.0, 1.0, 5.0], [2, 3])
    >>> sl.Session().run(sl.sparse_softmax(st)).values.tolist()
    [0.5, 0.5, 1.0]
    """
    sp = convert_to_sparse(sp_input, "sparse_softmax: sp_input")
    out = core_ops.apply_op(
        "SparseSoftmax", [sp.indices, sp.values, sp.dense_shape], name=name or "SparseSoftmax"
    ).outputs[0]
    result = SparseTensor(sp.indices, out, sp.dense_shape)
    result.set_shape(sp.shape)
    return result
