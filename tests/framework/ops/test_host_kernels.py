"""Each host (NumPy) kernel equals the op's JAX kernel on small values, dtype included."""

import numpy as np
import pytest

from sluice.framework.ir import registry
from sluice.framework.ir.x64 import x64_scope
from sluice.framework.ops.host import host_kernels

RNG = np.random.default_rng(0)
VALUES = {
    np.dtype("float32"): lambda shape: RNG.normal(size=shape).astype(np.float32),
    np.dtype("float64"): lambda shape: RNG.normal(size=shape),
    np.dtype("int32"): lambda shape: RNG.integers(-5, 6, size=shape).astype(np.int32),
    np.dtype("bool"): lambda shape: RNG.random(size=shape) > 0.5,
}
LOGICAL = {"LogicalAnd", "LogicalOr", "LogicalNot"}
CASES = [
    (op_type, dtype, shape)
    for op_type in sorted({**host_kernels._UNARY, **host_kernels._BINARY})
    for dtype in VALUES
    for shape in [(), (3,), (2, 2)]
    if (op_type in LOGICAL) == (dtype == np.dtype("bool"))
    and not (op_type in ("RealDiv", "Floor", "Ceil") and dtype.kind != "f")
]


@pytest.mark.parametrize("op_type, dtype, shape", CASES)
def test_host_kernel_equals_jax_kernel(op_type, dtype, shape):
    arity = 1 if op_type in host_kernels._UNARY else 2
    inputs = [VALUES[dtype](shape) for _ in range(arity)]
    if op_type in ("FloorDiv", "FloorMod"):
        inputs[1] = np.where(inputs[1] == 0, 3, inputs[1]).astype(dtype)
    host = registry.specialised_kernel(op_type, "host")(*inputs)
    with x64_scope():  # a kernel called directly, as the engines call it
        device = registry.get_kernel(op_type)(*inputs)
    assert np.asarray(host).dtype == np.asarray(device).dtype
    np.testing.assert_allclose(np.asarray(host), np.asarray(device), rtol=1e-6)


def test_cast_host_kernel():
    x = np.array([1.7, -2.2], np.float32)
    host = registry.specialised_kernel("Cast", "host")(x, DstT=np.dtype("int32"), SrcT=x.dtype)
    with x64_scope():
        device = registry.get_kernel("Cast")(
            x, DstT=np.dtype("int32"), SrcT=x.dtype, Truncate=False
        )
    np.testing.assert_array_equal(host, device)
    assert host.dtype == np.asarray(device).dtype
