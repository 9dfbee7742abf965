"""keras.random: SeedGenerator and Keras's seed rules (an int: the same draw every call; a
generator: a new draw every call, reproducible from its seed; None: the global generator), in a
trace (a Variable read and advanced per run) and outside one (constants), the Keras-only
functions, the stateless ops under them, and TF1's rules kept for TF1's int and None seeds."""

import jax
import numpy as np
import pytest

import sluice as sl
from sluice._keras.layers import runtime
from sluice.framework.ir import tracing
from sluice.framework.ops.random.random_dist_ops import _seed_key
from sluice.framework.session_config import SessionConfig


def run(*tensors, sess=None):
    return (sess or sl.Session()).run(list(tensors))


def ancestors(t):
    seen, todo = set(), [t.op]
    while todo:
        op = todo.pop()
        if op not in seen:
            seen.add(op)
            todo += [i.op for i in op.inputs] + list(op.control_inputs)
    return {op.type for op in seen}


# -- SeedGenerator outside a trace ------------------------------------------------------------
def test_a_generator_draws_anew_each_call_and_repeats_from_its_seed():
    gen = sl.random.SeedGenerator(42)
    a, b = run(sl.random.normal((2, 3), seed=gen), sl.random.normal((2, 3), seed=gen))
    (c,) = run(sl.random.normal((2, 3), seed=sl.random.SeedGenerator(42)))
    (d,) = run(sl.random.normal((2, 3), seed=sl.random.SeedGenerator(43)))
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, d)


def test_outside_a_trace_a_draw_is_built_from_constants():
    gen = sl.random.SeedGenerator(1)
    x = sl.random.uniform((3,), seed=gen)
    assert "ReadVariableOp" not in ancestors(x) and "StatelessRandomUniform" in ancestors(x)
    assert not sl.get_default_graph().get_collection(sl.GraphKeys.GLOBAL_VARIABLES)
    assert [s.tolist() for s in run(gen.next(), gen.next())] == [[1, 1], [1, 2]]


def test_next_hands_out_seed_then_counter():
    gen = sl.random.SeedGenerator(7)
    seeds = run(*[gen.next() for _ in range(3)])
    assert [s.tolist() for s in seeds] == [[7, 0], [7, 1], [7, 2]]
    scrambled = sl.random.SeedGenerator(7)
    first, second = run(scrambled.next(ordered=False), scrambled.next(ordered=False))
    assert first.tolist() == [7, 0]
    assert second.tolist() == [(7 + 1) * 5387 % 933199, 5387]


def test_generator_arguments_and_config():
    gen = sl.random.SeedGenerator(seed=3, name="noise")
    assert gen.get_config() == {"seed": 3, "name": "noise"}
    again = sl.random.SeedGenerator.from_config(gen.get_config())
    np.testing.assert_array_equal(*run(gen.next(), again.next()))
    with pytest.raises(ValueError, match="must be an integer"):
        sl.random.SeedGenerator(1.5)
    with pytest.raises(ValueError, match="unrecognized keyword"):
        sl.random.SeedGenerator(1, colour="red")
    sl.random.SeedGenerator(1, backend="jax")  # Keras's argument, accepted
    big = sl.random.SeedGenerator(2**32 + 5)  # seeds are uint32 bits in int32, as Keras's
    assert run(big.next())[0].tolist() == [5, 0]


def test_int_seed_draws_the_same_every_call_and_none_differs():
    a, b = run(sl.random.randint((50,), 0, 100, seed=3), sl.random.randint((50,), 0, 100, seed=3))
    np.testing.assert_array_equal(a, b)
    c, d = run(sl.random.randint((50,), 0, 100), sl.random.randint((50,), 0, 100))
    assert not np.array_equal(c, d)


def test_none_follows_the_global_generator_that_set_random_seed_resets():
    def draws():
        sl.utils.set_random_seed(11)
        return run(sl.random.dropout(np.ones(64, np.float32), 0.5))[0]

    np.testing.assert_array_equal(draws(), draws())


def test_tf1_dropout_keeps_tf1s_stateful_op():
    x = sl.nn.dropout(sl.ones([100]), rate=0.5, seed=3)
    assert "RandomUniform" in ancestors(x) and "ReadVariableOp" not in ancestors(x)
    assert not sl.get_default_graph().get_collection(sl.GraphKeys.GLOBAL_VARIABLES)
    with sl.Session() as sess:  # no variable to initialize; a new mask every run
        first, second = sess.run(x), sess.run(x)
    assert set(np.unique(first)) <= {0.0, 2.0} and not np.array_equal(first, second)


# -- SeedGenerator inside a trace -------------------------------------------------------------
@pytest.mark.parametrize("engine", ["compiled", "interpreted"])
def test_in_a_trace_each_run_and_each_draw_is_new(engine):
    gen = sl.random.SeedGenerator(7)
    p = sl.placeholder(sl.float32, [None, 3])
    with tracing.tracing():
        x = sl.random.normal(sl.shape(p), seed=gen)
        y = sl.random.normal(sl.shape(p), seed=gen)
    assert "ReadVariableOp" in ancestors(x)
    with sl.Session(config=SessionConfig(engine=engine)) as sess:
        sess.run(sl.global_variables_initializer())
        feed = {p: np.zeros((2, 3), np.float32)}
        first = sess.run([x, y], feed)
        second = sess.run([x, y], feed)
        state = sess.run(gen.state_variable(sl.get_default_graph()))
    # the draws of a run use [7, 0] and [7, 1], in the order they were built, as Keras does
    outside = sl.random.SeedGenerator(7)
    expected = run(*[sl.random.normal((2, 3), seed=outside) for _ in range(4)])
    for got, want in zip(first + second, expected):
        np.testing.assert_array_equal(got, want)
    assert state.tolist() == [7, 4]


def test_a_generators_state_is_a_graph_variable_made_once_per_graph():
    gen = sl.random.SeedGenerator(2, name="gen")
    with tracing.tracing():
        gen.next()
        gen.next()
    variables = sl.get_default_graph().get_collection(sl.GraphKeys.GLOBAL_VARIABLES)
    assert [v.op.name for v in variables] == ["gen/seed_generator_state"]
    assert not variables[0].trainable and variables[0].dtype == sl.int32
    with sl.Graph().as_default() as other:
        assert gen.state_variable(other) is not variables[0]
        assert gen.state_variable(other).graph is other


class Noise(sl.layers.Layer):
    """The Keras VAE's sampling idea: a SeedGenerator made in __init__, drawn from in call."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = sl.random.SeedGenerator(1337)

    def call(self, x):
        return x + sl.random.normal(sl.shape(x), seed=self.seed_generator)


def test_a_layers_generator_draws_anew_in_every_step_of_a_model():
    def model():
        return sl.Sequential(
            [sl.Input((3,)), Noise(), sl.layers.Dense(2, kernel_initializer="ones")]
        )

    noisy = model()
    zeros = np.zeros((4, 3), np.float32)
    a, b = noisy.predict(zeros, verbose=0), noisy.predict(zeros, verbose=0)
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(model().predict(zeros, verbose=0), a)  # the same seed
    noisy.compile("sgd", "mse")
    noisy.fit(zeros, zeros[:, :2], batch_size=4, epochs=2, verbose=0)
    state = noisy.layers[0].seed_generator.state_variable(noisy.graph)
    assert runtime.read_values(noisy.graph, [state])[0].tolist() == [1337, 4]  # 2 + 2 steps


def test_a_layer_called_on_arrays_draws_anew_each_call():
    layer = Noise()
    a, b = layer(np.zeros((2, 3), np.float32)), layer(np.zeros((2, 3), np.float32))
    assert np.asarray(a).shape == (2, 3) and not np.array_equal(a, b)


# -- the functions Keras adds -----------------------------------------------------------------
def test_randint_range_dtype_and_checks():
    (values,) = run(sl.random.randint((500,), 3, 7, seed=1, dtype="int64"))
    assert values.dtype == np.int64 and set(values.tolist()) == {3, 4, 5, 6}
    with pytest.raises(ValueError, match="integer `dtype`"):
        sl.random.randint((2,), 0, 3, dtype="float32")


def test_dropout_zeroes_and_scales_and_keeps_the_right_share():
    x = np.arange(1, 2001, dtype=np.float32).reshape(1000, 2)
    (y,) = run(sl.random.dropout(x, 0.25, seed=4))
    kept = y != 0
    np.testing.assert_allclose(y[kept], x[kept] / 0.75, rtol=1e-6)
    assert abs(kept.mean() - 0.75) < 0.04
    (rows,) = run(sl.random.dropout(x, 0.5, noise_shape=(None, 1), seed=4))
    assert np.all((rows[:, 0] == 0) == (rows[:, 1] == 0))  # one draw per row, broadcast
    with pytest.raises(ValueError, match=r"rate.*\[0, 1\)"):
        sl.random.dropout(x, 1.0)


def test_dropout_gradient():
    sl.testing.check_gradients(
        lambda x: sl.random.dropout(x, 0.4, seed=2), [np.linspace(-1, 1, 12).reshape(3, 4)]
    )


@pytest.mark.slow  # JAX's gamma and binomial samplers take seconds to compile
def test_binomial_beta_and_gamma_draws():
    # one run, so one compiled program
    gen = sl.random.SeedGenerator(9)
    b, x, wide, g, g64 = run(
        sl.random.binomial((4000,), 10.0, 0.3, seed=1),
        sl.random.beta((4000,), 2.0, 3.0, seed=1),
        sl.random.beta((2, 3), np.array([1.0, 2.0, 50.0]), 1.0, seed=1),  # broadcast
        sl.random.gamma((4000,), 3.0, seed=gen),  # TF1's name, Keras's way
        sl.random.gamma((3,), 2.0, "float64", seed=gen),  # Keras's positional dtype
    )
    assert b.dtype == np.float32 and b.min() >= 0 and b.max() <= 10
    assert abs(b.mean() - 3.0) < 0.1 and abs(b.var() - 2.1) < 0.2
    assert 0 < x.min() and x.max() < 1 and abs(x.mean() - 0.4) < 0.02
    assert abs(x.var() - 0.04) < 0.005  # ab / ((a + b)^2 (a + b + 1))
    assert wide.shape == (2, 3)
    assert abs(g.mean() - 3.0) < 0.15 and abs(g.var() - 3.0) < 0.3
    assert g64.dtype == np.float64 and g64.shape == (3,)


# -- TF1's functions, Keras's way with a generator ----------------------------------------------
def test_shared_functions_with_a_generator():
    gen = sl.random.SeedGenerator(9)
    u, t, c = run(
        sl.random.uniform((4000,), -2.0, 2.0, seed=gen),
        sl.random.truncated_normal((4000,), 1.0, 0.5, seed=gen),
        sl.random.categorical(np.log([[0.2, 0.8]]).astype(np.float32), 2000, seed=gen),
    )
    assert -2 <= u.min() and u.max() < 2 and abs(u.mean()) < 0.1
    assert abs(t - 1.0).max() <= 1.0 and abs(t.std() - 0.5 * 0.8796) < 0.02
    assert c.dtype == np.int32 and abs(c.mean() - 0.8) < 0.03  # Keras's int32


def test_shuffle_along_an_axis():
    x = np.arange(12).reshape(3, 4)
    gen = sl.random.SeedGenerator(0)
    draws = run(*[sl.random.shuffle(x, axis=1, seed=gen) for _ in range(6)])
    for y in draws:
        np.testing.assert_array_equal(np.sort(y, axis=1), x)
        assert len({tuple(y[:, j] - y[0, j]) for j in range(4)}) == 1  # whole columns move
    assert len({y.tobytes() for y in draws}) > 1
    (tf1,) = run(sl.random.shuffle(x, axis=-1))  # TF1's stateful op, moved to the axis
    np.testing.assert_array_equal(np.sort(tf1, axis=1), x)
    with pytest.raises(ValueError, match="out of range"):
        sl.random.shuffle(x, axis=2, seed=gen)


@pytest.mark.slow  # compiles JAX's gamma sampler and its gradient
def test_stateless_gamma_gradient_is_jaxs():
    seed = np.array([3, 4], np.int32)
    alpha = np.array([0.5, 2.0, 7.0], np.float32)
    a = sl.constant(alpha)
    gen = sl.random.SeedGenerator(3)
    gen.next(), gen.next(), gen.next(), gen.next()  # the next seed is [3, 4]
    sample = sl.random.gamma((5,), a, seed=gen)
    (grad,) = sl.gradients(sl.reduce_sum(sample), [a])
    got = run(grad)[0]
    key = _seed_key(seed)
    want = jax.grad(lambda al: jax.random.gamma(key, al, (5, 3), al.dtype).sum())(alpha)
    np.testing.assert_allclose(got, want, rtol=1e-4)


def test_int_and_none_seeds_keep_tf1s_rules_on_tf1s_names():
    x = sl.random.normal((3,), seed=5)
    assert "RandomStandardNormal" in ancestors(x)
    with sl.Session() as sess:
        assert not np.array_equal(sess.run(x), sess.run(x))  # a new draw every run


@pytest.mark.parametrize(
    "engine", ["compiled", pytest.param("interpreted", marks=pytest.mark.slow)]
)
def test_the_stateless_ops_give_the_same_draws_for_the_same_seed(engine):
    seed = sl.constant([1, 2])
    g = sl.get_default_graph()
    ops = [
        g.create_op("StatelessRandomUniformInt", [sl.constant([6]), seed, sl.constant(0),
                                                  sl.constant(9)]).outputs[0],
        g.create_op("StatelessRandomPermutation", [sl.constant(7), seed]).outputs[0],
    ]  # fmt: skip
    with sl.Session(config=SessionConfig(engine=engine)) as sess:
        first, again = sess.run(ops), sess.run(ops)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    ints, perm = first
    assert ints.shape == (6,) and ints.min() >= 0 and ints.max() < 9
    assert sorted(perm.tolist()) == list(range(7))
    (other,) = run(
        g.create_op("StatelessRandomPermutation", [sl.constant(7), sl.constant([1, 3])]).outputs[0]
    )
    assert sorted(other.tolist()) == list(range(7))


def test_stateless_op_shape_checks():
    g = sl.get_default_graph()
    with pytest.raises(ValueError, match="must end with alpha's shape"):
        g.create_op("StatelessRandomGammaV2", [sl.constant([4, 2]), sl.constant([1, 2]),
                                               sl.constant([1.0, 2.0, 3.0])])  # fmt: skip
    with pytest.raises(ValueError, match="minval < maxval"):
        g.create_op("StatelessRandomUniformInt", [sl.constant([2]), sl.constant([1, 2]),
                                                  sl.constant(3), sl.constant(3)])  # fmt: skip


def test_a_custom_train_step_draws_anew_in_every_step():
    class Noisy(sl.Model):  # a GAN's train_step draws its latent vectors this way
        def __init__(self):
            super().__init__()
            self.dense = sl.layers.Dense(1)
            self.seed_generator = sl.random.SeedGenerator(3)

        def call(self, x):
            return self.dense(x)

        def train_step(self, data):
            noise = sl.random.normal((2,), seed=self.seed_generator)
            return {"noise": sl.reduce_sum(noise)}

    model = Noisy()
    model.compile("sgd")
    history = model.fit(np.zeros((4, 3), np.float32), batch_size=4, epochs=3, verbose=0)
    noise = history.history["noise"]
    assert len(set(noise)) == 3
    outside = sl.random.SeedGenerator(3)
    want = run(*[sl.reduce_sum(sl.random.normal((2,), seed=outside)) for _ in range(3)])
    np.testing.assert_allclose(noise, want, rtol=1e-6)
