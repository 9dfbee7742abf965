"""How the compiled engine lowers a cond region: one `lax.cond`, or a select (lowering_cond).

Every `Session.run` here is differential (`sluice.testing.differential_sessions`): it runs in
the compiled and in the interpreted engine from the same state, and both must give the same
values (gradients included) and leave the same variables and random counters. The tests then
check which lowering the compiled step used, in its jaxpr: `cond[` for a lax.cond. The cond tests
of test_cond, test_control_flow_grad and test_while_loop also run with every region forced to a
lax.cond (the `lax_cond` mode of the differential sweep, tests/differential_sweep.py).
"""

import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend.core import jaxprs_in_params

import sluice as sl
from sluice.framework.compiler import cond_regions, lowering_cond
from sluice.framework.compiler.step import CompiledStep
from sluice.framework.ir.x64 import x64_scope
from sluice.testing import differential_sessions

F64 = sl.float64
RNG = np.random.default_rng(0)
X = RNG.normal(size=(4, 4))
W = RNG.normal(size=(4, 4)) * 0.5


@pytest.fixture(autouse=True)
def both_engines():
    with differential_sessions("compiled") as log:
        yield log


def run(fetches, feeds=None):
    with sl.Session() as s:
        s.run(sl.global_variables_initializer())
        return s.run(fetches, feeds)


def jaxpr_of_last_step(session, feeds):
    """The jaxpr of the session's last compiled step, traced for `feeds`, as text."""
    return str(closed_jaxpr_of_last_step(session, feeds))


def closed_jaxpr_of_last_step(session, feeds):
    step = [v for v in session._compiled.values() if isinstance(v, CompiledStep)][-1]
    variables = session._state.variables
    written = {h: variables[h] for h in step.written}
    read = {h: variables[h] for h in step.handles - step.written}
    with x64_scope():  # traced as the session traces it (see sluice/framework/ir/x64.py)
        counts = {name: jnp.int64(0) for name in step.random_ops}
        feed_values = [np.asarray(feeds[t]) for t in step.feeds]
        return jax.make_jaxpr(step._step)(written, read, counts, feed_values)


def lowered(fetches, feeds):
    """(values, jaxpr of the compiled step) of one differential run."""
    with sl.Session() as s:
        s.run(sl.global_variables_initializer())
        values = s.run(fetches, feeds)
        return values, jaxpr_of_last_step(s, feeds)


# -- the rule --------------------------------------------------------------------------------------
@pytest.mark.parametrize("pred", [True, False])
def test_expensive_branch_is_a_lax_cond_and_a_cheap_region_a_select(pred):
    x, p = sl.placeholder(F64, [4, 4]), sl.placeholder(sl.bool, [])
    expensive = sl.cond(p, lambda: sl.matmul(x, x), lambda: x * 2.0)
    cheap = sl.cond(p, lambda: x * 3.0 + 1.0, lambda: sl.maximum(x, 0.0))
    (e, c), jaxpr = lowered([expensive, cheap], {x: X, p: pred})
    np.testing.assert_allclose(e, X @ X if pred else X * 2.0)
    np.testing.assert_allclose(c, X * 3.0 + 1.0 if pred else np.maximum(X, 0.0))
    assert jaxpr.count("cond[") == 1
    assert "dot_general" in jaxpr


def test_a_large_elementwise_region_is_a_lax_cond():
    n = 300  # 300 x 300 outputs: above CHEAP_ELEMENTS
    assert n * n > cond_regions.CHEAP_ELEMENTS
    x, p = sl.placeholder(F64, [n, n]), sl.placeholder(sl.bool, [])
    y = sl.cond(p, lambda: x * 3.0, lambda: x + 1.0)
    feeds = {x: np.ones((n, n)), p: True}
    assert lowered(y, feeds)[1].count("cond[") == 1


def test_a_predicate_known_while_tracing_evaluates_only_the_live_branch():
    x = sl.placeholder(F64, [4, 4])
    y = sl.cond(sl.constant(False), lambda: sl.matmul(x, x), lambda: x * 2.0)
    value, jaxpr = lowered(y, {x: X})
    np.testing.assert_allclose(value, X * 2.0)
    assert "cond[" not in jaxpr and "dot_general" not in jaxpr


def test_a_loop_on_the_side_a_known_predicate_does_not_take_is_not_run():
    y = sl.cond(
        sl.constant(True),
        lambda: sl.constant(-1),
        lambda: sl.while_loop(lambda i: i >= 0, lambda i: i + 1, [sl.constant(0)]),
    )
    assert run(y) == -1


def test_a_region_a_lax_cond_cannot_hold_falls_back_to_a_select(monkeypatch):
    # e.g. branches giving one output different shapes: the region is lowered as a select
    def cannot_branch(*args):
        raise lowering_cond._CannotBranch("for the test")

    monkeypatch.setattr(lowering_cond, "_Layout", cannot_branch)
    x, p = sl.placeholder(F64, [4, 4]), sl.placeholder(sl.bool, [])
    v = sl.Variable(0.0, dtype=F64, name="v")
    y = sl.cond(p, lambda: sl.matmul(x, x) + v.assign_add(1.0), lambda: x)
    with sl.Session() as s:
        s.run(sl.global_variables_initializer())
        np.testing.assert_allclose(s.run(y, {x: X, p: True}), X @ X + 1.0)
        jaxpr = jaxpr_of_last_step(s, {x: X, p: True})
        assert s.run(v) == 1.0
    assert "cond[" not in jaxpr and "dot_general" in jaxpr


# -- values and gradients --------------------------------------------------------------------------
@pytest.mark.parametrize("pred", [True, False])
def test_values_and_gradients_agree_for_both_predicate_values(pred):
    x, p = sl.placeholder(F64, [4, 4]), sl.placeholder(sl.bool, [])
    w = sl.Variable(W, name="w")
    y = sl.cond(p, lambda: sl.tanh(sl.matmul(x, w)), lambda: sl.sin(x) * w)
    loss = sl.reduce_sum(y * y)
    (value, dx, dw), jaxpr = lowered([loss] + sl.gradients(loss, [x, w]), {x: X, p: pred})
    y_np = np.tanh(X @ W) if pred else np.sin(X) * W
    assert value == pytest.approx(np.sum(y_np**2))
    if pred:
        dpre = 2 * y_np * (1 - y_np**2)
        np.testing.assert_allclose(dx, dpre @ W.T)
        np.testing.assert_allclose(dw, X.T @ dpre)
    else:
        np.testing.assert_allclose(dx, 2 * y_np * np.cos(X) * W)
        np.testing.assert_allclose(dw, 2 * y_np * np.sin(X))
    assert "cond[" in jaxpr


@pytest.mark.parametrize("a_value", [-2.0, 0.5, 3.0])
def test_nested_conds_and_their_gradients(a_value):
    x, a = sl.placeholder(F64, [4, 4]), sl.placeholder(F64, [])
    w = sl.Variable(W, name="w")

    def outer_true():
        return sl.cond(a > 1.0, lambda: sl.matmul(x, w), lambda: sl.matmul(w, x) + a)

    y = sl.cond(a > 0.0, outer_true, lambda: x * w - a)
    loss = sl.reduce_sum(sl.tanh(y))
    (value, *grads), jaxpr = lowered([y] + sl.gradients(loss, [x, w, a]), {x: X, a: a_value})
    expected = X @ W if a_value > 1 else W @ X + a_value if a_value > 0 else X * W - a_value
    np.testing.assert_allclose(value, expected)
    assert all(g is not None for g in grads)
    assert jaxpr.count("cond[") == 4  # the two conds, and their gradients


@pytest.mark.parametrize("threshold", [-100.0, 100.0, 1.0])  # 1.0: taken, taken, not, taken
def test_cond_inside_a_while_loop_and_its_gradient(threshold):
    x0, limit = sl.placeholder(F64, [4, 4]), sl.placeholder(F64, [])
    w = sl.Variable(W, name="w")

    def body(i, x):
        x = sl.cond(sl.reduce_sum(x) < limit, lambda: sl.tanh(sl.matmul(x, w)), lambda: x * 0.5)
        return i + 1, x

    _, x = sl.while_loop(lambda i, x: i < 4, body, (sl.constant(0), x0), maximum_iterations=4)
    loss = sl.reduce_sum(x * x)
    feeds = {x0: X, limit: threshold}
    (value, *grads), jaxpr = lowered([x] + sl.gradients(loss, [x0, w]), feeds)
    expected = X
    for _ in range(4):
        expected = np.tanh(expected @ W) if expected.sum() < threshold else expected * 0.5
    np.testing.assert_allclose(value, expected)
    assert all(np.isfinite(g).all() for g in grads)  # and equal to the interpreted engine's
    assert "cond[" in jaxpr


def while_loop_inside_a_cond():
    """y = cond(p, three steps of h <- tanh(h @ w) from x, x * w); returns (x, p, w, y)."""
    x, p = sl.placeholder(F64, [4, 4]), sl.placeholder(sl.bool, [])
    w = sl.Variable(W, name="w")

    def loop():
        return sl.while_loop(
            lambda i, h: i < 3,
            lambda i, h: (i + 1, sl.tanh(sl.matmul(h, w))),
            (sl.constant(0), x),
            maximum_iterations=3,
        )[1]

    return x, p, w, sl.cond(p, loop, lambda: x * w)


@pytest.mark.parametrize("pred", [True, False])
def test_while_loop_inside_a_cond_and_its_gradient(pred):
    x, p, w, y = while_loop_inside_a_cond()
    loss = sl.reduce_sum(y * y)
    (value, *grads), jaxpr = lowered([y] + sl.gradients(loss, [x, w]), {x: X, p: pred})
    expected = X
    for _ in range(3 if pred else 0):
        expected = np.tanh(expected @ W)
    np.testing.assert_allclose(value, expected if pred else X * W)
    assert all(np.isfinite(g).all() for g in grads)  # and equal to the interpreted engine's
    assert "cond[" in jaxpr


def test_only_the_taken_branch_assigns_and_draws_random_numbers():
    p = sl.placeholder(sl.bool, [])
    v = sl.Variable(np.eye(2), name="v")
    total = sl.Variable(0.0, dtype=F64, name="total")

    def true_fn():
        # a matmul makes the region a lax.cond; the draw advances its counter only when taken
        noise = sl.random_normal([2, 2], dtype=F64, seed=3)
        return v.assign(sl.matmul(v, v) * 2.0 + 0.0 * noise)

    def false_fn():
        return total.assign_add(sl.reduce_sum(v))

    step = sl.cond(p, lambda: true_fn().op, lambda: false_fn().op)
    with sl.Session() as s:
        s.run(sl.global_variables_initializer())
        for pred in (True, False, True, False):
            s.run(step, {p: pred})
        jaxpr = jaxpr_of_last_step(s, {p: False})
        np.testing.assert_allclose(s.run(v), np.eye(2) * 8.0)
        assert s.run(total) == pytest.approx(4.0 + 16.0)  # sum(2I) + sum(8I)
    assert "cond[" in jaxpr


def test_fetching_a_value_inside_a_lax_cond_branch():
    x, p = sl.placeholder(F64, [4, 4]), sl.placeholder(sl.bool, [])
    inside = []
    y = sl.cond(p, lambda: inside.append(sl.matmul(x, x)) or inside[0] + 1.0, lambda: x)
    with sl.Session() as s:
        np.testing.assert_allclose(s.run(inside[0], {x: X, p: True}), X @ X)
        np.testing.assert_allclose(s.run(y, {x: X, p: True}), X @ X + 1.0)
        with pytest.raises(sl.errors.InvalidArgumentError, match="dead"):
            s.run([inside[0], y], {x: X, p: False})


# -- unsafe branches -------------------------------------------------------------------------------
@pytest.mark.parametrize("index", [2, 1_000_000_000])
def test_unsafe_untaken_branch_runs_nothing(index):
    # The true branch is valid only when index < 4: a gather at `index` and a loop of `index`
    # iterations. With index = 1e9 it is not taken, and under lax.cond it costs nothing.
    xs, i = sl.placeholder(F64, [4, 3]), sl.placeholder(sl.int32, [])

    def valid_only_for_small_index():
        row = sl.gather(xs, i)
        _, total = sl.while_loop(
            lambda k, t: k < i,
            lambda k, t: (k + 1, t + sl.reduce_sum(row)),
            (sl.constant(0), sl.constant(0.0, F64)),
        )
        return total

    y = sl.cond(i < 4, valid_only_for_small_index, lambda: sl.constant(-1.0, F64))
    feeds = {xs: np.arange(12.0).reshape(4, 3), i: index}
    start = time.perf_counter()
    value, jaxpr = lowered(y, feeds)
    assert time.perf_counter() - start < 60
    assert value == (2 * (6.0 + 7.0 + 8.0) if index == 2 else -1.0)
    assert "cond[" in jaxpr


# -- the gradient of a cond: a cond region of its own ----------------------------------------------
def primitives_run_whatever_the_predicates(jaxpr) -> list[str]:
    """The primitives of `jaxpr` and of its loop bodies, not counting those inside a lax.cond."""
    names = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "cond":
            continue
        names.append(eqn.primitive.name)
        for inner in jaxprs_in_params(eqn.params):
            names.extend(primitives_run_whatever_the_predicates(inner))
    return names


def lowered_with_jaxpr(fetches, feeds):
    """(values, jaxpr object of the compiled step) of one differential run."""
    with sl.Session() as s:
        s.run(sl.global_variables_initializer())
        values = s.run(fetches, feeds)
        return values, closed_jaxpr_of_last_step(s, feeds)


@pytest.mark.parametrize("pred", [True, False])
def test_the_gradient_of_an_expensive_branch_is_a_lax_cond_too(pred):
    x, p = sl.placeholder(F64, [4, 4]), sl.placeholder(sl.bool, [])
    w = sl.Variable(W, name="w")
    y = sl.cond(p, lambda: x * 2.0, lambda: sl.tanh(sl.matmul(sl.tanh(sl.matmul(x, w)), w)))
    loss = sl.reduce_sum(y)
    fetches = [loss] + sl.gradients(loss, [x, w])
    (value, dx, dw), jaxpr = lowered_with_jaxpr(fetches, {x: X, p: pred})
    if pred:
        assert value == pytest.approx(np.sum(X * 2.0))
        np.testing.assert_allclose(dx, np.full((4, 4), 2.0))
        np.testing.assert_allclose(dw, np.zeros((4, 4)))
    else:
        h = np.tanh(X @ W)
        out = np.tanh(h @ W)
        d_out = 1.0 - out**2
        d_h = (d_out @ W.T) * (1.0 - h**2)
        assert value == pytest.approx(np.sum(out))
        np.testing.assert_allclose(dx, d_h @ W.T)
        np.testing.assert_allclose(dw, X.T @ d_h + h.T @ d_out)
    assert str(jaxpr).count("cond[") == 2  # the cond and its gradient
    assert "dot_general" not in primitives_run_whatever_the_predicates(jaxpr.jaxpr)


def test_the_gradient_of_a_cheap_cond_stays_a_select():
    x, p = sl.placeholder(F64, [4, 4]), sl.placeholder(sl.bool, [])
    y = sl.cond(p, lambda: x * 3.0, lambda: sl.maximum(x, 0.0))
    (dx,), jaxpr = lowered(sl.gradients(sl.reduce_sum(y), [x]), {x: X, p: False})
    np.testing.assert_allclose(dx, (X > 0).astype(float))
    assert "cond[" not in jaxpr


@pytest.mark.parametrize("threshold", [-100.0, 100.0, 1.0])  # 1.0: taken, taken, not, taken
def test_the_gradient_of_a_cond_inside_a_while_loop_is_a_lax_cond_in_the_backward_loop(threshold):
    x0, limit = sl.placeholder(F64, [4, 4]), sl.placeholder(F64, [])
    w = sl.Variable(W, name="w")

    def body(i, x):
        x = sl.cond(sl.reduce_sum(x) < limit, lambda: sl.tanh(sl.matmul(x, w)), lambda: x * 0.5)
        return i + 1, x

    _, x = sl.while_loop(lambda i, x: i < 4, body, (sl.constant(0), x0), maximum_iterations=4)
    loss = sl.reduce_sum(x * x)
    feeds = {x0: X, limit: threshold}
    (dx0, dw), jaxpr = lowered_with_jaxpr(sl.gradients(loss, [x0, w]), feeds)
    xs = [X]
    for _ in range(4):
        xs.append(np.tanh(xs[-1] @ W) if xs[-1].sum() < threshold else xs[-1] * 0.5)
    g, expected_dw = 2.0 * xs[-1], np.zeros((4, 4))
    for k in reversed(range(4)):
        if xs[k].sum() < threshold:
            g = g * (1.0 - xs[k + 1] ** 2)
            expected_dw += xs[k].T @ g
            g = g @ W.T
        else:
            g = g * 0.5
    np.testing.assert_allclose(dx0, g)
    np.testing.assert_allclose(dw, expected_dw)
    assert str(jaxpr).count("cond[") == 2  # in the forward loop and in the backward loop
    assert "dot_general" not in primitives_run_whatever_the_predicates(jaxpr.jaxpr)


@pytest.mark.parametrize("a_value", [-2.0, 0.5, 3.0])
def test_the_gradient_of_nested_conds_inside_a_while_loop(a_value):
    x0, a = sl.placeholder(F64, [4, 4]), sl.placeholder(F64, [])
    w = sl.Variable(W, name="w")

    def body(i, x):
        def outer_true():
            return sl.cond(a > 1.0, lambda: sl.tanh(sl.matmul(x, w)), lambda: sl.sin(x) * a)

        return i + 1, sl.cond(a > 0.0, outer_true, lambda: x * w)

    _, x = sl.while_loop(lambda i, x: i < 3, body, (sl.constant(0), x0), maximum_iterations=3)
    loss = sl.reduce_sum(x)
    (dx0, dw, da), jaxpr = lowered(sl.gradients(loss, [x0, w, a]), {x0: X, a: a_value})
    g, expected_dw, expected_da, xs = np.ones((4, 4)), np.zeros((4, 4)), 0.0, [X]

    def step(x):
        if a_value > 1:
            return np.tanh(x @ W)
        return np.sin(x) * a_value if a_value > 0 else x * W

    for _ in range(3):
        xs.append(step(xs[-1]))
    for k in reversed(range(3)):
        if a_value > 1:
            g = g * (1.0 - xs[k + 1] ** 2)
            expected_dw += xs[k].T @ g
            g = g @ W.T
        elif a_value > 0:
            expected_da += np.sum(g * np.sin(xs[k]))
            g = g * np.cos(xs[k]) * a_value
        else:
            expected_dw += g * xs[k]
            g = g * W
    np.testing.assert_allclose(dx0, g)
    np.testing.assert_allclose(dw, expected_dw)
    assert da == pytest.approx(expected_da)
    assert jaxpr.count("cond[") == 4  # the two conds in the forward loop, two in the backward


@pytest.mark.parametrize("pred", [True, False])
def test_the_gradient_of_a_cond_with_captured_variables(pred):
    p = sl.placeholder(sl.bool, [])
    v, w = sl.Variable(X, name="v"), sl.Variable(W, name="w")
    y = sl.cond(p, lambda: sl.matmul(v, w) * sl.reduce_sum(v), lambda: sl.sin(v) + w)
    loss = sl.reduce_sum(y * y) + sl.reduce_sum(v * w)  # v and w are used outside it too
    (dv, dw), jaxpr = lowered(sl.gradients(loss, [v, w]), {p: pred})
    if pred:
        s, vw = X.sum(), X @ W
        d_y = 2.0 * vw * s
        expected_dv = (d_y * s) @ W.T + np.sum(d_y * vw) + W
        expected_dw = X.T @ (d_y * s) + X
    else:
        d_y = 2.0 * (np.sin(X) + W)
        expected_dv, expected_dw = d_y * np.cos(X) + W, d_y + X
    np.testing.assert_allclose(dv, expected_dv)
    np.testing.assert_allclose(dw, expected_dw)
    assert jaxpr.count("cond[") == 2


@pytest.mark.parametrize("pred", [True, False])
def test_the_gradient_of_a_while_loop_inside_a_cond_is_a_lax_cond(pred):
    x, p, w, y = while_loop_inside_a_cond()
    (dx, dw), jaxpr = lowered_with_jaxpr(sl.gradients(sl.reduce_sum(y), [x, w]), {x: X, p: pred})
    if pred:
        hs = [X]
        for _ in range(3):
            hs.append(np.tanh(hs[-1] @ W))
        g, expected_dw = np.ones((4, 4)), np.zeros((4, 4))
        for k in reversed(range(3)):
            g = g * (1.0 - hs[k + 1] ** 2)
            expected_dw += hs[k].T @ g
            g = g @ W.T
        np.testing.assert_allclose(dx, g)
        np.testing.assert_allclose(dw, expected_dw)
    else:
        np.testing.assert_allclose(dx, W)
        np.testing.assert_allclose(dw, X)
    assert str(jaxpr).count("cond[") == 2
    assert "dot_general" not in primitives_run_whatever_the_predicates(jaxpr.jaxpr)


@pytest.mark.parametrize("pred", [True, False])
def test_the_gradient_of_the_gradient_of_a_cond(pred):
    # The gradient's exit Merge closes a gradient branch pair, so it is differentiable in turn.
    x, p = sl.placeholder(F64, []), sl.placeholder(sl.bool, [])
    y = sl.cond(p, lambda: x * x * x, lambda: sl.sin(x))
    (dx,) = sl.gradients(y, [x])
    (ddx,) = sl.gradients(dx, [x])
    dx_value, ddx_value = run([dx, ddx], {x: 0.5, p: pred})
    assert dx_value == pytest.approx(0.75 if pred else np.cos(0.5))
    assert ddx_value == pytest.approx(3.0 if pred else -np.sin(0.5))


def test_a_control_edge_from_a_merge_is_live_when_either_branch_ran():
    """TF1's `with control_dependencies(update_ops)`, where an update is a cond: the Merge is
    live whichever branch ran, so what depends on it runs (it used to be dead when compiled)."""
    p = sl.placeholder(sl.bool, [])
    x = sl.placeholder(F64, [3])
    v = sl.Variable(np.zeros(3), name="v")
    update = sl.cond(p, lambda: v.assign_add(x), lambda: v.assign_sub(x))
    with sl.control_dependencies([update]):
        y = sl.identity(v.read_value() * 2)
    with sl.Session() as s:
        s.run(sl.global_variables_initializer())
        np.testing.assert_allclose(s.run(y, {x: [1, 2, 3], p: True}), [2, 4, 6])
        np.testing.assert_allclose(s.run(y, {x: [1, 2, 3], p: False}), [0, 0, 0])
