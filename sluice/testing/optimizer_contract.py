"""`run_optimizer_test`: the contract every optimizer meets, written once (like Keras's
`run_layer_test`).

The optimizer trains two variables of a small quadratic for a few steps; at every step the
gradients it was given are fetched and fed to a reference (an optax GradientTransformation, or
anything with the same `init`/`update`, e.g. a NumPy transcription of a TF1 kernel) that updates
its own copy of the parameters. Both engines must match the reference and each other, the
global step must count the steps, and the state must live in non-trainable global Variables
under the optimizer's scope.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import optax

import sluice as sl
from sluice._keras.optimizers.optimizer import Optimizer
from sluice._keras.optimizers.training_util import get_or_create_global_step
from sluice.framework.ir.x64 import with_x64

_INIT = {
    "dense/kernel": np.array([[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25]]),
    "dense/bias": np.array([0.3, -0.7]),
}
_CURVATURE = {
    "dense/kernel": np.array([[1.0, 4.0], [0.25, 2.0], [9.0, 0.5]]),
    "dense/bias": np.array([3.0, 0.1]),
}
_TARGET = {
    "dense/kernel": np.array([[0.5, 0.5], [-1.0, 1.0], [2.0, -2.0]]),
    "dense/bias": np.array([-1.0, 1.0]),
}


def _train(make_optimizer: Callable[[], Optimizer], steps: int, dtype: Any, engine: str) -> dict:
    """Trains the quadratic; returns per-step gradients and parameters, and graph facts."""
    g = sl.Graph()
    with g.as_default():
        variables = {
            name: sl.Variable(value.astype(dtype), name=name) for name, value in _INIT.items()
        }
        loss = sl.add_n(
            [
                sl.reduce_sum(
                    _CURVATURE[name].astype(dtype) * sl.square(v - _TARGET[name].astype(dtype))
                )
                for name, v in variables.items()
            ]
        )
        step = get_or_create_global_step()
        optimizer = make_optimizer()
        grads_and_vars = optimizer.compute_gradients(loss)
        train_op = optimizer.apply_gradients(grads_and_vars, global_step=step)
        grads = {v.op.name: grad for grad, v in grads_and_vars}
        facts = {
            "state": optimizer.variables(),
            "global": set(sl.global_variables()),
            "trainable": set(sl.trainable_variables()),
            "update_ops": [op for op in g.get_operations() if op.type == "ApplyUpdates"],
        }
        history = []
        with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
            sess.run(sl.global_variables_initializer())
            for _ in range(steps):
                grad_values, _ = sess.run([grads, train_op])
                history.append((grad_values, sess.run({n: v for n, v in variables.items()})))
            facts["step"] = sess.run(step)
    facts["history"] = history
    return facts


@with_x64  # the optax reference runs eagerly: in sluice's 64-bit types (see `ir.x64`)
def run_optimizer_test(
    make_optimizer: Callable[[], Optimizer],
    reference: optax.GradientTransformation,
    steps: int = 5,
    dtype: Any = np.float32,
    rtol: float = 2e-6,
    atol: float = 1e-7,
) -> list[dict]:
    """Checks `make_optimizer()` against `reference` applied to the same gradients (see the
    module docstring).

    Args:
      make_optimizer: builds the optimizer (called once per engine, inside a fresh graph).
      reference: `init(params)` / `update(grads, state, params) -> (updates, state)` over dicts
        of NumPy arrays keyed "dense/kernel", "dense/bias".
      steps: training steps to compare.
      dtype: the variables' dtype.
      rtol, atol: the tolerances of the comparison with the reference.

    Returns:
      The parameters after each step (a list of dicts), for further checks.

    Raises:
      AssertionError: the optimizer differs from the reference, or its engines from each other,
        or its state or global step is not as the contract says.

    >>> params = run_optimizer_test(lambda: sl.train.GradientDescentOptimizer(0.1), optax.sgd(0.1))
    >>> len(params), sorted(params[-1])
    (5, ['dense/bias', 'dense/kernel'])
    """
    runs = {
        engine: _train(make_optimizer, steps, dtype, engine)
        for engine in ("interpreted", "compiled")
    }
    facts = runs["interpreted"]
    params = {name: value.astype(dtype) for name, value in _INIT.items()}
    state = reference.init(params)
    for i, (grads, got) in enumerate(facts["history"]):
        updates, state = reference.update(grads, state, params)
        params = {n: np.asarray(params[n] + np.asarray(updates[n]), dtype) for n in params}
        for name in params:
            np.testing.assert_allclose(
                got[name],
                params[name],
                rtol=rtol,
                atol=atol,
                err_msg=f"step {i + 1}, {name}: optimizer vs reference",
            )
    for i, ((_, a), (_, b)) in enumerate(zip(facts["history"], runs["compiled"]["history"])):
        for name in a:
            np.testing.assert_allclose(
                a[name],
                b[name],
                rtol=1e-6,
                atol=1e-7,
                err_msg=f"step {i + 1}, {name}: interpreted vs compiled engine",
            )
    assert facts["step"] == steps, f"the global step is {facts['step']} after {steps} steps"
    assert len(facts["update_ops"]) == 1, "one ApplyUpdates op per apply_gradients call"
    optimizer_scope = facts["update_ops"][0].name.rsplit("/", 1)[0] + "/"
    for v in facts["state"]:
        assert v in facts["global"], f"state variable {v.name} is not a global variable"
        assert v not in facts["trainable"], f"state variable {v.name} is trainable"
        assert v.op.name.startswith(optimizer_scope), f"{v.name} is not under {optimizer_scope}"
    return [got for _, got in facts["history"]]
