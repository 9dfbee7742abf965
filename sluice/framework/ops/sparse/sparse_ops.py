"""Sparse ops that convert or move entries: SparseToDense, SparseReorder, SparseReshape (TF1
`tf.sparse_to_dense`, `tf.sparse_tensor_to_dense`, `tf.sparse_reorder`, `tf.sparse_reshape`).

Shapes: the number N of stored entries is a dimension of the tensors like any other. Ops that
keep N (reorder, reshape, to_dense) are jitted; in the compiled engine a fed N is static
per fed value, a new N compiles anew as any other fed shape. Ops whose output size is a value of
the dense shape (SparseToDense's output) read it as a host input: the compiled engine runs them
when the dense shape is known before the run (a constant, as `sparse_placeholder` with a fully
known shape makes), else the step runs interpreted, as for `where`.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor, name_scope
from sluice.framework.ir.registry import (
    Check,
    not_differentiable,
    register_gradient,
    register_op,
)
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops, scatter_nd_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import host_ints, register_array_op
from sluice.framework.ops.core.shape_rules import constant_value, partial_shape_value
from sluice.framework.ops.math import math_ops, reduction_ops
from sluice.framework.ops.sparse.sparse_tensor import SparseTensor, convert_to_sparse
from sluice.framework.ops.sparse.sparse_util import (
    first_dim,
    lexsort_rows,
    nnz_shape,
    require_sparse_parts,
    strides,
)


# -- SparseToDense -------------------------------------------------------------------------------
def _as_index_matrix(indices):
    indices = jnp.asarray(indices)
    if indices.ndim == 2:
        return indices
    return indices.reshape(1, 1) if indices.ndim == 0 else indices.reshape(-1, 1)


def _to_dense_infer(op) -> list:
    indices, output_shape, values, default = op.inputs
    if indices.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"sparse_indices must be int32 or int64, got {indices.dtype.name}")
    if indices.shape.rank not in (None, 0, 1, 2):
        raise ValueError(f"sparse_indices must be 0-D, 1-D or 2-D, got shape {indices.shape}")
    if output_shape.shape.rank not in (None, 0, 1):
        raise ValueError(f"output_shape must be a vector, got shape {output_shape.shape}")
    if values.shape.rank not in (None, 0, 1):
        raise ValueError(f"sparse_values must be a scalar or a vector, got shape {values.shape}")
    if default.shape.rank not in (None, 0):
        raise ValueError(f"default_value must be a scalar, got shape {default.shape}")
    if values.dtype != default.dtype:
        raise TypeError(
            f"sparse_values ({values.dtype.name}) and default_value ({default.dtype.name}) "
            "must have the same dtype"
        )
    shape = partial_shape_value(output_shape)
    if indices.shape.rank == 2 and None not in (indices.shape[1], shape.rank):
        if indices.shape[1] != shape.rank:
            raise ValueError(
                f"sparse_indices hold {indices.shape[1]} coordinates but output_shape has "
                f"{shape.rank} dimensions"
            )
    dims = None if shape.dims is None else [None if d is None or d < 0 else d for d in shape.dims]
    return [(values.dtype, TensorShape(dims))]


def _to_dense_kernel(indices, output_shape, values, default_value, *, validate_indices=True):
    shape = host_ints(output_shape, "SparseToDense's output_shape")
    index = _as_index_matrix(indices)
    out = jnp.full(shape, default_value, dtype=jnp.asarray(default_value).dtype)
    return out.at[tuple(index.T)].set(values, mode="drop")


_OUT_OF_BOUNDS, _OUT_OF_ORDER, _REPEATED = 0, 1, 2


def _bad_indices(indices, output_shape, values, default_value, *, validate_indices=True):
    """(any index out of bounds, or out of order or repeated when validating; 3 * i + kind)."""
    index = _as_index_matrix(indices)
    if index.shape[0] == 0:
        return jnp.asarray(False), jnp.asarray(0, jnp.int64)
    shape = jnp.asarray(output_shape).reshape(-1).astype(index.dtype)
    kinds = [jnp.any((index < 0) | (index >= shape), axis=1)]
    if validate_indices:
        differs = index[1:] != index[:-1]
        first = jnp.argmax(differs, axis=1)
        rises = jnp.take_along_axis(index[1:] > index[:-1], first[:, None], axis=1)[:, 0]
        same = ~jnp.any(differs, axis=1)
        no = jnp.zeros((1,), bool)
        kinds.append(jnp.concatenate([no, ~same & ~rises]))
        kinds.append(jnp.concatenate([no, same]))
    bad = jnp.stack(kinds, axis=1)  # [N, kinds]
    flat = jnp.argmax(bad.reshape(-1))
    return jnp.any(bad), flat.astype(jnp.int64)


def _bad_indices_message(op, detail: int) -> str:
    i, kind = divmod(detail, 3)
    if kind == _OUT_OF_BOUNDS:
        return f"sparse_indices[{i}] is out of bounds: need 0 <= index < output_shape"
    if kind == _OUT_OF_ORDER:
        return (
            f"sparse_indices[{i}] is out of order. Many sparse ops require sorted indices. "
            "Use `tf.sparse.reorder` to create a correctly ordered copy."
        )
    return f"sparse_indices[{i}] is repeated"


register_op(
    "SparseToDense",
    infer=_to_dense_infer,
    kernel=_to_dense_kernel,
    host_inputs=(1,),
    check=Check(_bad_indices, _bad_indices_message),
)


@register_gradient("SparseToDense")
def _to_dense_grad(op, grad):
    indices, _, values, _ = op.inputs
    index = indices
    if indices.shape.rank == 0:
        index = array_ops.reshape(indices, [1, 1])
    elif indices.shape.rank == 1:
        index = array_ops.expand_dims(indices, -1)
    values_grad = scatter_nd_ops.gather_nd(grad, index)
    if values.shape.rank == 0:
        values_grad = reduction_ops.reduce_sum(values_grad)
    default_grad = math_ops.subtract(
        reduction_ops.reduce_sum(grad), reduction_ops.reduce_sum(values_grad)
    )
    return [None, None, values_grad, default_grad]


@export("sparse_to_dense")
def sparse_to_dense(
    sparse_indices: Any,
    output_shape: Any,
    sparse_values: Any,
    default_value: Any = 0,
    validate_indices: bool = True,
    name: str | None = None,
) -> Tensor:
    """A dense tensor of `output_shape` filled with `default_value`, `sparse_values` at
    `sparse_indices` (TF1 `tf.sparse_to_dense`).

    Args:
      sparse_indices: int32/int64, 0-D (one index into a vector), 1-D (indices into a vector) or
        2-D ([N, rank], full coordinates).
      output_shape: the dense shape, a vector.
      sparse_values: a scalar (for every index) or a vector [N].
      default_value: the value elsewhere.
      validate_indices: check, when run, that the indices are sorted and not repeated.
      name: the op's name.

    Raises:
      ValueError, TypeError: at construction, for ranks and dtypes as TF1's shape function.
      InvalidArgumentError: when run, an index out of bounds, or (validating) out of order or
        repeated.

    >>> sl.Session().run(sl.sparse_to_dense([[0, 1], [2, 0]], [3, 2], [5, 6])).tolist()
    [[0, 5], [0, 0], [6, 0]]
    """
    with name_scope(name, "SparseToDense", [sparse_indices, output_shape, sparse_values]) as scope:
        sparse_values = core_ops.convert_to_tensor(sparse_values, name="sparse_values")
        indices = core_ops.convert_to_tensor(sparse_indices, name="sparse_indices")
        if indices.dtype not in (dtypes.int32, dtypes.int64):
            raise TypeError(
                f"SparseToDense: sparse_indices must be int32 or int64, got {indices.dtype.name}."
            )
        output_shape = core_ops.convert_to_tensor(output_shape, name="output_shape")
        output_shape = fill_ops.cast(output_shape, indices.dtype)
        default = core_ops.convert_to_tensor(
            default_value, dtype=sparse_values.dtype, name="default_value"
        )
        op = core_ops.apply_op(
            "SparseToDense",
            [indices, output_shape, sparse_values, default],
            {"validate_indices": bool(validate_indices)},
            name=scope.rstrip("/") or None,
        )
    return op.outputs[0]


@export("sparse_tensor_to_dense", "sparse.to_dense")
def sparse_tensor_to_dense(
    sp_input: Any,
    default_value: Any = 0,
    validate_indices: bool = True,
    name: str | None = None,
) -> Tensor:
    """The dense tensor of `sp_input`, `default_value` where it stores nothing (TF1
    `tf.sparse_tensor_to_dense`). With `validate_indices`, its indices must be in row-major order
    and distinct when it runs (`InvalidArgumentError` otherwise).

    Raises:
      TypeError: `sp_input` is not a SparseTensor (or SparseTensorValue).

    >>> st = sl.SparseTensor([[0, 0], [1, 2]], [1.0, 2.0], [2, 3])
    >>> sl.Session().run(sl.sparse_tensor_to_dense(st, default_value=-1.0)).tolist()
    [[1.0, -1.0, -1.0], [-1.0, -1.0, 2.0]]
    """
    sp = convert_to_sparse(sp_input, "sparse_tensor_to_dense: sp_input")
    dense = sparse_to_dense(
        sp.indices,
        sp.dense_shape,
        sp.values,
        default_value=default_value,
        validate_indices=validate_indices,
        name=name or "SparseToDense",
    )
    dense.set_shape(sp.shape)
    return dense


# -- SparseReorder -------------------------------------------------------------------------------
def _reorder_infer(op) -> list:
    indices, values, shape = op.inputs
    require_sparse_parts("SparseReorder", indices, values, shape)
    return [(dtypes.int64, indices.shape), (values.dtype, values.shape)]


def _reorder_kernel(indices, values, shape):
    indices, values = jnp.asarray(indices), jnp.asarray(values)
    order = lexsort_rows(indices)
    return indices[order], values[order]


register_array_op("SparseReorder", infer=_reorder_infer, kernel=_reorder_kernel)


@register_gradient("SparseReorder")
def _reorder_grad(op, _grad_indices, grad_values):
    indices, _, shape = op.inputs
    n = first_dim(indices)
    entries = fill_ops.range(0, n, dtype=dtypes.int64)
    moved = core_ops.apply_op("SparseReorder", [indices, entries, shape]).outputs[1]
    # output k holds input moved[k]: its gradient goes back there
    return [None, gather_ops.gather(grad_values, array_ops.invert_permutation(moved)), None]


@export("sparse_reorder", "sparse.reorder")
def sparse_reorder(sp_input: Any, name: str | None = None) -> SparseTensor:
    """`sp_input` with its entries in row-major order (TF1 `tf.sparse_reorder`); equal indices
    keep their order.

    >>> st = sl.SparseTensor([[1, 0], [0, 3]], [1.0, 2.0], [2, 4])
    >>> sl.Session().run(sl.sparse_reorder(st)).indices.tolist()
    [[0, 3], [1, 0]]
    """
    sp = convert_to_sparse(sp_input, "sparse_reorder: sp_input")
    op = core_ops.apply_op(
        "SparseReorder", [sp.indices, sp.values, sp.dense_shape], name=name or "SparseReorder"
    )
    result = SparseTensor(op.outputs[0], op.outputs[1], _identity_unless_constant(sp.dense_shape))
    result.set_shape(sp.shape)
    return result


def _identity_unless_constant(t: Tensor) -> Tensor:
    return core_ops.identity(t) if constant_value(t) is None else t


# -- SparseReshape -------------------------------------------------------------------------------
def _reshape_infer(op) -> list:
    indices, input_shape, new_shape = op.inputs
    if new_shape.dtype != dtypes.int64:
        raise TypeError(f"new_shape must be int64, got {new_shape.dtype.name}")
    if new_shape.shape.rank not in (None, 1):
        raise ValueError(f"new_shape must be a vector, got shape {new_shape.shape}")
    out_rank = new_shape.shape[0] if new_shape.shape.rank == 1 else None
    return [
        (dtypes.int64, TensorShape([nnz_shape(indices)[0], out_rank])),
        (dtypes.int64, TensorShape([out_rank])),
    ]


def _reshape_dims(input_shape, new_shape):
    size = jnp.prod(input_shape)
    known = jnp.prod(jnp.where(new_shape == -1, 1, new_shape))
    return jnp.where(new_shape == -1, size // jnp.maximum(known, 1), new_shape), size


def _reshape_kernel(indices, input_shape, new_shape):
    input_shape = jnp.asarray(input_shape, jnp.int64)
    out_shape, _ = _reshape_dims(input_shape, jnp.asarray(new_shape, jnp.int64))
    linear = jnp.sum(jnp.asarray(indices) * strides(input_shape), axis=1)
    out = (linear[:, None] // jnp.maximum(strides(out_shape), 1)) % jnp.maximum(out_shape, 1)
    return out.astype(jnp.int64), out_shape


def _reshape_fails(indices, input_shape, new_shape):
    input_shape = jnp.asarray(input_shape, jnp.int64)
    new_shape = jnp.asarray(new_shape, jnp.int64)
    out_shape, size = _reshape_dims(input_shape, new_shape)
    unknowns = jnp.sum(new_shape == -1)
    failed = (unknowns > 1) | (jnp.prod(out_shape) != size) | jnp.any(new_shape < -1)
    return failed, size.astype(jnp.int64)


def _reshape_message(op, size: int) -> str:
    return (
        f"Input to reshape is a SparseTensor with {size} dense values, but the requested shape "
        "does not have that many (or has more than one -1, or a negative size)"
    )


register_op(
    "SparseReshape",
    infer=_reshape_infer,
    kernel=_reshape_kernel,
    check=Check(_reshape_fails, _reshape_message),
)
not_differentiable("SparseReshape")  # the values pass through unchanged


@export("sparse_reshape", "sparse.reshape")
def sparse_reshape(sp_input: Any, shape: Any, name: str | None = None) -> SparseTensor:
    """`sp_input` as a sparse tensor of dense shape `shape` (row-major order kept; one dimension
    may be -1, inferred from the others) (TF1 `tf.sparse_reshape`).

    Raises:
      ValueError: at construction, when both shapes are known and differ in size, or `shape` has
        more than one -1; InvalidArgumentError when run, for the same in shapes known only then.

    >>> st = sl.SparseTensor([[0, 1], [1, 2]], [1.0, 2.0], [2, 3])
    >>> sl.Session().run(sl.sparse_reshape(st, [-1])).indices.tolist()
    [[1], [5]]
    """
    sp = convert_to_sparse(sp_input, "sparse_reshape: sp_input")
    with name_scope(name, "SparseReshape", [sp.indices, sp.values, sp.dense_shape, shape]) as scope:
        shape = fill_ops.cast(core_ops.convert_to_tensor(shape, name="shape"), dtypes.int64)
        static_in = sp.shape
        new = constant_value(shape)
        static_out = None
        if new is not None:
            new = [int(d) for d in np.reshape(new, [-1])]
            if new.count(-1) > 1:
                raise ValueError(
                    f"sparse_reshape: at most one dimension of the new shape can be -1, got {new}."
                )
            if static_in.is_fully_defined():
                size = int(np.prod(static_in.as_list()))
                known = int(np.prod([d for d in new if d != -1]))
                if -1 in new:
                    if known == 0 or size % known:
                        raise ValueError(
                            f"sparse_reshape: cannot reshape a tensor with {size} elements to "
                            f"shape {new}: the elements do not divide evenly."
                        )
                    new = [size // known if d == -1 else d for d in new]
                elif known != size:
                    raise ValueError(
                        f"sparse_reshape: cannot reshape a tensor with {size} elements to shape "
                        f"{new} ({known} elements)."
                    )
                static_out = new
        op = core_ops.apply_op(
            "SparseReshape", [sp.indices, sp.dense_shape, shape], name=scope.rstrip("/") or None
        )
    out_shape = op.outputs[1]
    if static_out is not None:
        out_shape = core_ops.constant(np.asarray(static_out, np.int64), dtype=dtypes.int64)
    result = SparseTensor(op.outputs[0], sp.values, out_shape)
    return result
