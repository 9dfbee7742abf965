"""Random ops: TF1 seed rules, fresh numbers per run, reproducibility, distributions, shapes."""

import math

import numpy as np
import pytest

import sluice as sl
from sluice.framework.ops.random import random_ops

SAMPLERS = {  # name -> builder(shape, seed, dtype)
    "normal": lambda shape, seed, dtype=sl.float32: random_ops.random_normal(
        shape, seed=seed, dtype=dtype
    ),
    "uniform": lambda shape, seed, dtype=sl.float32: random_ops.random_uniform(
        shape, seed=seed, dtype=dtype
    ),
    "uniform_int": lambda shape, seed, dtype=sl.int32: random_ops.random_uniform(
        shape, minval=-5, maxval=1000, seed=seed, dtype=dtype
    ),
    "truncated": lambda shape, seed, dtype=sl.float32: random_ops.truncated_normal(
        shape, seed=seed, dtype=dtype
    ),
    "shuffle": lambda shape, seed, dtype=sl.float32: random_ops.random_shuffle(
        np.arange(np.prod(shape)).reshape(shape).astype(dtype), seed=seed
    ),
    "multinomial": lambda shape, seed, dtype=None: random_ops.multinomial(
        np.zeros([shape[0], 50], np.float32), shape[1], seed=seed
    ),
}
ALL = pytest.mark.parametrize("name", list(SAMPLERS))


def sample_in_new_graph(name, graph_seed=None, op_seed=None, runs=1, shape=(20, 4)):
    with sl.Graph().as_default():
        if graph_seed is not None:
            sl.set_random_seed(graph_seed)
        t = SAMPLERS[name](list(shape), op_seed)
        with sl.Session() as s:
            return [s.run(t) for _ in range(runs)]


# -- seeds --------------------------------------------------------------------------------------
def test_get_seed_follows_tf1_rules():
    g = sl.get_default_graph()
    first = random_ops.get_seed(None)
    assert first != random_ops.get_seed(None), "no seeds at all: drawn from the OS"
    assert random_ops.get_seed(5) == (random_ops.DEFAULT_GRAPH_SEED, 5)
    sl.set_random_seed(3)
    assert random_ops.get_seed(None) == (3, g._last_id)
    assert random_ops.get_seed(9) == (3, 9)
    assert random_ops.get_seed(2**31 + 4) == (3, 5)
    sl.set_random_seed(0)
    assert random_ops.get_seed(0) == (0, 2**31 - 1), "(0, 0) is avoided, as in TF"


@ALL
@pytest.mark.parametrize("graph_seed, op_seed", [(None, 7), (11, None), (11, 7)])
def test_same_seeds_reproduce_in_a_new_graph(name, graph_seed, op_seed):
    a = sample_in_new_graph(name, graph_seed, op_seed, runs=2)
    b = sample_in_new_graph(name, graph_seed, op_seed, runs=2)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert (a[0] != a[1]).any(), "two runs of one op draw different numbers"


@ALL
def test_different_seeds_differ(name):
    base = sample_in_new_graph(name, 1, 1)[0]
    assert (base != sample_in_new_graph(name, 1, 2)[0]).any(), "op seed"
    assert (base != sample_in_new_graph(name, 2, 1)[0]).any(), "graph seed"
    assert (sample_in_new_graph(name)[0] != sample_in_new_graph(name)[0]).any(), "no seeds"


def test_graph_seed_alone_gives_each_op_its_own_stream():
    sl.set_random_seed(5)
    a, b = random_ops.random_normal([10]), random_ops.random_normal([10])
    with sl.Session() as s:
        va, vb = s.run([a, b])
    assert (va != vb).any()


def test_sessions_restart_the_sequence():
    x = random_ops.random_uniform([5], seed=3)
    with sl.Session() as s:
        first = [s.run(x), s.run(x)]
    with sl.Session() as s:
        again = [s.run(x), s.run(x)]
    np.testing.assert_array_equal(first, again)


# -- distributions ------------------------------------------------------------------------------
N = 40_000


def test_normal_moments():
    x = random_ops.random_normal([N], mean=2.0, stddev=3.0, seed=1)
    with sl.Session() as s:
        v = s.run(x)
    assert abs(v.mean() - 2.0) < 0.05 and abs(v.std() - 3.0) < 0.05
    assert x.op.type == "AddV2" and x.name == "random_normal:0"


def test_truncated_normal_within_two_sigma():
    x = random_ops.truncated_normal([N], mean=-1.0, stddev=0.5, dtype=sl.float64, seed=2)
    with sl.Session() as s:
        v = s.run(x)
    assert v.dtype == np.float64
    assert v.min() > -2.0 and v.max() < 0.0
    # The std of a standard normal cut at +-2 is sqrt(1 - 4 phi(2) / (2 Phi(2) - 1)) ~ 0.8796.
    phi2 = math.exp(-2.0) / math.sqrt(2 * math.pi)
    cut_std = math.sqrt(1 - 4 * phi2 / math.erf(2 / math.sqrt(2)))
    assert abs(v.mean() + 1.0) < 0.01 and abs(v.std() - 0.5 * cut_std) < 0.01


def test_uniform_range_and_moments():
    x = random_ops.random_uniform([N], minval=-1.0, maxval=3.0, seed=3)
    lo, hi = sl.placeholder(sl.float32, []), sl.placeholder(sl.float32, [])
    fed = random_ops.random_uniform([N], minval=lo, maxval=hi, seed=3)
    unit = random_ops.random_uniform([N], dtype=sl.float16, seed=4)
    with sl.Session() as s:
        v, w, u = s.run([x, fed, unit], {lo: 10.0, hi: 12.0})
    assert -1.0 <= v.min() and v.max() < 3.0 and abs(v.mean() - 1.0) < 0.03
    assert abs(v.var() - 16 / 12) < 0.05
    assert 10.0 <= w.min() and w.max() < 12.0 and abs(w.mean() - 11.0) < 0.02
    assert u.dtype == np.float16 and 0.0 <= u.min() and u.max() < 1.0
    assert unit.op.type == "RandomUniform" and unit.name == "random_uniform_2:0"


@pytest.mark.parametrize("dtype", [sl.int32, sl.int64])
def test_uniform_int_covers_the_half_open_range(dtype):
    x = random_ops.random_uniform([N], minval=-3, maxval=4, dtype=dtype, seed=5)
    with sl.Session() as s:
        v = s.run(x)
    assert v.dtype == dtype and x.dtype == dtype
    counts = np.bincount(v + 3, minlength=7)
    assert len(counts) == 7 and (abs(counts / N - 1 / 7) < 0.01).all()


def test_shuffle_permutes_rows():
    value = np.arange(30).reshape(10, 3)
    x = random_ops.random_shuffle(value, seed=6)
    with sl.Session() as s:
        v = s.run(x)
    assert x.shape == [10, 3]
    assert sorted(v[:, 0].tolist()) == list(range(0, 30, 3)) and (v[:, 1] == v[:, 0] + 1).all()
    assert (v != value).any()


def test_multinomial_frequencies():
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]])
    x = random_ops.multinomial(np.log(probs + 1e-30).astype(np.float32), 20_000, seed=7)
    with sl.Session() as s:
        v = s.run(x)
    assert x.dtype == sl.int64 and x.shape == [2, 20_000] and v.shape == (2, 20_000)
    for row, p in zip(v, probs):
        np.testing.assert_allclose(np.bincount(row, minlength=3) / row.size, p, atol=0.015)


# -- shapes and errors --------------------------------------------------------------------------
# Every new (shape, dtype) compiles a sampler (about 0.3 s on CPU): the tests share shapes.
@pytest.mark.parametrize("dtype", [sl.float16, sl.float32, sl.float64], ids=lambda d: d.name)
@pytest.mark.parametrize("name", ["normal", "uniform", "truncated"])
def test_static_shape_and_dtype_match_the_result(name, dtype):
    x = SAMPLERS[name]([20, 4], 1, dtype)
    with sl.Session() as s:
        v = s.run(x)
    assert x.shape == [20, 4] and v.shape == (20, 4)
    assert x.dtype == v.dtype == dtype


def test_shape_known_at_run_time_only():
    shape = sl.placeholder(sl.int32, [2])
    fed = random_ops.random_normal(shape, seed=1)
    scalar = random_ops.random_normal([], seed=1)
    assert fed.shape == [None, None] and scalar.shape == []
    with sl.Session() as s:
        a, b = s.run([fed, scalar], {shape: [20, 4]})
    assert a.shape == (20, 4) and b.shape == ()
    rows = sl.placeholder(sl.int32, [])
    mixed = random_ops.random_uniform([rows, 4], seed=1)
    assert mixed.shape == [None, 4]
    with sl.Session() as s:
        assert s.run(mixed, {rows: 20}).shape == (20, 4)


@pytest.mark.parametrize(
    "build, error, match",
    [
        (lambda: random_ops.random_uniform([3], dtype=sl.int32), ValueError, "maxval"),
        (
            lambda: random_ops.random_uniform([3], 5, 5, dtype=sl.int32),
            ValueError,
            "minval < maxval",
        ),
        (lambda: random_ops.random_normal([3], dtype=sl.int32), TypeError, "floating"),
        (lambda: random_ops.truncated_normal([[3, 2]]), ValueError, "rank 1"),
        (
            lambda: random_ops.random_normal(sl.placeholder(sl.float32, [2])),
            TypeError,
            "int32 or int64",
        ),
        (lambda: random_ops.random_normal(sl.TensorShape([None, 2])), ValueError, "fully defined"),
        (lambda: random_ops.random_normal([None, 2]), ValueError, "every dimension"),
        (
            lambda: random_ops.random_normal([3], mean=sl.constant(1.0, sl.float64)),
            TypeError,
            "dtype",
        ),
        (lambda: random_ops.multinomial(np.zeros([3], np.float32), 2), ValueError, "rank 2"),
        (
            lambda: random_ops.multinomial(
                np.zeros([1, 3], np.float32), 2, output_dtype=sl.float32
            ),
            TypeError,
            "int32 or int64",
        ),
    ],
)
def test_construction_errors(build, error, match):
    with pytest.raises(error, match=match):
        build()


def test_random_ops_are_stateful_and_not_differentiable():
    from sluice.framework.ir import registry

    for op_type in [
        "RandomStandardNormal",
        "RandomUniform",
        "RandomUniformInt",
        "TruncatedNormal",
        "RandomShuffle",
        "Multinomial",
    ]:
        assert registry.get_op_def(op_type).stateful
        assert registry.get_gradient(op_type) == registry.NOT_DIFFERENTIABLE
