"""TF1's initializers (`tf.variance_scaling_initializer`, `tf.orthogonal_initializer`,
`tf.initializers.*`) as TF1's init_ops_test checks them: the distribution's bounds and moments
on a large draw, the fan rules, TF1's errors, seeded determinism in both engines."""

import numpy as np
import pytest

import sluice as sl
from sluice._tf1.cells import initializers as tf1_init


def _draw(init, shape, engine="compiled", dtype=sl.float32):
    with sl.Graph().as_default():
        sl.set_random_seed(1234)
        value = init(shape, dtype=dtype)
        with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
            return sess.run(value)


SHAPE = [300, 200]  # 60,000 draws: moments within ~2%


def test_variance_scaling_truncated_normal_has_the_asked_variance():
    modes = {"fan_in": 300, "fan_out": 200, "fan_avg": 250}
    with sl.Graph().as_default():
        draws = [
            sl.variance_scaling_initializer(2.0, mode, "truncated_normal", seed=1)(SHAPE)
            for mode in modes
        ]
        values = dict(zip(modes, sl.Session().run(draws)))
    for mode, n in modes.items():
        x, stddev = values[mode], np.sqrt(2.0 / n)
        assert abs(x.std() / stddev - 1) < 0.02, mode
        untruncated = stddev / 0.87962566103423978  # TF's correction: the draw is cut at 2 of these
        assert np.abs(x).max() <= 2 * untruncated * (1 + 1e-6)
        assert np.abs(x).max() > 1.9 * untruncated


def test_variance_scaling_normal_is_truncated_untruncated_is_not():
    normal = _draw(sl.variance_scaling_initializer(1.0, "fan_in", "normal", seed=2), SHAPE)
    plain = _draw(
        sl.variance_scaling_initializer(1.0, "fan_in", "untruncated_normal", seed=2), SHAPE
    )
    stddev = np.sqrt(1.0 / 300)
    assert abs(normal.std() / stddev - 1) < 0.02 and abs(plain.std() / stddev - 1) < 0.02
    assert np.abs(normal).max() <= 2 * stddev / 0.87962566103423978 * (1 + 1e-6)
    assert np.abs(plain).max() > 3 * stddev


def test_variance_scaling_uniform_and_conv_fans():
    shape = [3, 3, 16, 32]  # fan_in = 144, fan_out = 288
    x = _draw(sl.variance_scaling_initializer(3.0, "fan_out", "uniform", seed=3), shape)
    limit = np.sqrt(3 * 3.0 / 288)
    assert x.max() <= limit and x.min() >= -limit
    assert x.max() > 0.99 * limit
    assert abs(x.std() / (limit / np.sqrt(3)) - 1) < 0.05


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"scale": 0.0}, "scale"),
        ({"mode": "fan_sum"}, "mode"),
        ({"distribution": "gamma"}, "distribution"),
    ],
)
def test_variance_scaling_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        sl.variance_scaling_initializer(**kwargs)


def test_variance_scaling_rejects_integer_dtype():
    with pytest.raises(TypeError, match="floating"):
        sl.variance_scaling_initializer()([2, 2], dtype=sl.int32)


@pytest.mark.parametrize(
    "init, scale, mode, distribution",
    [
        (sl.initializers.he_normal(), 2.0, "fan_in", "truncated_normal"),
        (sl.initializers.he_uniform(), 2.0, "fan_in", "uniform"),
        (sl.initializers.lecun_normal(), 1.0, "fan_in", "truncated_normal"),
        (sl.initializers.lecun_uniform(), 1.0, "fan_in", "uniform"),
        (sl.glorot_normal_initializer(), 1.0, "fan_avg", "truncated_normal"),
    ],
)
def test_named_variance_scaling_cases(init, scale, mode, distribution):
    config = init.get_config()
    assert (config["scale"], config["mode"], config["distribution"]) == (scale, mode, distribution)


def test_glorot_normal_variance():
    x = _draw(sl.glorot_normal_initializer(seed=4), SHAPE)
    assert abs(x.std() / np.sqrt(2.0 / 500) - 1) < 0.02


def test_uniform_unit_scaling_limit():
    x = _draw(sl.uniform_unit_scaling_initializer(factor=1.5, seed=5), [4, 5, 50])
    limit = 1.5 * np.sqrt(3.0 / 20)
    assert x.max() <= limit and x.min() >= -limit and x.max() > 0.98 * limit


def test_identity():
    np.testing.assert_array_equal(
        _draw(sl.initializers.identity(gain=2.0), [2, 3]), 2.0 * np.eye(2, 3)
    )
    with pytest.raises(ValueError, match="2D"):
        sl.initializers.identity()([2, 2, 2])


def test_orthogonal():
    shapes = [[6, 4], [4, 6], [3, 2, 5]]
    with sl.Graph().as_default():
        init = sl.orthogonal_initializer(gain=2.0, seed=6)
        draws = sl.Session().run([init(shape) for shape in shapes])
    for shape, x in zip(shapes, draws):
        assert list(x.shape) == shape
        x = x.reshape(-1, shape[-1])
        product = x.T @ x if x.shape[0] >= x.shape[1] else x @ x.T
        np.testing.assert_allclose(product, 4.0 * np.eye(min(x.shape)), atol=1e-5)


def test_orthogonal_needs_two_dimensions():
    with pytest.raises(ValueError, match="two-dimensional"):
        sl.orthogonal_initializer()([5])


def test_seeded_draws_repeat_in_a_new_graph_and_the_other_engine():
    init = sl.variance_scaling_initializer(seed=7)
    np.testing.assert_array_equal(_draw(init, [3, 4], "interpreted"), _draw(init, [3, 4]))


def test_initializers_namespace():
    ns = sl.initializers
    assert ns.zeros is sl.zeros_initializer and ns.ones is sl.ones_initializer
    assert ns.constant is sl.constant_initializer
    assert ns.random_normal is sl.random_normal_initializer
    assert ns.random_uniform is sl.random_uniform_initializer
    assert ns.truncated_normal is sl.truncated_normal_initializer
    assert ns.glorot_uniform is sl.glorot_uniform_initializer
    assert ns.glorot_normal is sl.glorot_normal_initializer
    assert ns.variance_scaling is sl.variance_scaling_initializer
    assert ns.orthogonal is sl.orthogonal_initializer
    assert ns.uniform_unit_scaling is sl.uniform_unit_scaling_initializer
    assert ns.identity is tf1_init.identity_initializer
    a = sl.Variable(1.0, name="a")
    b = sl.Variable(2.0, name="b")
    local = sl.get_local_variable("c", [], initializer=sl.constant_initializer(3.0))
    with sl.Session() as sess:
        sess.run(ns.variables([a]))
        assert sess.run(a) == 1.0 and not sess.run(sl.is_variable_initialized(b))
        sess.run([ns.global_variables(), ns.local_variables()])
        assert sess.run([b, local]) == [2.0, 3.0]


def test_get_variable_with_variance_scaling_initializer_class():
    v = sl.get_variable("w", [50, 40], initializer=sl.initializers.he_normal(seed=8))
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        x = sess.run(v)
    assert x.shape == (50, 40) and np.abs(x).max() <= 2 * np.sqrt(2 / 50) / 0.8796256610342398
