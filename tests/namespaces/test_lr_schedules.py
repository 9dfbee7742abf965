"""`sl.train` learning-rate schedules against TF1's formulas (learning_rate_decay.py), written
out in NumPy float64, at steps that hit the edges: 0, boundaries, period ends, past the end."""

import math

import numpy as np
import pytest

import sluice as sl

STEPS = [0, 1, 5, 9, 10, 11, 20, 25, 30, 31, 70, 100]


def values_at(build, steps=STEPS, dtype=sl.int64, engine="compiled"):
    step = sl.placeholder(dtype, [], name="step")
    rate = build(step)
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        return rate, np.array([sess.run(rate, {step: s}) for s in steps])


def close(got, want):
    np.testing.assert_allclose(got, np.asarray(want, np.float64), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("staircase", [False, True])
def test_exponential_decay(staircase):
    rate, got = values_at(lambda s: sl.train.exponential_decay(0.1, s, 10, 0.5, staircase))
    assert rate.dtype == sl.float32 and rate.shape.rank == 0
    close(got, [0.1 * 0.5 ** (math.floor(s / 10) if staircase else s / 10) for s in STEPS])


@pytest.mark.parametrize("staircase", [False, True])
def test_inverse_time_and_natural_exp_decay(staircase):
    _, inverse = values_at(lambda s: sl.train.inverse_time_decay(0.1, s, 10, 0.5, staircase))
    _, natural = values_at(lambda s: sl.train.natural_exp_decay(0.1, s, 10, 0.5, staircase))
    p = [math.floor(s / 10) if staircase else s / 10 for s in STEPS]
    close(inverse, [0.1 / (1 + 0.5 * q) for q in p])
    close(natural, [0.1 * math.exp(-0.5 * q) for q in p])


@pytest.mark.parametrize("cycle", [False, True])
def test_polynomial_decay(cycle):
    _, got = values_at(
        lambda s: sl.train.polynomial_decay(0.1, s, 10, 0.01, power=2.0, cycle=cycle)
    )

    def tf1(s):
        if cycle:
            steps = 10 * (1.0 if s == 0 else math.ceil(s / 10))
        else:
            s, steps = min(s, 10), 10
        return (0.1 - 0.01) * (1 - s / steps) ** 2 + 0.01

    close(got, [tf1(s) for s in STEPS])
    if cycle:  # step 0 is the start of the first period, step 10 its end, 11 a restart
        assert got[STEPS.index(0)] == pytest.approx(0.1)
        assert got[STEPS.index(10)] == pytest.approx(0.01)
        assert got[STEPS.index(11)] > got[STEPS.index(10)]


def test_cosine_and_linear_cosine_decay():
    _, cosine = values_at(lambda s: sl.train.cosine_decay(0.1, s, 30, alpha=0.2))
    _, linear = values_at(
        lambda s: sl.train.linear_cosine_decay(0.1, s, 30, num_periods=2.0, alpha=0.1, beta=0.01)
    )
    done = [min(s, 30) / 30 for s in STEPS]
    close(cosine, [0.1 * (0.8 * 0.5 * (1 + math.cos(math.pi * d)) + 0.2) for d in done])
    close(
        linear,
        [0.1 * ((0.1 + 1 - d) * 0.5 * (1 + math.cos(math.pi * 4.0 * d)) + 0.01) for d in done],
    )


@pytest.mark.parametrize("t_mul, m_mul", [(2.0, 0.5), (1.0, 0.9)])
def test_cosine_decay_restarts(t_mul, m_mul):
    _, got = values_at(lambda s: sl.train.cosine_decay_restarts(0.1, s, 10, t_mul, m_mul, 0.1))

    def tf1(s):  # walk the periods one by one
        start, length, restart = 0.0, 10.0, 0
        while s >= start + length:
            start, length, restart = start + length, length * t_mul, restart + 1
        cosine = 0.5 * m_mul**restart * (1 + math.cos(math.pi * (s - start) / length))
        return 0.1 * (0.9 * cosine + 0.1)

    close(got, [tf1(s) for s in STEPS])


@pytest.mark.parametrize("engine", ["compiled", "interpreted"])
def test_piecewise_constant_takes_the_value_up_to_and_at_each_boundary(engine):
    steps = [0, 9, 10, 11, 20, 21, 1000]
    rate, got = values_at(
        lambda s: sl.train.piecewise_constant(s, [10, 20], [1.0, 0.5, 0.1]), steps, engine=engine
    )
    assert rate.dtype == sl.float32
    np.testing.assert_array_equal(got, np.float32([1.0, 1.0, 1.0, 0.5, 0.5, 0.1, 0.1]))


def test_piecewise_constant_with_float_steps_and_int_values():
    rate, got = values_at(
        lambda s: sl.train.piecewise_constant(s, [1.0, 2.5], [3, 2, 1]),
        [0.5, 1.0, 1.5, 2.5, 2.6],
        dtype=sl.float32,
    )
    assert rate.dtype == sl.int32
    np.testing.assert_array_equal(got, [3, 3, 2, 2, 1])


def test_schedules_refuse_bad_arguments():
    step = sl.train.get_or_create_global_step()
    with pytest.raises(ValueError, match="1 less than"):
        sl.train.piecewise_constant(step, [10, 20], [1.0, 0.5])
    with pytest.raises(ValueError, match="decay_steps must be positive"):
        sl.train.natural_exp_decay(0.1, step, 0, 0.5)
    with pytest.raises(ValueError, match="global_step is required"):
        sl.train.cosine_decay_restarts(0.1, None, 10)


def test_a_schedule_follows_the_global_step_during_training():
    step = sl.train.get_or_create_global_step()
    x = sl.Variable(1.0)
    rate = sl.train.exponential_decay(1.0, step, 1, 0.5)
    train = sl.train.GradientDescentOptimizer(rate).minimize(x, global_step=step)
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        # x -= 1 at rates 1, 0.5, 0.25
        assert sess.run(x) == pytest.approx(1.0 - 1.75)
        assert sess.run(rate) == pytest.approx(0.125)


@pytest.mark.parametrize("engine", ["compiled", "interpreted"])
def test_tensor_arguments_and_the_learning_rates_dtype(engine):
    # TF1 converts learning_rate (and decay_steps, decay_rate) to Tensors: a placeholder rate
    # works, and the result has the learning rate's dtype.
    step = sl.placeholder(sl.int64, [], name="step")
    base = sl.placeholder(sl.float32, [], name="base")
    rate = sl.train.exponential_decay(base, step, sl.constant(10), sl.constant(0.5))
    wide = sl.train.cosine_decay(np.float64(0.1), step, 30)
    cases = sl.train.piecewise_constant(step, [10], [sl.constant(1.0), sl.constant(2.0)])
    assert (rate.dtype, wide.dtype, cases.dtype) == (sl.float32, sl.float64, sl.float32)
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        got = sess.run([rate, wide, cases], {step: 15, base: 0.2})
    close(got[0], 0.2 * 0.5**1.5)
    close(got[1], 0.1 * 0.5 * (1 + math.cos(math.pi * 0.5)))
    assert got[2] == 2.0


def test_piecewise_constant_boundaries_must_fit_the_steps_dtype():
    step = sl.placeholder(sl.int64, [])
    sl.train.piecewise_constant(step, [10], [1.0, 0.5])  # int32 boundaries promote to int64
    with pytest.raises(TypeError, match="Boundaries \\(float32\\) must have the same dtype"):
        sl.train.piecewise_constant(step, [10.5], [1.0, 0.5])


def test_a_graph_with_schedules_round_trips_through_a_meta_graph(tmp_path):
    # the schedules are graph ops, as in TF1, so the graph can be exported and imported
    with sl.Graph().as_default():
        step = sl.train.get_or_create_global_step()
        sl.train.cosine_decay_restarts(0.1, step, 10, t_mul=2.0, m_mul=0.5, name="sgdr")
        sl.train.polynomial_decay(0.1, step, 10, cycle=True, name="poly")
        sl.train.export_meta_graph(str(tmp_path / "m.meta"))
    with sl.Graph().as_default():
        sl.train.import_meta_graph(str(tmp_path / "m.meta"))
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            sl.train.get_global_step().load(25, sess)
            sgdr, poly = sess.run(["sgdr:0", "poly:0"])
    # step 25 is 3/4 through the second period (steps 10..30), which starts at 0.5 * 0.1
    close(sgdr, 0.1 * 0.5 * 0.5 * (1 + math.cos(math.pi * 0.75)))
    close(poly, (0.1 - 0.0001) * (1 - 25 / 30) + 0.0001)
