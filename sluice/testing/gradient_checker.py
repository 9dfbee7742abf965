"""`check_gradients`: symbolic gradients against central differences (TF1's `gradient_checker`).

The check projects the output on a fixed random direction `w`, so one symbolic gradient of
`sum(y * w)` is compared with 2 * (number of input elements) evaluations of the same graph.
Run inputs in float64 for tight tolerances.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sluice.framework.ir import graph as graph_lib
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import indexed_slices, math_ops, reduction_ops


def central_difference(
    loss_at: Callable[[np.ndarray], Any], flat: np.ndarray, index: int, delta: float
) -> np.ndarray:
    """`(loss(flat + delta * e) - loss(flat - delta * e)) / (2 * delta)`, e the `index`-th unit
    vector: the derivative of `loss_at` along element `index` of the flat array `flat`.

    `loss_at` is called twice, first with `+delta`, on copies of `flat`; its results (one value
    or an array of several losses) are taken in float64.

    >>> cube_sum = lambda v: np.sum(v**3)
    >>> slope = central_difference(cube_sum, np.array([1.0, 2.0]), 1, 1e-4)  # 3 * 2.0**2
    >>> round(float(slope), 6)
    12.0
    """
    values = []
    for sign in (1.0, -1.0):
        shifted = flat.copy()
        shifted[index] += sign * delta
        values.append(np.asarray(loss_at(shifted), np.float64))
    return (values[0] - values[1]) / (2 * delta)


def check_gradients(
    build: Callable[..., Any],
    inputs: Sequence[np.ndarray],
    *,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    delta: float = 1e-6,
    seed: int = 0,
    session_config: Any = None,
) -> None:
    """Checks the gradients of `build`'s graph against central differences, for every input.

    In a new graph, `build` is called with one placeholder per input; the symbolic gradients of
    `sum(build(*xs) * w)`, with `w` a random projection of the output, are compared with central
    differences of the same loss over every element of every input.

    Args:
      build: called with one placeholder per input (same dtype and shape); returns a Tensor.
      inputs: the input values; their dtypes decide the placeholders' dtypes (use float64).
      rtol, atol: the tolerances of the comparison.
      delta: the central-difference step.
      seed: seeds the projection `w`.
      session_config: the `SessionConfig` of the sessions that run the graph.

    Raises:
      AssertionError: a gradient is None or differs from its central differences.

    >>> check_gradients(lambda x, y: sl.sin(x) * y, [np.array([0.5, 1.0]), np.array([2.0, 3.0])])
    >>> check_gradients(lambda x: sl.stop_gradient(x) * x, [np.array([0.5, 1.0])])
    Traceback (most recent call last):
    AssertionError: ...
    """
    from sluice.framework.autodiff.gradients import gradients
    from sluice.framework.session import Session

    g = graph_lib.Graph()
    inputs = [np.asarray(x) for x in inputs]
    with g.as_default():
        xs = [core_ops.placeholder(x.dtype, x.shape, name=f"x{i}") for i, x in enumerate(inputs)]
        y = core_ops.convert_to_tensor(build(*xs))
        feed = dict(zip(xs, inputs))
        if y.shape.is_fully_defined():
            y_value_shape = tuple(y.shape.as_list())
        else:
            with Session(graph=g, config=session_config) as sess:
                y_value_shape = np.shape(sess.run(y, feed))
        w_value = np.random.default_rng(seed).normal(size=y_value_shape).astype(y.dtype)
        w = core_ops.constant(w_value)
        loss = reduction_ops.reduce_sum(math_ops.multiply(y, w))
        # an IndexedSlices gradient (of a gather) is compared as the dense tensor it stands for
        grads = [indexed_slices.dense(g) for g in gradients(loss, xs)]
    with Session(graph=g, config=session_config) as sess:
        # the symbolic gradients and the loss are one program, which each shifted input's run
        # below fetches whole: one compile serves them all (the interpreted engine compiles
        # nothing, and runs the loss alone)
        fetches = [gr for gr in grads if gr is not None] + [loss]
        values = iter(sess.run(fetches, feed)[:-1])
        symbolic = [None if gr is None else next(values) for gr in grads]
        interpreted = getattr(session_config, "engine", None) == "interpreted"
        if interpreted:
            fetches = [loss]
        batched = not interpreted and sum(x.size for x in inputs) >= _BATCHED_FROM
        numeric = _batched_differences(loss, xs, inputs, delta) if batched else None
        if numeric is None:  # the loss run in the session, once per shifted input
            numeric = []
            for i, x in enumerate(inputs):

                def loss_at(shifted, i=i, x=x):
                    feed_i = {**feed, xs[i]: shifted.reshape(x.shape).astype(x.dtype)}
                    return sess.run(fetches, feed_i)[-1]

                flat = x.astype(np.float64).reshape(-1)
                slopes = [central_difference(loss_at, flat, k, delta) for k in range(flat.size)]
                numeric.append(np.array(slopes).reshape(x.shape))
    for i, (s, n) in enumerate(zip(symbolic, numeric)):
        if s is None:
            raise AssertionError(f"gradient for input {i} is None, numeric gradient is {n}")
        np.testing.assert_allclose(s, n, rtol=rtol, atol=atol, err_msg=f"gradient of input {i}")


# From this many input elements on, the central differences are evaluated batched: one compile
# of the vmapped loss (~0.2 s of CPU for a small graph) costs less than the session runs it
# replaces (~1 ms each, two per element) from a few hundred elements on.
_BATCHED_FROM = 384
# The shifted inputs a batched evaluation takes at once: the loss of a (batch x input) block is
# one program's work, whose intermediates grow with both.
_BATCH_ELEMENTS = 1 << 16


def _batched_differences(
    loss: Any, xs: Sequence[Any], inputs: Sequence[np.ndarray], delta: float
) -> list[np.ndarray] | None:
    """The central differences of `loss` over every element of every input, the shifted inputs
    evaluated as batches of one compiled program (the graph as a pure function under `jax.vmap`)
    instead of one session run each; the arithmetic is `central_difference`'s: the element
    shifted by +-delta in float64, cast to the input's dtype, the losses taken in float64.

    None where the graph is no pure function (variables, TF1 random ops, host ops) or does not
    trace batched: the caller then runs the loss in its session, element by element."""
    import jax
    import jax.numpy as jnp

    from sluice.framework.compiler.pure import PureFunction
    from sluice.framework.ir.x64 import x64_scope
    from sluice.framework.prune import prune

    if any(x.size == 0 for x in inputs):
        return None
    try:
        fn = PureFunction(prune([loss], [], list(xs)), bound=[])
    except (NotImplementedError, ValueError):
        return None
    with x64_scope():
        flats = [jnp.asarray(x.astype(np.float64).reshape(-1)) for x in inputs]
        others = [jnp.asarray(x) for x in inputs]

    def shifted_loss(i: int, k: Any, sign: Any) -> Any:
        x = inputs[i]
        shifted = flats[i].at[k].add(sign * delta).reshape(x.shape).astype(x.dtype)
        return fn([], others[:i] + [shifted] + others[i + 1 :])[0][0]

    def losses(ks: list[Any]) -> list[Any]:  # [input][sign +1, -1][element]
        signs = jnp.asarray([1.0, -1.0])
        return [
            jax.vmap(lambda s, i=i, k=k: jax.vmap(lambda e: shifted_loss(i, e, s))(k))(signs)
            for i, k in enumerate(ks)
        ]

    # each input's elements in rounds of `sizes[i]`, all inputs in one program per round
    total = sum(x.size for x in inputs)
    sizes = [max(1, min(x.size, _BATCH_ELEMENTS // max(total, 1))) for x in inputs]
    rounds = max(-(-x.size // n) for x, n in zip(inputs, sizes))
    program = jax.jit(losses)
    slopes: list[list[np.ndarray]] = [[] for _ in inputs]
    try:
        with x64_scope():
            for r in range(rounds):
                ks = [np.arange(r * n, (r + 1) * n) % x.size for x, n in zip(inputs, sizes)]
                for i, value in enumerate(program(ks)):
                    up, down = np.asarray(value, np.float64)
                    slopes[i].append((up - down) / (2 * delta))
    except Exception:  # a lowering that cannot take batched values: run it unbatched
        return None
    # the rounds past an input's last element (its indices wrapped around) are dropped
    return [np.concatenate(s)[: x.size].reshape(x.shape) for s, x in zip(slopes, inputs)]
