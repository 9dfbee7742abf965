"""The optax transformations behind every optimizer, shared by the TF1 and the Keras spellings.

Each factory takes the learning rate (a float, a traced scalar, or an optax schedule) and returns
an `optax.GradientTransformation`; no update maths is written here. One adapter exists because
TF1 and Keras place Adam's epsilon differently from optax (see `scale_by_adam_epsilon_hat`).

| optimizer                      | optax composition                                          |
| ------------------------------ | ---------------------------------------------------------- |
| SGD / GradientDescent/Momentum | `optax.sgd(lr, momentum, nesterov)`                        |
| Adam / AdamW (TF1 and Keras)   | `scale_by_adam_epsilon_hat` [+ `add_decayed_weights`] + lr |
| RMSProp (TF1: ms starts at 1)  | `optax.rmsprop(lr, decay, eps, initial_scale, ...)`        |
| Adagrad (TF1: no epsilon)      | `optax.adagrad(lr, initial_accumulator_value, eps)`        |
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax


def scale_by_adam_epsilon_hat(b1: float, b2: float, epsilon: float) -> optax.GradientTransformation:
    """`optax.scale_by_adam` with TF1's and Keras's "epsilon hat".

    TF1's `ApplyAdam` and Keras compute
        lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t);   update = lr_t * m / (sqrt(v) + epsilon)
    while optax computes  m_hat / (sqrt(v_hat) + eps)  with bias-corrected moments. Both are equal
    when  eps = epsilon / sqrt(1 - b2^t),  so this passes that eps to optax at every step (t is
    optax's own step count); the moments, their bias correction and the division stay optax's.
    """
    base = optax.scale_by_adam(b1=b1, b2=b2, eps=epsilon)

    def update_fn(updates, state, params=None):
        t = optax.safe_increment(state.count)
        eps64 = epsilon / jnp.sqrt(1.0 - jnp.asarray(b2, jnp.float64) ** t.astype(jnp.float64))
        leaves = jax.tree_util.tree_leaves(updates)
        eps = eps64.astype(jnp.result_type(*leaves)) if leaves else eps64
        return optax.scale_by_adam(b1=b1, b2=b2, eps=eps).update(updates, state, params)

    return optax.GradientTransformation(base.init, update_fn)


def _scaled(direction: list, learning_rate: Any, weight_decay: float | None):
    """chain(direction..., [decoupled weight decay], -learning_rate), as optax.adamw orders it."""
    parts = list(direction)
    if weight_decay:
        parts.append(optax.add_decayed_weights(weight_decay))
    parts.append(optax.scale_by_learning_rate(learning_rate))
    return optax.chain(*parts)


def sgd(
    learning_rate: Any,
    momentum: float = 0.0,
    nesterov: bool = False,
    weight_decay: float | None = None,
) -> optax.GradientTransformation:
    """TF1 `MomentumOptimizer` (accum = momentum*accum + g; var -= lr*accum) is optax.sgd."""
    direction = [optax.trace(decay=momentum, nesterov=nesterov)] if momentum else []
    if not direction and not weight_decay:
        return optax.sgd(learning_rate)
    return _scaled(direction, learning_rate, weight_decay)


def adam(
    learning_rate: Any,
    beta1: float,
    beta2: float,
    epsilon: float,
    weight_decay: float | None = None,
) -> optax.GradientTransformation:
    """Adam (and AdamW when weight_decay is given) with the TF1/Keras epsilon placement."""
    return _scaled([scale_by_adam_epsilon_hat(beta1, beta2, epsilon)], learning_rate, weight_decay)


def rmsprop(
    learning_rate: Any,
    decay: float,
    momentum: float,
    epsilon: float,
    centered: bool,
    initial_scale: float,
) -> optax.GradientTransformation:
    """TF1: ms = decay*ms + (1-decay)*g^2; mom = momentum*mom + lr*g/sqrt(ms + eps); var -= mom,
    with ms starting at ones (`initial_scale=1`); Keras: the same with ms starting at zeros."""
    return optax.rmsprop(
        learning_rate,
        decay=decay,
        eps=epsilon,
        initial_scale=initial_scale,
        eps_in_sqrt=True,
        centered=centered,
        momentum=momentum or None,
    )


def adagrad(
    learning_rate: Any,
    initial_accumulator_value: float,
    epsilon: float,
    weight_decay: float | None = None,
) -> optax.GradientTransformation:
    """accum += g^2; var -= lr * g / sqrt(accum + eps) (TF1 has no epsilon: eps=0)."""
    direction = [
        optax.scale_by_rss(initial_accumulator_value=initial_accumulator_value, eps=epsilon)
    ]
    return _scaled(direction, learning_rate, weight_decay)


def with_clipping(
    transform: optax.GradientTransformation, clipvalue: float | None, global_clipnorm: float | None
) -> optax.GradientTransformation:
    """Clips the gradients (by value, then by global norm) before `transform` sees them."""
    parts = []
    if clipvalue is not None:
        parts.append(optax.clip(clipvalue))
    if global_clipnorm is not None:
        parts.append(optax.clip_by_global_norm(global_clipnorm))
    return optax.chain(*parts, transform) if parts else transform


def adadelta(learning_rate: Any, rho: float, epsilon: float) -> optax.GradientTransformation:
    """TF1's ApplyAdadelta is optax's: accum = rho*accum + (1-rho)*g^2;
    update = sqrt(accum_update + eps) / sqrt(accum + eps) * g;
    accum_update = rho*accum_update + (1-rho)*update^2; var -= lr * update (eps in both roots)."""
    return _scaled([optax.scale_by_adadelta(rho=rho, eps=epsilon)], learning_rate, None)


# -- update rules optax lacks: they read the parameters -------------------------------------------
# FTRL-proximal and the proximal steps solve for the new parameter value in closed form, so each
# update is `new_var - var`. optax has no FTRL and no proximal (l1/l2) step; they are written here
# in optax's GradientTransformation form, with the learning rate resolved as optax does (a float,
# a traced scalar, or a schedule of the step count kept in the state).
class FtrlState(NamedTuple):
    count: Any
    accumulator: Any  # TF1's "accum": the sum of squared gradients (plus its initial value)
    linear: Any  # TF1's "linear": z in McMahan et al. (2013)


class ProximalAdagradState(NamedTuple):
    count: Any
    accumulator: Any


class ProximalState(NamedTuple):
    count: Any


def _rate(learning_rate: Any, count: Any) -> Any:
    return learning_rate(count) if callable(learning_rate) else learning_rate


def _shrink(prox: Any, l1: Any, l2: Any) -> Any:
    """The proximal step of `l1 * |w| + l2/2 * w^2`: sign(p) * max(|p| - l1, 0) / (1 + l2)."""
    return jnp.sign(prox) * jnp.maximum(jnp.abs(prox) - l1, 0.0) / (1.0 + l2)


def ftrl(
    learning_rate: Any,
    learning_rate_power: float = -0.5,
    initial_accumulator_value: float = 0.1,
    l1: float = 0.0,
    l2: float = 0.0,
    l2_shrinkage: float = 0.0,
    beta: float = 0.0,
) -> optax.GradientTransformation:
    """TF1's FTRL-proximal (`ApplyFtrlV2`; `ApplyFtrl` when l2_shrinkage is 0), with
    p = -learning_rate_power (Keras's `beta` makes l2 = l2 + beta / (2 lr)):

        g_s    = g + 2 * l2_shrinkage * var
        n_new  = n + g^2
        linear = linear + g_s - (n_new^p - n^p) / lr * var
        var    = (sign(linear) * l1 - linear) / (n_new^p / lr + 2 * l2)  if |linear| > l1  else 0
        n      = n_new
    """

    def init_fn(params):
        return FtrlState(
            count=jnp.zeros([], jnp.int32),
            accumulator=jax.tree.map(lambda p: jnp.full_like(p, initial_accumulator_value), params),
            linear=jax.tree.map(jnp.zeros_like, params),
        )

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError("ftrl needs the parameters: pass params to update().")
        lr = _rate(learning_rate, state.count)
        power = -learning_rate_power
        accumulators = jax.tree.map(lambda n, g: n + g * g, state.accumulator, updates)

        def new_linear(z, g, w, n, n_new):
            return z + g + 2.0 * l2_shrinkage * w - (n_new**power - n**power) / lr * w

        def delta(z, n_new, w):
            quadratic = n_new**power / lr + 2.0 * (l2 + beta / (2.0 * lr))
            w_new = jnp.where(jnp.abs(z) > l1, (jnp.sign(z) * l1 - z) / quadratic, 0.0)
            return (w_new - w).astype(w.dtype)

        linears = jax.tree.map(
            new_linear, state.linear, updates, params, state.accumulator, accumulators
        )
        deltas = jax.tree.map(delta, linears, accumulators, params)
        return deltas, FtrlState(optax.safe_increment(state.count), accumulators, linears)

    return optax.GradientTransformation(init_fn, update_fn)


def proximal_gradient_descent(
    learning_rate: Any, l1: float, l2: float
) -> optax.GradientTransformation:
    """TF1's ApplyProximalGradientDescent: prox = var - lr * g;
    var = sign(prox) * max(|prox| - lr * l1, 0) / (1 + lr * l2)."""

    def init_fn(params):
        return ProximalState(count=jnp.zeros([], jnp.int32))

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError("proximal_gradient_descent needs the parameters.")
        lr = _rate(learning_rate, state.count)
        deltas = jax.tree.map(
            lambda g, w: (_shrink(w - lr * g, lr * l1, lr * l2) - w).astype(w.dtype),
            updates,
            params,
        )
        return deltas, ProximalState(optax.safe_increment(state.count))

    return optax.GradientTransformation(init_fn, update_fn)


def proximal_adagrad(
    learning_rate: Any, initial_accumulator_value: float, l1: float, l2: float
) -> optax.GradientTransformation:
    """TF1's ApplyProximalAdagrad: accum += g^2; lr_t = lr / sqrt(accum); prox = var - lr_t * g;
    var = sign(prox) * max(|prox| - lr_t * l1, 0) / (1 + lr_t * l2)."""

    def init_fn(params):
        return ProximalAdagradState(
            count=jnp.zeros([], jnp.int32),
            accumulator=jax.tree.map(lambda p: jnp.full_like(p, initial_accumulator_value), params),
        )

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError("proximal_adagrad needs the parameters.")
        lr = _rate(learning_rate, state.count)
        accumulators = jax.tree.map(lambda a, g: a + g * g, state.accumulator, updates)

        def leaf(g, a, w):
            lr_t = lr / jnp.sqrt(a)
            return (_shrink(w - lr_t * g, lr_t * l1, lr_t * l2) - w).astype(w.dtype)

        deltas = jax.tree.map(leaf, updates, accumulators, params)
        return deltas, ProximalAdagradState(optax.safe_increment(state.count), accumulators)

    return optax.GradientTransformation(init_fn, update_fn)
