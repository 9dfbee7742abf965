"""TF1's variable scopes: scoped variable names, reuse, and the defaults `get_variable` takes.

Weight names follow the variable scope, never the name scope, so that a TF1 checkpoint's names
(`rnn/basic_lstm_cell/kernel`) map 1:1 onto sluice variables:

* `variable_scope("rnn")` enters `<current>/rnn` exactly, however often it is entered;
* `variable_scope(None, default_name="basic_lstm_cell")` enters a fresh one: `basic_lstm_cell`,
  then `basic_lstm_cell_1`, ..., counting the scopes entered under the same parent since that
  parent was entered by name. As in TF1, leaving a scope entered by name forgets its
  sub-scopes, so two `dynamic_rnn` calls without `scope` put two new cells both in
  `rnn/basic_lstm_cell`, and the second one's `get_variable` raises "already exists";
* `variable_scope(scope)` with a `VariableScope` captured earlier re-enters that exact scope,
  with that scope's own reuse flag and defaults (not the enclosing scope's), as in TF1.

A scope carries defaults for `get_variable` (`initializer`, `regularizer`, `dtype`,
`custom_getter`, `partitioner`, `constraint`, ...); a scope opened inside another inherits them,
and a `custom_getter` given to an inner scope wraps the outer one: the inner getter is called
first and its `getter` argument calls the outer getter, which calls the plain one.

The state (current scope, how often each scope was entered) is kept per graph.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.variables import Variable

AUTO_REUSE = "AUTO_REUSE"  # TF1's `tf.AUTO_REUSE`: get_variable creates or reuses
export("AUTO_REUSE", "nn.rnn_cell.AUTO_REUSE")(AUTO_REUSE)


@export("VariableScope", "nn.rnn_cell.VariableScope")
class VariableScope:
    """A variable scope: its full name ('' is the top level), its reuse flag and the defaults
    `get_variable` uses inside it (TF1 `tf.VariableScope`).

    Args:
      reuse: True (get_variable returns existing variables), AUTO_REUSE (creates or returns),
        or False/None (creates; an existing name is an error).
      name: the full name of the scope.
      initializer, regularizer, caching_device, partitioner, custom_getter, dtype,
        use_resource, constraint: the defaults of `get_variable` in this scope.
      name_scope: the name scope (ending in '/') opened when the scope was first entered.
    """

    def __init__(
        self,
        reuse: Any,
        name: str = "",
        initializer: Any = None,
        regularizer: Callable | None = None,
        caching_device: Any = None,
        partitioner: Callable | None = None,
        custom_getter: Callable | None = None,
        name_scope: str = "",
        dtype: Any = dtypes.float32,
        use_resource: bool | None = None,
        constraint: Callable | None = None,
    ):
        self._name = name
        self._reuse = reuse
        self._initializer = initializer
        self._regularizer = regularizer
        self._caching_device = caching_device
        self._partitioner = partitioner
        self._custom_getter = custom_getter
        self._name_scope = name_scope
        self._dtype = None if dtype is None else dtypes.as_dtype(dtype)
        self._use_resource = use_resource
        self._constraint = constraint

    def _copy(self, **changes: Any) -> VariableScope:
        fields = {
            "reuse": self._reuse, "name": self._name, "initializer": self._initializer,
            "regularizer": self._regularizer, "caching_device": self._caching_device,
            "partitioner": self._partitioner, "custom_getter": self._custom_getter,
            "name_scope": self._name_scope, "dtype": self._dtype,
            "use_resource": self._use_resource, "constraint": self._constraint,
        }  # fmt: skip
        fields.update(changes)
        return VariableScope(**fields)

    @property
    def name(self) -> str:
        return self._name

    @property
    def original_name_scope(self) -> str:
        """The name scope ('outer/inner/') opened when this scope was first entered."""
        return self._name_scope

    @property
    def reuse(self) -> Any:
        return self._reuse

    @property
    def initializer(self) -> Any:
        return self._initializer

    @property
    def regularizer(self) -> Callable | None:
        return self._regularizer

    @property
    def caching_device(self) -> Any:
        return self._caching_device

    @property
    def partitioner(self) -> Callable | None:
        return self._partitioner

    @property
    def custom_getter(self) -> Callable | None:
        return self._custom_getter

    @property
    def dtype(self) -> Any:
        return self._dtype

    @property
    def use_resource(self) -> bool | None:
        return self._use_resource

    @property
    def constraint(self) -> Callable | None:
        return self._constraint

    def reuse_variables(self) -> None:
        """From now on, `get_variable` in this scope (and scopes opened inside it) returns the
        existing variables (TF1's `scope.reuse_variables()`)."""
        self._reuse = True

    def set_initializer(self, initializer: Any) -> None:
        self._initializer = initializer

    def set_regularizer(self, regularizer: Callable | None) -> None:
        self._regularizer = regularizer

    def set_caching_device(self, caching_device: Any) -> None:
        self._caching_device = caching_device

    def set_partitioner(self, partitioner: Callable | None) -> None:
        self._partitioner = partitioner

    def set_custom_getter(self, custom_getter: Callable | None) -> None:
        _check_custom_getter(custom_getter)
        self._custom_getter = custom_getter

    def set_dtype(self, dtype: Any) -> None:
        self._dtype = dtypes.as_dtype(dtype)

    def set_use_resource(self, use_resource: bool | None) -> None:
        self._use_resource = use_resource

    # -- the variables under this scope (TF1's VariableScope collection helpers) --------------
    def get_collection(self, name: str) -> list:
        prefix = f"{self._name}/" if self._name else None
        return graph_lib.get_collection(name, prefix)

    def global_variables(self) -> list:
        return self.get_collection(graph_lib.GraphKeys.GLOBAL_VARIABLES)

    def trainable_variables(self) -> list:
        return self.get_collection(graph_lib.GraphKeys.TRAINABLE_VARIABLES)

    def local_variables(self) -> list:
        return self.get_collection(graph_lib.GraphKeys.LOCAL_VARIABLES)

    def __repr__(self) -> str:
        return f"<VariableScope '{self._name}' reuse={self._reuse}>"


def _check_custom_getter(custom_getter: Any) -> None:
    if custom_getter is not None and not callable(custom_getter):
        raise ValueError(f"Passed a custom_getter which is not callable: {custom_getter!r}")


class _ThreadScopes(threading.local):
    """The scope a thread is in and the scopes it has entered: per thread, as TF1's
    `_VariableScopeStore`, so a variable another thread creates meanwhile is not named after
    this thread's scopes (names reach checkpoints)."""

    def __init__(self) -> None:
        self.current = VariableScope(False)
        self.entered: collections.Counter[str] = collections.Counter()


class _ScopeStore:
    def __init__(self) -> None:
        self._thread = _ThreadScopes()
        self.variables: dict[str, Variable] = {}  # shared by every thread, as TF1's var store
        self.partitioned_variables: dict[str, Any] = {}  # full name -> PartitionedVariable
        self.object_names: collections.Counter[str] = collections.Counter()

    @property
    def current(self) -> VariableScope:
        return self._thread.current

    @current.setter
    def current(self, scope: VariableScope) -> None:
        self._thread.current = scope

    @property
    def entered(self) -> collections.Counter[str]:
        return self._thread.entered

    @entered.setter
    def entered(self, counts: collections.Counter[str]) -> None:
        self._thread.entered = counts


_STORE = "variable_scopes"  # a graph's _ScopeStore, in its `attachments` (freed with it)


def scope_store(g: graph_lib.Graph | None = None) -> _ScopeStore:
    """The variable-scope state of graph `g` (default: the default graph)."""
    g = g or graph_lib.get_default_graph()
    store = g.attachments.get(_STORE)
    if store is None:
        store = g.attachments[_STORE] = _ScopeStore()
    return store


@export("get_variable_scope", "nn.rnn_cell.get_variable_scope")
def get_variable_scope() -> VariableScope:
    """The variable scope of the default graph in effect now."""
    return scope_store().current


def snake_case(name: str) -> str:
    """'BasicLSTMCell' -> 'basic_lstm_cell' (Keras' `to_snake_case`): the default name of a
    cell here and of a Keras layer or metric (`sl.layers`)."""
    s = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()


def unique_object_name(base: str) -> str:
    """`base`, then `base_1`, `base_2`, ... for objects (cells) made in the default graph."""
    store = scope_store()
    count = store.object_names[base]
    store.object_names[base] += 1
    return base if count == 0 else f"{base}_{count}"


def join(parent: str, name: str) -> str:
    return f"{parent}/{name}" if parent else name


def _unique_default(store: _ScopeStore, default_name: str) -> str:
    parent = store.current.name
    name, idx = default_name, 0
    while store.entered[join(parent, name)]:
        idx += 1
        name = f"{default_name}_{idx}"
    return name


def _graph_of_values(values: Any) -> graph_lib.Graph:
    """The graph of the first Tensor (or Variable) in `values`, else the default graph; unlike
    an op, a scope may open in a graph that is not the default one (TF1 then makes it so)."""
    for v in values or []:
        g = getattr(v, "graph", None)
        if isinstance(g, graph_lib.Graph):
            return g
    return graph_lib.get_default_graph()


def _wrap_custom_getter(custom_getter: Callable | None, old_getter: Callable | None):
    """The getter of a scope given `custom_getter` inside one whose getter is `old_getter`:
    the new one runs first, and the `getter` it receives runs the old one."""
    if custom_getter is None or old_getter is None:
        return custom_getter or old_getter

    def wrapped(getter: Callable, *args: Any, **kwargs: Any) -> Any:
        return custom_getter(functools.partial(old_getter, getter), *args, **kwargs)

    return wrapped


@contextlib.contextmanager
def _variable_scope(
    name_or_scope: str | VariableScope | None,
    default_name: str | None = None,
    values: Any = None,
    initializer: Any = None,
    regularizer: Callable | None = None,
    caching_device: Any = None,
    partitioner: Callable | None = None,
    custom_getter: Callable | None = None,
    reuse: Any = None,
    dtype: Any = None,
    use_resource: bool | None = None,
    constraint: Callable | None = None,
    auxiliary_name_scope: bool = True,
) -> Iterator[VariableScope]:
    """Enters a variable scope (see the module docstring) and a name scope of the same name.

    Args:
      name_or_scope: a name relative to the current scope, a `VariableScope` to re-enter, or
        None to use a fresh `default_name`.
      default_name: the base of a fresh name, when `name_or_scope` is None.
      values: Tensors the ops of the block take: the scope opens in their graph.
      initializer, regularizer, caching_device, partitioner, custom_getter, dtype,
        use_resource, constraint: defaults for `get_variable` in this scope and the scopes
        opened inside it (see `get_variable`).
      reuse: True to reuse the scope's variables, AUTO_REUSE to create or reuse, None (or
        False) to inherit: a scope inside a reusing one reuses too, as in TF1. A re-entered
        `VariableScope` keeps its own flag unless `reuse` is given.
      auxiliary_name_scope: False opens no name scope (ops keep the current one).

    Yields:
      The `VariableScope` entered.

    Raises:
      TypeError: neither `name_or_scope` nor `default_name`, or a name of the wrong type.
      ValueError: `reuse` is not True, False, None or AUTO_REUSE, `reuse=True` with no name,
        or a `custom_getter` that is not callable.

    >>> with variable_scope("rnn"):
    ...     with variable_scope(None, default_name="basic_lstm_cell") as scope:
    ...         print(scope.name)
    rnn/basic_lstm_cell
    """
    if default_name is None and name_or_scope is None:
        raise TypeError("If default_name is None then name_or_scope is required")
    if reuse is False:  # TF1: False means "inherit", like None
        reuse = None
    if not (reuse is True or reuse is None or reuse == AUTO_REUSE):
        raise ValueError(
            f"The reuse parameter must be True or False or None (or AUTO_REUSE), got {reuse!r}."
        )
    if not isinstance(auxiliary_name_scope, bool):
        raise TypeError(
            "The auxiliary_name_scope must be `True` or `False`, while get "
            f"{auxiliary_name_scope!r}"
        )
    if name_or_scope is not None and not isinstance(name_or_scope, (str, VariableScope)):
        raise TypeError(
            f"VariableScope: name_or_scope must be a string or VariableScope, got "
            f"{type(name_or_scope).__name__} ({name_or_scope!r})."
        )
    if name_or_scope is None and reuse:
        raise ValueError("reuse=True cannot be used without a name_or_scope")
    if isinstance(name_or_scope, str) and not name_or_scope:
        raise ValueError("variable_scope: the name must not be empty.")
    _check_custom_getter(custom_getter)
    g = _graph_of_values(values)
    with g.as_default():
        store = scope_store(g)
        old = store.current
        if isinstance(name_or_scope, VariableScope):
            parent, own_name = name_or_scope, None
            op_scope = name_or_scope.name.rsplit("/", 1)[-1] or None
        else:
            parent = old
            own_name = name_or_scope or _unique_default(store, default_name)
            op_scope = name_or_scope or default_name
        if not auxiliary_name_scope or op_scope is None:  # stay in the current name scope
            current = g.get_name_scope()
            op_scope = f"{current}/" if current else None
        with g.name_scope(op_scope) as entered_name_scope:
            if own_name is None:  # jump to a shared scope: a copy, its own flags and defaults
                scope = parent._copy(reuse=reuse or parent.reuse)
                store.entered[scope.name] += 1
                saved_counts = collections.Counter(store.entered)
            else:  # prolong the current scope: inherit reuse and the defaults
                scope = parent._copy(
                    reuse=reuse or parent.reuse,
                    name=join(parent.name, own_name),
                    name_scope=entered_name_scope,
                )
                store.entered[scope.name] += 1
                saved_counts = None
            if initializer is not None:
                scope.set_initializer(initializer)
            if regularizer is not None:
                scope.set_regularizer(regularizer)
            if caching_device is not None:
                scope.set_caching_device(caching_device)
            if partitioner is not None:
                scope.set_partitioner(partitioner)
            if custom_getter is not None:
                scope.set_custom_getter(_wrap_custom_getter(custom_getter, parent.custom_getter))
            if dtype is not None:
                scope.set_dtype(dtype)
            if use_resource is not None:
                scope.set_use_resource(use_resource)
            if constraint is not None:
                scope._constraint = constraint
            store.current = scope
            try:
                yield scope
            finally:
                store.current = old
                if saved_counts is not None:  # TF1: re-entering a scope object leaves no trace
                    store.entered = saved_counts
                else:  # TF1's close_variable_subscopes
                    for name in store.entered:
                        if name.startswith(scope.name + "/"):
                            store.entered[name] = 0


class _NestingChecked:
    """One `variable_scope` block: as TF1's, leaving it while a scope opened inside it is still
    open raises RuntimeError and leaves it open (it can be left again once that one is)."""

    def __init__(self, context: Any):
        self._context = context

    def __enter__(self) -> VariableScope:
        self._scope = self._context.__enter__()
        self._store = scope_store()  # the scope's graph is the default graph inside the block
        return self._scope

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Any:
        if exc_type is None and self._store.current is not self._scope:
            raise RuntimeError("Improper nesting of variable_scope.")
        return self._context.__exit__(exc_type, exc, tb)


@export("variable_scope", "nn.rnn_cell.variable_scope")
@functools.wraps(_variable_scope, assigned=("__module__", "__doc__"))
def variable_scope(*args: Any, **kwargs: Any) -> _NestingChecked:
    return _NestingChecked(_variable_scope(*args, **kwargs))


@export("no_regularizer")
def no_regularizer(_: Any) -> None:
    """A regularizer that adds no loss: turns off the enclosing scope's regularizer (TF1)."""
    return None
