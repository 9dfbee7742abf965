"""A sparse tensor and a dense one, elementwise, at the sparse tensor's entries:
SparseDenseCwiseMul, SparseDenseCwiseDiv, SparseDenseCwiseAdd (TF1's `sp * dense`,
`sp / dense`, `dense * sp`, `sparse_ops.sparse_dense_cwise_add`).

The dense operand is broadcast to the sparse tensor's dense shape, never the other way round
(TF1's rule), and the result keeps the sparse tensor's indices and dense shape::

    out.values[i] = sp.values[i] <op> broadcast_to(dense, sp.dense_shape)[sp.indices[i]]

so a dense dimension is 1 or the sparse one, and the dense tensor has at most the sparse rank.
Shapes that break the rule fail when the op runs (the dense shape of a sparse tensor is a
value), with TF1's InvalidArgumentError. The kernels gather the dense operand at the entries'
coordinates (no dense tensor of the sparse shape is made) and are jitted; gradients are TF1's
(`sparse_grad.py`): with respect to the values and the dense operand, none for Add (TF1 has
none).

>>> sp = sl.SparseTensor([[0, 0], [1, 2]], [2.0, 3.0], [2, 3])
>>> sl.Session().run(sp * sl.constant([[10.0], [100.0]])).values.tolist()
[20.0, 300.0]
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import name_scope
from sluice.framework.ir.registry import Check, not_differentiable, register_gradient, register_op
from sluice.framework.ops.array import array_ops, fill_ops, join_ops, scatter_nd_ops, slicing_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.shape_rules import constant_value
from sluice.framework.ops.math import math_ops, unary_ops
from sluice.framework.ops.sparse.sparse_tensor import SparseTensor, convert_to_sparse
from sluice.framework.ops.sparse.sparse_util import (
    nnz_shape,
    require_same_dtype,
    require_sparse_parts,
)

_KERNELS = {
    "SparseDenseCwiseMul": jnp.multiply,
    "SparseDenseCwiseDiv": jnp.divide,
    "SparseDenseCwiseAdd": jnp.add,
}


def _infer(op) -> list:
    ind, val, shape, dense = op.inputs
    rank = require_sparse_parts(op.type, ind, val, shape)
    require_same_dtype(op.type, val, dense)
    if None not in (rank, dense.shape.rank) and dense.shape.rank > rank:
        raise ValueError(
            f"{op.type} op '{op.name}' broadcasts dense to sparse only: the dense operand "
            f"{dense.name} has shape {dense.shape}, more dimensions than the sparse operand's "
            f"{rank}."
        )
    return [(val.dtype, nnz_shape(ind))]


def _dense_at(ind, dense):
    """The dense operand broadcast to the sparse shape, at the entries' coordinates."""
    ind = jnp.asarray(ind)
    dense = jnp.asarray(dense)
    lead = ind.shape[1] - dense.ndim
    if lead < 0:  # the check fails; nothing to gather
        return jnp.zeros(ind.shape[:1], dense.dtype)
    coords = tuple(
        ind[:, lead + j] if n != 1 else jnp.zeros(ind.shape[:1], ind.dtype)
        for j, n in enumerate(dense.shape)
    )
    return dense[coords] if coords else jnp.broadcast_to(dense, ind.shape[:1])


def _kernel(op_type: str):
    fn = _KERNELS[op_type]

    def kernel(ind, val, shape, dense):
        return fn(jnp.asarray(val), _dense_at(ind, dense))

    return kernel


def _fails(ind, val, shape, dense):
    shape = jnp.asarray(shape)
    dims = jnp.asarray(dense).shape
    lead = shape.shape[0] - len(dims)
    if lead < 0:
        return jnp.asarray(True), jnp.asarray(0, jnp.int64)
    bad = [(n != 1) & (shape[lead + j] != n) for j, n in enumerate(dims)]
    return jnp.any(jnp.asarray(bad + [False])), jnp.asarray(0, jnp.int64)


def _message(op, _: int) -> str:
    sparse = constant_value(op.inputs[2])
    shown = "?" if sparse is None else ",".join(str(int(d)) for d in sparse)
    dense = op.inputs[3].shape
    dense_shown = "?" if dense.rank is None else ",".join(str(d) for d in dense.as_list())
    return (
        "SparseDenseBinaryOpShared broadcasts dense to sparse only; got incompatible shapes: "
        f"[{shown}] vs. [{dense_shown}]"
    )


for _type in _KERNELS:
    register_op(
        _type, infer=_infer, kernel=_kernel(_type), check=Check(_fails, _message), select_safe=False
    )
not_differentiable("SparseDenseCwiseAdd")


def _mul_or_div_grad(op, grad, is_mul: bool) -> list:
    """TF1's `_SparseDenseCwiseMulOrDivGrad`: the dense operand at each entry (indices scaled
    down where it is broadcast), and its gradient summed back over the entries sharing one."""
    ind, val, shape, y = op.inputs
    y_shape = fill_ops.shape(y, out_type=dtypes.int64)
    added = fill_ops.size(shape) - fill_ops.size(y_shape)
    added = array_ops.expand_dims(added, 0)
    full_y_shape = join_ops.concat([fill_ops.ones(added, dtype=dtypes.int64), y_shape], 0)
    scaled = math_ops.floordiv(ind, math_ops.floordiv(shape, full_y_shape))
    begin = join_ops.concat([core_ops.constant([0]), added], 0)
    scaled = slicing_ops.slice(scaled, begin, [-1, -1])
    dense_vals = scatter_nd_ops.gather_nd(y, scaled)
    if is_mul:
        dx = math_ops.multiply(grad, dense_vals)
        dy_val = math_ops.multiply(grad, val)
    else:
        dx = math_ops.realdiv(grad, dense_vals)
        dy_val = math_ops.multiply(
            grad, unary_ops.negative(math_ops.realdiv(val, unary_ops.square(dense_vals)))
        )
    dy = scatter_nd_ops.scatter_nd(scaled, dy_val, y_shape)  # repeated coordinates add up
    return [None, dx, None, dy]


@register_gradient("SparseDenseCwiseMul")
def _mul_grad(op, grad):
    return _mul_or_div_grad(op, grad, is_mul=True)


@register_gradient("SparseDenseCwiseDiv")
def _div_grad(op, grad):
    return _mul_or_div_grad(op, grad, is_mul=False)


def _apply(op_type: str, sp: SparseTensor, dense: Any, name: str | None) -> SparseTensor:
    dense = core_ops.convert_to_tensor(dense, dtype=sp.dtype, name="y")
    values = core_ops.apply_op(
        op_type, [sp.indices, sp.values, sp.dense_shape, dense], name=name or op_type
    ).outputs[0]
    out = SparseTensor(sp.indices, values, sp.dense_shape)
    out.set_shape(sp.shape)
    return out


@export("python.ops.sparse_ops.sparse_dense_cwise_add")
def sparse_dense_cwise_add(sp_t: Any, dense_t: Any, name: str | None = None) -> SparseTensor:
    """`sp_t + dense_t` at `sp_t`'s entries only: a SparseTensor with `sp_t`'s indices (TF1's
    `sparse_ops.sparse_dense_cwise_add`); `dense_t` is broadcast to `sp_t`'s dense shape.

    Raises:
      InvalidArgumentError: (when run) `dense_t` does not broadcast to `sp_t`'s shape.
    """
    sp = convert_to_sparse(sp_t, "sparse_dense_cwise_add: sp_t")
    with name_scope(name, "SparseDenseCwiseAdd", [sp.values, dense_t]):
        return _apply("SparseDenseCwiseAdd", sp, dense_t, None)


def sparse_dense_cwise_mul(sp: SparseTensor, dense: Any) -> SparseTensor:
    """`sp * dense` (and `dense * sp`): TF1's `SparseTensor.__mul__`."""
    with name_scope(None, "mul", [sp.values, dense]) as scope:
        return _apply("SparseDenseCwiseMul", sp, dense, scope)


def sparse_dense_cwise_truediv(sp: SparseTensor, dense: Any) -> SparseTensor:
    """`sp / dense`: TF1's `SparseTensor.__truediv__`, integers divided as float64 (int32,
    int64) or float32 (narrower ones), as TF1's `_TRUEDIV_TABLE`."""
    with name_scope(None, "truediv", [sp.values, dense]) as scope:
        target = _TRUEDIV.get(sp.dtype)
        if target is not None:
            values = fill_ops.cast(sp.values, target)
            sp = SparseTensor(sp.indices, values, sp.dense_shape)
            dense = fill_ops.cast(core_ops.convert_to_tensor(dense), target)
        return _apply("SparseDenseCwiseDiv", sp, dense, scope)


_TRUEDIV = {
    dtypes.int8: dtypes.float32,
    dtypes.uint8: dtypes.float32,
    dtypes.int16: dtypes.float32,
    dtypes.uint16: dtypes.float32,
    dtypes.int32: dtypes.float64,
    dtypes.int64: dtypes.float64,
}


def _mul_method(self: SparseTensor, other: Any) -> SparseTensor:
    return sparse_dense_cwise_mul(self, other)


def _truediv_method(self: SparseTensor, other: Any) -> SparseTensor:
    return sparse_dense_cwise_truediv(self, other)


# TF1: `sp * dense`, `dense * sp` and `sp / dense` (a Tensor's operator defers to these)
SparseTensor.override_operator("__mul__", _mul_method)
SparseTensor.override_operator("__rmul__", _mul_method)
SparseTensor.override_operator("__truediv__", _truediv_method)
