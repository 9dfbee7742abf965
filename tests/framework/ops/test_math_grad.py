"""Gradients of the math ops (math_ops, unary_ops, matmul_ops, reduction_ops) against float64
central differences, plus what differences cannot check: ties, x = 0 in Pow, integer inputs,
ops without gradients, complex inputs, run-time broadcast axes, both engines.

Each row of the table (`_cases`) builds a graph from placeholders of the given inputs; rows marked
"unknown" hide static dimensions (or the rank) with `placeholder_with_default`, so the gradient
must work out shapes and broadcast axes at run time.
"""

from __future__ import annotations

import numpy as np
import pytest

import sluice as sl
from sluice.framework.autodiff.gradients import gradients
from sluice.framework.ir import registry
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_grad_util, math_ops
from sluice.framework.session import SessionConfig
from sluice.testing import check_gradients

RNG = np.random.default_rng(1234)
TOLERANCE = {"rtol": 1e-6, "atol": 1e-8}


def _values(shape, domain: str = "any") -> np.ndarray:
    """float64 test values from a domain where the op is differentiable (no ties, no kinks)."""
    sign = RNG.choice([-1.0, 1.0], size=shape)
    return {
        "any": lambda: RNG.uniform(-2, 2, shape),
        "pos": lambda: RNG.uniform(0.5, 2, shape),
        "nonzero": lambda: sign * RNG.uniform(0.5, 2, shape),
        "unit": lambda: RNG.uniform(-1, 1, shape),
    }[domain]()


def _unknown(x, rank_known: bool = True):
    """`x` with its static dimensions (or, with rank_known=False, its rank) hidden."""
    return sl.placeholder_with_default(x, [None] * x.shape.rank if rank_known else None)


def _apply(op_type: str):
    """A build function for a one-input op without its own wrapper (Conj of a real tensor)."""
    return lambda x: core_ops.apply_op(op_type, [x]).outputs[0]


# -- the table ----------------------------------------------------------------------------------
UNARY = {  # name: (build, domain)
    "neg": (sl.negative, "any"),
    "abs": (sl.abs, "nonzero"),
    "sign": (sl.sign, "nonzero"),
    "square": (sl.square, "any"),
    "conj": (_apply("Conj"), "any"),
    "reciprocal": (sl.reciprocal, "nonzero"),
    "sqrt": (sl.sqrt, "pos"),
    "rsqrt": (sl.rsqrt, "pos"),
    "exp": (sl.exp, "any"),
    "expm1": (sl.expm1, "any"),
    "log": (sl.log, "pos"),
    "log1p": (sl.log1p, "pos"),
    "sin": (sl.sin, "any"),
    "cos": (sl.cos, "any"),
    "tan": (sl.tan, "unit"),
    "tanh": (sl.tanh, "any"),
    "sigmoid": (sl.sigmoid, "any"),
    "erf": (sl.erf, "any"),
}

BINARY = {  # name: (build, domain of x, domain of y)
    "add": (sl.add, "any", "any"),
    "sub": (sl.subtract, "any", "any"),
    "mul": (sl.multiply, "any", "any"),
    "realdiv": (math_ops.realdiv, "any", "nonzero"),
    "floormod": (sl.floormod, "pos", "pos"),
    "pow": (sl.pow, "pos", "any"),
    "maximum": (sl.maximum, "any", "any"),
    "minimum": (sl.minimum, "any", "any"),
    "squared_difference": (sl.squared_difference, "any", "any"),
}

BROADCAST_SHAPES = {  # id: (shape of x, shape of y)
    "same": ((2, 3), (2, 3)),
    "column_row": ((3, 1), (1, 4)),
    "scalar_matrix": ((), (2, 3)),
    "matrix_vector": ((2, 3), (3,)),
    "rank3": ((2, 1, 3), (4, 1)),
}

REDUCTIONS = {  # name: (wrapper, domain)
    "sum": (sl.reduce_sum, "any"),
    "mean": (sl.reduce_mean, "any"),
    "max": (sl.reduce_max, "any"),
    "min": (sl.reduce_min, "any"),
    "prod": (sl.reduce_prod, "nonzero"),
}

REDUCTION_AXES = {  # id: (axis, keepdims)
    "all": (None, False),
    "all_keep": (None, True),
    "axis0": (0, False),
    "last_keep": (-1, True),
    "two_axes": ([0, 2], False),
}


def _cases():
    for name, (fn, domain) in UNARY.items():
        yield pytest.param(fn, [_values((2, 3), domain)], id=f"{name}")
    yield pytest.param(lambda x: sl.tanh(_unknown(x)), [_values((2, 3))], id="tanh-unknown")
    for name, (fn, dx, dy) in BINARY.items():
        for shape_id, (sx, sy) in BROADCAST_SHAPES.items():
            if name not in ("add", "mul") and shape_id not in ("column_row", "scalar_matrix"):
                continue  # broadcasting is shared code: two shapes suffice for the other ops
            yield pytest.param(fn, [_values(sx, dx), _values(sy, dy)], id=f"{name}-{shape_id}")
        yield pytest.param(
            lambda x, y, fn=fn: fn(_unknown(x), _unknown(y)),
            [_values((3, 1), dx), _values((1, 4), dy)],
            id=f"{name}-unknown",
        )
    yield pytest.param(
        lambda x, y: _unknown(x, rank_known=False) * y,
        [_values((2, 3)), _values((3,))],
        id="mul-unknown_rank",
    )
    yield pytest.param(
        sl.pow, [np.array([0.0, 0.0, 1.5]), np.array([2.0, 3.0, 2.5])], id="pow-x_zero"
    )
    for n in (1, 2, 4):
        yield pytest.param(
            lambda *xs: sl.add_n(list(xs)), [_values((2, 3)) for _ in range(n)], id=f"add_n-{n}"
        )
    for name, (fn, domain) in REDUCTIONS.items():
        for axes_id, (axis, keepdims) in REDUCTION_AXES.items():
            yield pytest.param(
                lambda x, fn=fn, axis=axis, keepdims=keepdims: fn(x, axis, keepdims=keepdims),
                [_values((2, 3, 4), domain)],
                id=f"{name}-{axes_id}",
            )
        yield pytest.param(
            lambda x, fn=fn: fn(_unknown(x), axis=1),
            [_values((2, 3, 4), domain)],
            id=f"{name}-unknown",
        )
        yield pytest.param(
            lambda x, fn=fn: fn(_unknown(x, rank_known=False), axis=[0, -1]),
            [_values((2, 3, 4), domain)],
            id=f"{name}-unknown_rank",
        )
    prod_zeros = np.array([[0.0, 1.5, -2.0], [0.0, 0.0, 3.0], [1.0, 2.0, -0.5]])
    yield pytest.param(lambda x: sl.reduce_prod(x, axis=1), [prod_zeros], id="prod-zeros")
    yield pytest.param(lambda x: sl.reduce_prod(x), [prod_zeros[[0, 2]]], id="prod-one_zero_all")
    for exclusive in (False, True):
        for reverse in (False, True):
            yield pytest.param(
                lambda x, e=exclusive, r=reverse: sl.cumsum(x, axis=1, exclusive=e, reverse=r),
                [_values((2, 4))],
                id=f"cumsum-exclusive_{exclusive}-reverse_{reverse}",
            )
    yield pytest.param(
        lambda x: sl.cumsum(_unknown(x), axis=-1, reverse=True),
        [_values((2, 3))],
        id="cumsum-unknown",
    )
    for ta in (False, True):
        for tb in (False, True):
            a = _values((3, 2) if ta else (2, 3))
            b = _values((4, 3) if tb else (3, 4))
            yield pytest.param(
                lambda a, b, ta=ta, tb=tb: sl.matmul(a, b, transpose_a=ta, transpose_b=tb),
                [a, b],
                id=f"matmul-ta_{ta}-tb_{tb}",
            )
            yield pytest.param(
                lambda a, b, ta=ta, tb=tb: sl.matmul(a, b, adjoint_a=ta, adjoint_b=tb),
                [np.stack([a, -a]), np.stack([b, 2 * b])],
                id=f"batch_matmul-adj_x_{ta}-adj_y_{tb}",
            )
    yield pytest.param(
        sl.matmul, [_values((2, 1, 2, 3)), _values((3, 3, 2))], id="batch_matmul-broadcast"
    )
    yield pytest.param(
        sl.matmul, [_values((2, 3)), _values((2, 3, 2))], id="batch_matmul-matrix_by_batch"
    )
    yield pytest.param(
        lambda a, b: sl.matmul(_unknown(a), _unknown(b), transpose_b=True),
        [_values((2, 1, 2, 3)), _values((3, 4, 3))],
        id="batch_matmul-unknown",
    )
    yield pytest.param(
        lambda x: gradients(sl.tanh(x) * x, x)[0], [_values((2, 3))], id="second_order-tanh_mul"
    )
    yield pytest.param(_loop, [_values((2, 3), "pos"), _values((1,), "pos")], id="while_loop")


def _loop(x, y):
    """A while loop over ops of unknown shape: its gradient runs in a backward loop, which
    reads saved forward values and shapes."""
    x, y = _unknown(x), _unknown(y)

    def body(i, acc):
        acc = sl.tanh(acc * y) + sl.reduce_max(acc, 1, keepdims=True) * sl.reduce_prod(acc, 0)
        return i + 1, acc

    return sl.while_loop(lambda i, _: i < 3, body, [sl.constant(0), x], maximum_iterations=3)[1]


@pytest.mark.parametrize("build, inputs", list(_cases()))
def test_gradient_matches_central_differences(build, inputs):
    check_gradients(build, inputs, **TOLERANCE)


# -- rules central differences cannot check -----------------------------------------------------
def _grads(y, xs, feed=None):
    gs = gradients(y, xs)
    with sl.Session() as sess:
        return sess.run(gs, feed)


def test_textbook_example():
    x1, x2 = sl.constant(3.0, sl.float64), sl.constant(2.0, sl.float64)
    f = (sl.exp(x1) + x2) * (x2 + 1.0)
    d1, d2 = gradients(f, [x1, x2])
    with sl.Session() as sess:
        value, g1, g2 = sess.run([f, d1, d2])
    assert value == pytest.approx(66.2566, abs=1e-4)
    assert g1 == pytest.approx(60.2566, abs=1e-4)
    assert g2 == pytest.approx(25.0855, abs=1e-4)


@pytest.mark.parametrize(
    "reduce, x, want",
    [
        (sl.reduce_max, [[1.0, 3.0, 3.0], [2.0, 0.0, -1.0]], [[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]]),
        (sl.reduce_min, [[1.0, 1.0, 1.0], [2.0, 0.0, 5.0]], [[1 / 3, 1 / 3, 1 / 3], [0, 1, 0]]),
    ],
)
def test_max_and_min_split_the_gradient_among_ties(reduce, x, want):
    x = sl.constant(x, sl.float64)
    (dx,) = _grads(reduce(x, axis=1), [x])
    np.testing.assert_allclose(dx, want)


def test_maximum_and_minimum_give_ties_to_x():
    x, y = sl.constant([1.0, 2.0], sl.float64), sl.constant([1.0, 3.0], sl.float64)
    np.testing.assert_array_equal(_grads(sl.maximum(x, y), [x, y]), [[1, 0], [0, 1]])
    np.testing.assert_array_equal(_grads(sl.minimum(x, y), [x, y]), [[1, 1], [0, 0]])


def test_pow_gradient_of_the_exponent_is_zero_where_the_base_is_not_positive():
    x, y = sl.constant([0.0, -2.0, 0.0], sl.float64), sl.constant([2.0, 2.0, 0.5], sl.float64)
    dx, dy = _grads(sl.pow(x, y), [x, y])
    np.testing.assert_array_equal(dy, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(dx, [0.0, -4.0, np.inf])  # 0.5 * 0^-0.5, as in TF


@pytest.mark.parametrize(
    "build",
    [
        lambda x: x * x,
        lambda x: sl.pow(x, x),
        lambda x: sl.reduce_mean(x),
        lambda x: sl.reduce_max(x),
        lambda x: sl.reduce_prod(x),
        lambda x: sl.abs(x),
        lambda x: sl.cumsum(x),
    ],
    ids=["mul", "pow", "mean", "max", "prod", "abs", "cumsum"],
)
def test_integer_inputs_get_none(build):
    x = sl.constant([1, 2, 3])
    assert gradients(build(x), [x]) == [None]


@pytest.mark.parametrize("build", [sl.floor, sl.ceil, sl.round, lambda x: x // 2.0])
def test_piecewise_constant_ops_give_none(build):
    x = sl.constant([0.5, 1.5], sl.float64)
    assert gradients(build(x), [x]) == [None]


def test_sign_gives_zeros():
    x = sl.constant([-0.5, 1.5], sl.float64)
    np.testing.assert_array_equal(_grads(sl.sign(x), [x])[0], [0.0, 0.0])


NOT_DIFFERENTIABLE = [
    *["Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual"],
    *["LogicalAnd", "LogicalOr", "LogicalNot", "Any", "All", "ArgMax", "ArgMin"],
    *["FloorDiv", "Round", "Floor", "Ceil", "BroadcastGradientArgs"],
]
DIFFERENTIABLE = [
    *["AddV2", "Sub", "Mul", "RealDiv", "FloorMod", "Pow", "Maximum", "Minimum"],
    *["SquaredDifference", "AddN", "Neg", "Abs", "Sign", "Square", "Conj", "Reciprocal"],
    *["Sqrt", "Rsqrt", "Exp", "Expm1", "Log", "Log1p", "Sin", "Cos", "Tan", "Tanh", "Sigmoid"],
    *["Erf", "MatMul", "BatchMatMulV2", "Sum", "Mean", "Max", "Min", "Prod", "Cumsum"],
    "DynamicSum",
]


@pytest.mark.parametrize("op_type", DIFFERENTIABLE + NOT_DIFFERENTIABLE)
def test_every_math_op_has_a_gradient_or_is_marked(op_type):
    grad = registry.get_gradient(op_type)
    if op_type in NOT_DIFFERENTIABLE:
        assert grad == registry.NOT_DIFFERENTIABLE
    else:
        assert callable(grad)


# -- broadcast axes -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "s0, s1, want",
    [
        ((2, 3), (2, 3), ([], [])),
        ((2, 1, 3), (4, 3), ([1], [0])),
        ((), (2, 3), ([0, 1], [])),
        ((3, 1), (1, 4), ([1], [0])),
        ((1, 1), (1,), ([], [0])),
    ],
)
def test_broadcast_gradient_args(s0, s1, want):
    assert math_grad_util.broadcast_axes(s0, s1) == want
    ops = math_grad_util.broadcast_gradient_args(
        sl.constant(list(s0), sl.int32), sl.constant(list(s1), sl.int32)
    )
    with sl.Session() as sess:
        got = sess.run(list(ops))
    assert [list(r) for r in got] == [list(w) for w in want]
    assert all(r.dtype == np.int32 for r in got)


def test_broadcast_gradient_args_rejects_shapes_that_do_not_broadcast():
    with pytest.raises(ValueError, match="do not broadcast"):
        math_grad_util.broadcast_axes((2, 3), (4, 3))


def _op_types() -> set:
    return {op.type for op in sl.get_default_graph().get_operations()}


def test_static_shapes_settle_broadcast_axes_without_run_time_ops():
    x = sl.placeholder(sl.float64, [None, 3])
    y = sl.placeholder(sl.float64, [3])
    dx, dy = gradients(x * y, [x, y])
    assert {"BroadcastGradientArgs", "DynamicSum"}.isdisjoint(_op_types())
    assert dx.shape.as_list() == [None, 3] and dy.shape.as_list() == [3]


@pytest.mark.parametrize("engine", ["compiled", "interpreted"])
def test_unknown_dims_use_broadcast_gradient_args(engine):
    x = sl.placeholder(sl.float64, [None, None])
    y = sl.placeholder(sl.float64, [None])
    dx, dy = gradients(x * y, [x, y])
    assert "BroadcastGradientArgs" in _op_types()
    xv, yv = np.ones((2, 3)), np.arange(3.0)
    with sl.Session(config=SessionConfig(engine=engine)) as sess:
        gx, gy = sess.run([dx, dy], {x: xv, y: yv})
        np.testing.assert_array_equal(gx, np.broadcast_to(yv, (2, 3)))
        np.testing.assert_array_equal(gy, [2.0, 2.0, 2.0])
        gx, gy = sess.run([dx, dy], {x: xv, y: [5.0]})  # now y is broadcast along axis 1
        np.testing.assert_array_equal(gx, np.full((2, 3), 5.0))
        np.testing.assert_array_equal(gy, [6.0])


@pytest.mark.parametrize("engine", ["compiled", "interpreted"])
def test_reduction_gradient_of_unknown_rank(engine):
    x = sl.placeholder(sl.float64, None)
    (dx,) = gradients(sl.reduce_max(x, axis=[0, -1]), [x])
    xv = np.array([[[1.0, 5.0], [2.0, 2.0]], [[5.0, 0.0], [1.0, 3.0]]])
    with sl.Session(config=SessionConfig(engine=engine)) as sess:
        got = sess.run(dx, {x: xv})
    want = [[[0.0, 0.5], [0.0, 0.0]], [[0.5, 0.0], [0.0, 1.0]]]  # max 5 twice in column 0
    np.testing.assert_array_equal(got, want)


# -- complex inputs -----------------------------------------------------------------------------
COMPLEX_CASES = {  # id: (build, input shapes)
    "mul": (lambda a, b: a * b, [(2, 3), (3,)]),
    "realdiv": (lambda a, b: a / b, [(2, 3), (3,)]),
    "pow": (sl.pow, [(3,), (3,)]),
    "exp": (sl.exp, [(3,)]),
    "rsqrt": (sl.rsqrt, [(3,)]),
    "tanh": (sl.tanh, [(3,)]),
    "prod": (lambda a: sl.reduce_prod(a, 1), [(2, 3)]),
    "matmul-transpose": (lambda a, b: sl.matmul(a, b, transpose_a=True), [(2, 2), (2, 3)]),
    "batch_matmul-adjoint": (lambda a, b: sl.matmul(a, b, adjoint_b=True), [(2, 2, 3), (2, 3)]),
}


@pytest.mark.parametrize("build, shapes", list(COMPLEX_CASES.values()), ids=list(COMPLEX_CASES))
def test_complex_gradients_follow_tensorflow(build, shapes):
    """TF's convention: for a real loss L, the gradient of z = a + ib is dL/da + i dL/db. With
    output gradient w, L = Re(sum(conj(w) * y))."""
    values = [RNG.uniform(0.5, 1.5, s) + 1j * RNG.uniform(-1, 1, s) for s in shapes]
    zs = [core_ops.placeholder(np.complex128, s) for s in shapes]
    y = build(*zs)
    w = RNG.normal(size=y.shape.as_list()) + 1j * RNG.normal(size=y.shape.as_list())
    grads = gradients(y, zs, grad_ys=sl.constant(w))
    with sl.Session() as sess:
        symbolic = sess.run(grads, dict(zip(zs, values)))

        def loss(vs):
            return np.sum(np.real(np.conj(w) * sess.run(y, dict(zip(zs, vs)))))

        for i, value in enumerate(values):
            numeric = np.zeros_like(value)
            for k in range(value.size):
                for unit in (1.0, 1j):
                    step = np.zeros(value.size, complex)
                    step[k] = 1e-6 * unit
                    up, down = list(values), list(values)
                    up[i], down[i] = (
                        value + step.reshape(value.shape),
                        value - step.reshape(value.shape),
                    )
                    numeric.flat[k] += unit * (loss(up) - loss(down)) / 2e-6
            np.testing.assert_allclose(symbolic[i], numeric, rtol=1e-6, atol=1e-8)


def test_abs_of_complex_gives_a_complex_gradient():
    z = sl.constant([1 + 2j, -0.5 + 0.3j], np.complex128)
    w = np.array([0.7, -1.3])
    (dz,) = gradients(sl.abs(z), [z], grad_ys=sl.constant(w))
    with sl.Session() as sess:
        got = sess.run(dz)
    np.testing.assert_allclose(
        got, w * np.array([1 + 2j, -0.5 + 0.3j]) / np.abs([1 + 2j, -0.5 + 0.3j])
    )
