"""`sl.random` (issue 17, item 4): TF1.15's `tf.random` names, TF1's seed rules, the shapes of
gamma/poisson draws, stateless determinism, and the gamma sample's reparameterized gradient."""

import math

import numpy as np
import pytest
from scipy import special

import sluice as sl

ENGINES = ["compiled", "interpreted"]


def test_the_namespace_aliases_the_tf1_ops():
    assert sl.random.uniform is sl.random_uniform
    assert sl.random.normal is sl.random_normal
    assert sl.random.truncated_normal is sl.truncated_normal
    assert sl.random.shuffle is sl.random_shuffle
    assert sl.random.set_random_seed is sl.set_random_seed
    assert sl.random.uniform_candidate_sampler is sl.nn.uniform_candidate_sampler
    for name in sl.random.__all__:
        assert callable(getattr(sl.random, name)), name


def draw_twice(build, engine="compiled"):
    """Two draws of `build()` in two fresh graphs seeded alike."""
    values = []
    for _ in range(2):
        with sl.Graph().as_default():
            sl.random.set_random_seed(7)
            t = build()
            with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
                values.append(sess.run([t, t]))
    return values


@pytest.mark.parametrize("engine", ENGINES)
def test_graph_seed_repeats_sequences_across_graphs(engine):
    (a1, a2), (b1, b2) = draw_twice(lambda: sl.random.categorical([[0.0, 1.0, 2.0]], 6), engine)
    np.testing.assert_array_equal(a1, b1)
    np.testing.assert_array_equal(a2, b2)
    assert a1.dtype == np.int64 and a1.shape == (1, 6)


def test_categorical_dtype_and_frequencies():
    logits = np.log([[0.2, 0.8], [0.9, 0.1]]).astype(np.float32)
    draws = sl.random.categorical(logits, 4000, dtype=sl.int32, seed=1)
    assert draws.dtype == sl.int32 and draws.shape.as_list() == [2, 4000]
    got = sl.Session().run(draws)
    np.testing.assert_allclose(got.mean(axis=1), [0.8, 0.1], atol=0.03)


def test_shuffle_permutes_rows():
    value = np.arange(12).reshape(6, 2)
    got = sl.Session().run(sl.random.shuffle(value, seed=2))
    assert sorted(map(tuple, got)) == sorted(map(tuple, value))


def test_gamma_shape_is_sample_shape_plus_parameter_shape():
    sample = sl.random.gamma([5, 1], np.ones(3, np.float32), beta=np.ones((2, 1), np.float32))
    assert sample.shape.as_list() == [5, 1, 2, 3] and sample.dtype == sl.float32
    assert sl.random.poisson(np.ones((2, 2)), [4], dtype=sl.int32).shape.as_list() == [4, 2, 2]
    with pytest.raises(TypeError, match="floating, int32 or int64"):
        sl.random.poisson([1.0], [2], dtype=sl.bool)


@pytest.mark.slow  # compiling JAX's gamma sampler takes seconds
def test_gamma_shape_moments_beta_and_reparameterized_gradient():
    # d sample / d alpha = -(d CDF(x; alpha) / d alpha) / pdf(x; alpha), TF1's RandomGammaGrad;
    # with beta, sample = gamma(alpha) / beta
    a, b = np.array([0.7, 3.0]), np.array([[1.0], [4.0]])
    alpha = sl.constant(a, dtype=sl.float64)
    sample = sl.random.gamma([2000], alpha, beta=b, dtype=sl.float64, seed=4)
    assert sample.shape.as_list() == [2000, 2, 2] and sample.dtype == sl.float64
    (grad,) = sl.gradients(sample, alpha)
    x, g = sl.Session().run([sample, grad])
    assert x.min() > 0
    np.testing.assert_allclose(x.mean(axis=0), a / b, rtol=0.1)
    unscaled, eps = x * b, 1e-6
    dcdf = (special.gammainc(a + eps, unscaled) - special.gammainc(a - eps, unscaled)) / (2 * eps)
    pdf = np.exp((a - 1) * np.log(unscaled) - unscaled - special.gammaln(a))
    np.testing.assert_allclose(g, (-dcdf / pdf / b).sum(axis=(0, 1)), rtol=1e-5)


@pytest.mark.slow  # compiling JAX's poisson sampler takes seconds
def test_poisson_shape_dtype_and_mean():
    draws = sl.random.poisson([1.5, 20.0], [3000], dtype=sl.int64, seed=5)
    assert draws.shape.as_list() == [3000, 2] and draws.dtype == sl.int64
    got = sl.Session().run(draws)
    np.testing.assert_allclose(got.mean(axis=0), [1.5, 20.0], rtol=0.05)
    assert got.min() >= 0 and np.all(got == np.round(got))


def test_stateless_draws_depend_on_the_seed_only(engine="compiled"):
    def build(seed):
        return [
            sl.random.stateless_uniform([3, 2], seed, minval=2.0, maxval=5.0),
            sl.random.stateless_normal([4], seed, mean=1.0, stddev=0.5),
            sl.random.stateless_truncated_normal([1000], seed),
            sl.random.stateless_categorical([[0.0, 0.0]], 5, seed),
        ]

    fetches = build([1, 2]) + build(sl.constant([1, 2], dtype=sl.int64)) + build([1, 3])[:1]
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        first, second = sess.run(fetches), sess.run(fetches)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)  # the same in every run
    for a, b in zip(first[:4], first[4:8]):
        np.testing.assert_array_equal(a, b)  # int32 and int64 seeds alike
    assert not np.array_equal(first[0], first[8])  # another seed, other numbers
    uniform, _, truncated, _ = first[:4]
    assert uniform.min() >= 2.0 and uniform.max() < 5.0
    assert np.abs(truncated).max() <= 2.0 and truncated.dtype == np.float32


def test_stateless_seed_must_be_two_ints():
    with pytest.raises(ValueError, match="shape \\[2\\]"):
        sl.random.stateless_normal([2], seed=[1, 2, 3])
    with pytest.raises(TypeError, match="int32 or int64"):
        sl.random.stateless_normal([2], seed=[1.0, 2.0])
    with pytest.raises(TypeError, match="floating"):
        sl.random.stateless_uniform([2], seed=[1, 2], dtype=sl.int32)


def test_truncated_normal_stays_within_two_stddevs():
    got = sl.Session().run(sl.random.truncated_normal([2000], mean=3.0, stddev=0.5, seed=6))
    assert got.min() >= 2.0 and got.max() <= 4.0
    assert math.isclose(got.mean(), 3.0, abs_tol=0.05)
