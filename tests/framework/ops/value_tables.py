"""Runs a table of value cases (name -> (build(x), reference(x))) as one graph per engine, for
the TF1 op tests (test_tf1_math_ops, test_tf1_array_ops, test_linalg_ops).

`x` is a fed float64 placeholder, and every floating Const of rank >= 1 is fed its own value, so
the compiled engine lowers the ops into its jitted step instead of evaluating them while tracing
(int constants stay constants: they are shapes, axes, ids, which kernels read as host values).
The interpreted engine's run is the slower one (one jit per op): its cases are in the slow set.
"""

from __future__ import annotations

import numpy as np
import pytest

import sluice as sl

ENGINES = ["compiled", pytest.param("interpreted", marks=pytest.mark.slow)]


def value_table_runner(values: dict, data: np.ndarray):
    """A function engine -> {name: value}, each engine run once (memoised)."""
    results: dict = {}
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float64, data.shape, name="x")
        fetches = {name: build(x) for name, (build, _) in values.items()}
    feeds = {x: data}
    for op in g.get_operations():
        out = op.outputs[0] if op.type == "Const" else None
        if out is not None and out.dtype.kind == "f" and out.shape.rank:
            feeds[out] = op.get_attr("value")

    def run(engine: str) -> dict:
        if engine not in results:
            with sl.Session(graph=g, config=sl.SessionConfig(engine=engine)) as sess:
                results[engine] = sess.run(fetches, feeds)
        return results[engine]

    return run


def check_value(got: np.ndarray, want) -> None:
    """Exact for bool and integer results, 1e-6 for floating ones; dtype and shape must match."""
    want = np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def gradient_table_runner(cases: dict, delta: float = 1e-6, seed: int = 0):
    """A function engine -> {name: (symbolic gradients, central differences)} for a table of
    gradient cases (name -> (build(*placeholders), float64 inputs)), as `check_gradients` computes
    them, but with every case in one graph: the losses `sum(build(*xs) * w)` (w a fixed random
    projection) are fetched together, so each engine compiles the table once, not once a case."""
    from sluice.framework.autodiff.gradients import gradients
    from sluice.framework.ops.math import indexed_slices

    rng = np.random.default_rng(seed)
    g = sl.Graph()
    feeds, losses, grads, placeholders = {}, [], {}, {}
    with g.as_default():
        for name, (build, inputs) in cases.items():
            xs = [sl.placeholder(x.dtype, x.shape) for x in inputs]
            y = sl.convert_to_tensor(build(*xs))
            if not y.shape.is_fully_defined():
                raise ValueError(f"gradient case {name}: the output shape {y.shape} must be static")
            w = rng.normal(size=y.shape.as_list()).astype(y.dtype)
            loss = sl.reduce_sum(y * w)
            losses.append(loss)
            grads[name] = [
                None if d is None else indexed_slices.dense(d) for d in gradients(loss, xs)
            ]
            placeholders[name] = xs
            feeds.update(zip(xs, inputs))
        all_losses = sl.stack(losses)
    results: dict = {}

    def run(engine: str) -> dict:
        if engine in results:
            return results[engine]
        out = {}
        with sl.Session(graph=g, config=sl.SessionConfig(engine=engine)) as sess:
            fetch = {n: [d for d in ds if d is not None] for n, ds in grads.items()}
            symbolic_values = sess.run(fetch, feeds)
            for k, (name, (_, inputs)) in enumerate(cases.items()):
                values = iter(symbolic_values[name])
                symbolic = [None if d is None else next(values) for d in grads[name]]
                numeric = []
                for x, value in zip(placeholders[name], inputs):
                    flat = value.astype(np.float64).reshape(-1)
                    slopes = []
                    for i in range(flat.size):
                        ends = []
                        for sign in (1.0, -1.0):
                            shifted = flat.copy()
                            shifted[i] += sign * delta
                            shifted_feeds = {**feeds, x: shifted.reshape(value.shape)}
                            ends.append(sess.run(all_losses, shifted_feeds)[k])
                        slopes.append((ends[0] - ends[1]) / (2 * delta))
                    numeric.append(np.array(slopes).reshape(value.shape))
                out[name] = (symbolic, numeric)
        results[engine] = out
        return out

    return run


def check_gradient_case(result: tuple, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    symbolic, numeric = result
    for i, (s, n) in enumerate(zip(symbolic, numeric)):
        assert s is not None, f"gradient for input {i} is None, numeric gradient is {n}"
        np.testing.assert_allclose(s, n, rtol=rtol, atol=atol, err_msg=f"gradient of input {i}")
