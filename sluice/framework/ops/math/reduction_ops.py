"""Reductions along axes: Sum, Mean, Max, Min, Prod, Any, All; ArgMax, ArgMin; Cumsum.

TensorFlow passes the reduction axes as an input tensor; sluice keeps them as a static attr,
since they are nearly always known when the graph is built:

- `axis`: a tuple of ints (negative ones count from the end), or None for every axis;
- `keep_dims`: whether reduced axes stay, with length 1.

The wrappers accept an int, a list, None, or a Tensor whose value is known statically (a
constant); any other Tensor raises a ValueError that says so.

Gradients follow TF: Max and Min split the gradient evenly among tied extrema; Prod's gradient
is the product of the other entries, computed without dividing by zero; ArgMax, ArgMin, Any and
All have none.

>>> x = sl.placeholder(sl.float32, [None, 3, 4])
>>> sl.reduce_sum(x, axis=[0, -1], keepdims=True).shape
TensorShape([1, 3, 1])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable, register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops  # module references: no import cycle
from sluice.framework.ops.core.core_ops import apply_op, convert_to_tensor
from sluice.framework.ops.core.math_rules import is_numeric, is_real
from sluice.framework.ops.core.shape_rules import constant_value, require_dtype
from sluice.framework.ops.math import unary_ops  # module references: no import cycle

TensorLike = Any


# -- axes ---------------------------------------------------------------------------------------
def _normalize_axes(axis: tuple | None, rank: int) -> tuple:
    """`axis` as sorted, distinct, non-negative axes of a rank-`rank` tensor."""
    if axis is None:
        return tuple(range(rank))
    for a in axis:
        if not -rank <= a < rank:
            raise ValueError(
                f"invalid reduction axis {a} for an input of rank {rank} (expected an axis in "
                f"[{-rank}, {rank}))"
            )
    return tuple(sorted({a % rank for a in axis}))


def _static_axes(axis: Any, what: str) -> tuple | None:
    """The axes given to a wrapper (None, an int, a list, or a statically known Tensor)."""
    if axis is None:
        return None
    if isinstance(axis, Tensor):
        value = constant_value(axis)
        if value is None:
            raise ValueError(
                f"{what}: axis must be known when the graph is built (a Python int or list, or a "
                f"constant), but tensor {axis.name} is only computed at run time"
            )
        axis = value
    array = np.asarray(axis)
    if array.size == 0:  # an empty list: reduce nothing
        return ()
    if array.dtype.kind not in "iu" or array.ndim > 1:
        raise TypeError(f"{what}: axis must be an int or a list of ints, got {axis!r}")
    return tuple(int(a) for a in array.reshape(-1))


def _pick(what: str, new: Any, new_name: str, old: Any, old_name: str) -> Any:
    """TF1's deprecated argument aliases (`reduction_indices`, `keep_dims`, `dimension`)."""
    if new is not None and old is not None:
        raise ValueError(f"{what}: cannot specify both '{new_name}' and '{old_name}'.")
    return new if new is not None else old


# -- Sum, Mean, Max, Min, Prod, Any, All --------------------------------------------------------
def _reduction_rule(what: str, predicate: Callable) -> Callable:
    def infer(op) -> list:
        x = op.inputs[0]
        require_dtype(x, what, predicate)
        axis, keep_dims = op.get_attr("axis"), op.get_attr("keep_dims")
        if x.shape.rank is None:
            all_axes = axis is None and not keep_dims
            return [(x.dtype, TensorShape([] if all_axes else None))]
        axes = _normalize_axes(axis, x.shape.rank)
        dims = x.shape.dims
        if keep_dims:
            shape = [1 if i in axes else d for i, d in enumerate(dims)]
        else:
            shape = [d for i, d in enumerate(dims) if i not in axes]
        return [(x.dtype, TensorShape(shape))]

    return infer


_numeric_reduction = _reduction_rule("numeric", is_numeric)
_real_reduction = _reduction_rule("real numeric", is_real)
_bool_reduction = _reduction_rule("bool", dtypes.is_bool)


def _sum_kernel(x, *, axis, keep_dims, **_):
    return jnp.sum(x, _normalize_axes(axis, jnp.ndim(x)), dtype=x.dtype, keepdims=keep_dims)


def _mean_kernel(x, *, axis, keep_dims, **_):
    axes = _normalize_axes(axis, jnp.ndim(x))
    if not jnp.issubdtype(x.dtype, jnp.integer):
        return jnp.mean(x, axes, dtype=x.dtype, keepdims=keep_dims)
    total = jnp.sum(x, axes, dtype=x.dtype, keepdims=keep_dims)
    count = int(np.prod([x.shape[a] for a in axes]))
    return lax.div(total, jnp.asarray(count, x.dtype))  # truncates towards zero, like TF


def _lowest(dtype: np.dtype) -> Any:
    return -np.inf if dtypes.is_floating(dtype) else np.iinfo(dtype).min


def _highest(dtype: np.dtype) -> Any:
    return np.inf if dtypes.is_floating(dtype) else np.iinfo(dtype).max


def _max_kernel(x, *, axis, keep_dims, **_):  # an empty reduction gives the lowest value
    axes = _normalize_axes(axis, jnp.ndim(x))
    return jnp.max(x, axes, keepdims=keep_dims, initial=_lowest(x.dtype))


def _min_kernel(x, *, axis, keep_dims, **_):
    axes = _normalize_axes(axis, jnp.ndim(x))
    return jnp.min(x, axes, keepdims=keep_dims, initial=_highest(x.dtype))


def _prod_kernel(x, *, axis, keep_dims, **_):
    return jnp.prod(x, _normalize_axes(axis, jnp.ndim(x)), dtype=x.dtype, keepdims=keep_dims)


def _any_kernel(x, *, axis, keep_dims, **_):
    return jnp.any(x, _normalize_axes(axis, jnp.ndim(x)), keepdims=keep_dims)


def _all_kernel(x, *, axis, keep_dims, **_):
    return jnp.all(x, _normalize_axes(axis, jnp.ndim(x)), keepdims=keep_dims)


def _with_reduced_axes(t: Tensor, op) -> Tensor:
    """`t`, shaped like the output of reduction `op`, with the reduced axes put back as axes of
    length 1, so that it broadcasts against the input (a scalar already does)."""
    x, axis = op.inputs[0], op.get_attr("axis")
    if op.get_attr("keep_dims") or axis is None or not axis:  # (axis None: t is a scalar)
        return t
    if x.shape.rank is not None:
        for a in _normalize_axes(axis, x.shape.rank):
            t = array_ops.expand_dims(t, a)
        return t
    rank = array_ops.rank(x)  # only known at run time: put 1 at the reduced axes of shape(x)
    axes = (convert_to_tensor(np.asarray(axis, np.int32)) + rank) % rank
    reduced = reduce_max(array_ops.one_hot(axes, rank, dtype=dtypes.int32), axis=0)
    dims = array_ops.shape(x)
    return array_ops.reshape(t, dims - (dims - 1) * reduced)


register_op("Sum", infer=_numeric_reduction, kernel=_sum_kernel)


@register_gradient("Sum")
def _sum_grad(op, grad):
    return [array_ops.broadcast_to(_with_reduced_axes(grad, op), array_ops.shape(op.inputs[0]))]


register_op("Mean", infer=_numeric_reduction, kernel=_mean_kernel)


@register_gradient("Mean")
def _mean_grad(op, grad):  # Sum's gradient over the number of elements averaged
    x, y = op.inputs[0], op.outputs[0]
    if not dtypes.is_differentiable(x.dtype):
        return [None]
    n_in, n_out = x.shape.num_elements(), y.shape.num_elements()
    if n_in is not None and n_out is not None:
        count = n_in // max(n_out, 1)
    else:
        n_in, n_out = (array_ops.cast(array_ops.size(t), x.dtype) for t in (x, y))
        count = n_in / n_out
    return [_sum_grad(op, grad)[0] / count]


register_op("Max", infer=_real_reduction, kernel=_max_kernel)


def _max_or_min_grad(op, grad, attains_extremum: Callable) -> list:
    """The gradient goes to the entries equal to the extremum, split evenly among ties (TF)."""
    x = op.inputs[0]
    if not dtypes.is_differentiable(x.dtype):
        return [None]
    y = _with_reduced_axes(op.outputs[0], op)
    chosen = array_ops.cast(attains_extremum(x, y), x.dtype)
    ties = reduce_sum(chosen, op.get_attr("axis"), keepdims=True)
    return [chosen / ties * _with_reduced_axes(grad, op)]


@register_gradient("Max")
def _max_grad(op, grad):
    return _max_or_min_grad(op, grad, lambda x, y: x >= y)  # x >= max(x) means x == max(x)


register_op("Min", infer=_real_reduction, kernel=_min_kernel)


@register_gradient("Min")
def _min_grad(op, grad):
    return _max_or_min_grad(op, grad, lambda x, y: x <= y)


register_op("Prod", infer=_numeric_reduction, kernel=_prod_kernel)


@register_gradient("Prod")
def _prod_grad(op, grad):
    """Each entry's gradient is the product of the other entries, computed without dividing by
    zero: the product of the nonzero entries over the entry (or over 1 for a zero entry), and 0
    when another entry is zero."""
    x, axis = op.inputs[0], op.get_attr("axis")
    if not dtypes.is_differentiable(x.dtype):
        return [None]
    is_zero = 1 - array_ops.cast(array_ops.cast(x, dtypes.bool_), x.dtype)
    zeros_elsewhere = reduce_sum(is_zero, axis, keepdims=True) - is_zero
    x_or_one = x + is_zero
    others = reduce_prod(x_or_one, axis, keepdims=True) / x_or_one
    others = array_ops.where_v2(array_ops.cast(zeros_elsewhere, dtypes.bool_), 0, others)
    return [_with_reduced_axes(grad, op) * unary_ops.conj(others)]


register_op("Any", infer=_bool_reduction, kernel=_any_kernel)
register_op("All", infer=_bool_reduction, kernel=_all_kernel)
not_differentiable("Any", "All")


def _reduce(op_type, input_tensor, axis, keepdims, name, reduction_indices, keep_dims) -> Tensor:
    what = f"reduce_{op_type.lower()}"
    axis = _static_axes(_pick(what, axis, "axis", reduction_indices, "reduction_indices"), what)
    keepdims = bool(_pick(what, keepdims, "keepdims", keep_dims, "keep_dims"))
    attrs = {"axis": axis, "keep_dims": keepdims}
    return apply_op(op_type, [convert_to_tensor(input_tensor)], attrs, name).outputs[0]


@export("reduce_sum", "math.reduce_sum")
def reduce_sum(
    input_tensor: TensorLike,
    axis: Any = None,
    keepdims: bool | None = None,
    name: str | None = None,
    reduction_indices: Any = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """The sum of `input_tensor` along `axis` (all axes when None).

    Args:
      input_tensor: a numeric tensor.
      axis: an int, a list of ints (negative ones count from the end), or None.
      keepdims: keep reduced axes with length 1.
      name: the op's name.
      reduction_indices, keep_dims: deprecated TF1 aliases of `axis` and `keepdims`.

    Returns:
      A tensor of the input's dtype.

    Raises:
      ValueError: if an axis is out of range or not known statically.

    >>> x = sl.constant([[1, 2], [3, 4]])
    >>> sl.Session().run(sl.reduce_sum(x, axis=-1))
    array([3, 7], dtype=int32)
    """
    return _reduce("Sum", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


@export("reduce_mean", "math.reduce_mean")
def reduce_mean(
    input_tensor: TensorLike,
    axis: Any = None,
    keepdims: bool | None = None,
    name: str | None = None,
    reduction_indices: Any = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """The mean along `axis`, like `reduce_sum`; integer means truncate towards zero (TF)."""
    return _reduce("Mean", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


@export("reduce_max", "math.reduce_max")
def reduce_max(
    input_tensor: TensorLike,
    axis: Any = None,
    keepdims: bool | None = None,
    name: str | None = None,
    reduction_indices: Any = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """The maximum along `axis`, like `reduce_sum`, for real tensors."""
    return _reduce("Max", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


@export("reduce_min", "math.reduce_min")
def reduce_min(
    input_tensor: TensorLike,
    axis: Any = None,
    keepdims: bool | None = None,
    name: str | None = None,
    reduction_indices: Any = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """The minimum along `axis`, like `reduce_sum`, for real tensors."""
    return _reduce("Min", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


@export("reduce_prod", "math.reduce_prod")
def reduce_prod(
    input_tensor: TensorLike,
    axis: Any = None,
    keepdims: bool | None = None,
    name: str | None = None,
    reduction_indices: Any = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """The product along `axis`, like `reduce_sum`."""
    return _reduce("Prod", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


@export("reduce_any", "math.reduce_any")
def reduce_any(
    input_tensor: TensorLike,
    axis: Any = None,
    keepdims: bool | None = None,
    name: str | None = None,
    reduction_indices: Any = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """Logical OR along `axis` of a bool tensor, like `reduce_sum`."""
    return _reduce("Any", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


@export("reduce_all", "math.reduce_all")
def reduce_all(
    input_tensor: TensorLike,
    axis: Any = None,
    keepdims: bool | None = None,
    name: str | None = None,
    reduction_indices: Any = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """Logical AND along `axis` of a bool tensor, like `reduce_sum`."""
    return _reduce("All", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


# -- ArgMax, ArgMin -----------------------------------------------------------------------------
def _arg_infer(op) -> list:
    x = op.inputs[0]
    require_dtype(x, "real numeric", is_real)
    output_type = op.get_attr("output_type")
    if output_type not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"output_type must be int32 or int64, got {output_type.name}")
    if x.shape.rank is None:
        return [(output_type, TensorShape(None))]
    (axis,) = _normalize_axes((op.get_attr("axis"),), x.shape.rank)
    return [(output_type, TensorShape([d for i, d in enumerate(x.shape.dims) if i != axis]))]


def _argmax_kernel(x, *, axis, output_type, **_):
    return jnp.argmax(x, axis).astype(output_type)


def _argmin_kernel(x, *, axis, output_type, **_):
    return jnp.argmin(x, axis).astype(output_type)


register_op("ArgMax", infer=_arg_infer, kernel=_argmax_kernel)
register_op("ArgMin", infer=_arg_infer, kernel=_argmin_kernel)
not_differentiable("ArgMax", "ArgMin")


def _arg(op_type, what, input, axis, name, dimension, output_type) -> Tensor:
    axis = _static_axes(_pick(what, axis, "axis", dimension, "dimension"), what)
    if axis is not None and len(axis) != 1:
        raise ValueError(f"{what}: axis must be a single int, got {list(axis)}")
    attrs = {"axis": 0 if axis is None else axis[0], "output_type": dtypes.as_dtype(output_type)}
    return apply_op(op_type, [convert_to_tensor(input)], attrs, name).outputs[0]


@export("argmax", "math.argmax")
def argmax(
    input: TensorLike,
    axis: Any = None,
    name: str | None = None,
    dimension: Any = None,
    output_type: Any = dtypes.int64,
) -> Tensor:
    """The index of the largest value along `axis` (default 0); the first one on ties.

    Args:
      input: a real tensor.
      axis: the axis to reduce (negative counts from the end); `dimension` is its TF1 alias.
      name: the op's name.
      output_type: int64 (default) or int32.
    """
    return _arg("ArgMax", "argmax", input, axis, name, dimension, output_type)


@export("argmin", "math.argmin")
def argmin(
    input: TensorLike,
    axis: Any = None,
    name: str | None = None,
    dimension: Any = None,
    output_type: Any = dtypes.int64,
) -> Tensor:
    """The index of the smallest value along `axis` (default 0), like `argmax`."""
    return _arg("ArgMin", "argmin", input, axis, name, dimension, output_type)


@export("arg_max")
def arg_max(
    input: TensorLike, dimension: Any, output_type: Any = dtypes.int64, name: str | None = None
) -> Tensor:
    """TF1's deprecated `tf.arg_max(input, dimension, output_type, name)`: `argmax` with the
    raw op's argument order, so positional calls from TF1 scripts keep their meaning."""
    return _arg("ArgMax", "arg_max", input, None, name, dimension, output_type)


@export("arg_min")
def arg_min(
    input: TensorLike, dimension: Any, output_type: Any = dtypes.int64, name: str | None = None
) -> Tensor:
    """TF1's deprecated `tf.arg_min`, like `arg_max`."""
    return _arg("ArgMin", "arg_min", input, None, name, dimension, output_type)


# -- Cumsum (and the shape, kernel and arguments Cumprod shares) -------------------------------
def running_infer(op) -> list:
    """The shape rule of a running reduction along one axis (Cumsum, Cumprod)."""
    x = op.inputs[0]
    require_dtype(x, "numeric", is_numeric)
    if x.shape.rank is not None:
        _normalize_axes((op.get_attr("axis"),), x.shape.rank)
    return [(x.dtype, x.shape)]


def running_kernel(scan: Any, start: int) -> Any:
    """The kernel of a running reduction: `scan` (jnp.cumsum, jnp.cumprod) along `axis`, from the
    end when `reverse`; `exclusive` shifts it by one, starting from `start` (0 or 1)."""

    def kernel(x, *, axis, exclusive, reverse, **_):
        (axis,) = _normalize_axes((axis,), jnp.ndim(x))
        if reverse:
            x = jnp.flip(x, axis)
        out = scan(x, axis, dtype=x.dtype)
        if exclusive:
            pads = [(0, 0)] * out.ndim
            pads[axis] = (1, 0)
            out = lax.slice_in_dim(
                jnp.pad(out, pads, constant_values=start), 0, x.shape[axis], axis=axis
            )
        return jnp.flip(out, axis) if reverse else out

    return kernel


def running_attrs(axis: Any, exclusive: bool, reverse: bool, what: str) -> dict:
    """The attributes of a running reduction, with `axis` a single static int."""
    axes = _static_axes(axis, what)
    if axes is None or len(axes) != 1:
        raise ValueError(f"{what}: axis must be a single int, got {axis!r}")
    return {"axis": axes[0], "exclusive": bool(exclusive), "reverse": bool(reverse)}


register_op("Cumsum", infer=running_infer, kernel=running_kernel(jnp.cumsum, 0))


@register_gradient("Cumsum")
def _cumsum_grad(op, grad):  # each entry feeds the sums after it: sum the gradient the other way
    attrs = {k: op.get_attr(k) for k in ("axis", "exclusive", "reverse")}
    attrs["reverse"] = not attrs["reverse"]
    return [cumsum(grad, **attrs)]


@export("cumsum", "math.cumsum")
def cumsum(
    x: TensorLike,
    axis: Any = 0,
    exclusive: bool = False,
    reverse: bool = False,
    name: str | None = None,
) -> Tensor:
    """The running sum along `axis`: `[a, b, c] -> [a, a + b, a + b + c]`.

    Args:
      x: a numeric tensor.
      axis: the axis to sum along (static; negative counts from the end).
      exclusive: leave each element out of its own sum: `[0, a, a + b]`.
      reverse: sum from the end: `[a + b + c, b + c, c]`.
      name: the op's name.
    """
    attrs = running_attrs(axis, exclusive, reverse, "cumsum")
    return apply_op("Cumsum", [convert_to_tensor(x)], attrs, name).outputs[0]
