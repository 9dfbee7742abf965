"""The part of TF1's variable scopes that the cells need: scoped names and `get_variable`.

Weight names follow the variable scope, never the name scope, so that a TF1 checkpoint's names
(`rnn/basic_lstm_cell/kernel`) map 1:1 onto sluice variables:

* `variable_scope("rnn")` enters `<current>/rnn` exactly, however often it is entered;
* `variable_scope(None, default_name="basic_lstm_cell")` enters a fresh one: `basic_lstm_cell`,
  then `basic_lstm_cell_1`, ..., counting the scopes entered under the same parent since that
  parent was entered by name. As in TF1, leaving a scope entered by name forgets its
  sub-scopes, so two `dynamic_rnn` calls without `scope` put two new cells both in
  `rnn/basic_lstm_cell`, and the second one's `get_variable` raises "already exists";
* `variable_scope(scope)` with a `VariableScope` captured earlier re-enters that exact scope
  (a cell enters its own scope this way on every call after the first);
* `get_variable(name, shape, dtype, initializer)` creates the Variable `<current>/<name>` once;
  asking again for a name that exists raises (cells keep their variables, so they never ask twice).

The state (current scope, how often each scope was entered) is kept per graph.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import re
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from sluice.cells import initializers
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.tensor_shape import as_shape
from sluice.framework.variables import Variable

AUTO_REUSE = "AUTO_REUSE"  # TF1's `tf.AUTO_REUSE`: get_variable creates or reuses


@dataclasses.dataclass
class VariableScope:
    """A variable scope, by its full name ('' is the top level), and whether `get_variable` in
    it reuses existing variables (True), creates them (None), or either (AUTO_REUSE)."""

    name: str
    reuse: Any = dataclasses.field(default=None, compare=False)

    def __hash__(self) -> int:
        return hash(self.name)

    def reuse_variables(self) -> None:
        """From now on, `get_variable` in this scope (and scopes opened inside it) returns the
        existing variables (TF1's `scope.reuse_variables()`)."""
        self.reuse = True


class _ScopeStore:
    def __init__(self) -> None:
        self.current = VariableScope("")
        self.entered: collections.Counter[str] = collections.Counter()
        self.variables: dict[str, Variable] = {}
        self.object_names: collections.Counter[str] = collections.Counter()


_STORES: weakref.WeakKeyDictionary[graph_lib.Graph, _ScopeStore] = weakref.WeakKeyDictionary()


def _store(g: graph_lib.Graph | None = None) -> _ScopeStore:
    g = g or graph_lib.get_default_graph()
    if g not in _STORES:
        _STORES[g] = _ScopeStore()
    return _STORES[g]


def get_variable_scope() -> VariableScope:
    """The variable scope of the default graph in effect now."""
    return _store().current


def snake_case(name: str) -> str:
    """'BasicLSTMCell' -> 'basic_lstm_cell' (Keras' `to_snake_case`): the default name of a
    cell here and of a Keras layer or metric (`sl.layers`)."""
    s = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()


def unique_object_name(base: str) -> str:
    """`base`, then `base_1`, `base_2`, ... for objects (cells) made in the default graph."""
    store = _store()
    count = store.object_names[base]
    store.object_names[base] += 1
    return base if count == 0 else f"{base}_{count}"


def _join(parent: str, name: str) -> str:
    return f"{parent}/{name}" if parent else name


def _unique_default(store: _ScopeStore, default_name: str) -> str:
    parent = store.current.name
    name, idx = default_name, 0
    while store.entered[_join(parent, name)]:
        idx += 1
        name = f"{default_name}_{idx}"
    return name


@contextlib.contextmanager
def variable_scope(
    name_or_scope: str | VariableScope | None, default_name: str | None = None,
    values: Any = None, reuse: Any = None,
) -> Iterator[VariableScope]:
    """Enters a variable scope (see the module docstring) and a name scope of the same name.

    Args:
      name_or_scope: a name relative to the current scope, a `VariableScope` to re-enter, or
        None to use a fresh `default_name`.
      default_name: the base of a fresh name, when `name_or_scope` is None.
      values: accepted for TF1 signatures.
      reuse: True to reuse the scope's variables, AUTO_REUSE to create or reuse, None (or
        False) to inherit: a scope inside a reusing one reuses too, as in TF1.

    Yields:
      The `VariableScope` entered.

    >>> with variable_scope("rnn"):
    ...     with variable_scope(None, default_name="basic_lstm_cell") as scope:
    ...         print(scope.name)
    rnn/basic_lstm_cell
    """
    g = graph_lib.get_default_graph()
    store = _store(g)
    inherited = store.current.reuse
    if isinstance(name_or_scope, VariableScope):
        # TF1 enters a copy: reuse_variables() inside the block does not outlive it
        scope = VariableScope(name_or_scope.name, name_or_scope.reuse)
        op_scope = scope.name.rsplit("/", 1)[-1] if scope.name else None
    else:
        if name_or_scope is None:
            if not default_name:
                raise ValueError("variable_scope needs a name_or_scope or a default_name.")
            name_or_scope = _unique_default(store, default_name)
        if not isinstance(name_or_scope, str) or not name_or_scope:
            raise TypeError(f"variable_scope: expected a non-empty name, got {name_or_scope!r}.")
        scope = VariableScope(_join(store.current.name, name_or_scope))
        op_scope = name_or_scope
    if reuse is True or inherited is True or scope.reuse is True:
        scope.reuse = True
    elif AUTO_REUSE in (reuse, inherited, scope.reuse):
        scope.reuse = AUTO_REUSE
    saved_counts = (
        collections.Counter(store.entered) if isinstance(name_or_scope, VariableScope) else None
    )
    store.entered[scope.name] += 1
    saved = store.current
    store.current = scope
    try:
        with g.name_scope(op_scope):
            yield scope
    finally:
        store.current = saved
        if saved_counts is not None:  # TF1: re-entering a scope object leaves no trace
            store.entered = saved_counts
        else:  # TF1's close_variable_subscopes
            for name in store.entered:
                if name.startswith(scope.name + "/"):
                    store.entered[name] = 0


def get_variable(
    name: str,
    shape: Any = None,
    dtype: Any = dtypes.float32,
    initializer: Callable[..., Any] | None = None,
    trainable: bool = True,
) -> Variable:
    """Creates the Variable `<current variable scope>/<name>`, or returns it when the scope
    reuses variables (TF1 `tf.get_variable`; see `variable_scope`'s `reuse`).

    Args:
      name: the variable's name relative to the current variable scope (may contain '/').
      shape: its fully known shape.
      dtype: its dtype.
      initializer: `initializer(shape, dtype=dtype)` returning the initial value (a Tensor or
        array); None gives TF1's default, glorot_uniform for floating dtypes, else zeros.
      trainable: adds it to the TRAINABLE_VARIABLES collection.

    Raises:
      ValueError: the name is taken (in a scope that does not reuse), it does not exist (in a
        scope that reuses), or the shape is not fully known.
    """
    g = graph_lib.get_default_graph()
    store = _store(g)
    full_name = _join(store.current.name, name)
    reuse = store.current.reuse
    existing = store.variables.get(full_name)
    if existing is not None and reuse in (True, AUTO_REUSE):
        if shape is not None and not as_shape(shape).is_compatible_with(existing.shape):
            raise ValueError(f"Trying to share variable {full_name}, but the specified shape "
                             f"{as_shape(shape)} and found shape {existing.shape} differ.")
        return existing
    if existing is not None:
        raise ValueError(
            f"Variable {full_name} already exists, disallowed. Did you mean to set reuse=True "
            "or reuse=AUTO_REUSE in the variable_scope? Each cell creates its weights "
            "once; give a second cell its own scope (e.g. dynamic_rnn(..., scope='rnn2'))."
        )
    if reuse is True:
        raise ValueError(
            f"Variable {full_name} does not exist, or was not created with get_variable(). "
            "Did you mean to set reuse=AUTO_REUSE in the variable_scope?")
    if shape is None:
        raise ValueError(f"Variable {full_name} needs a shape to be created.")
    shape = as_shape(shape)
    if not shape.is_fully_defined():
        raise ValueError(f"Variable {full_name} needs a fully known shape, got {shape}.")
    dtype = dtypes.as_dtype(dtype)
    if initializer is None:
        initializer = (
            initializers.glorot_uniform_initializer()
            if dtypes.is_floating(dtype)
            else initializers.zeros_initializer()
        )
    dims = shape.as_list()
    with g.name_scope(None):  # variable names follow the variable scope only
        if g.unique_name(full_name, mark_as_used=False) != full_name:
            raise ValueError(
                f"Variable {full_name}: an op of that name already exists in the graph."
            )
        var = Variable(
            lambda: initializer(dims, dtype=dtype), name=full_name, dtype=dtype, trainable=trainable
        )
    store.variables[full_name] = var
    return var
