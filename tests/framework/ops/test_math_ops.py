"""Math ops against NumPy: elementwise binary and unary ops, comparisons and logic, the Python
operators of Tensor, matmul, reductions, argmax/argmin, cumsum, and construction errors.

Every table row builds its graph from placeholders (fully known, partly known or of unknown rank),
runs it, compares with NumPy, and checks that the static dtype and shape match the result.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import sluice as sl
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.math import math_ops, matmul_ops, reduction_ops, unary_ops

F32, F64, I32, BOOL = np.dtype("float32"), np.dtype("float64"), np.dtype("int32"), np.dtype(bool)
F16 = np.dtype("float16")
FLOATS = (F32, F64)
REALS = (F32, F64, I32)
TOLERANCE = {
    F16: {"rtol": 1e-3, "atol": 1e-3},
    F32: {"rtol": 2e-5, "atol": 1e-5},
    F64: {"rtol": 1e-12, "atol": 1e-12},
}


# -- helpers ------------------------------------------------------------------------------------
def _values(rng: np.random.Generator, shape, dtype, domain: str = "any") -> np.ndarray:
    """Random test values of `dtype` from a domain where the op under test is defined."""
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return rng.random(shape) < 0.5
    sign = rng.choice([-1, 1], size=shape)
    if dtype.kind in "iu":
        ints = {
            "any": lambda: rng.integers(-5, 6, shape),
            "pos": lambda: rng.integers(1, 6, shape),
            "nonzero": lambda: sign * rng.integers(1, 6, shape),
            "exponent": lambda: rng.integers(0, 4, shape),
            "small": lambda: rng.integers(-2, 3, shape),
            "halves": lambda: rng.integers(-5, 6, shape),
        }
        return np.asarray(ints[domain](), dtype)
    floats = {
        "any": lambda: rng.uniform(-3, 3, shape),
        "pos": lambda: rng.uniform(0.5, 3, shape),
        "nonzero": lambda: sign * rng.uniform(0.5, 3, shape),
        "unit": lambda: rng.uniform(-1, 1, shape),
        "exponent": lambda: rng.uniform(-2, 2, shape),
        "halves": lambda: rng.integers(-4, 4, shape) + 0.5,
        "small": lambda: rng.uniform(0.5, 1.5, shape),
    }
    return np.asarray(floats[domain](), dtype)


def _crossed(dtypes, cases: dict, other_dtype_cases: tuple):
    """(dtype, case id, case): every case for the first dtype, `other_dtype_cases` for the rest.

    Shapes exercise inference and broadcasting; dtypes exercise the kernel. Crossing them all
    would multiply the run time without testing more (the executor compiles every op it runs).
    """
    for i, dtype in enumerate(dtypes):
        for case_id, case in cases.items():
            if i == 0 or case_id in other_dtype_cases:
                yield dtype, case_id, case


def _run(fetches, feed_dict=None):
    with sl.Session() as sess:
        return sess.run(fetches, feed_dict=feed_dict)


def _check(tensor, got, want, static_shape) -> None:
    """`got` (the run's value of `tensor`) equals `want`; static dtype and shape are right."""
    want = np.asarray(want)
    assert tensor.dtype == want.dtype, f"static dtype {tensor.dtype} != NumPy's {want.dtype}"
    assert got.dtype == want.dtype, f"result dtype {got.dtype} != NumPy's {want.dtype}"
    assert tensor.shape == TensorShape(static_shape), f"static shape {tensor.shape}"
    assert tensor.shape.is_compatible_with(got.shape), f"{tensor.shape} vs result {got.shape}"
    assert got.shape == want.shape
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, **TOLERANCE[np.dtype(want.real.dtype)])
    else:
        np.testing.assert_array_equal(got, want)


# -- binary elementwise ops ---------------------------------------------------------------------
# (x static shape, x fed shape, y static shape, y fed shape, expected static result shape)
BINARY_SHAPES = {
    "same": ((2, 3), (2, 3), (2, 3), (2, 3), (2, 3)),
    "col_row": ((3, 1), (3, 1), (1, 4), (1, 4), (3, 4)),
    "scalar_matrix": ((), (), (2, 3), (2, 3), (2, 3)),
    "matrix_scalar": ((2, 3), (2, 3), (), (), (2, 3)),
    "vector_matrix": ((4,), (4,), (3, 4), (3, 4), (3, 4)),
    "unknown_dims": ((None, 1), (3, 1), (None, 4), (1, 4), (None, 4)),
    "unknown_rank": (None, (2, 3), (3,), (3,), None),
}

# (name, wrapper, NumPy reference, dtypes, (x domain, y domain))
BINARY_OPS = [
    ("add", math_ops.add, np.add, REALS, ("any", "any")),
    ("subtract", math_ops.subtract, np.subtract, REALS, ("any", "any")),
    ("multiply", math_ops.multiply, np.multiply, REALS, ("any", "any")),
    ("realdiv", math_ops.realdiv, np.divide, FLOATS, ("any", "nonzero")),
    ("truediv", math_ops.truediv, np.true_divide, REALS, ("any", "nonzero")),
    (
        "div",
        math_ops.div,
        lambda x, y: x // y if x.dtype.kind == "i" else x / y,
        REALS,
        ("any", "nonzero"),
    ),
    ("floordiv", math_ops.floordiv, np.floor_divide, REALS, ("any", "nonzero")),
    ("floormod", math_ops.floormod, np.mod, REALS, ("any", "nonzero")),
    ("pow", math_ops.pow, np.power, REALS, ("pos", "exponent")),
    ("maximum", math_ops.maximum, np.maximum, REALS, ("any", "any")),
    ("minimum", math_ops.minimum, np.minimum, REALS, ("any", "any")),
    (
        "squared_difference",
        math_ops.squared_difference,
        lambda x, y: (x - y) ** 2,
        REALS,
        ("any", "any"),
    ),
    ("less", math_ops.less, np.less, REALS, ("small", "small")),
    ("less_equal", math_ops.less_equal, np.less_equal, REALS, ("small", "small")),
    ("greater", math_ops.greater, np.greater, REALS, ("small", "small")),
    ("greater_equal", math_ops.greater_equal, np.greater_equal, REALS, ("small", "small")),
    ("equal", math_ops.equal, np.equal, REALS + (BOOL,), ("small", "small")),
    ("not_equal", math_ops.not_equal, np.not_equal, REALS + (BOOL,), ("small", "small")),
    ("logical_and", math_ops.logical_and, np.logical_and, (BOOL,), ("any", "any")),
    ("logical_or", math_ops.logical_or, np.logical_or, (BOOL,), ("any", "any")),
    ("logical_xor", math_ops.logical_xor, np.logical_xor, (BOOL,), ("any", "any")),
]


def _binary_params():
    for name, fn, ref, dtypes, domains in BINARY_OPS:
        for dtype, shape_id, shapes in _crossed(dtypes, BINARY_SHAPES, ("unknown_dims",)):
            params = (fn, ref, dtype, domains, shapes)
            yield pytest.param(*params, id=f"{name}-{dtype.name}-{shape_id}")


@pytest.mark.parametrize("fn, ref, dtype, domains, shapes", list(_binary_params()))
def test_binary_op(fn, ref, dtype, domains, shapes):
    x_static, x_shape, y_static, y_shape, out_static = shapes
    rng = np.random.default_rng(0)
    xv = _values(rng, x_shape, dtype, domains[0])
    yv = _values(rng, y_shape, dtype, domains[1])
    x, y = sl.placeholder(dtype, x_static), sl.placeholder(dtype, y_static)
    z = fn(x, y)
    _check(z, _run(z, {x: xv, y: yv}), ref(xv, yv), out_static)


def test_floor_division_and_modulo_follow_python_signs():
    x = sl.constant([7, -7, 7, -7])
    y = sl.constant([2, 2, -2, -2])
    q, r = _run([math_ops.floordiv(x, y), math_ops.floormod(x, y)])
    np.testing.assert_array_equal(q, [3, -4, -4, 3])
    np.testing.assert_array_equal(r, [1, 1, -1, -1])


@pytest.mark.parametrize("static", [[(2, 3)] * 3, [(None, 3), (2, None), None]], ids=str)
def test_add_n(static):
    rng = np.random.default_rng(1)
    values = [_values(rng, (2, 3), F32) for _ in static]
    inputs = [sl.placeholder(F32, s) for s in static]
    total = math_ops.add_n(inputs)
    assert total.op.type == "AddN"
    _check(total, _run(total, dict(zip(inputs, values))), sum(values), (2, 3))


def test_add_n_of_one_input_is_that_input():
    x = sl.placeholder(F32, [2])
    assert math_ops.add_n([x]) is x
    assert math_ops.add_n([x], name="total").op.type == "Identity"


# -- unary elementwise ops ----------------------------------------------------------------------
# (static shape, fed shape)
UNARY_SHAPES = {
    "matrix": ((2, 3), (2, 3)),
    "unknown_dim": ((None, 3), (4, 3)),
    "scalar": ((), ()),
    "unknown_rank": (None, (2, 2)),
}


def _sigmoid(x):
    return (1 / (1 + np.exp(-x.astype(F64)))).astype(x.dtype)


def _erf(x):
    return np.vectorize(math.erf, otypes=[F64])(x).astype(x.dtype)


# (name, wrapper, NumPy reference, dtypes, domain)
UNARY_OPS = [
    ("negative", unary_ops.negative, np.negative, REALS, "any"),
    ("abs", unary_ops.abs, np.abs, REALS, "any"),
    ("sign", unary_ops.sign, np.sign, REALS, "any"),
    ("square", unary_ops.square, np.square, REALS, "any"),
    ("round", unary_ops.round, np.round, REALS, "halves"),
    ("floor", unary_ops.floor, np.floor, FLOATS, "any"),
    ("ceil", unary_ops.ceil, np.ceil, FLOATS, "any"),
    ("reciprocal", unary_ops.reciprocal, np.reciprocal, FLOATS, "nonzero"),
    ("sqrt", unary_ops.sqrt, np.sqrt, FLOATS, "pos"),
    ("rsqrt", unary_ops.rsqrt, lambda x: 1 / np.sqrt(x), FLOATS, "pos"),
    ("exp", unary_ops.exp, np.exp, FLOATS, "any"),
    ("expm1", unary_ops.expm1, np.expm1, FLOATS, "unit"),
    ("log", unary_ops.log, np.log, FLOATS, "pos"),
    ("log1p", unary_ops.log1p, np.log1p, FLOATS, "pos"),
    ("sin", unary_ops.sin, np.sin, FLOATS, "any"),
    ("cos", unary_ops.cos, np.cos, FLOATS, "any"),
    ("tan", unary_ops.tan, np.tan, FLOATS, "unit"),
    ("tanh", unary_ops.tanh, np.tanh, FLOATS, "any"),
    ("sigmoid", unary_ops.sigmoid, _sigmoid, FLOATS, "any"),
    ("erf", unary_ops.erf, _erf, FLOATS, "any"),
    ("logical_not", math_ops.logical_not, np.logical_not, (BOOL,), "any"),
]


def _unary_params():
    for name, fn, ref, dtypes, domain in UNARY_OPS:
        for dtype, shape_id, shapes in _crossed(dtypes, UNARY_SHAPES, ("unknown_dim",)):
            yield pytest.param(fn, ref, dtype, domain, shapes, id=f"{name}-{dtype.name}-{shape_id}")


@pytest.mark.parametrize("fn, ref, dtype, domain, shapes", list(_unary_params()))
def test_unary_op(fn, ref, dtype, domain, shapes):
    static, fed = shapes
    xv = _values(np.random.default_rng(2), fed, dtype, domain)
    x = sl.placeholder(dtype, static)
    y = fn(x)
    _check(y, _run(y, {x: xv}), ref(xv), static)


def test_round_halves_to_even():
    y = unary_ops.round(sl.constant([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5]))
    np.testing.assert_array_equal(_run(y), [-2.0, -2.0, -0.0, 0.0, 2.0, 2.0])


def test_abs_of_complex_is_real_and_conj_conjugates():
    z = sl.constant(np.array([3 + 4j, -1j], np.complex64))
    magnitude, conjugate = unary_ops.abs(z), unary_ops.conj(z)
    assert magnitude.dtype == F32 and conjugate.dtype == np.complex64
    got_abs, got_conj = _run([magnitude, conjugate])
    np.testing.assert_allclose(got_abs, [5.0, 1.0])
    np.testing.assert_array_equal(got_conj, np.array([3 - 4j, 1j], np.complex64))
    real = sl.constant([1.0])
    assert unary_ops.conj(real) is real


# -- Python operators ---------------------------------------------------------------------------
_A = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]], F32)
_B = np.array([[2.0, 1.0, -0.5], [3.0, -2.0, 2.0]], F32)
_I = np.array([[7, -7, 3], [-2, 5, 9]], I32)
_J = np.array([[2, 3, -2], [4, -3, 2]], I32)
_P = np.array([[True, True, False], [False, True, False]])
_Q = np.array([[True, False, True], [False, False, True]])

# (id, expression on tensors or arrays, left value, right value, expected dtype)
OPERATORS = [
    ("add", lambda x, y: x + y, _A, _B, F32),
    ("add_int_scalar_keeps_float32", lambda x, y: x + 1, _A, _B, F32),
    ("radd", lambda x, y: 1 + x, _A, _B, F32),
    ("radd_numpy_array", lambda x, y: np.ones(3, F32) + x, _A, _B, F32),
    ("sub", lambda x, y: x - y, _A, _B, F32),
    ("rsub", lambda x, y: 2.5 - x, _A, _B, F32),
    ("mul", lambda x, y: x * y, _A, _B, F32),
    ("rmul", lambda x, y: 3 * x, _I, _J, I32),
    ("truediv", lambda x, y: x / y, _A, _B, F32),
    ("rtruediv", lambda x, y: 1.0 / x, _A, _B, F32),
    ("truediv_int32_gives_float64", lambda x, y: x / y, _I, _J, F64),
    (
        "truediv_int16_gives_float32",
        lambda x, y: x / y,
        _I.astype(np.int16),
        _J.astype(np.int16),
        F32,
    ),
    ("rtruediv_int32", lambda x, y: 2 / x, _I, _J, F64),
    ("floordiv", lambda x, y: x // y, _I, _J, I32),
    ("rfloordiv", lambda x, y: 7 // y, _I, _J, I32),
    ("mod", lambda x, y: x % y, _I, _J, I32),
    ("rmod", lambda x, y: 7 % y, _I, _J, I32),
    ("pow", lambda x, y: x**2, _A, _B, F32),
    ("rpow", lambda x, y: 2**x, _A, _B, F32),
    ("matmul", lambda x, y: x @ y, _A, _B.T.copy(), F32),
    ("rmatmul", lambda x, y: np.ones((3, 2), F32) @ x, _A, _B, F32),
    ("neg", lambda x, y: -x, _A, _B, F32),
    ("abs", lambda x, y: abs(x), _I, _J, I32),
    ("lt", lambda x, y: x < y, _A, _B, BOOL),
    ("le", lambda x, y: x <= 1.5, _A, _B, BOOL),
    ("gt", lambda x, y: x > y, _I, _J, BOOL),
    ("ge", lambda x, y: x >= y, _A, _B, BOOL),
    ("reflected_lt", lambda x, y: 1 < x, _A, _B, BOOL),
    ("and", lambda x, y: x & y, _P, _Q, BOOL),
    ("rand", lambda x, y: True & y, _P, _Q, BOOL),
    ("or", lambda x, y: x | y, _P, _Q, BOOL),
    ("ror", lambda x, y: False | y, _P, _Q, BOOL),
    ("xor", lambda x, y: x ^ y, _P, _Q, BOOL),
    ("rxor", lambda x, y: True ^ y, _P, _Q, BOOL),
    ("invert", lambda x, y: ~x, _P, _Q, BOOL),
    ("float16_scalar_keeps_float16", lambda x, y: x * 2.0 - y, _A.astype(F16), _B.astype(F16), F16),
]


@pytest.mark.parametrize(
    "expr, xv, yv, dtype", [pytest.param(*row[1:], id=row[0]) for row in OPERATORS]
)
def test_operator(expr, xv, yv, dtype):
    x, y = sl.placeholder(xv.dtype, xv.shape), sl.placeholder(yv.dtype, yv.shape)
    z = expr(x, y)
    assert isinstance(z, sl.Tensor)
    want = np.asarray(expr(xv, yv)).astype(dtype)
    _check(z, _run(z, {x: xv, y: yv}), want, want.shape)


def test_tensor_equality_stays_identity():
    x, same_value = sl.constant([1.0]), sl.constant([1.0])
    assert (x == same_value) is False and (x != same_value) is True
    assert {x: 1}[x] == 1


def test_variable_operands_and_python_scalars():
    v = sl.Variable([1.0, 2.0], dtype=sl.float32)
    z = 2 * v + math_ops.add(v, 1)
    assert z.dtype == F32
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        np.testing.assert_allclose(sess.run(z), [4.0, 7.0])


# -- matmul -------------------------------------------------------------------------------------
# (id, a static, a fed, b static, b fed, flags, op type, expected static shape)
MATMUL_CASES = [
    ("plain", (2, 3), (2, 3), (3, 4), (3, 4), {}, "MatMul", (2, 4)),
    ("transpose_a", (3, 2), (3, 2), (3, 4), (3, 4), {"transpose_a": True}, "MatMul", (2, 4)),
    ("transpose_b", (2, 3), (2, 3), (4, 3), (4, 3), {"transpose_b": True}, "MatMul", (2, 4)),
    (
        "transpose_both",
        (3, 2),
        (3, 2),
        (4, 3),
        (4, 3),
        {"transpose_a": True, "transpose_b": True},
        "MatMul",
        (2, 4),
    ),
    (
        "adjoint_real",
        (3, 2),
        (3, 2),
        (4, 3),
        (4, 3),
        {"adjoint_a": True, "adjoint_b": True},
        "MatMul",
        (2, 4),
    ),
    ("unknown_dims", (None, 3), (5, 3), (3, None), (3, 2), {}, "MatMul", (None, None)),
    ("batched", (5, 2, 3), (5, 2, 3), (5, 3, 4), (5, 3, 4), {}, "BatchMatMulV2", (5, 2, 4)),
    ("batch_times_matrix", (5, 2, 3), (5, 2, 3), (3, 4), (3, 4), {}, "BatchMatMulV2", (5, 2, 4)),
    ("matrix_times_batch", (2, 3), (2, 3), (5, 3, 4), (5, 3, 4), {}, "BatchMatMulV2", (5, 2, 4)),
    (
        "broadcast_batch",
        (2, 1, 2, 3),
        (2, 1, 2, 3),
        (3, 3, 4),
        (3, 3, 4),
        {},
        "BatchMatMulV2",
        (2, 3, 2, 4),
    ),
    (
        "batched_transposes",
        (5, 3, 2),
        (5, 3, 2),
        (1, 4, 3),
        (1, 4, 3),
        {"transpose_a": True, "transpose_b": True},
        "BatchMatMulV2",
        (5, 2, 4),
    ),
    (
        "batched_unknown_dims",
        (None, 2, 3),
        (6, 2, 3),
        (3, None),
        (3, 4),
        {},
        "BatchMatMulV2",
        (None, 2, None),
    ),
    ("unknown_rank", None, (2, 3), (3, 4), (3, 4), {}, "BatchMatMulV2", None),
]


def _np_matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False):
    a = np.swapaxes(a, -1, -2) if transpose_a or adjoint_a else a
    b = np.swapaxes(b, -1, -2) if transpose_b or adjoint_b else b
    return np.matmul(a, b)


@pytest.mark.parametrize("dtype", REALS, ids=lambda d: d.name)
@pytest.mark.parametrize(
    "a_static, a_fed, b_static, b_fed, flags, op_type, out_static",
    [pytest.param(*case[1:], id=case[0]) for case in MATMUL_CASES],
)
def test_matmul(dtype, a_static, a_fed, b_static, b_fed, flags, op_type, out_static):
    rng = np.random.default_rng(3)
    av, bv = _values(rng, a_fed, dtype), _values(rng, b_fed, dtype)
    a, b = sl.placeholder(dtype, a_static), sl.placeholder(dtype, b_static)
    c = matmul_ops.matmul(a, b, **flags)
    assert c.op.type == op_type
    _check(c, _run(c, {a: av, b: bv}), _np_matmul(av, bv, **flags), out_static)


@pytest.mark.parametrize("batched", [False, True])
def test_matmul_adjoint_conjugates_complex(batched):
    rng = np.random.default_rng(4)
    shape = (2, 3, 2) if batched else (3, 2)
    av = (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(np.complex64)
    bv = (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(np.complex64)
    a, b = sl.constant(av), sl.constant(bv)
    adjoint = matmul_ops.matmul(a, b, adjoint_a=True)
    transpose = matmul_ops.matmul(a, b, transpose_a=True)
    got_adjoint, got_transpose = _run([adjoint, transpose])
    np.testing.assert_allclose(got_adjoint, np.conj(np.swapaxes(av, -1, -2)) @ bv, rtol=1e-5)
    np.testing.assert_allclose(got_transpose, np.swapaxes(av, -1, -2) @ bv, rtol=1e-5)


# -- reductions ---------------------------------------------------------------------------------
def _np_mean(x, axis, keepdims):
    if x.dtype.kind != "i":
        return np.mean(x, axis=axis, keepdims=keepdims, dtype=x.dtype)
    total = np.sum(x, axis=axis, keepdims=keepdims, dtype=np.int64)
    count = x.size // max(total.size, 1) if x.size else 0
    return np.trunc(total / count).astype(x.dtype)  # TF truncates towards zero


# (name, wrapper, reference(x, axis, keepdims), dtypes, domain)
REDUCTIONS = [
    (
        "sum",
        reduction_ops.reduce_sum,
        lambda x, a, k: np.sum(x, a, x.dtype, keepdims=k),
        REALS,
        "any",
    ),
    ("mean", reduction_ops.reduce_mean, _np_mean, REALS, "any"),
    ("max", reduction_ops.reduce_max, lambda x, a, k: np.max(x, a, keepdims=k), REALS, "any"),
    ("min", reduction_ops.reduce_min, lambda x, a, k: np.min(x, a, keepdims=k), REALS, "any"),
    (
        "prod",
        reduction_ops.reduce_prod,
        lambda x, a, k: np.prod(x, a, x.dtype, keepdims=k),
        REALS,
        "small",
    ),
    ("any", reduction_ops.reduce_any, lambda x, a, k: np.any(x, a, keepdims=k), (BOOL,), "any"),
    ("all", reduction_ops.reduce_all, lambda x, a, k: np.all(x, a, keepdims=k), (BOOL,), "any"),
]

# (id, static shape, axis, keepdims, expected static shape); the fed value has shape (2, 3, 4)
REDUCTION_CASES = [
    ("all_axes", (2, 3, 4), None, False, ()),
    ("all_axes_keepdims", (2, 3, 4), None, True, (1, 1, 1)),
    ("axis0", (2, 3, 4), 0, False, (3, 4)),
    ("negative_keepdims", (2, 3, 4), -1, True, (2, 3, 1)),
    ("list", (2, 3, 4), [0, 2], False, (3,)),
    ("negative_list_keepdims", (2, 3, 4), [-1, 0], True, (1, 3, 1)),
    ("empty_list", (2, 3, 4), [], False, (2, 3, 4)),
    ("unknown_dim", (None, 3, 4), 1, False, (None, 4)),
    ("unknown_dim_keepdims", (None, 3, 4), [0, -1], True, (1, 3, 1)),
    ("unknown_dim_all", (None, 3, 4), None, False, ()),
    ("unknown_rank", None, 1, False, None),
    ("unknown_rank_all", None, None, False, ()),
    ("unknown_rank_all_keepdims", None, None, True, None),
]


def _reduction_params():
    cases = {case[0]: case[1:] for case in REDUCTION_CASES}
    few = ("negative_list_keepdims", "unknown_dim")
    for name, fn, ref, dtypes, domain in REDUCTIONS:
        for dtype, case_id, case in _crossed(dtypes, cases, few):
            yield pytest.param(fn, ref, dtype, domain, *case, id=f"{name}-{dtype.name}-{case_id}")


@pytest.mark.parametrize(
    "fn, ref, dtype, domain, static, axis, keepdims, out_static", list(_reduction_params())
)
def test_reduction(fn, ref, dtype, domain, static, axis, keepdims, out_static):
    xv = _values(np.random.default_rng(5), (2, 3, 4), dtype, domain)
    x = sl.placeholder(dtype, static)
    y = fn(x, axis=axis, keepdims=keepdims)
    np_axis = tuple(axis) if isinstance(axis, list) else axis
    _check(y, _run(y, {x: xv}), ref(xv, np_axis, keepdims), out_static)


def test_integer_mean_truncates_towards_zero():
    x = sl.constant([[-3, 4], [5, 2], [-7, 2]])
    np.testing.assert_array_equal(_run(reduction_ops.reduce_mean(x, axis=1)), [0, 3, -2])


def test_reduction_axis_forms_and_tf1_aliases():
    xv = np.arange(24, dtype=F32).reshape(2, 3, 4)
    x = sl.constant(xv)
    results = _run(
        [
            reduction_ops.reduce_sum(x, axis=sl.constant([0, 2])),
            reduction_ops.reduce_sum(x, axis=np.int64(1)),
            reduction_ops.reduce_sum(x, reduction_indices=[1], keep_dims=True),
            reduction_ops.reduce_max(x, axis=(0, 1)),
        ]
    )
    for got, want in zip(
        results, [xv.sum((0, 2)), xv.sum(1), xv.sum(1, keepdims=True), xv.max((0, 1))]
    ):
        np.testing.assert_allclose(got, want)


def test_empty_max_gives_lowest_value():
    x = sl.placeholder(F32, [0, 3])
    np.testing.assert_array_equal(
        _run(reduction_ops.reduce_max(x, axis=0), {x: np.zeros((0, 3), F32)}), [-np.inf] * 3
    )


# -- argmax, argmin, cumsum ---------------------------------------------------------------------
# (id, static shape, axis, output_type, expected static shape); the fed value is 3 x 4
ARG_CASES = [
    ("default_axis", (3, 4), None, sl.int64, (4,)),
    ("axis1_int32", (3, 4), 1, sl.int32, (3,)),
    ("negative_axis", (None, 4), -1, sl.int64, (None,)),
    ("unknown_rank", None, 0, sl.int32, None),
]


@pytest.mark.parametrize(
    "fn, ref",
    [(reduction_ops.argmax, np.argmax), (reduction_ops.argmin, np.argmin)],
    ids=["argmax", "argmin"],
)
@pytest.mark.parametrize(
    "static, axis, output_type, out_static",
    [pytest.param(*case[1:], id=case[0]) for case in ARG_CASES],
)
def test_argmax_argmin(fn, ref, static, axis, output_type, out_static):
    xv = np.array([[1, 5, 5, 0], [7, 2, 7, 3], [0, 0, -1, 9]], F32)  # ties: first index wins
    x = sl.placeholder(F32, static)
    y = fn(x, axis=axis, output_type=output_type)
    want = ref(xv, axis=0 if axis is None else axis).astype(output_type)
    _check(y, _run(y, {x: xv}), want, out_static)


def test_tf1_arg_max_arg_min_take_the_raw_ops_positional_order():
    # tf.arg_max(input, dimension, output_type, name): a TF1 script passes the axis second
    xv = np.array([[1, 5, 5, 0], [7, 2, 7, 3], [0, 0, -1, 9]], F32)
    x = sl.placeholder(F32, (3, 4))
    biggest = sl.arg_max(x, 1)
    smallest = sl.arg_min(x, 0, sl.int32, "smallest")
    assert biggest.dtype == sl.int64 and smallest.dtype == sl.int32
    assert smallest.op.name == "smallest" and smallest.op.type == "ArgMin"
    _check(biggest, _run(biggest, {x: xv}), np.argmax(xv, 1), (3,))
    _check(smallest, _run(smallest, {x: xv}), np.argmin(xv, 0).astype(np.int32), (4,))


# (axis, exclusive, reverse)
CUMSUM_CASES = {
    f"axis{axis}{'-exclusive' * exclusive}{'-reverse' * reverse}": (axis, exclusive, reverse)
    for axis in (0, -1)
    for exclusive in (False, True)
    for reverse in (False, True)
}


@pytest.mark.parametrize(
    "dtype, case",
    [
        pytest.param(dtype, case, id=f"{dtype.name}-{case_id}")
        for dtype, case_id, case in _crossed(
            REALS, CUMSUM_CASES, ("axis0", "axis-1-exclusive-reverse")
        )
    ],
)
def test_cumsum(dtype, case):
    axis, exclusive, reverse = case
    xv = _values(np.random.default_rng(6), (3, 4), dtype)
    x = sl.placeholder(dtype, (None, 4))
    y = reduction_ops.cumsum(x, axis=axis, exclusive=exclusive, reverse=reverse)
    flipped = np.flip(xv, axis) if reverse else xv
    want = np.cumsum(flipped, axis=axis, dtype=dtype)
    if exclusive:
        want = want - flipped
    want = np.flip(want, axis) if reverse else want
    _check(y, _run(y, {x: xv}), want, (None, 4))


# -- construction errors ------------------------------------------------------------------------
def _ph(dtype, shape):
    return sl.placeholder(dtype, shape)


BAD = [
    (
        "broadcast",
        lambda: math_ops.add(_ph(F32, [2, 3]), _ph(F32, [4, 3])),
        ValueError,
        r"AddV2 op.*\(2, 3\) and \(4, 3\) are not broadcastable",
    ),
    ("broadcast_operator", lambda: _ph(F32, [3]) * _ph(F32, [4]), ValueError, "not broadcastable"),
    (
        "dtype_mismatch",
        lambda: math_ops.add(_ph(F32, [2]), _ph(I32, [2])),
        TypeError,
        "same dtype, got float32 and int32",
    ),
    ("dtype_mismatch_operator", lambda: _ph(F32, [2]) + _ph(I32, [2]), TypeError, "same dtype"),
    ("float_scalar_into_int", lambda: _ph(I32, [2]) + 1.5, TypeError, "int32"),
    ("truediv_dtype_mismatch", lambda: _ph(I32, [2]) / _ph(F32, [2]), TypeError, "same dtype"),
    ("bool_arithmetic", lambda: math_ops.add(_ph(BOOL, [2]), _ph(BOOL, [2])), TypeError, "numeric"),
    ("realdiv_ints", lambda: math_ops.realdiv(_ph(I32, [2]), _ph(I32, [2])), TypeError, "floating"),
    ("less_bool", lambda: _ph(BOOL, [2]) < _ph(BOOL, [2]), TypeError, "real numeric"),
    ("sqrt_int", lambda: unary_ops.sqrt(_ph(I32, [2])), TypeError, "floating"),
    ("logical_float", lambda: _ph(F32, [2]) & _ph(F32, [2]), TypeError, "bool"),
    ("invert_float", lambda: ~_ph(F32, [2]), TypeError, "bool"),
    (
        "add_n_shapes",
        lambda: math_ops.add_n([_ph(F32, [2]), _ph(F32, [3])]),
        ValueError,
        "same shape",
    ),
    ("add_n_empty", lambda: math_ops.add_n([]), ValueError, "non-empty"),
    (
        "matmul_inner",
        lambda: matmul_ops.matmul(_ph(F32, [2, 3]), _ph(F32, [4, 5])),
        ValueError,
        r"MatMul op.*are 3 and 4.*\(2, 3\).*\(4, 5\)",
    ),
    (
        "matmul_inner_transposed",
        lambda: matmul_ops.matmul(
            _ph(F32, [2, 3]), _ph(F32, [2, 3]), transpose_b=True, transpose_a=True
        ),
        ValueError,
        r"are 2 and 3",
    ),
    (
        "batch_matmul_inner",
        lambda: _ph(F32, [5, 2, 3]) @ _ph(F32, [5, 4, 2]),
        ValueError,
        r"BatchMatMulV2 op.*\(5, 2, 3\).*\(5, 4, 2\)",
    ),
    (
        "batch_dims",
        lambda: _ph(F32, [5, 2, 3]) @ _ph(F32, [4, 3, 2]),
        ValueError,
        "batch dimensions",
    ),
    (
        "matmul_rank1",
        lambda: matmul_ops.matmul(_ph(F32, [3]), _ph(F32, [3, 2])),
        ValueError,
        "rank 2",
    ),
    (
        "matmul_dtype",
        lambda: matmul_ops.matmul(_ph(F32, [2, 3]), _ph(F64, [3, 2])),
        TypeError,
        "same dtype",
    ),
    (
        "transpose_and_adjoint",
        lambda: matmul_ops.matmul(
            _ph(F32, [2, 2]), _ph(F32, [2, 2]), transpose_a=True, adjoint_a=True
        ),
        ValueError,
        "only one of",
    ),
    (
        "axis_out_of_range",
        lambda: reduction_ops.reduce_sum(_ph(F32, [2, 3]), axis=2),
        ValueError,
        r"Sum op.*invalid reduction axis 2 for an input of rank 2",
    ),
    (
        "negative_axis_out_of_range",
        lambda: reduction_ops.reduce_mean(_ph(F32, [2, 3]), axis=[0, -3]),
        ValueError,
        "invalid reduction axis -3",
    ),
    (
        "axis_not_static",
        lambda: reduction_ops.reduce_sum(_ph(F32, [2, 3]), axis=_ph(I32, [])),
        ValueError,
        "known when the graph is built",
    ),
    ("axis_float", lambda: reduction_ops.reduce_sum(_ph(F32, [2, 3]), axis=0.5), TypeError, "int"),
    (
        "axis_and_alias",
        lambda: reduction_ops.reduce_sum(_ph(F32, [2, 3]), axis=0, reduction_indices=0),
        ValueError,
        "both",
    ),
    ("reduce_sum_bool", lambda: reduction_ops.reduce_sum(_ph(BOOL, [2])), TypeError, "numeric"),
    ("reduce_any_float", lambda: reduction_ops.reduce_any(_ph(F32, [2])), TypeError, "bool"),
    (
        "argmax_scalar",
        lambda: reduction_ops.argmax(_ph(F32, [])),
        ValueError,
        "invalid reduction axis 0",
    ),
    (
        "argmax_axis",
        lambda: reduction_ops.argmax(_ph(F32, [2, 3]), axis=2),
        ValueError,
        "invalid reduction axis 2",
    ),
    (
        "argmax_output_type",
        lambda: reduction_ops.argmax(_ph(F32, [2]), output_type=F32),
        TypeError,
        "int32 or int64",
    ),
    (
        "cumsum_axis",
        lambda: reduction_ops.cumsum(_ph(F32, [2, 3]), axis=-3),
        ValueError,
        "invalid reduction axis -3",
    ),
]


@pytest.mark.parametrize("build, error, match", [pytest.param(*row[1:], id=row[0]) for row in BAD])
def test_construction_error(build, error, match):
    with pytest.raises(error, match=match):
        build()
