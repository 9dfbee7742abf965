"""A session's plans and compiled steps stay valid while the ops they need are unchanged.

Adding ops after a run (an assign once per epoch, a placeholder, another loss's gradients) must
not prune, plan or compile the old fetches again; changing an op the fetches need must.
Compiles are counted (`RunMetadata.compiles`, `Session.compile_count`), never timed.
"""

import numpy as np
import pytest

import sluice as sl

ENGINES = ["compiled", "interpreted"]


def _session(engine: str) -> sl.Session:
    return sl.Session(config=sl.SessionConfig(engine=engine))


def _run(sess: sl.Session, fetches, feed=None):
    meta = sl.RunMetadata()
    return sess.run(fetches, feed, run_metadata=meta), meta


def _regression():
    """A small training step: y = x @ w, squared error, SGD; returns (x, w, loss, train)."""
    x = sl.placeholder(sl.float32, [4, 3], name="x")
    w = sl.Variable(np.ones([3, 1], np.float32), name="w")
    loss = sl.reduce_mean(sl.square(sl.matmul(x, w) - 1.0))
    train = sl.train.GradientDescentOptimizer(0.1).minimize(loss)
    return x, w, loss, train


def _numpy_steps(x: np.ndarray, steps: int) -> list[float]:
    w, losses = np.ones([3, 1], np.float32), []
    for _ in range(steps):
        r = x @ w - 1.0
        losses.append(float(np.mean(r**2)))
        w = w - 0.1 * (2.0 / r.size) * x.T @ r
    return losses


@pytest.mark.parametrize("engine", ENGINES)
def test_adding_unrelated_ops_does_not_plan_or_compile_again(engine):
    x, w, loss, train = _regression()
    xv = np.random.default_rng(0).normal(size=[4, 3]).astype(np.float32)
    losses = []
    with _session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        (value, _), first = _run(sess, [loss, train], {x: xv})
        losses.append(value)
        assert first.new_plan and first.compiles == (1 if engine == "compiled" else 0)
        # what a training loop adds between epochs: an assign, a new input, another loss's grads
        lr = sl.Variable(0.1, trainable=False, name="lr")
        sess.run(lr.initializer)
        sess.run(lr.assign(0.05))
        other = sl.placeholder(sl.float32, [None], name="other")
        sl.gradients(sl.reduce_sum(sl.square(other * w[0, 0])), [w])
        compiles = sess.compile_count
        for _ in range(2):
            (value, _), again = _run(sess, [loss, train], {x: xv})
            losses.append(value)
            assert not again.new_plan and again.compiles == 0
        assert sess.compile_count == compiles
    np.testing.assert_allclose(losses, _numpy_steps(xv, 3), rtol=1e-5)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_control_input_added_to_a_needed_op_rebuilds_the_plan(engine):
    v = sl.Variable(0.0, name="v")
    read = v.read_value()
    y = read + 1.0
    with _session(engine) as sess:
        sess.run(v.initializer)
        assert sess.run(y) == 1.0
        bump = v.assign(5.0)
        (value, meta) = _run(sess, y)
        assert value == 1.0 and not meta.new_plan  # the assign is not needed yet
        read.op.add_control_input(bump.op)  # now the read must wait for the assign
        value, meta = _run(sess, y)
        assert meta.new_plan and value == 6.0


@pytest.mark.parametrize("engine", ENGINES)
def test_an_input_rewired_to_a_new_op_rebuilds_the_plan(engine):
    a = sl.placeholder(sl.float32, [], name="a")
    y = sl.identity(a * 2.0)
    with _session(engine) as sess:
        assert sess.run(y, {a: 3.0}) == 6.0
        doubled = y.op.inputs[0]
        tripled = a * 3.0
        y.op.update_input(0, tripled)
        value, meta = _run(sess, y, {a: 3.0})
        assert meta.new_plan and value == 9.0
        y.op.update_input(0, doubled)
        assert sess.run(y, {a: 3.0}) == 6.0


def test_a_shape_refined_after_a_run_rebuilds_the_plan():
    a = sl.placeholder(sl.float32, None, name="a")
    y = a + 1.0
    with _session("compiled") as sess:
        sess.run(y, {a: [1.0, 2.0]})
        a.set_shape([2])
        _, meta = _run(sess, y, {a: [1.0, 2.0]})
        assert meta.new_plan


def test_ops_built_after_a_run_do_not_count_as_changes():
    """Builders wire their new ops (back edges, pivots, control tokens) after creating them:
    that changes no op a plan holds."""
    x = sl.placeholder(sl.float32, [], name="x")
    y = x * 2.0
    with _session("compiled") as sess:
        sess.run(y, {x: 1.0})
        before = sess.graph.mutation_version
        i, acc = sl.while_loop(
            lambda i, a: i < 3, lambda i, a: (i + 1, a + x), [0, 0.0], maximum_iterations=3
        )
        z = sl.cond(x > 0.0, lambda: acc * 2.0, lambda: acc)
        sl.gradients(z, [x])
        assert sess.graph.mutation_version == before
        _, meta = _run(sess, y, {x: 1.0})
        assert not meta.new_plan and meta.compiles == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_loop_fetched_with_an_old_fetch_and_its_gradient_added_later(engine):
    x = sl.placeholder(sl.float32, [], name="x")
    _, out = sl.while_loop(
        lambda i, a: i < 4, lambda i, a: (i + 1, a * x), [0, 1.0], maximum_iterations=4
    )
    with _session(engine) as sess:
        assert sess.run(out, {x: 2.0}) == 16.0
        # a loop built later, fetched together with the old fetch
        _, other = sl.while_loop(lambda j, b: j < 3, lambda j, b: (j + 1, b + x), [0, 0.0])
        (a, b), meta = _run(sess, [out, other], {x: 2.0})
        assert meta.new_plan and (a, b) == (16.0, 6.0)
        # gradients added to the first loop (new Exits, stacks, a backward loop), then fetched
        (grad,) = sl.gradients(out, [x])
        (a, g), meta = _run(sess, [out, grad], {x: 2.0})
        assert meta.new_plan and a == 16.0 and g == pytest.approx(4 * 2.0**3)
        # the old fetch alone still runs its cached plan, and still gives the same value
        value, meta = _run(sess, out, {x: 3.0})
        assert not meta.new_plan and value == 81.0
