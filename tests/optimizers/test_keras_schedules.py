"""keras.optimizers.schedules: each schedule's values at its boundary steps against Keras 3's
formulas written in NumPy (on Python ints, on a graph step, inside jax.jit), the schedules
driving Keras optimizers (fit, stateless_apply, a user subclass), their configs, `.keras`
round trips, and the callbacks that cannot set a scheduled rate."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import sluice as sl
from sluice import optimizers
from sluice.testing import run_optimizer_test
from sluice.testing.keras_guide import GuideTrainStep

schedules = optimizers.schedules


def np_cosine(initial, step, decay_steps, alpha):
    step = min(step, decay_steps)
    return initial * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * step / decay_steps)) + alpha)


def np_warmup_cosine(initial, step, decay_steps, alpha, target, warmup):
    step = min(step, decay_steps + warmup)
    if step < warmup:
        return (target - initial) * step / warmup + initial
    return np_cosine(target, step - warmup, decay_steps, alpha)


def np_restarts(initial, step, first, t_mul, m_mul, alpha):
    """SGDR by walking the periods: period i lasts first * t_mul**i steps."""
    start, length, i = 0.0, float(first), 0
    while step >= start + length:
        start, length, i = start + length, length * t_mul, i + 1
    done = (step - start) / length
    cosine = 0.5 * m_mul**i * (1 + math.cos(math.pi * done))
    return initial * ((1 - alpha) * cosine + alpha)


def np_polynomial(initial, step, decay_steps, end, power, cycle):
    if cycle:
        decay_steps = decay_steps * (1.0 if step == 0 else math.ceil(step / decay_steps))
    else:
        step = min(step, decay_steps)
    return (initial - end) * (1 - step / decay_steps) ** power + end


# (id, schedule, NumPy formula of the step, steps that cross its boundaries)
SCHEDULES = [
    (
        "exponential",
        schedules.ExponentialDecay(0.1, decay_steps=4, decay_rate=0.5),
        lambda t: 0.1 * 0.5 ** (t / 4),
        [0, 1, 3, 4, 5, 100],
    ),
    (
        "exponential_staircase",
        schedules.ExponentialDecay(0.1, 4, 0.5, staircase=True),
        lambda t: 0.1 * 0.5 ** (t // 4),
        [0, 3, 4, 7, 8, 9],
    ),
    (
        "piecewise",
        schedules.PiecewiseConstantDecay([2, 5], [1.0, 0.5, 0.1]),
        lambda t: 1.0 if t <= 2 else 0.5 if t <= 5 else 0.1,
        [0, 2, 3, 5, 6, 50],
    ),
    (
        "polynomial",
        schedules.PolynomialDecay(0.1, 6, end_learning_rate=0.01, power=2.0),
        lambda t: np_polynomial(0.1, t, 6, 0.01, 2.0, False),
        [0, 1, 5, 6, 7, 60],
    ),
    (
        "polynomial_cycle",
        schedules.PolynomialDecay(0.1, 6, 0.01, power=1.0, cycle=True),
        lambda t: np_polynomial(0.1, t, 6, 0.01, 1.0, True),
        [0, 1, 6, 7, 12, 13],
    ),
    (
        "inverse_time",
        schedules.InverseTimeDecay(0.1, 4, 0.5),
        lambda t: 0.1 / (1 + 0.5 * t / 4),
        [0, 1, 3, 4, 5, 40],
    ),
    (
        "inverse_time_staircase",
        schedules.InverseTimeDecay(0.1, 4, 0.5, staircase=True),
        lambda t: 0.1 / (1 + 0.5 * (t // 4)),
        [0, 3, 4, 7, 8],
    ),
    (
        "cosine",
        schedules.CosineDecay(0.1, 6, alpha=0.1),
        lambda t: np_cosine(0.1, t, 6, 0.1),
        [0, 1, 3, 5, 6, 7, 60],
    ),
    (
        "cosine_warmup",
        schedules.CosineDecay(0.0, 6, alpha=0.1, warmup_target=0.2, warmup_steps=4),
        lambda t: np_warmup_cosine(0.0, t, 6, 0.1, 0.2, 4),
        [0, 1, 3, 4, 5, 9, 10, 11, 40],
    ),
    (
        "cosine_restarts",
        schedules.CosineDecayRestarts(0.1, 3, t_mul=2.0, m_mul=0.5, alpha=0.1),
        lambda t: np_restarts(0.1, t, 3, 2.0, 0.5, 0.1),
        [0, 1, 2, 3, 4, 8, 9, 10, 20, 21],
    ),
    (
        "cosine_restarts_equal_periods",
        schedules.CosineDecayRestarts(0.1, 3, t_mul=1.0),
        lambda t: np_restarts(0.1, t, 3, 1.0, 1.0, 0.0),
        [0, 2, 3, 5, 6, 7],
    ),
]


@pytest.mark.parametrize(
    "schedule, formula, steps", [r[1:] for r in SCHEDULES], ids=[r[0] for r in SCHEDULES]
)
def test_schedule_values_match_keras_formulas(schedule, formula, steps):
    expected = [formula(t) for t in steps]
    on_ints = [float(schedule(t)) for t in steps]
    np.testing.assert_allclose(on_ints, expected, rtol=1e-5, atol=1e-7)
    jitted = jax.jit(jax.vmap(schedule))(jnp.asarray(steps, jnp.int32))  # on tracers
    np.testing.assert_allclose(np.asarray(jitted), expected, rtol=1e-5, atol=1e-7)
    with sl.Graph().as_default():
        step = sl.placeholder(sl.int64, [])
        rate = schedule(step)
        assert rate.dtype == np.float32 and rate.shape.as_list() == []
        with sl.Session() as sess:
            in_graph = [sess.run(rate, {step: t}) for t in steps]
    np.testing.assert_allclose(in_graph, expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("schedule", [r[1] for r in SCHEDULES], ids=[r[0] for r in SCHEDULES])
def test_schedule_config_round_trips(schedule):
    config = schedules.serialize(schedule)
    assert config["module"] == "keras.optimizers.schedules"
    assert config["class_name"] == type(schedule).__name__
    again = schedules.deserialize(config)
    assert type(again) is type(schedule) and again.get_config() == schedule.get_config()
    assert type(schedule).from_config(schedule.get_config()).get_config() == schedule.get_config()


def test_schedule_arguments_are_checked():
    with pytest.raises(ValueError, match="decay_steps` must be > 0"):
        schedules.ExponentialDecay(0.1, 0, 0.5)
    with pytest.raises(ValueError, match="first_decay_steps` must be > 0"):
        schedules.CosineDecayRestarts(0.1, -1)
    with pytest.raises(ValueError, match="1 less than the length of values"):
        schedules.PiecewiseConstantDecay([1, 2], [1.0, 0.5])
    with pytest.raises(NotImplementedError, match="must override `__call__"):
        schedules.LearningRateSchedule()(0)


class InverseStep(schedules.LearningRateSchedule):
    """Keras's documented example of a user schedule (plain Python arithmetic on the step)."""

    def __init__(self, initial_learning_rate):
        self.initial_learning_rate = initial_learning_rate

    def __call__(self, step):
        return self.initial_learning_rate / (step + 1)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate}


_DECAY = optax.exponential_decay(0.2, transition_steps=2, decay_rate=0.5)


@pytest.mark.parametrize(
    "make, reference",
    [
        (lambda: optimizers.SGD(schedules.ExponentialDecay(0.2, 2, 0.5)), optax.sgd(_DECAY)),
        pytest.param(
            lambda: optimizers.SGD(InverseStep(0.2), momentum=0.5),
            optax.sgd(lambda t: 0.2 / (t + 1), momentum=0.5),
            marks=pytest.mark.slow,  # a user schedule in fit: see the next tests
        ),
    ],
    ids=["exponential", "user_subclass"],
)
def test_a_schedule_drives_the_update_at_the_step_count(make, reference):
    """Update k (from 0) uses schedule(k), in both engines."""
    run_optimizer_test(make, reference, steps=3, rtol=1e-5)


def _regression(seed=0, n=32):
    x = np.random.default_rng(seed).normal(size=(n, 3)).astype("float32")
    return x, x @ np.array([[1.0], [-2.0], [0.5]], np.float32)


def _model():
    return sl.Sequential([sl.Input((3,)), sl.layers.Dense(1)])


def test_a_schedule_in_fit_gives_the_rate_after_n_steps():
    schedule = schedules.PiecewiseConstantDecay([2, 5], [0.1, 0.05, 0.01])
    optimizer = optimizers.Adam(schedule)
    assert float(optimizer.learning_rate) == pytest.approx(0.1)  # step 0, nothing built
    model = _model()
    model.compile(optimizer=optimizer, loss="mse")
    x, y = _regression()
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)  # 4 steps
    assert model.optimizer is optimizer
    assert float(optimizer.learning_rate) == pytest.approx(0.05)
    assert model.get_learning_rate() == pytest.approx(0.05)
    names = [v.op.name.rsplit("/", 2)[-2:] for v in optimizer.variables()]
    assert ["adam", "iteration"] in names
    with pytest.raises(TypeError, match="hence its learning rate is not settable"):
        optimizer.learning_rate = 0.5


def test_a_schedule_in_fit_takes_its_rate_at_each_step():
    """SGD on |w - 100| (gradient -1): each step's change is the rate of a user's schedule."""
    schedule = InverseStep(0.5)
    model = sl.Sequential(
        [sl.Input((1,)), sl.layers.Dense(1, use_bias=False, kernel_initializer="zeros")]
    )
    model.compile(optimizer=optimizers.SGD(schedule), loss="mae")
    x, y = np.ones((1, 1), np.float32), np.full((1, 1), 100.0, np.float32)
    kernels = []
    for _ in range(3):
        model.fit(x, y, epochs=1, verbose=0)
        kernels.append(float(model.layers[0].kernel.numpy()[0, 0]))
    # w gains the rate at steps 0, 1, 2: 0.5 / 1, 0.5 / 2, 0.5 / 3
    np.testing.assert_allclose(np.diff([0.0] + kernels), [0.5, 0.25, 0.5 / 3], rtol=1e-6)


def test_callbacks_cannot_set_a_scheduled_rate():
    x, y = _regression()
    model = _model()
    model.compile(optimizer=optimizers.SGD(schedules.InverseTimeDecay(0.1, 1, 1.0)), loss="mse")
    setter = sl.callbacks.LearningRateScheduler(lambda epoch, lr: lr * 0.5)
    with pytest.raises(TypeError, match="not settable"):
        model.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[setter])
    model = _model()
    model.compile(optimizer=optimizers.SGD(schedules.InverseTimeDecay(0.1, 1, 1.0)), loss="mse")
    plateau = sl.callbacks.ReduceLROnPlateau(monitor="loss", patience=0, min_delta=1e9)
    with pytest.raises(TypeError, match="not settable"):
        model.fit(x, y, batch_size=16, epochs=2, verbose=0, callbacks=[plateau])


def test_reduce_lr_on_plateau_logs_a_scheduled_rate():
    x, y = _regression()
    model = _model()
    model.compile(optimizer=optimizers.SGD(schedules.InverseTimeDecay(0.1, 1, 1.0)), loss="mse")
    plateau = sl.callbacks.ReduceLROnPlateau(monitor="loss", patience=5)
    history = model.fit(x, y, batch_size=16, epochs=2, verbose=0, callbacks=[plateau])
    # 2 steps an epoch: the rate at step 2 and at step 4
    np.testing.assert_allclose(history.history["learning_rate"], [0.1 / 3, 0.1 / 5], rtol=1e-6)


def test_stateless_apply_follows_a_keras_schedule():
    schedule = schedules.ExponentialDecay(0.5, decay_steps=1, decay_rate=0.5)
    model = sl.Sequential([sl.Input((2,)), sl.layers.Dense(1, use_bias=False)])
    optimizer = optimizers.SGD(schedule)
    optimizer.build(model.trainable_variables)
    values = [v.numpy() for v in optimizer.variables]
    w, grad = [jnp.ones((2, 1), jnp.float32)], [jnp.ones((2, 1), jnp.float32)]
    for rate in (0.5, 0.25, 0.125):
        before = w[0]
        w, values = jax.jit(optimizer.stateless_apply)(values, grad, w)
        np.testing.assert_allclose(before - w[0], rate, rtol=1e-6)
    for variable, value in zip(optimizer.variables, values):
        variable.assign(value)
    assert float(optimizer.learning_rate) == pytest.approx(0.0625)


def test_optimizer_config_and_keras_file_round_trip(tmp_path):
    schedule = schedules.CosineDecay(0.05, 10, alpha=0.1, warmup_target=0.1, warmup_steps=2)
    optimizer = optimizers.Adam(schedule, beta_1=0.8)
    config = optimizer.get_config()
    assert config["learning_rate"]["class_name"] == "CosineDecay"
    again = optimizers.Adam.from_config(config)
    assert again.get_config() == config
    assert optimizers.get({"class_name": "Adam", "config": config}).get_config() == config
    x, y = _regression()
    model = _model()
    model.compile(optimizer=optimizer, loss="mse")
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)  # 4 steps
    path = str(tmp_path / "m.keras")
    model.save(path)
    loaded = sl.models.load_model(path)
    assert loaded.optimizer.get_config() == config
    # both go on from step 4: the same rates, the same weights
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    loaded.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    assert float(loaded.optimizer.learning_rate) == pytest.approx(float(optimizer.learning_rate))
    for a, b in zip(model.get_weights(), loaded.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_a_user_schedule_saves_when_registered(tmp_path):
    @sl.saving.register_keras_serializable(package="test_schedules")
    class Halving(schedules.LearningRateSchedule):
        def __init__(self, rate):
            self.rate = rate

        def __call__(self, step):
            return self.rate * 0.5 ** sl.ops.cast(step, "float32")

        def get_config(self):
            return {"rate": self.rate}

    optimizer = optimizers.SGD(Halving(0.4))
    assert optimizer.get_config()["learning_rate"]["registered_name"] == "test_schedules>Halving"
    again = optimizers.SGD.from_config(optimizer.get_config())
    assert again.get_config() == optimizer.get_config()
    assert float(again.learning_rate) == pytest.approx(0.4)


class LoggingStep(GuideTrainStep, sl.Model):
    """The guide's train_step, also returning the optimizer's rate after the update."""

    def train_step(self, data):
        logs = super().train_step(data)
        return {**logs, "lr": self.optimizer.learning_rate}


def test_a_schedule_in_a_custom_train_step():
    inputs = sl.Input((3,))
    model = LoggingStep(inputs, sl.layers.Dense(1)(inputs))
    model.compile(optimizers.SGD(schedules.ExponentialDecay(0.5, 1, 0.5)), "mse")
    x, y = _regression(n=16)
    history = model.fit(x, y, batch_size=8, epochs=2, verbose=0)  # 2 steps an epoch
    np.testing.assert_allclose(history.history["lr"], [0.5**3, 0.5**5], rtol=1e-6)
    assert float(model.optimizer.learning_rate) == pytest.approx(0.5**5)


def test_a_float_rate_is_read_and_set_after_fit():
    """Without a schedule the rate is a Variable, as in Keras: read, assigned, or set."""
    x, y = _regression(n=16)
    model = _model()
    model.compile(optimizer=optimizers.SGD(0.1), loss="mse")
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    assert model.optimizer.learning_rate.numpy() == pytest.approx(0.1)
    model.optimizer.learning_rate = 0.0
    assert model.get_learning_rate() == 0.0
    weights = model.get_weights()
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    for before, after in zip(weights, model.get_weights()):
        np.testing.assert_array_equal(before, after)
    model.optimizer.learning_rate.assign(0.05)
    assert model.get_learning_rate() == pytest.approx(0.05)
