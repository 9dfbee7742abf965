"""Every optimizer, in both spellings, against optax (or TF1's/Keras's formulas) on the same
gradients, through `run_optimizer_test`; plus naming, schedules, clipping and errors."""

import numpy as np
import optax
import pytest

import sluice as sl
from sluice import optimizers, train
from sluice.testing import run_optimizer_test


def numpy_adam(lr, b1, b2, eps, weight_decay=0.0):
    """TF1's ApplyAdam (and Keras 3's Adam/AdamW update_step), transcribed in NumPy."""

    def init(params):
        return {
            "t": 0,
            "m": {n: np.zeros_like(p) for n, p in params.items()},
            "v": {n: np.zeros_like(p) for n, p in params.items()},
        }

    def update(grads, state, params):
        t = state["t"] + 1
        lr_t = lr * np.sqrt(1 - b2**t) / (1 - b1**t)
        m = {n: b1 * state["m"][n] + (1 - b1) * grads[n] for n in grads}
        v = {n: b2 * state["v"][n] + (1 - b2) * grads[n] ** 2 for n in grads}
        updates = {
            n: -lr * weight_decay * params[n] - lr_t * m[n] / (np.sqrt(v[n]) + eps) for n in grads
        }
        return updates, {"t": t, "m": m, "v": v}

    return optax.GradientTransformation(init, update)


def numpy_keras_rmsprop(lr, rho, momentum, eps):
    """Keras 3's RMSprop.update_step (velocity from zeros, epsilon inside the sqrt)."""

    def init(params):
        return {
            "vel": {n: np.zeros_like(p) for n, p in params.items()},
            "mom": {n: np.zeros_like(p) for n, p in params.items()},
        }

    def update(grads, state, params):
        vel = {n: rho * state["vel"][n] + (1 - rho) * grads[n] ** 2 for n in grads}
        inc = {n: lr * grads[n] / np.sqrt(vel[n] + eps) for n in grads}
        mom = {n: momentum * state["mom"][n] + inc[n] for n in grads}
        return {n: -mom[n] for n in grads}, {"vel": vel, "mom": mom}

    return optax.GradientTransformation(init, update)


def numpy_tf1_rmsprop(lr, decay, momentum, eps):
    """TF1's ApplyRMSProp: ms starts at ones; mom = momentum*mom + lr*g*rsqrt(ms + eps)."""

    def init(params):
        return {
            "ms": {n: np.ones_like(p) for n, p in params.items()},
            "mom": {n: np.zeros_like(p) for n, p in params.items()},
        }

    def update(grads, state, params):
        ms = {n: decay * state["ms"][n] + (1 - decay) * grads[n] ** 2 for n in grads}
        mom = {n: momentum * state["mom"][n] + lr * grads[n] / np.sqrt(ms[n] + eps) for n in grads}
        return {n: -mom[n] for n in grads}, {"ms": ms, "mom": mom}

    return optax.GradientTransformation(init, update)


def numpy_tf1_adagrad(lr, initial):
    """TF1's ApplyAdagrad: accum += g^2; var -= lr * g * rsqrt(accum) (no epsilon)."""

    def init(params):
        return {n: np.full_like(p, initial) for n, p in params.items()}

    def update(grads, state, params):
        accum = {n: state[n] + grads[n] ** 2 for n in grads}
        return {n: -lr * grads[n] / np.sqrt(accum[n]) for n in grads}, accum

    return optax.GradientTransformation(init, update)


_SCHEDULE = optax.exponential_decay(0.2, transition_steps=2, decay_rate=0.5)

# (id, optimizer factory (called inside a fresh graph), reference, rtol)
OPTIMIZERS = [
    ("tf1_sgd", lambda: train.GradientDescentOptimizer(0.05), optax.sgd(0.05), 2e-6),
    ("tf1_momentum", lambda: train.MomentumOptimizer(0.05, 0.9), optax.sgd(0.05, 0.9), 2e-6),
    (
        "tf1_nesterov",
        lambda: train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
        optax.sgd(0.05, 0.9, nesterov=True),
        2e-6,
    ),
    ("tf1_adam", lambda: train.AdamOptimizer(0.1), numpy_adam(0.1, 0.9, 0.999, 1e-8), 1e-5),
    # a large epsilon makes TF1's placement (after the bias correction) visible
    (
        "tf1_adam_eps_hat",
        lambda: train.AdamOptimizer(0.1, epsilon=0.5),
        numpy_adam(0.1, 0.9, 0.999, 0.5),
        1e-5,
    ),
    (
        "tf1_rmsprop",
        lambda: train.RMSPropOptimizer(0.05),
        optax.rmsprop(0.05, decay=0.9, eps=1e-10, initial_scale=1.0),
        1e-5,
    ),
    (
        "tf1_rmsprop_formula",
        lambda: train.RMSPropOptimizer(0.05, momentum=0.5, epsilon=0.1),
        numpy_tf1_rmsprop(0.05, 0.9, 0.5, 0.1),
        1e-5,
    ),
    (
        "tf1_rmsprop_centered",
        lambda: train.RMSPropOptimizer(0.05, momentum=0.5, centered=True),
        optax.rmsprop(0.05, decay=0.9, eps=1e-10, initial_scale=1.0, centered=True, momentum=0.5),
        1e-5,
    ),
    ("tf1_adagrad", lambda: train.AdagradOptimizer(0.1), numpy_tf1_adagrad(0.1, 0.1), 1e-5),
    (
        "keras_sgd",
        lambda: optimizers.SGD(0.05, momentum=0.9, nesterov=True),
        optax.sgd(0.05, 0.9, nesterov=True),
        2e-6,
    ),
    (
        "keras_adam",
        lambda: optimizers.Adam(0.1, epsilon=0.5),
        numpy_adam(0.1, 0.9, 0.999, 0.5),
        1e-5,
    ),
    (
        "keras_adamw",
        lambda: optimizers.AdamW(0.1, weight_decay=0.1, epsilon=0.5),
        numpy_adam(0.1, 0.9, 0.999, 0.5, weight_decay=0.1),
        1e-5,
    ),
    (
        "keras_rmsprop",
        lambda: optimizers.RMSprop(0.05, momentum=0.5, epsilon=0.1),
        numpy_keras_rmsprop(0.05, 0.9, 0.5, 0.1),
        1e-5,
    ),
    ("keras_adagrad", lambda: optimizers.Adagrad(0.1), optax.adagrad(0.1, 0.1, eps=1e-7), 1e-5),
    (
        "global_clipnorm",
        lambda: optimizers.SGD(0.05, global_clipnorm=1.0),
        optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(0.05)),
        2e-6,
    ),
    (
        "clipvalue",
        lambda: train.AdamOptimizer(0.1, clipvalue=0.5),
        optax.chain(optax.clip(0.5), numpy_adam(0.1, 0.9, 0.999, 1e-8)),
        1e-5,
    ),
    (
        "optax_schedule",
        lambda: train.GradientDescentOptimizer(_SCHEDULE),
        optax.sgd(_SCHEDULE),
        2e-6,
    ),
    (
        "tensor_schedule",
        lambda: train.GradientDescentOptimizer(
            train.exponential_decay(0.2, train.get_or_create_global_step(), 2, 0.5)
        ),
        optax.sgd(_SCHEDULE),
        2e-6,
    ),
]


@pytest.mark.parametrize(
    "make, reference, rtol", [row[1:] for row in OPTIMIZERS], ids=[row[0] for row in OPTIMIZERS]
)
def test_optimizer_matches_reference(make, reference, rtol):
    run_optimizer_test(make, reference, steps=4, rtol=rtol)


@pytest.mark.parametrize(
    "make, reference",
    [
        (lambda: train.AdamOptimizer(0.1, epsilon=0.5), numpy_adam(0.1, 0.9, 0.999, 0.5)),
        (lambda: optimizers.SGD(0.05, momentum=0.9), optax.sgd(0.05, 0.9)),
    ],
    ids=["adam", "sgd_momentum"],
)
def test_float64_variables(make, reference):
    run_optimizer_test(make, reference, steps=3, dtype=np.float64, rtol=1e-12, atol=1e-14)


def test_tf1_adam_first_step_closed_form():
    lr, b1, b2, eps = 0.1, 0.9, 0.999, 0.5
    w0, g = np.array([1.0, -2.0, 0.25], np.float32), np.array([2.0, -4.0, 0.5], np.float32)
    w = sl.Variable(w0, name="w")
    train_op = train.AdamOptimizer(lr, b1, b2, eps).minimize(sl.reduce_sum(w * g))
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        sess.run(train_op)
        got = sess.run(w)
    # t = 1: m = (1-b1) g, v = (1-b2) g^2, lr_1 = lr sqrt(1-b2) / (1-b1)
    expected = w0 - lr * np.sqrt(1 - b2) * g / (np.sqrt(1 - b2) * np.abs(g) + eps)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_state_variables_are_named_under_the_scope():
    w = sl.Variable(np.zeros([3, 2], np.float32), name="dense/kernel")
    b = sl.Variable(np.zeros([2], np.float32), name="dense/bias")
    loss = sl.reduce_sum(sl.square(w)) + sl.reduce_sum(sl.square(b))
    opt = train.AdamOptimizer()
    opt.minimize(loss)
    names = sorted(v.op.name for v in opt.variables())
    assert names == [
        "Adam/count",
        "Adam/dense/bias/mu",
        "Adam/dense/bias/nu",
        "Adam/dense/kernel/mu",
        "Adam/dense/kernel/nu",
    ]
    assert opt.get_slot_names() == ["mu", "nu"]
    assert opt.get_slot(w, "mu").op.name == "Adam/dense/kernel/mu"
    assert opt.get_slot(w, "mu").shape.as_list() == [3, 2]
    rms = train.RMSPropOptimizer(0.1, momentum=0.9)
    rms.minimize(loss, var_list=[w])
    assert sorted(v.op.name for v in rms.variables()) == [
        "RMSProp/dense/kernel/nu",
        "RMSProp/dense/kernel/trace",
    ]
    second = train.AdamOptimizer()
    second.minimize(loss, var_list=[b])
    assert "Adam_1/count" in [v.op.name for v in second.variables()]
    # the RMSProp mean square starts at ones (TF1), Keras's velocity at zeros
    keras_rms = optimizers.RMSprop()
    keras_rms.minimize(loss, var_list=[b])
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(rms.get_slot(w, "nu")), np.ones([3, 2]))
        np.testing.assert_array_equal(sess.run(keras_rms.get_slot(b, "nu")), np.zeros([2]))


def test_schedule_name_collision_keeps_chain_positions():
    b = sl.Variable(np.zeros([2], np.float32), name="b")
    opt = train.AdamOptimizer(optax.linear_schedule(0.1, 0.0, 10))
    opt.minimize(sl.reduce_sum(sl.square(b - 1.0)))
    names = sorted(v.op.name for v in opt.variables())
    assert names == ["Adam/0/count", "Adam/1/count", "Adam/b/0/mu", "Adam/b/0/nu"]


def test_global_step():
    step = train.get_or_create_global_step()
    assert train.get_or_create_global_step() is step
    assert train.get_global_step() is step
    assert step.op.name == "global_step" and step.dtype == np.int64 and step.shape.as_list() == []
    assert step not in sl.trainable_variables() and step in sl.global_variables()
    with pytest.raises(ValueError, match="already has a global step"):
        train.create_global_step()
    w = sl.Variable(1.0, name="w")
    train_op = train.GradientDescentOptimizer(0.1).minimize(w * w, global_step=step)
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        for _ in range(3):
            sess.run(train_op)
        assert train.global_step(sess, step) == 3
        np.testing.assert_allclose(sess.run(w), 0.8**3, rtol=1e-6)


def test_minimize_honours_control_dependencies_and_var_list():
    w = sl.Variable(1.0, name="w")
    frozen = sl.Variable(5.0, name="frozen")
    counter = sl.Variable(0, name="counter")
    bump = counter.assign_add(1, read_value=False)
    with sl.control_dependencies([bump]):
        train_op = train.GradientDescentOptimizer(0.5).minimize(w * frozen, var_list=[w])
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        sess.run(train_op)
        assert sess.run([w, frozen, counter]) == [-1.5, 5.0, 1]


@pytest.mark.parametrize(
    "name, schedule, expected",
    [
        (
            "exponential",
            lambda s: train.exponential_decay(0.1, s, 4, 0.5),
            lambda t: 0.1 * 0.5 ** (t / 4),
        ),
        (
            "staircase",
            lambda s: train.exponential_decay(0.1, s, 4, 0.5, staircase=True),
            lambda t: 0.1 * 0.5 ** (t // 4),
        ),
        (
            "polynomial",
            lambda s: train.polynomial_decay(0.1, s, 6, 0.01, power=2.0),
            lambda t: (0.1 - 0.01) * (1 - min(t, 6) / 6) ** 2 + 0.01,
        ),
        (
            "cosine",
            lambda s: train.cosine_decay(0.1, s, 6, alpha=0.1),
            lambda t: 0.1 * ((1 - 0.1) * 0.5 * (1 + np.cos(np.pi * min(t, 6) / 6)) + 0.1),
        ),
        (
            "piecewise",
            lambda s: train.piecewise_constant(s, [2, 5], [1.0, 0.5, 0.1]),
            lambda t: 1.0 if t <= 2 else 0.5 if t <= 5 else 0.1,
        ),
    ],
)
def test_schedules_match_tf1_formulas(name, schedule, expected):
    step = sl.placeholder(sl.int64, [])
    lr = schedule(step)
    assert lr.dtype == np.float32 and lr.shape.as_list() == []
    with sl.Session() as sess:
        got = [sess.run(lr, {step: t}) for t in range(9)]
    np.testing.assert_allclose(got, [expected(t) for t in range(9)], rtol=1e-6)


def test_clip_by_global_norm():
    a = np.array([3.0, 4.0], np.float32)
    b = np.array([[12.0]], np.float32)
    clipped, norm = train.clip_by_global_norm([sl.constant(a), None, sl.constant(b)], 6.5)
    assert clipped[1] is None
    with sl.Session() as sess:
        ca, cb, n = sess.run([clipped[0], clipped[2], norm])
    np.testing.assert_allclose(n, 13.0)
    np.testing.assert_allclose(ca, a / 2, rtol=1e-6)
    np.testing.assert_allclose(cb, b / 2, rtol=1e-6)


def test_keras_spelling_defaults_and_config():
    adam = optimizers.get("adam")
    assert isinstance(adam, optimizers.Adam)
    assert (adam.learning_rate, adam.beta_1, adam.beta_2, adam.epsilon) == (
        0.001,
        0.9,
        0.999,
        1e-07,
    )
    assert optimizers.get("sgd").learning_rate == 0.01
    assert optimizers.AdamW().weight_decay == 0.004
    sgd = optimizers.SGD(0.1, momentum=0.9, nesterov=True, name="opt")
    again = optimizers.get({"class_name": "SGD", "config": sgd.get_config()})
    assert again.get_config() == sgd.get_config()
    with pytest.raises(ValueError, match="Unknown optimizer"):
        optimizers.get("adamaxx")
    assert optimizers.SGD(clipnorm=1.0).get_config()["clipnorm"] == 1.0


def test_bad_input_raises_at_construction():
    w = sl.Variable(np.zeros([2], np.float32), name="w")
    unused = sl.Variable(np.zeros([2], np.float32), name="unused")
    opt = train.GradientDescentOptimizer(0.1)
    with pytest.raises(ValueError, match=r"No gradients provided for any variable.*unused"):
        opt.minimize(sl.reduce_sum(w), var_list=[unused])
    with pytest.raises(ValueError, match=r"gradient for w is float32\(3,\)"):
        opt.apply_gradients([(sl.zeros([3]), w)])
    with pytest.raises(ValueError, match="floating scalar"):
        train.GradientDescentOptimizer(sl.constant([0.1, 0.2])).minimize(sl.reduce_sum(w))
    with pytest.raises(ValueError, match="must be floating point"):
        opt.minimize(sl.constant(1))
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive"):
        train.AdagradOptimizer(0.1, initial_accumulator_value=0.0)
