"""Floating-point classification and range-aware casts: IsNan, IsInf, IsFinite (`is_nan`,
`is_inf`, `is_finite`: bool tensors, no gradient), `verify_tensor_all_finite` (TF1's alias of
`check_numerics` with its arguments renamed), `saturate_cast` (clamps to the target dtype's range
before casting, composed as TF1 does) and `to_bfloat16`.

>>> x = sl.constant([1.0, float("nan"), float("inf")])
>>> sl.Session().run([sl.is_nan(x), sl.is_finite(x)])
[array([False,  True, False]), array([ True, False, False])]
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import ml_dtypes
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable, register_op
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core.core_ops import apply_op, convert_to_tensor
from sluice.framework.ops.core.shape_rules import require_dtype
from sluice.framework.ops.math import debug_ops, math_ops


def _float_class_infer(op) -> list:
    x = op.inputs[0]
    require_dtype(x, "real floating", dtypes.is_floating)
    return [(dtypes.bool_, x.shape)]


register_op("IsNan", infer=_float_class_infer, kernel=jnp.isnan, select_safe=True)
register_op("IsInf", infer=_float_class_infer, kernel=jnp.isinf, select_safe=True)
register_op("IsFinite", infer=_float_class_infer, kernel=jnp.isfinite, select_safe=True)
not_differentiable("IsNan", "IsInf", "IsFinite")


@export("is_nan", "math.is_nan")
def is_nan(x: Any, name: str | None = None) -> Tensor:
    """True where `x` is NaN, elementwise (`x` must be a real floating tensor)."""
    return apply_op("IsNan", [convert_to_tensor(x)], name=name).outputs[0]


@export("is_inf", "math.is_inf")
def is_inf(x: Any, name: str | None = None) -> Tensor:
    """True where `x` is +Inf or -Inf, elementwise."""
    return apply_op("IsInf", [convert_to_tensor(x)], name=name).outputs[0]


@export("is_finite", "math.is_finite")
def is_finite(x: Any, name: str | None = None) -> Tensor:
    """True where `x` is neither NaN nor Inf, elementwise."""
    return apply_op("IsFinite", [convert_to_tensor(x)], name=name).outputs[0]


@export("verify_tensor_all_finite")
def verify_tensor_all_finite(
    t: Any = None,
    msg: str | None = None,
    name: str | None = None,
    x: Any = None,
    message: str | None = None,
) -> Tensor:
    """`t`, checked for NaN and Inf when it is computed (TF1 `tf.verify_tensor_all_finite`; `x`
    and `message` are the TF 2 names of `t` and `msg`).

    Raises:
      InvalidArgumentError: when run, if `t` holds a NaN or Inf ("<msg> : Tensor had ...").
    """
    t = x if t is None else t
    msg = message if msg is None else msg
    return debug_ops.check_numerics(t, message=msg, name=name)


def _range(dtype: np.dtype) -> tuple[float, float]:
    """The lowest and highest value of a real or complex dtype (of its parts for complex)."""
    if dtype.kind == "c":
        dtype = np.zeros((), dtype).real.dtype
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
    elif dtype == dtypes.bool_:
        return 0, 1
    else:
        info = ml_dtypes.finfo(dtype)
    return info.min, info.max


@export("saturate_cast")
def saturate_cast(value: Any, dtype: Any, name: str | None = None) -> Tensor:
    """`value` cast to `dtype`, first clamped to the range `dtype` can hold, so values out of
    range become the dtype's lowest or highest value instead of wrapping around (TF1
    `tf.saturate_cast`).

    >>> sl.Session().run(sl.saturate_cast([-5.0, 300.0], sl.uint8)).tolist()
    [0, 255]
    """
    value = convert_to_tensor(value)
    dtype = dtypes.as_dtype(dtype)
    (in_min, in_max), (out_min, out_max) = _range(value.dtype), _range(dtype)
    if in_min < out_min:
        value = math_ops.maximum(value, np.asarray(out_min).astype(value.dtype))
    if in_max > out_max:
        value = math_ops.minimum(value, np.asarray(out_max).astype(value.dtype))
    return fill_ops.cast(value, dtype, name=name)


@export("to_bfloat16")
def to_bfloat16(x: Any, name: str = "ToBFloat16") -> Tensor:
    """`x` cast to bfloat16."""
    return fill_ops.cast(x, dtypes.bfloat16, name=name)
