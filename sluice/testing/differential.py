"""Differential runs: every `Session.run` executes in both engines, and they must agree.

Inside `with differential_sessions(compiled_engine) as log:`, one `Session.run` call (through
the session's public hook, `sluice.framework.session.compare_engines`)
    1. copies the session's state (variable values, per-op random counters),
    2. runs the fetches with `compiled_engine` ("compiled", or "auto" where the graph may have to
       fall back) on the copy,
    3. runs them with the interpreted engine on the original state,
    4. checks that both returned the same structure of values (floats within RTOL/ATOL, everything
       else exactly) or raised the same type of exception, and left the same state,
and then carries on with the interpreted outcome: its values (or exception), state and
RunMetadata are what the caller sees. Code that runs graphs, a test most often, so checks the
interpreter with its own assertions, and the compiled engine against it.

`differential_run_raw` does the same for a test helper that runs a plan on the bare Executor.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import jax
import numpy as np

from sluice.framework.compiler.step import CompiledStep
from sluice.framework.ir.x64 import with_x64
from sluice.framework.prune import DEAD, prune
from sluice.framework.session import EngineRun, SessionState, compare_engines

RTOL, ATOL = 1e-5, 1e-6


@dataclasses.dataclass
class DifferentialLog:
    """What the runs of one `differential_sessions` context did: per run, the engine its compiled
    side really used ("compiled" or "interpreted"; "none" when both raised before any engine
    ran)."""

    engines: list[str] = dataclasses.field(default_factory=list)


@contextlib.contextmanager
def differential_sessions(compiled_engine: str = "compiled") -> Iterator[DifferentialLog]:
    """Makes every `Session.run` a differential run while the context is open.

    Every session of the process runs both engines, whoever opened it (see
    `sluice.framework.session.compare_engines`), until the context exits.

    Args:
      compiled_engine: the engine of the compiled side: "compiled" (a graph that does not
        compile fails) or "auto" (it may fall back to the interpreter, as the log then says).

    Yields:
      A `DifferentialLog` that lists, run by run, the engine the compiled side really used.

    Raises:
      AssertionError: from a `Session.run` whose engines disagree.

    >>> x = sl.placeholder(sl.float64, [])
    >>> _, total = sl.while_loop(
    ...     lambda i, t: i < 3,
    ...     lambda i, t: (i + 1, t + x),
    ...     (sl.constant(0), sl.constant(0.0, sl.float64)),
    ... )
    >>> with differential_sessions() as log, sl.Session() as sess:
    ...     print(sess.run(total, {x: 1.5}))
    4.5
    >>> log.engines
    ['compiled']
    """
    log = DifferentialLog()
    with compare_engines(_Differential(compiled_engine, log)):
        yield log


@dataclasses.dataclass
class _Differential:
    """The comparison `differential_sessions` hands to `compare_engines`."""

    engine: str
    log: DifferentialLog

    def compare(self, candidate: EngineRun, reference: EngineRun) -> None:
        """Logs the engine the compiled side used; raises unless both runs agree."""
        self.log.engines.append(candidate.metadata.engine or "none")
        _assert_outcomes_agree(candidate, reference)
        _assert_states_agree(candidate, reference)


def differential_run_raw(run_raw: Callable, log: DifferentialLog) -> Callable:
    """Wraps a test helper `run_raw(fetches, feeds)` that runs a plan on the bare Executor (so
    that dead values come back as DEAD): the same plan also runs as a CompiledStep."""

    @with_x64  # the bare engines, outside Session.run: sluice's 64-bit types
    def run_both(fetches: list, feeds: dict | None = None) -> list:
        feeds = feeds or {}

        def run_compiled() -> list:
            step = CompiledStep(prune(list(fetches), [], list(feeds)))
            return step.run(SessionState(), [np.asarray(v) for v in feeds.values()])

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


def _assert_outcomes_agree(
    compiled: _Outcome | EngineRun, interpreted: _Outcome | EngineRun
) -> None:
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
def _assert_states_agree(compiled: EngineRun, interpreted: EngineRun) -> None:
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
