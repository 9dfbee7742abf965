"""The differential sweep: every control-flow and gradient test also runs in both engines.

A pytest plugin (tests/conftest.py loads it). Each test of SWEPT_MODULES runs once per mode, the
mode last in its id (`test_nested_conds[differential]`, `test_zero_one_and_many_iterations[0-0-
differential]`):

  plain         the test as written;
  differential  every `Session.run` is a differential run (`sluice.testing.differential_sessions`):
                it executes in the compiled and in the interpreted engine from the same state,
                and both must return the same values (floats within rtol 1e-5, atol 1e-6; the
                rest exactly) or raise the same type of exception, and leave the same variables
                and random counters. The test's own assertions then check the interpreted
                outcome (the plain run checks the compiled one). The compiled side runs with
                engine="compiled", so a graph that stops compiling fails here;
  lax_cond      the cond tests of LAX_COND_TESTS only: differential, with every cond region
                lowered to a lax.cond instead of a select (see test_cond_lowering.py).

The default run leaves a plain case to `-m slow` where a differential case of the same test
(same parameters) stays in it: that case runs the same body with the compiled engine too, and
compares it with the interpreted one (`plain_twins_to_slow`). A test whose loops the differential
case bounds (BOUNDED_LOOPS) keeps its plain case: only that one runs the loops as written.

A new test in a swept module is swept with nothing to add. The exceptions, each with its reason:
  BOUNDED_LOOPS      loops with gradients but no maximum_iterations, whose stacks the compiled
                     engine cannot size: their loops get maximum_iterations=LOOP_BOUND (far above
                     any trip count of these tests, so results do not change) and then compile;
  EXPECTED_FALLBACK  graphs the compiler cannot lower: the compiled side runs with engine="auto"
                     and must fall back, logging a reason that matches the entry.
A differential test whose graphs never run is skipped (nothing to compare). The terminal summary
ends with how many differential runs there were and how many of them really compiled.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import re
from typing import Any

import pytest

import sluice as sl
from sluice.framework.compiler import cond_regions
from sluice.testing.differential import DifferentialLog, differential_run_raw, differential_sessions

SWEPT_MODULES = {
    "test_cond",
    "test_while_loop",
    "test_control_flow_grad",
    "test_gradient_calls",
    "test_tf1_graphs",
    "test_primitives",
    "test_swap_memory",
    "test_dynamic_rnn",
}

# module -> which of its tests also run with every cond region a lax.cond
LAX_COND_TESTS = {
    "test_cond": lambda name: True,
    "test_control_flow_grad": lambda name: "cond" in name and "loop" not in name,
    "test_while_loop": lambda name: "cond" in name,
}

LOOP_BOUND = 100
BOUNDED_LOOP_MODULES = {"test_gradient_calls"}  # every test of these
BOUNDED_LOOPS = {
    "test_control_flow_grad.test_loop_run_zero_one_and_many_times",
    "test_control_flow_grad.test_loop_iteration_count_fed_at_run_time",
    "test_control_flow_grad.test_gradient_of_several_loop_variables_and_unused_exit",
    "test_control_flow_grad.test_nested_loops_gradient",
    "test_control_flow_grad.test_cond_inside_loop_gradient",
    "test_control_flow_grad.test_data_dependent_cond_inside_loop_gradient",
    "test_control_flow_grad.test_hand_written_rnn_matches_the_unrolled_computation",
    "test_control_flow_grad.test_variable_read_inside_loop_gets_gradient",
    "test_control_flow_grad.test_backward_ops_are_ordinary_ops_of_the_same_graph",
    "test_control_flow_grad.test_stop_gradient_inside_a_loop_body_gives_zeros_not_none",
    "test_control_flow_grad.test_stop_gradient_inside_a_loop_body_of_unknown_shape",
    "test_control_flow_grad.test_stop_gradient_on_loop_outputs",
    "test_tf1_graphs.test_a_loop_inside_a_loop_body_differentiated_in_the_body",
    "test_swap_memory.test_without_swapping_device_resident_stacks_grow_with_the_trip_count",
    "test_swap_memory.test_swapping_bounds_device_resident_stacks_and_keeps_gradients",
    "test_swap_memory.test_small_entries_are_never_swapped",
}

# test name -> a regular expression the logged reason for falling back must match
EXPECTED_FALLBACK = {
    # a loop variable that grows cannot be a lax.while_loop carry
    "test_while_loop.test_shape_invariants_allow_a_growing_loop_variable": (
        "loop variable .* enters with float32\\[1\\] and leaves an iteration with float32\\[2\\]"
    ),
    "test_while_loop.test_indexed_slices_loop_variable_that_grows_under_a_shape_invariant": (
        "loop variable .* enters with float32\\[1, 2\\] and leaves an iteration with "
        "float32\\[2, 2\\]"
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

ENGINES = "engines"  # the user property of a differential test: its compiled side's engines
_RUN = pytest.StashKey["DifferentialRun"]()


def swept_name(item: Any) -> str:
    """`module.function`, the key of the tables above (`test_cond.test_nested_conds`)."""
    return f"{item.module.__name__.rsplit('.', 1)[-1]}.{item.originalname}"


def mode_of(item: Any) -> str | None:
    """The sweep mode of a collected test, None for a test outside the sweep."""
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("engine_mode") if callspec is not None else None


def check_engines(name: str, engines: list[str], reasons: list[str]) -> None:
    """What a differential test's compiled side must have done: compiled every run, or fallen
    back as EXPECTED_FALLBACK says for `name`, with one of the logged `reasons` matching it."""
    if not engines:
        pytest.skip("builds graphs but runs none: nothing to compare")
    ran = set(engines) - {"none"}  # "none": both engines raised before running anything
    if name in EXPECTED_FALLBACK:
        assert "interpreted" in ran, f"{name} compiles now: remove it from EXPECTED_FALLBACK"
        assert any(re.search(EXPECTED_FALLBACK[name], r) for r in reasons), reasons
    else:
        assert ran <= {"compiled"}, f"{name}: the compiled side ran {sorted(ran)}"


def fallback_reasons(records: list[logging.LogRecord]) -> list[str]:
    """The session's log lines that say why a graph runs interpreted."""
    return [r.getMessage() for r in records if "running a graph interpreted" in r.getMessage()]


@dataclasses.dataclass
class DifferentialRun:
    """A differential test under way: its log of engines and its captured log lines."""

    name: str
    log: DifferentialLog
    caplog: Any


@pytest.hookimpl(trylast=True)  # the mode goes last in the test id
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    module = metafunc.module.__name__.rsplit(".", 1)[-1]
    if module not in SWEPT_MODULES:
        return
    modes = ["plain", "differential"]
    if LAX_COND_TESTS.get(module, lambda name: False)(metafunc.function.__name__):
        modes.append("lax_cond")
    metafunc.parametrize("engine_mode", modes, indirect=True)


@pytest.fixture(autouse=True)
def engine_mode(request: pytest.FixtureRequest) -> Any:
    """Sets up the sweep mode of a swept test (see the module docstring); "plain" elsewhere."""
    mode = getattr(request, "param", "plain")
    if mode == "plain":
        yield mode
        return
    monkeypatch = request.getfixturevalue("monkeypatch")
    if mode == "lax_cond":
        monkeypatch.setattr(cond_regions, "is_cheap_and_safe", lambda region: False)
        with differential_sessions("compiled"):
            yield mode
        return
    name = swept_name(request.node)
    caplog = request.getfixturevalue("caplog")
    caplog.set_level(logging.WARNING, logger="sluice")
    with differential_sessions("auto" if name in EXPECTED_FALLBACK else "compiled") as log:
        if hasattr(request.module, "run_raw"):  # test_primitives runs plans on the bare Executor
            monkeypatch.setattr(
                request.module, "run_raw", differential_run_raw(request.module.run_raw, log)
            )
        if name in BOUNDED_LOOPS or name.split(".")[0] in BOUNDED_LOOP_MODULES:
            monkeypatch.setattr(sl, "while_loop", _with_a_bound(sl.while_loop, LOOP_BOUND))
        request.node.stash[_RUN] = DifferentialRun(name, log, caplog)
        yield mode


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """After a differential test's body: records its engines and checks them (`check_engines`)."""
    run = item.stash.get(_RUN, None)
    if run is None:
        return (yield)
    try:
        result = yield
    finally:
        item.user_properties.append((ENGINES, list(run.log.engines)))
    check_engines(run.name, run.log.engines, fallback_reasons(run.caplog.get_records("call")))
    return result


def _with_a_bound(while_loop: Any, bound: int) -> Any:
    signature = inspect.signature(while_loop)

    def bounded_while_loop(*args, **kwargs):
        arguments = signature.bind(*args, **kwargs).arguments
        if arguments.get("maximum_iterations") is None:
            arguments["maximum_iterations"] = bound
        return while_loop(**arguments)

    return bounded_while_loop


def plain_twins_to_slow(items: list[pytest.Item]) -> None:
    """Marks slow each plain case whose differential (or lax_cond) twin, the same test with the
    same parameters, is in the default run; not those of BOUNDED_LOOPS tests (see the module
    docstring). Called by conftest.py after its own slow marks."""
    twins = set()
    for item in items:
        mode = mode_of(item)
        if mode in ("differential", "lax_cond") and not item.get_closest_marker("slow"):
            twins.add(item.nodeid.removesuffix(f"{mode}]"))
    for item in items:
        if mode_of(item) != "plain" or item.get_closest_marker("slow"):
            continue
        name = swept_name(item)
        if name in BOUNDED_LOOPS or name.split(".")[0] in BOUNDED_LOOP_MODULES:
            continue
        if item.nodeid.removesuffix("plain]") in twins:
            item.add_marker(pytest.mark.slow)


# -- the summary line ------------------------------------------------------------------------------
# Reports reach the controller process under xdist too, so the line counts every worker's runs.
_engines_seen: dict[str, list[str]] = {}  # test id -> its compiled side's engines, run by run


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":
        for key, engines in report.user_properties:
            if key == ENGINES:
                _engines_seen[report.nodeid] = list(engines)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    runs = [engine for engines in _engines_seen.values() for engine in engines]
    if not runs:
        return
    fell_back = sorted(
        nodeid.split("/")[-1]
        for nodeid, engines in _engines_seen.items()
        if "interpreted" in engines
    )
    terminalreporter.write_line(
        f"differential: {len(_engines_seen)} cases, {len(runs)} runs; compiled side: "
        f"{runs.count('compiled')} compiled, {runs.count('interpreted')} fell back "
        f"({', '.join(fell_back) or 'none'})"
    )
