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
        with Session(graph=g, config=session_config) as sess:
            y_value_shape = np.shape(sess.run(y, dict(zip(xs, inputs))))
        w_value = np.random.default_rng(seed).normal(size=y_value_shape).astype(y.dtype)
        w = core_ops.constant(w_value)
        loss = reduction_ops.reduce_sum(math_ops.multiply(y, w))
        # an IndexedSlices gradient (of a gather) is compared as the dense tensor it stands for
        grads = [indexed_slices.dense(g) for g in gradients(loss, xs)]
    with Session(graph=g, config=session_config) as sess:
        feed = dict(zip(xs, inputs))
        symbolic = [None if gr is None else sess.run(gr, feed) for gr in grads]
        numeric = []
        for i, x in enumerate(inputs):

            def loss_at(shifted, i=i, x=x):
                return sess.run(loss, {**feed, xs[i]: shifted.reshape(x.shape).astype(x.dtype)})

            flat = x.astype(np.float64).reshape(-1)
            slopes = [central_difference(loss_at, flat, k, delta) for k in range(flat.size)]
            numeric.append(np.array(slopes).reshape(x.shape))
    for i, (s, n) in enumerate(zip(symbolic, numeric)):
        if s is None:
            raise AssertionError(f"gradient for input {i} is None, numeric gradient is {n}")
        np.testing.assert_allclose(s, n, rtol=rtol, atol=atol, err_msg=f"gradient of input {i}")
