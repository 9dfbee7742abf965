"""The one Session of a model's graph, which of its variables hold values, and their values
(`read_values` / `write_values`: what `get_weights` and `set_weights` do).

Every model built on a graph shares that graph's `GraphRuntime` (a functional model and the
sub-models built on the same layers see the same weights). Nothing here adds ops to the graph:
initialising runs the variables' own initializer ops, reading fetches their existing reads, and
writing loads values host-side; so the compiled steps a model has cached stay valid (any new
op in the graph makes the session plan and compile its steps again).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice.framework import state_cells
from sluice.framework.ir.default_session import get_default_session
from sluice.framework.ir.graph import Graph
from sluice.framework.session import Session, SessionConfig
from sluice.framework.variables import Variable

# The runtime (and so the session) of a graph is kept in the graph's `attachments`, so a model's
# graph, its session and the values there are freed once nothing refers to the graph.
_RUNTIME = "keras.runtime"


def manage(graph: Graph) -> None:
    """Marks `graph` as a Keras model's: its weights read and write values outside graphs
    (`v.numpy()`, `v.assign(array)`), where TF1 code's build ops for its own session."""
    state_cells.manage(graph)


class GraphRuntime:
    """The session of one graph and the set of its variables that have values."""

    def __init__(self, graph: Graph, engine: str = "auto"):
        self.graph = graph
        self.engine = engine
        self.distribution: Any = None
        self._session: Session | None = None
        self._initialized: dict[int, Variable] = {}

    @property
    def session(self) -> Session:
        if self._session is None:
            config = SessionConfig(
                engine=self.engine, distribution=self.distribution, keras_state=True
            )
            self._session = Session(graph=self.graph, config=config)
        return self._session

    def set_engine(self, engine: str) -> None:
        """Switches the session's engine ("auto", "compiled", "interpreted"). A running session
        is replaced by a new one holding the same variable values (random-number counters
        continue)."""
        if engine != self.engine:
            self._replace_session(engine, self.distribution)

    def set_distribution(self, distribution: Any) -> None:
        """Runs the graph under `distribution` (a `sl.distribution` object, or None): a running
        session is replaced by one holding the same variable values, laid out anew."""
        if distribution is not self.distribution:
            self._replace_session(self.engine, distribution)

    def _replace_session(self, engine: str, distribution: Any) -> None:
        old = self._session
        values = self.read(list(self._initialized.values())) if old else []
        variables = list(self._initialized.values())
        self.engine, self.distribution = engine, distribution
        if old is not None:
            counts = old.random_counts()
            old.close()
            self._session = None
            self.write(variables, values)
            self.session.restore_random_counts(counts)

    def prefer_engine(self, engine: str) -> None:
        """Uses `engine` if the session has not started yet (else keeps the running one)."""
        if self._session is None:
            self.engine = engine

    def here(self, variables: list[Variable]) -> list[Variable]:
        """The variables as this graph sees them: a Keras weight of another graph (a layer
        shared between models) by its mirror here."""
        return [v if v.graph is self.graph else v.graph_variable(self.graph) for v in variables]

    def initialize(self, variables: list[Variable]) -> None:
        """Runs the initializers of the variables that have no value yet (a Keras weight that
        has one in another graph's session is moved here by the next run instead)."""
        pending = [v for v in self.here(variables) if not self.is_initialized(v)]
        if pending:
            self.session.run([v.initializer for v in pending])
            self.mark_initialized(pending)

    def mark_initialized(self, variables: list[Variable]) -> None:
        for v in variables:
            self._initialized[id(v)] = v

    def is_initialized(self, variable: Variable) -> bool:
        cell = state_cells.cell_of(variable)
        if cell is not None:
            return cell.has_value
        return id(variable) in self._initialized

    def read(self, variables: list[Variable]) -> list[np.ndarray]:
        """The current values of `variables` (initialising any that have none)."""
        if not variables:
            return []
        variables = self.here(variables)
        self.initialize(variables)
        return list(self.session.run(list(variables)))

    def write(self, variables: list[Variable], values: list[Any]) -> None:
        """Loads `values` into `variables` (host-side, no op added to the graph)."""
        variables = self.here(variables)
        for v, value in zip(variables, values):
            v.load(np.asarray(value, dtype=v.dtype), self.session)
        self.mark_initialized(variables)

    def run(self, fetches: Any, feed_dict: dict | None = None, run_metadata: Any = None) -> Any:
        return self.session.run(fetches, feed_dict, run_metadata=run_metadata)


def runtime_for(graph: Graph) -> GraphRuntime:
    """The graph's runtime, created on first use."""
    if graph is None:
        raise ValueError("This layer or model has not been built yet: call it on an input first.")
    runtime = graph.attachments.get(_RUNTIME)
    if runtime is None:
        runtime = graph.attachments[_RUNTIME] = GraphRuntime(graph)
    return runtime


def read_values(graph: Graph | None, variables: list[Variable]) -> list[np.ndarray]:
    """The values of `variables` in their graph's session."""
    if not variables:
        return []
    return runtime_for(graph).read(variables)


def write_values(
    graph: Graph | None, variables: list[Variable], values: list[Any], what: str
) -> None:
    """Loads `values` into `variables` after checking their count and shapes."""
    values = list(values)
    if len(values) != len(variables):
        raise ValueError(
            f"You called `set_weights(weights)` on {what} with a weight list of length "
            f"{len(values)}, but it expects {len(variables)} weights."
        )
    for v, value in zip(variables, values):
        shape = tuple(np.shape(value))
        if tuple(v.shape.as_list()) != shape:
            raise ValueError(
                f"{what}: weight {v.op.name} has shape {tuple(v.shape.as_list())}, the value "
                f"given has shape {shape}."
            )
    runtime = runtime_for(graph)
    runtime.write(variables, values)
    # TF1 code running a Keras layer in its own session (Keras 2 in graph mode assigns in the
    # default session): that session gets the values too, so its next run sees them
    session = get_default_session()
    if session is not None and session.graph is graph and session is not runtime.session:
        for v, value in zip(runtime.here(variables), values):
            v.load(np.asarray(value, dtype=v.dtype), session)


class _KerasValues:
    """How a Keras weight's value is read and written outside graphs (`v.numpy()`, `v.value`,
    `v.assign(array)`): through the runtime of the graph it was built in, which initialises it
    when it has no value yet (see `state_cells.set_host_access`)."""

    @staticmethod
    def manages(graph: Graph) -> bool:
        return _RUNTIME in graph.attachments

    @staticmethod
    def read(variable: Variable) -> np.ndarray:
        return runtime_for(variable.graph).read([variable])[0]

    @staticmethod
    def write(variable: Variable, value: Any) -> None:
        runtime_for(variable.graph).write([variable], [value])


state_cells.set_host_access(_KerasValues())
