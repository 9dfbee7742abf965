"""Checks symbolic gradients against central differences (TF1's `gradient_checker` idea).

The check projects the output on a fixed random direction `w`, so one symbolic gradient of
`sum(y * w)` is compared with 2 * (number of input elements) evaluations of the same graph.
Run inputs in float64 for tight tolerances.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from sluice.framework.ir import graph as graph_lib
from sluice.framework.ops import core_ops, math_ops, reduction_ops


def gradient_error(
    build: Callable[..., Any],
    inputs: Sequence[np.ndarray],
    *,
    delta: float = 1e-6,
    seed: int = 0,
    session_config: Any = None,
) -> tuple[list[np.ndarray | None], list[np.ndarray]]:
    """Returns (symbolic, numeric) gradients of `sum(build(*xs) * w)` for each input.

    Args:
      build: called with one placeholder per input (same dtype and shape); returns a Tensor.
      inputs: the input values; their dtypes decide the placeholders' dtypes.
      delta: the central-difference step.
      seed: seeds the projection `w`.
    """
    from sluice.framework.autodiff.gradients import gradients
    from sluice.framework.session import Session

    g = graph_lib.Graph()
    inputs = [np.asarray(x) for x in inputs]
    with g.as_default():
        xs = [core_ops.placeholder(x.dtype, x.shape, name=f"x{i}") for i, x in enumerate(inputs)]
        y = core_ops.convert_to_tensor(build(*xs))
        y_value_shape = None
        with Session(graph=g, config=session_config) as sess:
            y_value_shape = np.shape(sess.run(y, dict(zip(xs, inputs))))
        w_value = np.random.default_rng(seed).normal(size=y_value_shape).astype(y.dtype)
        w = core_ops.constant(w_value)
        loss = reduction_ops.reduce_sum(math_ops.multiply(y, w))
        grads = gradients(loss, xs)
    with Session(graph=g, config=session_config) as sess:
        feed = dict(zip(xs, inputs))
        symbolic = [None if gr is None else sess.run(gr, feed) for gr in grads]
        numeric = []
        for i, x in enumerate(inputs):
            flat = x.astype(np.float64).reshape(-1)
            jac = np.zeros_like(flat)
            for k in range(flat.size):
                for sign in (1.0, -1.0):
                    shifted = flat.copy()
                    shifted[k] += sign * delta
                    feed_k = dict(feed)
                    feed_k[xs[i]] = shifted.reshape(x.shape).astype(x.dtype)
                    jac[k] += sign * float(sess.run(loss, feed_k))
            numeric.append((jac / (2 * delta)).reshape(x.shape))
    return symbolic, numeric


def assert_gradients_close(
    build: Callable[..., Any],
    inputs: Sequence[np.ndarray],
    *,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    delta: float = 1e-6,
    seed: int = 0,
    session_config: Any = None,
) -> None:
    """Raises AssertionError when a symbolic gradient differs from central differences."""
    symbolic, numeric = gradient_error(build, inputs, delta=delta, seed=seed, session_config=session_config)
    for i, (s, n) in enumerate(zip(symbolic, numeric)):
        if s is None:
            raise AssertionError(f"gradient for input {i} is None, numeric gradient is {n}")
        np.testing.assert_allclose(s, n, rtol=rtol, atol=atol, err_msg=f"gradient of input {i}")
