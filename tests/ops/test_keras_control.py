"""`sl.ops` control flow and writes (Keras's `ops/core.py`): switch, map, vectorized_map,
associative_scan, custom_gradient, scatter, scatter_update, slice_update, saturate_cast."""

import numpy as np
import pytest

import sluice as sl
from tests.ops.table import check_case_gradients, check_graph, check_values

ops = sl.ops
RNG = np.random.default_rng(0)
X = RNG.normal(size=(5, 3))
IDX = np.array([[0], [2], [0]])
UPD = RNG.normal(size=(3, 3))


def _scatter_max(x, ids, upd, pick):
    out = x.copy()
    touched = {}
    for i, u in zip(ids[:, 0], upd):
        touched[i] = u if i not in touched else pick(touched[i], u)
    for i, u in touched.items():
        out[i] = pick(out[i], u)
    return out


def _mul(x, ids, upd):
    out = x.copy()
    for i, u in zip(ids[:, 0], upd):
        out[i] = out[i] * u
    return out


CASES = [
    ("switch", lambda i, x: ops.switch(i, [lambda a: a + 1, lambda a: a * 2], x), (1, X), {},
     X * 2),
    ("switch_clamped", lambda i, x: ops.switch(i, [lambda a: a + 1, lambda a: a * 2], x), (-3, X),
     {}, X + 1),
    ("map", lambda x: ops.map(lambda r: ops.sum(r * r), x), (X,), {}, (X * X).sum(1)),
    ("map_structure", lambda x: ops.map(lambda d: {"s": d["a"] + d["b"]}, {"a": x, "b": x})["s"],
     (X,), {}, 2 * X),
    ("vectorized_map", lambda x: ops.vectorized_map(lambda r: ops.max(r), x), (X,), {}, X.max(1)),
    ("associative_scan_add", lambda x: ops.associative_scan(lambda a, b: a + b, x), (X,), {},
     np.cumsum(X, 0)),
    ("associative_scan_mul_axis1", lambda x: ops.associative_scan(ops.multiply, x, axis=1), (X,),
     {}, np.cumprod(X, 1)),
    ("associative_scan_reverse", lambda x: ops.associative_scan(ops.add, x, reverse=True), (X,),
     {}, np.cumsum(X[::-1], 0)[::-1]),
    ("associative_scan_max_4", lambda x: ops.associative_scan(ops.maximum, x), (X[:4],), {},
     np.maximum.accumulate(X[:4], 0)),
    ("scatter", ops.scatter, (IDX, UPD, (4, 3)), {},
     np.stack([UPD[0] + UPD[2], np.zeros(3), UPD[1], np.zeros(3)])),
    ("scatter_update", ops.scatter_update, (X, IDX[:2], UPD[:2]), {},
     np.concatenate([UPD[:1], X[1:2], UPD[1:2], X[3:]])),
    ("scatter_update_add", ops.scatter_update, (X, IDX, UPD), {"reduction": "add"},
     _scatter_max(X, IDX, UPD, np.add)),
    ("scatter_update_max", ops.scatter_update, (X, IDX, UPD), {"reduction": "max"},
     _scatter_max(X, IDX, UPD, np.maximum)),
    ("scatter_update_min", ops.scatter_update, (X, IDX, UPD), {"reduction": "min"},
     _scatter_max(X, IDX, UPD, np.minimum)),
    ("scatter_update_mul", ops.scatter_update, (X, IDX, UPD), {"reduction": "mul"},
     _mul(X, IDX, UPD)),
    ("slice_update", ops.slice_update, (X, (1, 1), UPD[:2, :2]), {},
     np.concatenate([X[:1], np.c_[X[1:3, :1], UPD[:2, :2]], X[3:]])),
    ("slice_update_clamped", ops.slice_update, (X, (4, 2), UPD[:2, :2]), {},
     np.concatenate([X[:3], np.c_[X[3:, :1], UPD[:2, :2]]])),
    ("saturate_cast", ops.saturate_cast, (np.array([-1.5, 3.7, 300.0]), "uint8"), {},
     np.array([0, 3, 255], np.uint8)),
    ("saturate_cast_int", ops.saturate_cast, (np.array([-70000, 5, 40000]), "int16"), {},
     np.array([-32768, 5, 32767], np.int16)),
]  # fmt: skip


@pytest.mark.parametrize(
    "fn, args, kwargs, want", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_on_values(fn, args, kwargs, want):
    check_values(fn, args, kwargs, want)


@pytest.mark.slow  # one graph of every case (the values run the same graph code on constants)
def test_on_graph_tensors():
    check_graph(CASES)


def test_switch_with_a_fed_index_builds_conds():
    i = sl.placeholder(sl.int32, [])
    x = sl.constant(X)
    y = ops.switch(i, [lambda a: a + 1, lambda a: a * 2, lambda a: a - 1], x)
    with sl.Session() as sess:
        for index, want in ((0, X + 1), (1, 2 * X), (2, X - 1), (9, X - 1), (-1, X + 1)):
            np.testing.assert_allclose(sess.run(y, {i: index}), want)


@pytest.mark.slow  # central differences: a session run per input element
@pytest.mark.parametrize(
    "fn, args, wrt",
    [
        (lambda x: ops.associative_scan(ops.multiply, x), [X], [0]),
        (lambda x: ops.map(lambda r: ops.sum(r * r), x), [X], [0]),
        (lambda x, u: ops.scatter_update(x, IDX, u, reduction="max"), [X, UPD], [0, 1]),
        (lambda x, u: ops.slice_update(x, (1, 1), u), [X, UPD[:2, :2]], [0, 1]),
    ],
    ids=["associative_scan", "map", "scatter_update_max", "slice_update"],
)
def test_gradients(fn, args, wrt):
    check_case_gradients(fn, args, {}, wrt)


def test_custom_gradient_sets_the_gradient_of_graph_code_and_computes_values():
    @ops.custom_gradient
    def log1pexp(x):
        e = ops.exp(x)

        def grad(upstream):
            return ops.multiply(upstream, 1.0 - 1.0 / ops.add(1, e))

        return ops.log(1 + e), grad

    x = sl.constant([0.0, 100.0])
    (g,) = sl.gradients(log1pexp(x), [x])
    np.testing.assert_allclose(g.numpy(), [0.5, 1.0])  # exp(100) overflows: no NaN
    got = log1pexp(np.array([0.0, 1.0]))
    assert isinstance(got, sl.Array)
    np.testing.assert_allclose(got, np.log1p(np.exp([0.0, 1.0])))


def test_bad_arguments_say_what_is_wrong():
    with pytest.raises(ValueError, match="branches"):
        ops.switch(0, [])
    with pytest.raises(ValueError, match="reduction"):
        ops.scatter_update(X, IDX, UPD, reduction="mean")
    with pytest.raises(ValueError, match="same known length"):
        ops.associative_scan(lambda a, b: (a[0] + b[0], a[1] + b[1]), (X, X[:2]))
