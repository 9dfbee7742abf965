"""Host kernels: NumPy versions of small elementwise ops for the interpreted engine.

As in TensorFlow, where small int32 loop counters and predicates live in host memory, the
interpreted engine computes an op whose inputs are all small host values (NumPy scalars or
arrays of at most `HOST_MAX_ELEMENTS`) with one NumPy call instead of a device dispatch, which
costs microseconds. Loop counters, bounds and predicates stay on the host this way; anything
larger goes to the JAX kernel. Each host kernel must equal its JAX kernel (tests check this).
"""

from __future__ import annotations

import operator

import numpy as np

from sluice.framework.ir.registry import register_kernel

HOST_MAX_ELEMENTS = 16

# Python's operators on NumPy values are NumPy's ufuncs (same loops, dtypes and results), but on
# NumPy scalars they take NumPy's scalar fast path: tens of nanoseconds instead of the ufunc
# machinery's microsecond. Host kernels run with NumPy's floating-point warnings off (the
# executor sees to it), so they give inf and nan silently, as the device kernels do.
_UNARY = {
    "Neg": operator.neg,
    "Abs": operator.abs,
    "Square": np.square,
    "LogicalNot": np.logical_not,
    "Identity": lambda x: x,
    "Sign": np.sign,
    "Floor": np.floor,
    "Ceil": np.ceil,
}
_BINARY = {
    "AddV2": operator.add,
    "Sub": operator.sub,
    "Mul": operator.mul,
    "RealDiv": operator.truediv,
    "FloorDiv": operator.floordiv,
    "FloorMod": operator.mod,
    "Maximum": np.maximum,
    "Minimum": np.minimum,
    "Less": operator.lt,
    "LessEqual": operator.le,
    "Greater": operator.gt,
    "GreaterEqual": operator.ge,
    "Equal": operator.eq,
    "NotEqual": operator.ne,
    "LogicalAnd": np.logical_and,
    "LogicalOr": np.logical_or,
}

for _op_type, _fn in {**_UNARY, **_BINARY}.items():
    register_kernel(_op_type, "host", _fn)


def _cast(x, *, DstT, **_):
    return np.asarray(x).astype(DstT)


register_kernel("Cast", "host", _cast)
ATTRIBUTED = {"Cast"}  # host kernels that take the op's attrs
