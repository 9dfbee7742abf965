"""sl.map_fn, sl.scan, sl.foldl, sl.foldr as TF1's functional_ops_test checks them: values at
1e-6 against NumPy, nested structures, error types and gradients, in both engines."""

import collections

import numpy as np
import pytest

import sluice as sl
from sluice.testing import check_gradients

RNG = np.random.default_rng(1)
X = np.arange(1.0, 7.0).reshape(3, 2)


@pytest.fixture(params=["interpreted", "compiled"])
def run(request):
    def run(fetches, feed_dict=None):
        with sl.Session(config=sl.SessionConfig(engine=request.param)) as s:
            return s.run(fetches, feed_dict)

    return run


def test_map_fn_values_and_structures(run):
    x = sl.constant(X)
    squares = sl.map_fn(lambda r: r * r, x)
    pair = sl.map_fn(
        lambda t: (t[0] + t[1], sl.cast(t[0], sl.int32)), (x, 2.0 * x), dtype=(sl.float64, sl.int32)
    )
    Point = collections.namedtuple("Point", "a b")
    named = sl.map_fn(lambda p: Point(p.b, p.a * 2.0), Point(x, x + 1.0))
    assert isinstance(pair, tuple) and len(pair) == 2 and isinstance(named, Point)
    assert squares.shape.as_list() == [3, 2]
    values = run([squares, pair, named])
    np.testing.assert_allclose(values[0], X * X, atol=1e-6)
    np.testing.assert_allclose(values[1][0], 3 * X, atol=1e-6)
    np.testing.assert_array_equal(values[1][1], X.astype(np.int32))
    assert values[1][1].dtype == np.int32
    np.testing.assert_allclose(values[2].a, X + 1.0, atol=1e-6)
    np.testing.assert_allclose(values[2].b, 2.0 * X, atol=1e-6)


def test_scan_foldl_foldr_values(run):
    x = sl.constant(X)
    fetches = {
        "scan": sl.scan(lambda a, r: a + r, x),
        "reverse": sl.scan(lambda a, r: a + r, x, reverse=True),
        "init": sl.scan(lambda a, r: a * r, x, initializer=sl.ones([2], sl.float64)),
        "nested": sl.scan(
            lambda a, r: (a[0] + r, a[1] * 2.0),
            x,
            initializer=(sl.zeros([2], sl.float64), sl.constant(1.0, sl.float64)),
        ),
        "foldl": sl.foldl(lambda a, r: a * 2.0 + r, x),
        "foldl_init": sl.foldl(
            lambda a, r: a - r, x, initializer=sl.constant([10.0, 10.0], sl.float64)
        ),
        "foldr": sl.foldr(lambda a, r: a * 2.0 + r, x),
        "foldr_tuple": sl.foldr(
            lambda a, r: (a[0] + r[0], a[1] * r[1]),
            (x, x),
            initializer=(sl.zeros([2], sl.float64), sl.ones([2], sl.float64)),
        ),
    }
    v = run(fetches)
    np.testing.assert_allclose(v["scan"], np.cumsum(X, 0), atol=1e-6)
    np.testing.assert_allclose(v["reverse"], np.cumsum(X[::-1], 0)[::-1], atol=1e-6)
    np.testing.assert_allclose(v["init"], np.cumprod(X, 0), atol=1e-6)
    assert isinstance(v["nested"], tuple)
    np.testing.assert_allclose(v["nested"][0], np.cumsum(X, 0), atol=1e-6)
    np.testing.assert_allclose(v["nested"][1], [2.0, 4.0, 8.0], atol=1e-6)
    np.testing.assert_allclose(v["foldl"], (X[0] * 2 + X[1]) * 2 + X[2], atol=1e-6)
    np.testing.assert_allclose(v["foldl_init"], 10.0 - X.sum(0), atol=1e-6)
    np.testing.assert_allclose(v["foldr"], (X[2] * 2 + X[1]) * 2 + X[0], atol=1e-6)
    np.testing.assert_allclose(v["foldr_tuple"][0], X.sum(0), atol=1e-6)
    np.testing.assert_allclose(v["foldr_tuple"][1], X.prod(0), atol=1e-6)


def test_unknown_length_elems(run):
    x = sl.placeholder(sl.float64, [None, 2])
    doubled = sl.map_fn(lambda r: 2.0 * r, x)
    total = sl.foldl(lambda a, r: a + r, x, initializer=sl.zeros([2], sl.float64))
    d, t = run([doubled, total], {x: X})
    np.testing.assert_allclose(d, 2 * X, atol=1e-6)
    np.testing.assert_allclose(t, X.sum(0), atol=1e-6)


def test_map_fn_gradient():
    check_gradients(lambda x: sl.map_fn(lambda r: sl.sin(r) * r, x), [RNG.normal(size=[3, 2])])


def test_scan_gradient():
    check_gradients(
        lambda x, a: sl.scan(lambda acc, r: sl.tanh(acc * r), x, initializer=a),
        [RNG.normal(size=[3, 2]), RNG.normal(size=[2])],
    )


@pytest.mark.slow
def test_reverse_scan_gradient():
    check_gradients(
        lambda x: sl.scan(lambda acc, r: acc * r, x, reverse=True),
        [RNG.normal(size=[3, 2])],
        session_config=sl.SessionConfig(engine="interpreted"),
    )


def test_foldl_gradient():
    check_gradients(
        lambda x, w: sl.foldl(lambda a, r: sl.tanh(a * w + r), x),
        [RNG.normal(size=[3, 2]), RNG.normal(size=[2])],
    )


@pytest.mark.slow
def test_foldr_gradient():
    check_gradients(
        lambda x: sl.foldr(lambda a, r: a * r, x, initializer=sl.ones([2], sl.float64)),
        [RNG.normal(size=[3, 2])],
    )


def test_errors():
    x = sl.constant(X)
    with pytest.raises(TypeError, match="fn must be callable"):
        sl.map_fn(3, x)
    with pytest.raises(ValueError, match="1\\+ dimensional"):
        sl.map_fn(lambda r: r, sl.constant(1.0))
    with pytest.raises(ValueError, match="same nested structure"):
        sl.map_fn(lambda r: (r, r), x)
    with pytest.raises(ValueError, match="same nested structure"):
        sl.scan(lambda a, r: (a, a), x)
    empty = sl.placeholder(sl.float32, [None])
    folded = sl.foldl(lambda a, r: a + r, empty)
    for engine in ("interpreted", "compiled"):
        with sl.Session(config=sl.SessionConfig(engine=engine)) as s:
            with pytest.raises(sl.errors.InvalidArgumentError, match="read from index 0"):
                s.run(folded, {empty: np.zeros([0], np.float32)})


def test_fn_returning_none_is_an_error_not_nans():
    elems = sl.constant([1.0, 2.0])
    with pytest.raises(ValueError, match="map_fn: fn returned None"):
        sl.map_fn(lambda e: None, elems)
    with pytest.raises(ValueError, match="scan: fn returned None"):
        sl.scan(lambda a, e: None, elems, initializer=sl.constant(0.0))
