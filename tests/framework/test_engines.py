"""Differential tests: every control-flow and gradient test graph runs in both engines.

The cases are every test of SWEPT_MODULES (once per parametrisation) and the graphs of
EXTRA_GRAPHS, which no swept test builds. A case runs with `Session.run` made differential (see
differential.py): every run executes in the compiled and in the interpreted engine from the same
state, and both must return the same values (floats within rtol 1e-5, atol 1e-6; the rest
exactly) or raise the same type of exception, and leave the same variables and random counters.
The test's own assertions then check the interpreted outcome (its normal run checks the
compiled one).

A new test in a swept module is a new case here, with nothing to add. The compiled side runs
with engine="compiled", so a graph that stops compiling fails here. The exceptions are listed,
each with its reason:
  BOUNDED_LOOPS      loops with gradients but no maximum_iterations, whose stacks the compiled
                     engine cannot size: their loops get maximum_iterations=LOOP_BOUND (far above
                     any trip count of these tests, so results do not change) and then compile;
  EXPECTED_FALLBACK  graphs the compiler cannot lower: the compiled side runs with engine="auto"
                     and must fall back, logging a reason that matches the entry.
"""

import inspect
import logging
import pathlib
import re
import sys

import numpy as np
import pytest
import test_cond
import test_control_flow_grad
import test_gradient_calls
import test_primitives
import test_swap_memory
import test_tf1_graphs
import test_while_loop
from differential import Case, collect_cases, differential_run_raw, patch_sessions

import sluice as sl

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "cells"))
import test_dynamic_rnn  # its helpers live in tests/cells

F64 = sl.float64

SWEPT_MODULES = [
    test_cond,
    test_while_loop,
    test_control_flow_grad,
    test_gradient_calls,
    test_tf1_graphs,
    test_primitives,
    test_swap_memory,
    test_dynamic_rnn,
]

LOOP_BOUND = 100
BOUNDED_LOOPS = {
    f"test_control_flow_grad.{name}"
    for name in (
        "test_loop_run_zero_one_and_many_times",
        "test_loop_iteration_count_fed_at_run_time",
        "test_gradient_of_several_loop_variables_and_unused_exit",
        "test_nested_loops_gradient",
        "test_cond_inside_loop_gradient",
        "test_data_dependent_cond_inside_loop_gradient",
        "test_hand_written_rnn_matches_the_unrolled_computation",
        "test_variable_read_inside_loop_gets_gradient",
        "test_backward_ops_are_ordinary_ops_of_the_same_graph",
    )
} | {
    f"test_gradient_calls.{name}" for name in dir(test_gradient_calls) if name.startswith("test_")
} | {
    f"test_tf1_graphs.{name}"
    for name in (
        "test_a_loop_inside_a_loop_body_differentiated_in_the_body",
    )
} | {
    f"test_swap_memory.{name}"
    for name in (
        "test_without_swapping_device_resident_stacks_grow_with_the_trip_count",
        "test_swapping_bounds_device_resident_stacks_and_keeps_gradients",
        "test_small_entries_are_never_swapped",
    )
}

# case name -> a regular expression the logged reason for falling back must match
EXPECTED_FALLBACK = {
    # a loop variable that grows cannot be a lax.while_loop carry
    "test_while_loop.test_shape_invariants_allow_a_growing_loop_variable": (
        "loop variable .* enters with float32\\[1\\] and leaves an iteration with float32\\[2\\]"
    ),
    # a loop wired from the primitives has no WhileContext, so the lowering finds no frame for it
    "test_primitives.test_enter_exit_and_next_iteration_build_a_counting_loop_by_hand": (
        "belongs to no while_loop"
    ),
    # TF1 never runs an untaken branch: one that cannot even be traced for the fed shapes runs
    # interpreted (see test_tf1_graphs)
    "test_tf1_graphs.test_an_untaken_branch_that_cannot_run_on_the_fed_shapes": (
        "a branch of the cond on .* cannot be traced"
    ),
}


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


EXTRA_GRAPHS = [
    while_inside_untaken_cond,
    seeded_random_numbers,
    cond_gradients_with_a_fed_predicate,
    loop_bounded_by_a_fed_shape,
]


def _graph_test(build):
    def run_graph():
        fetches, feeds = build()
        with sl.Session() as s:
            s.run(sl.global_variables_initializer())
            s.run(fetches, feeds)

    run_graph.__name__ = build.__name__
    return run_graph


CASES = [case for module in SWEPT_MODULES for case in collect_cases(module)] + [
    Case(sys.modules[__name__], _graph_test(build), {}, f"{__name__}.{build.__name__}")
    for build in EXTRA_GRAPHS
]
ENGINES_SEEN = {}  # case id -> the engine the compiled side of each run really used


@pytest.fixture(scope="module", autouse=True)
def engine_summary(request):
    """Says, after the module's tests, how many differential runs really compiled."""
    yield
    runs = [engine for engines in ENGINES_SEEN.values() for engine in engines]
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    if runs and reporter is not None and capture is not None:
        fell_back = sorted(
            case for case, engines in ENGINES_SEEN.items() if "interpreted" in engines
        )
        with capture.global_and_fixture_disabled():
            reporter.write_line(
                f"\ndifferential: {len(ENGINES_SEEN)} cases, {len(runs)} runs; compiled side: "
                f"{runs.count('compiled')} compiled, {runs.count('interpreted')} fell back "
                f"({', '.join(fell_back) or 'none'})"
            )


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=c.marks) for c in CASES])
def test_engines_agree(case, monkeypatch, request, caplog):
    log = patch_sessions(monkeypatch, "auto" if case.name in EXPECTED_FALLBACK else "compiled")
    if hasattr(case.module, "run_raw"):  # test_primitives runs plans on the bare Executor
        monkeypatch.setattr(case.module, "run_raw", differential_run_raw(case.module.run_raw, log))
    if case.name in BOUNDED_LOOPS:
        monkeypatch.setattr(sl, "while_loop", _with_a_bound(sl.while_loop, LOOP_BOUND))
    fixtures = {
        name: request.getfixturevalue(name)
        for name in inspect.signature(case.function).parameters
        if name not in case.kwargs
    }
    try:
        with caplog.at_level(logging.WARNING, logger="sluice"):
            case.function(**case.kwargs, **fixtures)
    finally:
        ENGINES_SEEN[case.id] = list(log.engines)
    if not log.engines:
        pytest.skip("builds graphs but runs none: nothing to compare")
    ran = set(log.engines) - {"none"}  # "none": both engines raised before running anything
    if case.name in EXPECTED_FALLBACK:
        reasons = [
            r.getMessage()
            for r in caplog.records
            if "running a graph interpreted" in r.getMessage()
        ]
        assert "interpreted" in ran, f"{case.name} compiles now: remove it from EXPECTED_FALLBACK"
        assert any(re.search(EXPECTED_FALLBACK[case.name], r) for r in reasons), reasons
    else:
        assert ran <= {"compiled"}, f"{case.name}: the compiled side ran {sorted(ran)}"


def _with_a_bound(while_loop, bound):
    signature = inspect.signature(while_loop)

    def bounded_while_loop(*args, **kwargs):
        arguments = signature.bind(*args, **kwargs).arguments
        if arguments.get("maximum_iterations") is None:
            arguments["maximum_iterations"] = bound
        return while_loop(**arguments)

    return bounded_while_loop


def test_most_cases_compile():
    # a differential case whose both sides run interpreted proves little: keep them few
    assert len(EXPECTED_FALLBACK) <= 0.05 * len(CASES)


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
        jaxpr = str(jax.make_jaxpr(step._step)({}, {}, {}, [jnp.zeros(3)]))
    for a, b in zip(interpreted, compiled):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert jaxpr.count("scan[") == 2  # the forward loop and its backward loop
    assert f"unroll={unroll}" in jaxpr
