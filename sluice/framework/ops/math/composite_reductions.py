"""Reductions TF1 builds from other ops, and the running product: Cumprod (`cumprod`, with
`exclusive` and `reverse` as `cumsum` has), `reduce_logsumexp` (the max is subtracted first, so
large inputs do not overflow) and `count_nonzero`.

>>> sl.Session().run(sl.cumprod([1.0, 2.0, 3.0], exclusive=True)).tolist()
[1.0, 1.0, 2.0]
>>> sl.Session().run(sl.count_nonzero([[0, 1], [2, 3]], axis=1)).tolist()
[1, 2]
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import register_gradient, register_op
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import float_ops, math_ops, unary_ops
from sluice.framework.ops.math.reduction_ops import (
    cumsum,
    reduce_max,
    reduce_sum,
    running_attrs,
    running_infer,
    running_kernel,
)

# -- Cumprod --------------------------------------------------------------------------------------
register_op("Cumprod", infer=running_infer, kernel=running_kernel(jnp.cumprod, 1))


@register_gradient("Cumprod")
def _cumprod_grad(op, grad):
    """TF1's rule: cumsum(prod * grad) the other way, divided by x (so a zero in x gives NaN or
    Inf there, as in TF1)."""
    x = op.inputs[0]
    attrs = {k: op.get_attr(k) for k in ("axis", "exclusive", "reverse")}
    prod = op.outputs[0]
    summed = cumsum(
        prod * unary_ops.conj(grad), attrs["axis"], attrs["exclusive"], not attrs["reverse"]
    )
    return [unary_ops.conj(summed / x)]


@export("cumprod", "math.cumprod")
def cumprod(
    x: Any,
    axis: Any = 0,
    exclusive: bool = False,
    reverse: bool = False,
    name: str | None = None,
) -> Tensor:
    """The running product along `axis`: `[a, b, c] -> [a, a * b, a * b * c]` (TF1
    `tf.cumprod`).

    Args:
      x: a numeric tensor.
      axis: the axis (a Python int or a constant; negative counts from the end).
      exclusive: leave each element out of its own product: `[1, a, a * b]`.
      reverse: multiply from the end: `[a * b * c, b * c, c]`.
      name: the op's name.
    """
    attrs = running_attrs(axis, exclusive, reverse, "cumprod")
    return core_ops.apply_op("Cumprod", [core_ops.convert_to_tensor(x)], attrs, name).outputs[0]


# -- reduce_logsumexp, count_nonzero --------------------------------------------------------------
def _pick(what: str, new: Any, new_name: str, old: Any, old_name: str) -> Any:
    if new is not None and old is not None:
        raise ValueError(f"{what}: cannot specify both '{new_name}' and '{old_name}'.")
    return new if new is not None else old


@export("reduce_logsumexp", "math.reduce_logsumexp")
def reduce_logsumexp(
    input_tensor: Any,
    axis: Any = None,
    keepdims: bool | None = None,
    name: str | None = None,
    reduction_indices: Any = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """`log(sum(exp(input_tensor), axis))`, computed stably (TF1 `tf.reduce_logsumexp`).

    The (finite) maximum along `axis` is subtracted before `exp` and added back, behind a
    `stop_gradient`, so the gradient is the softmax of the input along `axis`.

    Args:
      input_tensor: a floating tensor.
      axis: the axes to reduce (None: all); `reduction_indices` is its TF1 alias.
      keepdims: keep the reduced axes with length 1; `keep_dims` is its TF1 alias.
      name: the name scope.

    >>> round(float(sl.Session().run(sl.reduce_logsumexp([0.0, 0.0]))), 6)
    0.693147
    """
    axis = _pick("reduce_logsumexp", axis, "axis", reduction_indices, "reduction_indices")
    keepdims = bool(_pick("reduce_logsumexp", keepdims, "keepdims", keep_dims, "keep_dims"))
    x = core_ops.convert_to_tensor(input_tensor)
    with graph_lib.name_scope(name, "ReduceLogSumExp", [x]):
        raw_max = reduce_max(x, axis, keepdims=True)
        finite_max = core_ops.stop_gradient(
            gather_ops.where_v2(float_ops.is_finite(raw_max), raw_max, fill_ops.zeros_like(raw_max))
        )
        result = unary_ops.log(reduce_sum(unary_ops.exp(x - finite_max), axis, keepdims=keepdims))
        if not keepdims:
            finite_max = array_ops.reshape(finite_max, fill_ops.shape(result))
        return result + finite_max


@export("count_nonzero", "math.count_nonzero")
def count_nonzero(
    input_tensor: Any,
    axis: Any = None,
    keepdims: bool | None = None,
    dtype: Any = dtypes.int64,
    name: str | None = None,
    reduction_indices: Any = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """The number of non-zero (for bool: true) elements along `axis` (TF1 `tf.count_nonzero`),
    as a `dtype` tensor (int64 by default).

    Args:
      input_tensor: a numeric or bool tensor.
      axis: the axes to reduce (None: all); `reduction_indices` is its TF1 alias.
      keepdims: keep the reduced axes with length 1; `keep_dims` is its TF1 alias.
      dtype: the output dtype.
      name: the name of the op.
    """
    axis = _pick("count_nonzero", axis, "axis", reduction_indices, "reduction_indices")
    keepdims = bool(_pick("count_nonzero", keepdims, "keepdims", keep_dims, "keep_dims"))
    x = core_ops.convert_to_tensor(input_tensor)
    nonzero = math_ops.not_equal(x, np.zeros([], x.dtype))
    counts = reduce_sum(fill_ops.cast(nonzero, dtypes.int64), axis, keepdims=keepdims)
    return fill_ops.cast(counts, dtype, name=name)
