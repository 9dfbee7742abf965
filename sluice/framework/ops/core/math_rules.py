"""Dtype classes, inference-rule factories and operand conversion shared by the math op modules
(`math_ops`, `unary_ops`, `matmul_ops`, `reduction_ops`).

The dtype classes follow TensorFlow's op definitions: *real* ops (Maximum, Less, FloorMod, ...)
take integers and real floats, *numeric* ops (AddV2, Mul, Neg, ...) also complex numbers, and
*inexact* ops (Exp, Sqrt, RealDiv, ...) floating or complex values only. Bool and resource tensors
belong to none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.core.core_ops import convert_n, convert_to_tensor
from sluice.framework.ops.core.shape_rules import (
    broadcast_or_raise,
    require_dtype,
    require_same_dtype,
)

InferFn = Callable[[Any], list]


def is_real(dtype: np.dtype) -> bool:
    """Integers (signed or unsigned) and real floating dtypes."""
    return dtypes.is_floating(dtype) or dtype.kind in "iu"


def is_numeric(dtype: np.dtype) -> bool:
    """Real or complex dtypes."""
    return is_real(dtype) or dtype.kind == "c"


def is_inexact(dtype: np.dtype) -> bool:
    """Floating or complex dtypes."""
    return dtypes.is_floating(dtype) or dtype.kind == "c"


def is_value(dtype: np.dtype) -> bool:
    """Any dtype that holds data (everything but a variable handle)."""
    return dtype != dtypes.resource


def binary_rule(what: str, predicate: Callable, out_dtype: np.dtype | None = None) -> InferFn:
    """Two inputs of one dtype accepted by `predicate` (described as `what` in errors), broadcast
    with NumPy rules; the output has their dtype, or `out_dtype` (bool for comparisons)."""

    def infer(op) -> list:
        x, y = op.inputs
        require_same_dtype(x, y)
        require_dtype(x, what, predicate)
        return [(out_dtype or x.dtype, broadcast_or_raise(x, y))]

    return infer


def unary_rule(what: str, predicate: Callable) -> InferFn:
    """One input of a dtype accepted by `predicate`; the output has its dtype and shape."""

    def infer(op) -> list:
        x = op.inputs[0]
        require_dtype(x, what, predicate)
        return [(x.dtype, x.shape)]

    return infer


def convert_operands(*values: Any) -> list[Tensor]:
    """The operands of one op as Tensors. Tensors and Variables are kept as they are (a dtype
    mismatch between them is reported by the op, with its name); Python and NumPy values take the
    dtype of the first Tensor among them (`core_ops.convert_n`), so `x + 1` keeps x's dtype."""
    if all(isinstance(v, Tensor) or hasattr(v, "_as_tensor") for v in values):
        return [convert_to_tensor(v) for v in values]
    return convert_n(values)
