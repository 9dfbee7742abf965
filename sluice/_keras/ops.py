"""`sl.ops`: the `keras.ops` functions Keras examples use most, with Keras's signatures.

On symbolic tensors (in a layer's `call`, a `Lambda`, on `sl.Input`s) each one adds graph ops;
on arrays (NumPy, JAX) it computes at once with `jax.numpy`, as `keras.ops` does eagerly, with
sluice's 64-bit types (float64 stays float64) whatever the user's `jax_enable_x64`.

    class Scale(sl.layers.Layer):
        def call(self, x):
            return sl.ops.multiply(x, 2.0) + sl.ops.mean(x, axis=-1, keepdims=True)

>>> sl.ops.sum(np.ones((2, 3), np.float32), axis=1)
Array([3., 3.], dtype=float32)
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice._keras.layers import runtime
from sluice._tf1.cells import nest
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.x64 import with_x64
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops, join_ops
from sluice.framework.ops.math import math_ops, matmul_ops, reduction_ops, unary_ops
from sluice.framework.ops.nn import nn_ops
from sluice.framework.variables import Variable


def _symbolic(*args: Any) -> bool:
    return any(isinstance(x, (Tensor, Variable)) for x in nest.flatten(list(args)))


def _either(graph_fn: Any, array_fn: Any, doc: str) -> Any:
    @with_x64
    def op(*args: Any, **kwargs: Any) -> Any:
        return (graph_fn if _symbolic(*args) else array_fn)(*args, **kwargs)

    op.__doc__ = doc
    return op


def _axis(axis: Any) -> Any:
    return list(axis) if isinstance(axis, tuple) else axis


# element-wise
add = _either(math_ops.add, jnp.add, "x1 + x2, broadcast.")
export("ops.add")(add)
subtract = _either(math_ops.subtract, jnp.subtract, "x1 - x2, broadcast.")
export("ops.subtract")(subtract)
multiply = _either(math_ops.multiply, jnp.multiply, "x1 * x2, broadcast.")
export("ops.multiply")(multiply)
divide = _either(math_ops.divide, jnp.divide, "x1 / x2, broadcast.")
export("ops.divide")(divide)
negative = _either(unary_ops.negative, jnp.negative, "-x.")
export("ops.negative")(negative)
abs = _either(unary_ops.abs, jnp.abs, "|x|.")  # noqa: A001  (Keras's name)
export("ops.abs")(abs)
square = _either(unary_ops.square, jnp.square, "x ** 2.")
export("ops.square")(square)
sqrt = _either(unary_ops.sqrt, jnp.sqrt, "The square root of x.")
export("ops.sqrt")(sqrt)
exp = _either(unary_ops.exp, jnp.exp, "e ** x.")
export("ops.exp")(exp)
log = _either(unary_ops.log, jnp.log, "The natural logarithm of x.")
export("ops.log")(log)
tanh = _either(unary_ops.tanh, jnp.tanh, "tanh(x).")
export("ops.tanh")(tanh)
sigmoid = _either(unary_ops.sigmoid, jax.nn.sigmoid, "1 / (1 + exp(-x)).")
export("ops.sigmoid")(sigmoid)
relu = _either(nn_ops.relu, jax.nn.relu, "max(x, 0).")
export("ops.relu")(relu)
maximum = _either(math_ops.maximum, jnp.maximum, "The larger of x1 and x2, element-wise.")
export("ops.maximum")(maximum)
minimum = _either(math_ops.minimum, jnp.minimum, "The smaller of x1 and x2, element-wise.")
export("ops.minimum")(minimum)
matmul = _either(matmul_ops.matmul, jnp.matmul, "The matrix product of x1 and x2.")
export("ops.matmul")(matmul)
where = _either(
    lambda c, x1, x2: gather_ops.where(c, x1, x2),
    jnp.where,
    "x1 where condition is true, else x2 (broadcast).",
)
export("ops.where")(where)
cast = _either(
    lambda x, dtype: fill_ops.cast(x, dtype),
    lambda x, dtype: jnp.asarray(x).astype(dtypes.as_dtype(dtype)),
    "x as `dtype`.",
)
export("ops.cast")(cast)
clip = _either(
    lambda x, x_min, x_max: math_ops.minimum(math_ops.maximum(x, x_min), x_max),
    jnp.clip,
    "x limited to [x_min, x_max].",
)
export("ops.clip")(clip)


@export("ops.softmax")
@with_x64
def softmax(x: Any, axis: int = -1) -> Any:
    """exp(x) / sum(exp(x)) along `axis`."""
    return nn_ops.softmax(x, axis=axis) if _symbolic(x) else jax.nn.softmax(x, axis=axis)


@export("ops.log_softmax")
@with_x64
def log_softmax(x: Any, axis: int = -1) -> Any:
    """log(softmax(x)) along `axis`, computed stably."""
    return nn_ops.log_softmax(x, axis=axis) if _symbolic(x) else jax.nn.log_softmax(x, axis=axis)


# reductions (axis None: every axis)
def _reduction(graph_fn: Any, array_fn: Any, what: str) -> Any:
    @with_x64
    def reduce(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        if _symbolic(x):
            return graph_fn(x, axis=_axis(axis), keepdims=keepdims)
        return array_fn(x, axis=axis, keepdims=keepdims)

    reduce.__doc__ = f"The {what} of x along `axis` (None: all axes)."
    return reduce


def _keeping_int_width(array_fn: Any) -> Any:
    """`array_fn` (jnp.sum, jnp.prod) with Keras's result dtype for integers: the input's
    (int32 stays int32, as on a symbolic tensor), int32/uint32 for narrower ones and bools.
    jax.numpy widens them to its default integer, int64 in sluice's 64-bit scope."""

    def reduce(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        dtype = np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype
        if dtype == np.bool_ or (dtype.kind in "iu" and dtype.itemsize < 4):
            dtype = np.dtype(np.uint32 if dtype.kind == "u" else np.int32)
        keep = dtype if dtype.kind in "iu" else None
        return array_fn(x, axis=axis, keepdims=keepdims, dtype=keep)

    return reduce


sum = _reduction(reduction_ops.reduce_sum, _keeping_int_width(jnp.sum), "sum")  # noqa: A001
export("ops.sum")(sum)
mean = _reduction(reduction_ops.reduce_mean, jnp.mean, "mean")
export("ops.mean")(mean)
max = _reduction(reduction_ops.reduce_max, jnp.max, "maximum")  # noqa: A001
export("ops.max")(max)
min = _reduction(reduction_ops.reduce_min, jnp.min, "minimum")  # noqa: A001
export("ops.min")(min)
prod = _reduction(reduction_ops.reduce_prod, _keeping_int_width(jnp.prod), "product")
export("ops.prod")(prod)


@export("ops.argmax")
@with_x64
def argmax(x: Any, axis: int | None = None, keepdims: bool = False) -> Any:
    """The index of the largest entry along `axis` (None: of the flattened x)."""
    if not _symbolic(x):  # int32 ids, as the graph op gives
        return jnp.argmax(x, axis=axis, keepdims=keepdims).astype(jnp.int32)
    if axis is None:
        x, axis = array_ops.reshape(x, [-1]), 0
    found = reduction_ops.argmax(x, axis=axis, output_type=dtypes.int32)
    return array_ops.expand_dims(found, axis) if keepdims else found


# shapes
@export("ops.concatenate")
@with_x64
def concatenate(xs: Any, axis: int = 0) -> Any:
    """The tensors `xs` joined along `axis`."""
    return join_ops.concat(list(xs), axis) if _symbolic(*xs) else jnp.concatenate(xs, axis=axis)


@export("ops.stack")
@with_x64
def stack(x: Any, axis: int = 0) -> Any:
    """The tensors `x` stacked along a new `axis`."""
    return join_ops.stack(list(x), axis=axis) if _symbolic(*x) else jnp.stack(x, axis=axis)


@export("ops.reshape")
@with_x64
def reshape(x: Any, newshape: Any) -> Any:
    """x with shape `newshape` (one entry may be -1)."""
    return array_ops.reshape(x, list(newshape)) if _symbolic(x) else jnp.reshape(x, newshape)


@export("ops.transpose")
@with_x64
def transpose(x: Any, axes: Any = None) -> Any:
    """x with its axes permuted (None: reversed)."""
    if _symbolic(x):
        return array_ops.transpose(x, None if axes is None else list(axes))
    return jnp.transpose(x, axes)


@export("ops.expand_dims")
@with_x64
def expand_dims(x: Any, axis: int) -> Any:
    """x with a new axis of size 1 at `axis`."""
    return array_ops.expand_dims(x, axis) if _symbolic(x) else jnp.expand_dims(x, axis)


@export("ops.squeeze")
@with_x64
def squeeze(x: Any, axis: Any = None) -> Any:
    """x without its axes of size 1 (or only `axis`)."""
    if _symbolic(x):
        return array_ops.squeeze(x, None if axis is None else _axis(axis))
    return jnp.squeeze(x, axis)


@export("ops.one_hot")
@with_x64
def one_hot(x: Any, num_classes: int, axis: int = -1, dtype: str = "float32") -> Any:
    """One-hot vectors of the integer ids x, along a new `axis`."""
    if _symbolic(x):
        return fill_ops.one_hot(x, num_classes, axis=axis, dtype=dtypes.as_dtype(dtype))
    return jax.nn.one_hot(x, num_classes, axis=axis, dtype=dtypes.as_dtype(dtype))


@export("ops.convert_to_numpy")
def convert_to_numpy(x: Any) -> Any:
    """`x` as a NumPy array: an array as is, a Variable (a layer's weight or state) as its
    current value. A symbolic tensor has no value: call the model instead."""
    if isinstance(x, Variable):
        return runtime.read_values(x.graph, [x])[0]
    if isinstance(x, Tensor):
        raise ValueError(
            f"convert_to_numpy got the symbolic tensor {x.name} ({x.dtype.name}{x.shape}), which "
            "has no value; call the model or layer on arrays to compute it."
        )
    return np.asarray(x)
