"""Differential runs: every `Session.run` of a test executes in both engines, and they must agree.

`patch_sessions(monkeypatch, compiled_engine)` replaces `Session.run` so that one call
    1. copies the session's state (variable values, per-op random counters),
    2. runs the fetches with `compiled_engine` ("compiled", or "auto" where the graph may have to
       fall back) on the copy,
    3. runs them with the interpreted engine on the original state,
    4. checks that both returned the same structure of values (floats within RTOL/ATOL, everything
       else exactly) or raised the same type of exception, and left the same state,
and then carries on with the interpreted outcome: its values (or exception), state and
RunMetadata are what the test sees. The tests' own runs (engine "auto") already put the
compiled engine under their assertions; this way they also check the interpreter.

`differential_run_raw` does the same for a test helper that runs a plan on the bare Executor.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sluice.framework.compiler.step import CompiledStep
from sluice.framework.prune import DEAD, prune
from sluice.framework.session import RunMetadata, Session, _SessionState

RTOL, ATOL = 1e-5, 1e-6
_ParameterSet = type(pytest.param(None))  # what pytest.param(...) returns


@dataclasses.dataclass
class DifferentialLog:
    """What the differential runs of one test did: per run, the engine its compiled side really
    used ("compiled" or "interpreted"; "none" when both raised before any engine ran)."""

    engines: list[str] = dataclasses.field(default_factory=list)


def patch_sessions(monkeypatch: Any, compiled_engine: str) -> DifferentialLog:
    """Makes every `Session.run` until the end of the test a differential run; returns its log."""
    log = DifferentialLog()
    original_run = Session.run

    def run_in(session: Session, engine: str, state: _SessionState, args: tuple) -> tuple:
        fetches, feed_dict, options = args
        saved_config, saved_state = session._config, session._state
        session._config = dataclasses.replace(saved_config, engine=engine)
        session._state = state
        meta = RunMetadata()
        try:
            return _outcome(lambda: original_run(session, fetches, feed_dict, options, meta)), meta
        finally:
            session._config, session._state = saved_config, saved_state

    def differential_run(
        self: Session,
        fetches: Any,
        feed_dict: dict | None = None,
        options: Any = None,
        run_metadata: RunMetadata | None = None,
    ) -> Any:
        args = (fetches, feed_dict, options)
        compiled_state = _copy_state(self._state)
        compiled, compiled_meta = run_in(self, compiled_engine, compiled_state, args)
        interpreted, interpreted_meta = run_in(self, "interpreted", self._state, args)
        log.engines.append(compiled_meta.engine or "none")
        _assert_outcomes_agree(compiled, interpreted)
        _assert_states_agree(compiled_state, self._state)
        if run_metadata is not None:
            for field in dataclasses.fields(RunMetadata):
                setattr(run_metadata, field.name, getattr(interpreted_meta, field.name))
        return interpreted.result()

    monkeypatch.setattr(Session, "run", differential_run)
    return log


def differential_run_raw(run_raw: Callable, log: DifferentialLog) -> Callable:
    """Wraps a test helper `run_raw(fetches, feeds)` that runs a plan on the bare Executor (so
    that dead values come back as DEAD): the same plan also runs as a CompiledStep."""

    def run_both(fetches: list, feeds: dict | None = None) -> list:
        feeds = feeds or {}

        def run_compiled() -> list:
            step = CompiledStep(prune(list(fetches), [], list(feeds)))
            return step.run(_SessionState(), [np.asarray(v) for v in feeds.values()])

        compiled = _outcome(run_compiled)
        interpreted = _outcome(lambda: run_raw(fetches, feeds))
        log.engines.append("compiled")
        _assert_outcomes_agree(compiled, interpreted)
        return interpreted.result()

    return run_both


# -- outcomes and comparisons ----------------------------------------------------------------------
@dataclasses.dataclass
class _Outcome:
    value: Any = None
    error: BaseException | None = None

    def result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


def _outcome(fn: Callable[[], Any]) -> _Outcome:
    """Calls `fn`, keeping any exception to compare with the other engine's and re-raise."""
    try:
        return _Outcome(value=fn())
    except Exception as err:  # noqa: BLE001
        return _Outcome(error=err)


def _assert_outcomes_agree(compiled: _Outcome, interpreted: _Outcome) -> None:
    if compiled.error is not None or interpreted.error is not None:
        kinds = [
            type(o.error).__name__ if o.error is not None else "no exception"
            for o in (compiled, interpreted)
        ]
        if kinds[0] != kinds[1]:
            raise AssertionError(
                f"engines disagree: compiled side raised {kinds[0]}, interpreted raised {kinds[1]}"
                f"\n  compiled: {compiled.error!r}\n  interpreted: {interpreted.error!r}"
            ) from compiled.error or interpreted.error
        return
    assert_trees_agree(compiled.value, interpreted.value, "fetched")


def assert_trees_agree(compiled: Any, interpreted: Any, what: str) -> None:
    """Same nesting; leaves agree as `assert_values_agree` says."""
    c_leaves, c_tree = jax.tree_util.tree_flatten(compiled, is_leaf=lambda x: x is DEAD)
    i_leaves, i_tree = jax.tree_util.tree_flatten(interpreted, is_leaf=lambda x: x is DEAD)
    assert c_tree == i_tree, (
        f"engines disagree on the structure of the {what} values: {c_tree} != {i_tree}"
    )
    for k, (c, i) in enumerate(zip(c_leaves, i_leaves)):
        assert_values_agree(c, i, f"{what} value #{k}")


def assert_values_agree(compiled: Any, interpreted: Any, what: str) -> None:
    """Floats within RTOL/ATOL; integers, booleans, strings and deadness exactly; same dtype."""
    if compiled is DEAD or interpreted is DEAD:
        assert compiled is interpreted, f"{what}: dead in one engine only (compiled: {compiled!r})"
        return
    c, i = np.asarray(compiled), np.asarray(interpreted)
    assert c.dtype == i.dtype, f"{what}: compiled gives dtype {c.dtype}, interpreted {i.dtype}"
    assert c.shape == i.shape, f"{what}: compiled gives shape {c.shape}, interpreted {i.shape}"
    if c.dtype.kind in "fc":
        np.testing.assert_allclose(
            c, i, rtol=RTOL, atol=ATOL, err_msg=f"{what} (compiled vs interpreted)"
        )
    else:
        np.testing.assert_array_equal(c, i, err_msg=f"{what} (compiled vs interpreted)")


# -- session state --------------------------------------------------------------------------------
def _copy_state(state: _SessionState) -> _SessionState:
    """A deep copy: the compiled engine donates (and so deletes) the buffers of variables it
    assigns, so the copy must not share them with the original."""
    copy = _SessionState()
    copy.variables = {h: _copy_array(v) for h, v in state.variables.items()}
    copy.random_counts = dict(state.random_counts)
    return copy


def _copy_array(value: Any) -> Any:
    if isinstance(value, jax.Array):
        return jnp.array(value, copy=True)
    if isinstance(value, np.ndarray):
        return value.copy()
    return value


def _assert_states_agree(compiled: _SessionState, interpreted: _SessionState) -> None:
    c_names, i_names = sorted(compiled.variables), sorted(interpreted.variables)
    assert c_names == i_names, f"engines leave different variables: {c_names} != {i_names}"
    for handle in interpreted.variables:
        assert_values_agree(
            compiled.variables[handle], interpreted.variables[handle], f"variable {handle}"
        )
    c_counts = {name: int(n) for name, n in compiled.random_counts.items()}
    i_counts = {name: int(n) for name, n in interpreted.random_counts.items()}
    assert c_counts == i_counts, (
        f"engines leave different random counters: {c_counts} != {i_counts}"
    )


# -- collecting the tests of other modules ---------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Case:
    """One test function of a swept module with one choice of its parametrize arguments."""

    module: Any
    function: Callable
    kwargs: dict
    id: str
    marks: tuple = ()

    @property
    def name(self) -> str:
        """`module.function`, the key of the per-test tables."""
        return f"{self.module.__name__}.{self.function.__name__}"


def collect_cases(module: Any) -> list[Case]:
    """Every `test_*` function of `module`, once per combination of its parametrize marks; the
    function's other marks (slow, xfail, ...) go with each case."""
    cases = []
    for name, function in vars(module).items():
        if not (name.startswith("test_") and inspect.isfunction(function)):
            continue
        marks = getattr(function, "pytestmark", [])
        grids = [_parametrize_rows(m) for m in marks if m.name == "parametrize"]
        others = tuple(m for m in marks if m.name != "parametrize")
        for combination in itertools.product(*grids):
            kwargs, ids, row_marks = {}, [], list(others)
            for row_kwargs, row_id, marks_of_row in combination:
                kwargs.update(row_kwargs)
                ids.append(row_id)
                row_marks.extend(marks_of_row)
            suffix = f"[{'-'.join(ids)}]" if ids else ""
            cases.append(
                Case(
                    module, function, kwargs, f"{module.__name__}.{name}{suffix}", tuple(row_marks)
                )
            )
    return cases


def _parametrize_rows(mark: Any) -> list[tuple[dict, str, tuple]]:
    arguments = dict(zip(("argnames", "argvalues"), mark.args)) | mark.kwargs
    argnames, argvalues, ids = arguments["argnames"], arguments["argvalues"], arguments.get("ids")
    if isinstance(argnames, str):
        argnames = [n.strip() for n in argnames.split(",") if n.strip()]
    rows = []
    for k, row in enumerate(argvalues):
        row_id, row_marks = None, ()
        if isinstance(row, _ParameterSet):
            row_id, row_marks, row = row.id, tuple(row.marks), row.values
        elif len(argnames) == 1:
            row = (row,)
        if row_id is None and ids is not None:
            row_id = "-".join(str(ids(v)) for v in row) if callable(ids) else ids[k]
        if row_id is None:
            row_id = "-".join(_id_of(v, name, k) for v, name in zip(row, argnames))
        rows.append((dict(zip(argnames, row)), str(row_id), row_marks))
    return rows


def _id_of(value: Any, argname: str, index: int) -> str:
    if value is None or isinstance(value, (bool, int, float, str)):
        return str(value)
    return f"{argname}{index}"
