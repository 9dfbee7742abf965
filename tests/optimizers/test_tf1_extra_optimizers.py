"""TF1's Adadelta, FTRL and proximal optimizers against NumPy transcriptions of their kernels
(training_ops.cc: ApplyAdadelta, ApplyFtrl/ApplyFtrlV2, ApplyProximalGradientDescent,
ApplyProximalAdagrad), through the optimizer contract (both engines), plus TF1's argument checks
and a sparse (embedding) update touching only its rows."""

import numpy as np
import optax
import pytest

import sluice as sl
from sluice import train
from sluice.testing import run_optimizer_test


def _per_param(init_state, step):
    """A reference transform from a per-parameter NumPy kernel `step(g, w, *state)`."""

    def init(params):
        return {n: init_state(p) for n, p in params.items()}

    def update(grads, state, params):
        updates, new_state = {}, {}
        for n in grads:
            new_w, new_state[n] = step(grads[n], params[n], *state[n])
            updates[n] = new_w - params[n]
        return updates, new_state

    return optax.GradientTransformation(init, update)


def numpy_adadelta(lr, rho, eps):
    def step(g, w, accum, accum_update):
        accum = rho * accum + (1 - rho) * g * g
        update = np.sqrt(accum_update + eps) / np.sqrt(accum + eps) * g
        accum_update = rho * accum_update + (1 - rho) * update * update
        return w - lr * update, (accum, accum_update)

    return _per_param(lambda p: (np.zeros_like(p), np.zeros_like(p)), step)


def numpy_ftrl(lr, power, init_accum, l1, l2, l2_shrinkage=0.0):
    def step(g, w, n, z):
        g_shrunk = g + 2 * l2_shrinkage * w
        n_new = n + g * g
        z = z + g_shrunk - (n_new ** (-power) - n ** (-power)) / lr * w
        quadratic = n_new ** (-power) / lr + 2 * l2
        new_w = np.where(np.abs(z) > l1, (np.sign(z) * l1 - z) / quadratic, 0.0)
        return new_w, (n_new, z)

    return _per_param(lambda p: (np.full_like(p, init_accum), np.zeros_like(p)), step)


def numpy_proximal_gd(lr, l1, l2):
    def step(g, w):
        prox = w - lr * g
        return np.sign(prox) * np.maximum(np.abs(prox) - lr * l1, 0) / (1 + lr * l2), ()

    return _per_param(lambda p: (), step)


def numpy_proximal_adagrad(lr, init_accum, l1, l2):
    def step(g, w, accum):
        accum = accum + g * g
        lr_t = lr / np.sqrt(accum)
        prox = w - lr_t * g
        return np.sign(prox) * np.maximum(np.abs(prox) - lr_t * l1, 0) / (1 + lr_t * l2), (accum,)

    return _per_param(lambda p: (np.full_like(p, init_accum),), step)


@pytest.mark.parametrize(
    "make, reference",
    [
        (
            lambda: train.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-3),
            numpy_adadelta(1.0, 0.9, 1e-3),
        ),
        pytest.param(
            lambda: train.FtrlOptimizer(0.5),
            numpy_ftrl(0.5, -0.5, 0.1, 0.0, 0.0),
            marks=pytest.mark.slow,
        ),
        pytest.param(
            lambda: train.FtrlOptimizer(
                0.5,
                learning_rate_power=-0.7,
                initial_accumulator_value=0.3,
                l1_regularization_strength=0.2,
                l2_regularization_strength=0.1,
            ),
            numpy_ftrl(0.5, -0.7, 0.3, 0.2, 0.1),
            marks=pytest.mark.slow,
        ),
        (
            lambda: train.FtrlOptimizer(
                0.5, l1_regularization_strength=0.1, l2_shrinkage_regularization_strength=0.3
            ),
            numpy_ftrl(0.5, -0.5, 0.1, 0.1, 0.0, l2_shrinkage=0.3),
        ),
        pytest.param(
            lambda: train.ProximalGradientDescentOptimizer(0.05, 0.3, 0.2),
            numpy_proximal_gd(0.05, 0.3, 0.2),
            marks=pytest.mark.slow,
        ),
        pytest.param(
            lambda: train.ProximalAdagradOptimizer(0.3, 0.2, 0.05, 0.1),
            numpy_proximal_adagrad(0.3, 0.2, 0.05, 0.1),
            marks=pytest.mark.slow,
        ),
    ],
    ids=[
        "adadelta",
        "ftrl",
        "ftrl_l1_l2_power",
        "ftrl_v2_shrinkage",
        "proximal_gd",
        "proximal_adagrad",
    ],
)
def test_against_tf1_kernels(make, reference):
    run_optimizer_test(make, reference, steps=3, dtype=np.float64, rtol=1e-10, atol=1e-12)


def test_ftrl_l1_drives_small_weights_to_exact_zero():
    w = sl.Variable([0.01, 5.0], dtype=sl.float64, name="w")
    loss = sl.reduce_sum(0.001 * w + sl.square(w - [0.0, 3.0]))
    train_op = train.FtrlOptimizer(0.5, l1_regularization_strength=1.0).minimize(loss)
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        sess.run(train_op)
        got = sess.run(w)
    assert got[0] == 0.0 and got[1] != 0.0


def test_ftrl_state_variable_names():
    w = sl.Variable([1.0, 2.0], name="w")
    opt = train.FtrlOptimizer(0.1)
    opt.minimize(sl.reduce_sum(sl.square(w)))
    names = sorted(v.op.name for v in opt.variables())
    assert names == ["Ftrl/count", "Ftrl/w/accumulator", "Ftrl/w/linear"]


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: train.FtrlOptimizer(0.1, learning_rate_power=0.5), "learning_rate_power"),
        (
            lambda: train.FtrlOptimizer(0.1, initial_accumulator_value=-1.0),
            "initial_accumulator_value",
        ),
        (lambda: train.FtrlOptimizer(0.1, l1_regularization_strength=-1.0), "l1_regularization"),
        (lambda: train.FtrlOptimizer(0.1, l2_regularization_strength=-1.0), "l2_regularization"),
        (
            lambda: train.FtrlOptimizer(0.1, l2_shrinkage_regularization_strength=-1.0),
            "l2_shrinkage",
        ),
        (
            lambda: train.ProximalAdagradOptimizer(0.1, initial_accumulator_value=0.0),
            "initial_accumulator_value",
        ),
    ],
)
def test_bad_arguments_raise_value_error(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: train.AdadeltaOptimizer(1.0), marks=pytest.mark.slow),
        lambda: train.FtrlOptimizer(0.5),
    ],
    ids=["adadelta", "ftrl"],
)
def test_sparse_gradient_updates_only_its_rows(make):
    table = sl.Variable(np.arange(8.0).reshape(4, 2), name="table")
    rows = sl.nn.embedding_lookup(table, [1, 3])
    train_op = make().minimize(sl.reduce_sum(sl.square(rows)))
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        sess.run(train_op)
        got = sess.run(table)
    np.testing.assert_array_equal(got[[0, 2]], np.arange(8.0).reshape(4, 2)[[0, 2]])
    assert np.all(got[[1, 3]] != np.arange(8.0).reshape(4, 2)[[1, 3]])
