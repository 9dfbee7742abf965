"""What an expert writes directly in JAX: one jax.jit per train step, lax.scan, optax."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax

from benchmarks.workloads import RnnWorkload, VggWorkload, glorot


def rnn_step(w: RnnWorkload, unroll: int | bool = 1):
    """A jitted train step for W1-W3 (TF1 BasicLSTMCell / GRUCell equations) and its params;
    `unroll` goes to lax.scan (True: every step in straight-line code, for XLA's FLOP count)."""
    rng = np.random.default_rng(0)
    n_in, n_h = w.inputs, w.hidden
    if w.cell == "lstm":
        params = {
            "kernel": glorot(rng, (n_in + n_h, 4 * n_h)),
            "bias": np.zeros(4 * n_h, np.float32),
        }
    else:
        params = {
            "gates_kernel": glorot(rng, (n_in + n_h, 2 * n_h)),
            "gates_bias": np.ones(2 * n_h, np.float32),
            "candidate_kernel": glorot(rng, (n_in + n_h, n_h)),
            "candidate_bias": np.zeros(n_h, np.float32),
        }
    params["dense_w"] = glorot(rng, (n_h, w.classes))
    params["dense_b"] = np.zeros(w.classes, np.float32)
    params = jax.tree_util.tree_map(jnp.asarray, params)
    opt = optax.adam(1e-3, eps=1e-8)

    def cell(p, carry, x):
        if w.cell == "lstm":
            c, h = carry
            z = jnp.concatenate([x, h], 1) @ p["kernel"] + p["bias"]
            i, j, f, o = jnp.split(z, 4, axis=1)
            c = c * jax.nn.sigmoid(f + 1.0) + jax.nn.sigmoid(i) * jnp.tanh(j)
            h = jnp.tanh(c) * jax.nn.sigmoid(o)
            return (c, h), h
        h = carry
        ru = jax.nn.sigmoid(jnp.concatenate([x, h], 1) @ p["gates_kernel"] + p["gates_bias"])
        r, u = jnp.split(ru, 2, axis=1)
        cand = jnp.tanh(
            jnp.concatenate([x, r * h], 1) @ p["candidate_kernel"] + p["candidate_bias"]
        )
        h = u * h + (1 - u) * cand
        return h, h

    def loss_fn(p, x, y):
        batch = x.shape[0]
        zeros = jnp.zeros((batch, n_h), jnp.float32)
        carry = (zeros, zeros) if w.cell == "lstm" else zeros
        _, hs = jax.lax.scan(
            lambda c, xt: cell(p, c, xt), carry, jnp.swapaxes(x, 0, 1), unroll=unroll
        )
        logits = hs[-1] @ p["dense_w"] + p["dense_b"]
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

    @jax.jit
    def step(p, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
        updates, opt_state = opt.update(grads, opt_state, p)
        return optax.apply_updates(p, updates), opt_state, loss

    state = [params, opt.init(params)]

    def run(x, y):
        state[0], state[1], loss = step(state[0], state[1], x, y)
        return loss

    run.lowered = lambda x, y: step.lower(state[0], state[1], x, y)
    run.compiled_text = lambda x, y: run.lowered(x, y).compile().as_text()
    return run


def vgg_step(w: VggWorkload):
    rng = np.random.default_rng(0)
    params, c_in = [], w.channels
    for layer in w.layers:
        if layer == "M":
            continue
        params.append((glorot(rng, (3, 3, c_in, layer)), np.zeros(layer, np.float32)))
        c_in = layer
    spatial = w.image // 2 ** w.layers.count("M")
    params.append((glorot(rng, (spatial * spatial * c_in, w.dense)), np.zeros(w.dense, np.float32)))
    params.append((glorot(rng, (w.dense, w.classes)), np.zeros(w.classes, np.float32)))
    params = jax.tree_util.tree_map(jnp.asarray, params)
    opt = optax.sgd(0.01, momentum=0.9)

    def loss_fn(p, x, y):
        k = 0
        for layer in w.layers:
            if layer == "M":
                x = jax.lax.reduce_window(
                    x, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"
                )
            else:
                kernel, bias = p[k]
                x = jax.nn.relu(
                    jax.lax.conv_general_dilated(
                        x, kernel, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
                    )
                    + bias
                )
                k += 1
        x = x.reshape(x.shape[0], -1)
        x = jax.nn.relu(x @ p[k][0] + p[k][1])
        logits = x @ p[k + 1][0] + p[k + 1][1]
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

    @jax.jit
    def step(p, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
        updates, opt_state = opt.update(grads, opt_state, p)
        return optax.apply_updates(p, updates), opt_state, loss

    state = [params, opt.init(params)]

    def run(x, y):
        state[0], state[1], loss = step(state[0], state[1], x, y)
        return loss

    run.lowered = lambda x, y: step.lower(state[0], state[1], x, y)
    run.compiled_text = lambda x, y: run.lowered(x, y).compile().as_text()
    return run


def while_loop_run():
    @jax.jit
    def loop(limit):
        return jax.lax.while_loop(
            lambda s: s[0] < limit,
            lambda s: (s[0] + 1, s[1] * jnp.float32(0.999) + jnp.float32(1.0)),
            (jnp.int32(0), jnp.float32(0.0)),
        )[1]

    return lambda n: loop(jnp.int32(n))
