"""Update rules of Keras 3 optimizers that optax does not have in Keras's form, written as optax
`GradientTransformation`s (state a NamedTuple, optax's tree helpers for the moments), and the
schedule driver of every Keras optimizer.

| Keras optimizer | transformation                                                           |
| --------------- | ------------------------------------------------------------------------ |
| Nadam           | `scale_by_keras_nadam`: Dozat's momentum schedule, as Keras's update_step |
| Adamax          | `scale_by_keras_adamax`: epsilon added to u, where optax adds it in max  |
| Adafactor       | `keras_adafactor`: Keras's factored rule, its step size from the params  |
| Lion, Adadelta  | optax's `scale_by_lion`, `scale_by_adadelta` (Keras's formulas)           |
| Ftrl            | `transforms.ftrl` (TF1's FTRL-proximal; Keras's `beta` adds to l2)        |

Keras's `weight_decay` shrinks each variable (var -= lr * weight_decay * var) before the update
step computes; `decay_first` does that for rules that read the parameters (Adafactor, Ftrl);
for the others it is optax's `add_decayed_weights` before the learning rate (the same numbers).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax


def _leaves_dtype(tree: Any, default: Any = jnp.float32) -> Any:
    leaves = jax.tree_util.tree_leaves(tree)
    return jnp.result_type(*leaves) if leaves else default


# -- schedules ------------------------------------------------------------------------------------
class ScheduleState(NamedTuple):
    iteration: Any  # int64: the updates applied so far (Keras's `optimizer.iterations`)


def scheduled(
    make: Callable[[Any], optax.GradientTransformation], schedule: Callable[[Any], Any]
) -> optax.GradientTransformation:
    """`make(rate)` with rate = schedule(iteration) at every update, where iteration counts the
    updates applied before this one (0 first), as Keras evaluates a schedule at
    `optimizer.iterations`. The state is (ScheduleState(iteration), make's state), so the
    count is the state leaf named "iteration"; the rate is cast to the gradients' dtype."""

    def init_fn(params):
        return (ScheduleState(jnp.zeros([], jnp.int64)), make(jnp.zeros([])).init(params))

    def update_fn(updates, state, params=None):
        counter, inner = state
        rate = jnp.asarray(schedule(counter.iteration), _leaves_dtype(updates))
        updates, inner = make(rate).update(updates, inner, params)
        return updates, (ScheduleState(counter.iteration + 1), inner)

    return optax.GradientTransformation(init_fn, update_fn)


def decay_first(
    inner: optax.GradientTransformation, learning_rate: Any, weight_decay: float | None
) -> optax.GradientTransformation:
    """Keras's weight decay for a rule that reads the parameters: each parameter first becomes
    p * (1 - learning_rate * weight_decay), then `inner` updates that value."""
    if not weight_decay:
        return inner
    if callable(learning_rate):
        raise NotImplementedError(
            "weight_decay with an optax schedule as the learning rate is not supported here; "
            "pass a keras.optimizers.schedules.LearningRateSchedule."
        )

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError("weight decay needs the parameters: pass params to update().")
        decayed = jax.tree.map(lambda p: p - p * weight_decay * learning_rate, params)
        steps, state = inner.update(updates, state, decayed)
        return jax.tree.map(lambda d, p, u: (d - p + u).astype(p.dtype), decayed, params, steps), (
            state
        )

    return optax.GradientTransformation(inner.init, update_fn)


def clip_by_norm(clipnorm: float) -> optax.GradientTransformation:
    """Keras's `clipnorm`: each gradient g becomes g * clipnorm / max(norm(g), clipnorm)."""

    def update_fn(updates, state, params=None):
        del params

        def clip(g):
            norm = jnp.sqrt(jnp.sum(g * g))
            return (g * clipnorm / jnp.maximum(norm, clipnorm)).astype(g.dtype)

        return jax.tree.map(clip, updates), state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update_fn)


# -- Nadam ----------------------------------------------------------------------------------------
class KerasNadamState(NamedTuple):
    count: Any
    u_product: Any  # prod of the momentum schedule u_1 ... u_t
    mu: Any
    nu: Any


def scale_by_keras_nadam(b1: float, b2: float, epsilon: float) -> optax.GradientTransformation:
    """Keras 3's Nadam (Dozat 2016, with the momentum schedule u_t = b1 (1 - 0.5 * 0.96^t)), at
    step t = count + 1:

        u_product = u_product * u_t                       (starts at 1)
        m = m + (g - m) (1 - b1);   v = v + (g^2 - v) (1 - b2)
        m_hat = u_{t+1} m / (1 - u_product u_{t+1}) + (1 - u_t) g / (1 - u_product)
        v_hat = v / (1 - b2^t)
        update = m_hat / (sqrt(v_hat) + epsilon)          (then times -learning_rate)
    """

    def init_fn(params):
        return KerasNadamState(
            count=jnp.zeros([], jnp.int32),
            u_product=jnp.ones([], _leaves_dtype(params)),
            mu=optax.tree.zeros_like(params),
            nu=optax.tree.zeros_like(params),
        )

    def update_fn(updates, state, params=None):
        del params
        count = optax.safe_increment(state.count)
        dtype = state.u_product.dtype
        t = count.astype(dtype)
        u_t = b1 * (1.0 - 0.5 * jnp.power(jnp.asarray(0.96, dtype), t))
        u_next = b1 * (1.0 - 0.5 * jnp.power(jnp.asarray(0.96, dtype), t + 1.0))
        u_product = state.u_product * u_t
        u_product_next = u_product * u_next
        mu = optax.tree.update_moment(updates, state.mu, b1, 1)
        nu = optax.tree.update_moment_per_elem_norm(updates, state.nu, b2, 2)
        correction = 1.0 - jnp.power(jnp.asarray(b2, dtype), t)

        def step(g, m, v):
            m_hat = u_next * m / (1.0 - u_product_next) + (1.0 - u_t) * g / (1.0 - u_product)
            return (m_hat / (jnp.sqrt(v / correction) + epsilon)).astype(g.dtype)

        new_updates = jax.tree.map(step, updates, mu, nu)
        return new_updates, KerasNadamState(count, u_product, mu, nu)

    return optax.GradientTransformation(init_fn, update_fn)


# -- Adamax ---------------------------------------------------------------------------------------
def scale_by_keras_adamax(b1: float, b2: float, epsilon: float) -> optax.GradientTransformation:
    """Keras 3's Adamax at step t: m = m + (g - m)(1 - b1); u = max(b2 u, |g|);
    update = m / ((1 - b1^t) (u + epsilon)). (optax's `scale_by_adamax` keeps
    u = max(b2 u, |g| + eps) and divides by u: another epsilon placement.)"""

    def init_fn(params):
        return optax.ScaleByAdamState(
            count=jnp.zeros([], jnp.int32),
            mu=optax.tree.zeros_like(params),
            nu=optax.tree.zeros_like(params),
        )

    def update_fn(updates, state, params=None):
        del params
        count = optax.safe_increment(state.count)
        mu = optax.tree.update_moment(updates, state.mu, b1, 1)
        nu = jax.tree.map(lambda g, u: jnp.maximum(b2 * u, jnp.abs(g)), updates, state.nu)
        mu_hat = optax.tree.bias_correction(mu, b1, count)
        new_updates = jax.tree.map(lambda m, u: m / (u + epsilon), mu_hat, nu)
        return new_updates, optax.ScaleByAdamState(count, mu, nu)

    return optax.GradientTransformation(init_fn, update_fn)


# -- Adafactor ------------------------------------------------------------------------------------
class KerasAdafactorState(NamedTuple):
    count: Any
    r: Any  # row statistics (the variable's shape less its last axis; a 0 scalar below rank 2)
    c: Any  # column statistics (its shape less its second-to-last axis; likewise)
    v: Any  # the second-moment estimate, the variable's shape


def keras_adafactor(
    learning_rate: Any,
    beta_2_decay: float,
    epsilon_1: float,
    epsilon_2: float,
    clip_threshold: float,
) -> optax.GradientTransformation:
    """Keras 3's Adafactor at step t (the whole update, the learning rate included):

        rho = min(learning_rate, 1 / sqrt(t));   alpha = max(epsilon_2, rms(var)) * rho
        s = g^2 + epsilon_1;   beta = 1 - t^beta_2_decay
        rank >= 2:  r = beta r + (1 - beta) mean(s, -1);  c = beta c + (1 - beta) mean(s, -2)
                    v = (r / mean(r, -1))[..., None] * c[..., None, :]
        else:       v = beta v + (1 - beta) s
        u = g / sqrt(v);   var -= alpha * u / max(1, rms(u) / clip_threshold)

    with rms(x) = sqrt(mean(x^2)) over the whole tensor. (Keras's `relative_step` only caps
    the rate at 1 / sqrt(t), which rho does anyway.)
    """

    def init_fn(params):
        def factor(p, axis):
            if p.ndim < 2:
                return jnp.zeros([], p.dtype)
            return jnp.zeros(p.shape[:axis] + p.shape[axis + 1 :], p.dtype)

        return KerasAdafactorState(
            count=jnp.zeros([], jnp.int32),
            r=jax.tree.map(lambda p: factor(p, p.ndim - 1), params),
            c=jax.tree.map(lambda p: factor(p, p.ndim - 2), params),
            v=optax.tree.zeros_like(params),
        )

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError("Adafactor needs the parameters: pass params to update().")
        count = optax.safe_increment(state.count)
        rate = learning_rate(state.count) if callable(learning_rate) else learning_rate

        def leaf(g, p, r, c, v):
            t = count.astype(p.dtype)
            rho = jnp.minimum(rate, 1.0 / jnp.sqrt(t))
            alpha = jnp.maximum(epsilon_2, jnp.sqrt(jnp.mean(p * p))) * rho
            s = g * g + epsilon_1
            beta = 1.0 - jnp.power(t, beta_2_decay)
            if p.ndim >= 2:
                r = beta * r + (1.0 - beta) * jnp.mean(s, axis=-1)
                c = beta * c + (1.0 - beta) * jnp.mean(s, axis=-2)
                v = (r / jnp.mean(r, axis=-1, keepdims=True))[..., None] * c[..., None, :]
            else:
                v = beta * v + (1.0 - beta) * s
            u = g / jnp.sqrt(v)
            u = u / jnp.maximum(1.0, jnp.sqrt(jnp.mean(u * u)) / clip_threshold)
            return (-alpha * u).astype(p.dtype), r.astype(p.dtype), c.astype(p.dtype), v

        out = jax.tree.map(leaf, updates, params, state.r, state.c, state.v)
        pick = lambda i: jax.tree.map(lambda _, o: o[i], updates, out)  # noqa: E731
        return pick(0), KerasAdafactorState(count, pick(1), pick(2), pick(3))

    return optax.GradientTransformation(init_fn, update_fn)
