"""Differential tests: every control-flow and gradient test graph runs in both engines.

The tests of the control-flow and gradient modules run in both engines through the differential
sweep (tests/differential_sweep.py: each of them also runs as `...[differential]`, its every
`Session.run` executed by the compiled and by the interpreted engine, which must agree). Here:
the graphs of EXTRA_GRAPHS, which no swept test builds, run the same way; the sweep's tables of
exceptions stay few and name real tests; and what the compiled engine refuses, it refuses
clearly.
"""

import numpy as np
import pytest

import sluice as sl
from sluice.framework.ir.x64 import x64_scope
from sluice.testing import differential_sessions

from .. import differential_sweep as sweep

F64 = sl.float64


# -- graphs that no swept test builds --------------------------------------------------------------
# A builder builds ops in the default graph and returns (fetches, feed_dict).
def while_inside_untaken_cond():
    p = sl.placeholder(sl.bool, [])
    # the untaken branch's loop would never end: its frame must not run
    out = sl.cond(
        p,
        lambda: sl.constant(-1),
        lambda: sl.while_loop(lambda i: i >= 0, lambda i: i + 1, [sl.constant(0)]),
    )
    return [out], {p: True}


def seeded_random_numbers():
    sl.set_random_seed(7)
    a = sl.random_normal([3], seed=1)
    b = sl.random_uniform([2, 2], seed=2)
    return [a, b, a + 1.0], {}


def cond_gradients_with_a_fed_predicate():
    x = sl.placeholder(F64, [3])
    p = sl.placeholder(sl.bool, [])
    y = sl.cond(p, lambda: x * x, lambda: sl.sin(x) * 3.0)
    return sl.gradients(sl.reduce_sum(y), [x]), {x: [0.5, -1.0, 2.0], p: False}


def unbounded_loop_gradients():
    x0 = sl.placeholder(F64, [2])
    w = sl.constant(np.array([1.1, 0.9]))
    _, x = sl.while_loop(
        lambda i, x: sl.reduce_sum(x) < 10.0,
        lambda i, x: (i + 1, x * w + 1.0),
        (sl.constant(0), x0),
    )
    # no bound: stack buffers cannot be sized, so this one runs interpreted
    return [x] + sl.gradients(sl.reduce_sum(x), [x0, w]), {x0: [0.5, 0.2]}


def loop_bounded_by_a_fed_shape():
    # maximum_iterations comes from the shape of a fed input: known when the step is compiled
    xs = sl.placeholder(F64, [None, 2])
    w = sl.constant(np.array([0.9, 1.1]))
    steps = sl.shape(xs)[0]

    def body(t, h):
        return t + 1, sl.tanh(h * w + sl.gather(xs, t))

    _, h = sl.while_loop(
        lambda t, h: t < steps, body, (sl.constant(0), sl.zeros([2], F64)), maximum_iterations=steps
    )
    return [h] + sl.gradients(sl.reduce_sum(h), [w, xs]), {xs: np.linspace(-1, 1, 10).reshape(5, 2)}


def loop_bounded_by_its_counter():
    # TF1's usual loop has no maximum_iterations: `t < n` on a counter bounds it, with n a fed
    # dimension here, so the compiled engine sizes the gradient's stacks from n
    xs = sl.placeholder(F64, [None, 2])
    w = sl.constant(np.array([0.9, 1.1]))

    def body(t, h):
        return t + 1, sl.tanh(h * w + sl.gather(xs, t))

    _, h = sl.while_loop(
        lambda t, h: t < sl.shape(xs)[0], body, (sl.constant(0), sl.zeros([2], F64))
    )
    return [h] + sl.gradients(sl.reduce_sum(h), [w, xs]), {xs: np.linspace(-1, 1, 10).reshape(5, 2)}


def loop_bounded_by_a_conjunct():
    # `t <= 3 and sum(x) < 50`: the counter's term bounds it; the other ends it early
    x0 = sl.placeholder(F64, [2])
    _, x = sl.while_loop(
        lambda t, x: sl.logical_and(t <= 3, sl.reduce_sum(x) < 50.0),
        lambda t, x: (t + 1, x * x + 1.0),
        (sl.constant(0), x0),
    )
    return [x] + sl.gradients(sl.reduce_sum(x), [x0]), {x0: [1.5, 2.0]}


EXTRA_GRAPHS = [
    loop_bounded_by_its_counter,
    loop_bounded_by_a_conjunct,
    while_inside_untaken_cond,
    seeded_random_numbers,
    cond_gradients_with_a_fed_predicate,
    loop_bounded_by_a_fed_shape,
]


@pytest.mark.parametrize("build", EXTRA_GRAPHS, ids=lambda build: build.__name__)
def test_engines_agree_on(build, record_property, caplog):
    caplog.set_level("WARNING", logger="sluice")
    with differential_sessions("compiled") as log:
        fetches, feeds = build()
        with sl.Session() as s:
            s.run(sl.global_variables_initializer())
            s.run(fetches, feeds)
    record_property(sweep.ENGINES, list(log.engines))
    sweep.check_engines(
        f"test_engines.{build.__name__}", log.engines, sweep.fallback_reasons(caplog.records)
    )


def swept_tests(session, mode):
    """The names of the collected tests the sweep runs in `mode` (one per parametrisation)."""
    return [sweep.swept_name(item) for item in session.items if sweep.mode_of(item) == mode]


def test_most_cases_compile(request):
    # a differential case whose both sides run interpreted proves little: keep them few
    swept = swept_tests(request.session, "differential")
    if {name.split(".")[0] for name in swept} != sweep.SWEPT_MODULES:
        pytest.skip("this run does not collect every swept module")
    assert len(sweep.EXPECTED_FALLBACK) <= 0.05 * (len(swept) + len(EXTRA_GRAPHS))


def test_every_exception_names_a_swept_test(request):
    swept = set(swept_tests(request.session, "differential"))
    listed = sweep.BOUNDED_LOOPS | set(sweep.EXPECTED_FALLBACK)
    collected_modules = {name.split(".")[0] for name in swept}
    unknown = {name for name in listed if name.split(".")[0] in collected_modules} - swept
    assert not unknown, f"the sweep's tables name tests that do not exist: {sorted(unknown)}"
    assert sweep.BOUNDED_LOOP_MODULES <= sweep.SWEPT_MODULES


def test_compiled_engine_refuses_what_it_cannot_lower():
    fetches, feeds = unbounded_loop_gradients()
    with (
        sl.Session(config=sl.SessionConfig(engine="compiled")) as s,
        pytest.raises(sl.errors.UnimplementedError, match="maximum_iterations"),
    ):
        s.run(fetches, feeds)


def test_compiled_engine_names_a_lowering_gap_in_a_clear_error():
    # a loop variable that grows has no fixed shape for lax.while_loop; "auto" runs it interpreted
    x0 = sl.constant(np.zeros([1], np.float32))
    _, x = sl.while_loop(
        lambda i, x: i < 3,
        lambda i, x: (i + 1, sl.concat([x, sl.ones([1])], 0)),
        (sl.constant(0), x0),
        shape_invariants=(sl.TensorShape([]), sl.TensorShape([None])),
    )
    with (
        sl.Session(config=sl.SessionConfig(engine="compiled")) as s,
        pytest.raises(sl.errors.UnimplementedError, match="compiled engine cannot run this graph"),
    ):
        s.run(x)
    with sl.Session() as s:
        assert s.run(x).shape == (4,)


@pytest.mark.parametrize("unroll", [1, 3])
def test_a_loop_that_runs_exactly_its_bound_is_a_scan_and_unrolling_keeps_results(unroll):
    import jax
    import jax.numpy as jnp

    x0 = sl.placeholder(F64, [3])
    w = sl.constant(np.array([0.9, 1.1, 0.7]))
    _, x = sl.while_loop(
        lambda i, x: i < 7,
        lambda i, x: (i + 1, sl.tanh(x * w) + 0.1),
        (sl.constant(0), x0),
        maximum_iterations=7,
        unroll=unroll,
    )
    fetches, feeds = [x] + sl.gradients(sl.reduce_sum(x), [x0, w]), {x0: [0.5, -0.2, 0.3]}
    with sl.Session(config=sl.SessionConfig(engine="interpreted")) as s:
        interpreted = s.run(fetches, feeds)
    with sl.Session(config=sl.SessionConfig(engine="compiled")) as s:
        compiled = s.run(fetches, feeds)
        (step,) = s._compiled.values()
        with x64_scope():  # traced by hand: in sluice's JAX setting, as Session.run does
            jaxpr = str(jax.make_jaxpr(step._step)({}, {}, {}, [jnp.zeros(3)]))
    for a, b in zip(interpreted, compiled):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert jaxpr.count("scan[") == 2  # the forward loop and its backward loop
    assert f"unroll={unroll}" in jaxpr


def test_a_counter_bound_is_read_only_from_a_loop_invariant_limit():
    """`t < n` bounds a loop by n only when n cannot change: here n is a loop variable that
    grows (the loop runs 8 times, not 5) and a variable the body assigns (5 times, not 3)."""
    x = sl.constant(1.5, F64)
    v = sl.Variable(3)

    def grows(t, n, a):
        return t + 1, n + sl.cast(sl.equal(t, 2), sl.int32) * 3, a * x

    def assigns(t, a):
        with sl.control_dependencies([v.assign_add(t % 2)]):
            return t + 1, a * x

    t1, _, a1 = sl.while_loop(lambda t, n, a: t < n, grows, [0, 5, sl.constant(1.0, F64)])
    t2, a2 = sl.while_loop(lambda t, a: t < v.value(), assigns, [0, sl.constant(1.0, F64)])
    grad = sl.gradients(a1, x)[0]
    for engine in ("interpreted", "compiled"):
        with sl.Session(config=sl.SessionConfig(engine=engine)) as s:
            s.run(sl.global_variables_initializer())
            got = s.run([t1, a1, t2, a2])
            np.testing.assert_allclose(got, [8, 1.5**8, 5, 1.5**5], rtol=1e-12)
            if engine == "interpreted":
                np.testing.assert_allclose(s.run(grad), 8 * 1.5**7, rtol=1e-12)
            else:  # no bound to size the saved values by: refused, not run short
                with pytest.raises(sl.errors.UnimplementedError, match="maximum_iterations"):
                    s.run(grad)
