"""Nadam, Adamax, Adadelta, Ftrl, Lion and Adafactor against NumPy transcriptions of Keras 3's
`update_step`s (keras/src/optimizers/*.py), in both engines, through `run_optimizer_test` (a
rank-2 kernel and a rank-1 bias: Adafactor's factored and unfactored branches); plus Keras's
weight decay, clipnorm, names, defaults and configs."""

import numpy as np
import optax
import pytest

from sluice import optimizers
from sluice.testing import run_optimizer_test


def _zeros(params):
    return {n: np.zeros_like(p) for n, p in params.items()}


def _reference(init, update):
    return optax.GradientTransformation(init, update)


def numpy_nadam(lr, b1=0.9, b2=0.999, eps=1e-7):
    def init(params):
        return {"t": 0, "u_product": 1.0, "m": _zeros(params), "v": _zeros(params)}

    def update(grads, s, params):
        t = s["t"] + 1
        u_t = b1 * (1 - 0.5 * 0.96**t)
        u_next = b1 * (1 - 0.5 * 0.96 ** (t + 1))
        u_product = s["u_product"] * u_t
        u_product_next = u_product * u_next
        out, m, v = {}, {}, {}
        for n, g in grads.items():
            m[n] = s["m"][n] + (g - s["m"][n]) * (1 - b1)
            v[n] = s["v"][n] + (g * g - s["v"][n]) * (1 - b2)
            m_hat = u_next * m[n] / (1 - u_product_next) + (1 - u_t) * g / (1 - u_product)
            v_hat = v[n] / (1 - b2**t)
            out[n] = -m_hat * lr / (np.sqrt(v_hat) + eps)
        return out, {"t": t, "u_product": u_product, "m": m, "v": v}

    return _reference(init, update)


def numpy_adamax(lr, b1=0.9, b2=0.999, eps=1e-7):
    def init(params):
        return {"t": 0, "m": _zeros(params), "u": _zeros(params)}

    def update(grads, s, params):
        t = s["t"] + 1
        m = {n: s["m"][n] + (g - s["m"][n]) * (1 - b1) for n, g in grads.items()}
        u = {n: np.maximum(b2 * s["u"][n], np.abs(g)) for n, g in grads.items()}
        out = {n: -lr * m[n] / ((1 - b1**t) * (u[n] + eps)) for n in grads}
        return out, {"t": t, "m": m, "u": u}

    return _reference(init, update)


def numpy_adadelta(lr, rho=0.95, eps=1e-7):
    def init(params):
        return {"grad": _zeros(params), "delta": _zeros(params)}

    def update(grads, s, params):
        acc_g, acc_d, out = {}, {}, {}
        for n, g in grads.items():
            acc_g[n] = rho * s["grad"][n] + (1 - rho) * g * g
            delta = -np.sqrt(s["delta"][n] + eps) * g / np.sqrt(acc_g[n] + eps)
            acc_d[n] = rho * s["delta"][n] + (1 - rho) * delta * delta
            out[n] = lr * delta
        return out, {"grad": acc_g, "delta": acc_d}

    return _reference(init, update)


def numpy_ftrl(lr, power=-0.5, initial=0.1, l1=0.0, l2=0.0, l2_shrinkage=0.0, beta=0.0):
    def init(params):
        return {
            "accum": {n: np.full_like(p, initial) for n, p in params.items()},
            "linear": _zeros(params),
        }

    def update(grads, s, params):
        accum, linear, out = {}, {}, {}
        l2_reg = l2 + beta / (2.0 * lr)
        for n, g in grads.items():
            w, a = params[n], s["accum"][n]
            g_s = g + 2 * l2_shrinkage * w
            new_a = a + g * g
            linear[n] = s["linear"][n] + g_s - (new_a**-power - a**-power) / lr * w
            quadratic = new_a**-power / lr + 2 * l2_reg
            new_w = (np.clip(linear[n], -l1, l1) - linear[n]) / quadratic
            out[n], accum[n] = new_w - w, new_a
        return out, {"accum": accum, "linear": linear}

    return _reference(init, update)


def numpy_lion(lr, b1=0.9, b2=0.99, weight_decay=0.0):
    def init(params):
        return _zeros(params)

    def update(grads, m, params):
        out = {
            n: -lr * weight_decay * params[n] - lr * np.sign(m[n] * b1 + g * (1 - b1))
            for n, g in grads.items()
        }
        return out, {n: m[n] * b2 + g * (1 - b2) for n, g in grads.items()}

    return _reference(init, update)


def numpy_adafactor(lr, decay=-0.8, eps1=1e-30, eps2=1e-3, clip=1.0, weight_decay=0.0):
    def rms(x):
        return np.sqrt(np.mean(np.square(x)))

    def init(params):
        return {
            "t": 0,
            "r": {n: np.zeros(p.shape[:-1]) if p.ndim >= 2 else 0.0 for n, p in params.items()},
            "c": {
                n: np.zeros(p.shape[:-2] + p.shape[-1:]) if p.ndim >= 2 else 0.0
                for n, p in params.items()
            },
            "v": _zeros(params),
        }

    def update(grads, s, params):
        t = s["t"] + 1
        new = {"t": t, "r": {}, "c": {}, "v": {}}
        out = {}
        for n, g in grads.items():
            w0 = params[n]
            w = w0 - w0 * weight_decay * lr  # Keras decays before the update step
            rho = min(lr, 1 / np.sqrt(t))
            alpha = max(eps2, rms(w)) * rho
            s2 = g * g + eps1
            beta = 1 - t**decay
            r, c, v = s["r"][n], s["c"][n], s["v"][n]
            if w.ndim >= 2:
                r = beta * r + (1 - beta) * s2.mean(axis=-1)
                c = beta * c + (1 - beta) * s2.mean(axis=-2)
                v = (r / r.mean(axis=-1, keepdims=True))[..., None] * c[..., None, :]
            else:
                v = beta * v + (1 - beta) * s2
            u = g / np.sqrt(v)
            u_hat = u / max(1.0, rms(u) / clip)
            out[n] = (w - alpha * u_hat) - w0
            new["r"][n], new["c"][n], new["v"][n] = r, c, v
        return out, new

    return _reference(init, update)


def numpy_sgd_clipnorm(lr, clipnorm):
    def update(grads, s, params):
        out = {}
        for n, g in grads.items():
            g = g * clipnorm / max(np.sqrt(np.sum(g * g)), clipnorm)
            out[n] = -lr * g
        return out, s

    return _reference(lambda params: {}, update)


# (id, optimizer factory, NumPy reference)
OPTIMIZERS = [
    ("nadam", lambda: optimizers.Nadam(0.1), numpy_nadam(0.1)),
    ("nadam_eps", lambda: optimizers.Nadam(0.05, 0.8, 0.9, 0.3), numpy_nadam(0.05, 0.8, 0.9, 0.3)),
    ("adamax", lambda: optimizers.Adamax(0.1), numpy_adamax(0.1)),
    ("adamax_eps", lambda: optimizers.Adamax(0.1, epsilon=0.5), numpy_adamax(0.1, eps=0.5)),
    ("adadelta", lambda: optimizers.Adadelta(1.0), numpy_adadelta(1.0)),
    ("adadelta_eps", lambda: optimizers.Adadelta(0.5, 0.9, 0.1), numpy_adadelta(0.5, 0.9, 0.1)),
    ("ftrl", lambda: optimizers.Ftrl(0.1), numpy_ftrl(0.1)),
    (
        "ftrl_regularized",
        lambda: optimizers.Ftrl(
            0.2,
            learning_rate_power=-0.7,
            initial_accumulator_value=0.5,
            l1_regularization_strength=0.05,
            l2_regularization_strength=0.1,
            l2_shrinkage_regularization_strength=0.02,
            beta=0.3,
        ),
        numpy_ftrl(0.2, -0.7, 0.5, l1=0.05, l2=0.1, l2_shrinkage=0.02, beta=0.3),
    ),
    ("lion", lambda: optimizers.Lion(0.01), numpy_lion(0.01)),
    (
        "lion_weight_decay",
        lambda: optimizers.Lion(0.01, beta_1=0.5, weight_decay=0.1),
        numpy_lion(0.01, b1=0.5, weight_decay=0.1),
    ),
    ("adafactor", lambda: optimizers.Adafactor(0.1), numpy_adafactor(0.1)),
    (
        "adafactor_weight_decay",
        lambda: optimizers.Adafactor(0.5, beta_2_decay=-0.5, clip_threshold=0.5, weight_decay=0.2),
        numpy_adafactor(0.5, decay=-0.5, clip=0.5, weight_decay=0.2),
    ),
    ("sgd_clipnorm", lambda: optimizers.SGD(0.1, clipnorm=1.0), numpy_sgd_clipnorm(0.1, 1.0)),
]


# variants whose rule another row covers too run with the slow tests only
_SLOW = {"nadam_eps", "adamax", "adadelta_eps", "ftrl", "lion", "adafactor"}


@pytest.mark.parametrize(
    "make, reference",
    [
        pytest.param(*r[1:], id=r[0], marks=[pytest.mark.slow] if r[0] in _SLOW else [])
        for r in OPTIMIZERS
    ],
)
def test_first_updates_match_keras_update_step(make, reference):
    """In float64, so that the formulas agree to rounding (1e-9)."""
    run_optimizer_test(make, reference, steps=3, dtype=np.float64, rtol=1e-9, atol=1e-12)


@pytest.mark.slow  # float32 also runs in the docstring example and every fit test
@pytest.mark.parametrize("name", ["nadam", "adafactor"])
def test_float32_variables(name):
    """In float32 the state keeps the variables' dtype; float32 rounding only."""
    make, reference = {r[0]: r[1:] for r in OPTIMIZERS}[name]
    run_optimizer_test(make, reference, steps=3, rtol=2e-5, atol=5e-6)


KERAS_DEFAULTS = {
    "nadam": (optimizers.Nadam, {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999,
                                 "epsilon": 1e-07}),
    "adamax": (optimizers.Adamax, {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999,
                                   "epsilon": 1e-07}),
    "adadelta": (optimizers.Adadelta, {"learning_rate": 0.001, "rho": 0.95, "epsilon": 1e-07}),
    "ftrl": (optimizers.Ftrl, {"learning_rate": 0.001, "learning_rate_power": -0.5,
                               "initial_accumulator_value": 0.1,
                               "l1_regularization_strength": 0.0,
                               "l2_regularization_strength": 0.0,
                               "l2_shrinkage_regularization_strength": 0.0, "beta": 0.0}),
    "lion": (optimizers.Lion, {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.99}),
    "adafactor": (optimizers.Adafactor, {"learning_rate": 0.001, "beta_2_decay": -0.8,
                                         "epsilon_1": 1e-30, "epsilon_2": 0.001,
                                         "clip_threshold": 1.0, "relative_step": True}),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(KERAS_DEFAULTS))
def test_get_by_name_gives_keras_defaults_and_configs_round_trip(name):
    cls, defaults = KERAS_DEFAULTS[name]
    optimizer = optimizers.get(name)
    assert type(optimizer) is cls and optimizers.get(cls.__name__).get_config()["name"] == name
    config = optimizer.get_config()
    assert {k: config[k] for k in defaults} == defaults
    for common in ("weight_decay", "clipnorm", "clipvalue", "global_clipnorm"):
        assert config[common] is None
    again = optimizers.get({"class_name": cls.__name__, "config": config})
    assert type(again) is cls and again.get_config() == config


def test_bad_arguments_are_refused_with_keras_messages():
    with pytest.raises(ValueError, match="beta_1` must be in the \\[0, 1\\] range"):
        optimizers.Lion(beta_1=0.0)
    with pytest.raises(ValueError, match="learning_rate_power` needs to be negative or zero"):
        optimizers.Ftrl(learning_rate_power=0.5)
    with pytest.raises(ValueError, match="l1_regularization_strength` needs to be positive"):
        optimizers.Ftrl(l1_regularization_strength=-1.0)
    with pytest.raises(ValueError, match="Unknown optimizer 'lamb'"):
        optimizers.get("lamb")
    with pytest.raises(ValueError, match="Only one of `clipnorm`, `clipvalue`"):
        optimizers.Nadam(clipnorm=1.0, global_clipnorm=1.0)


def test_adafactor_state_is_factored():
    import sluice as sl

    kernel = sl.Variable(np.ones([3, 4], np.float32), name="dense/kernel")
    bias = sl.Variable(np.ones([4], np.float32), name="dense/bias")
    optimizer = optimizers.Adafactor()
    optimizer.minimize(sl.reduce_sum(sl.square(kernel)) + sl.reduce_sum(bias))
    shapes = {v.op.name: v.shape.as_list() for v in optimizer.variables()}
    assert shapes["adafactor/dense/kernel/r"] == [3]
    assert shapes["adafactor/dense/kernel/c"] == [4]
    assert shapes["adafactor/dense/kernel/v"] == [3, 4]
    assert shapes["adafactor/dense/bias/v"] == [4]
