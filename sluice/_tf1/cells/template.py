"""`make_template` (TF1 `tf.make_template`): a function whose variables are created on its first
call and shared by every later call.

    template = make_template("linear", lambda x: x @ get_variable("w", [3, 3]))
    y1 = template(x1)   # creates linear/w
    y2 = template(x2)   # reuses linear/w

The first call (or the constructor, with `create_scope_now_`) opens a uniquely named variable
scope (`name_`, `name__1`, ... as `variable_scope(None, default_name=name_)`); every call runs
`func_` inside it, with `reuse=True` after the first. A later call that creates a trainable
variable (e.g. through `sl.Variable` instead of `get_variable`) raises, as TF1.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from sluice._export import export
from sluice._tf1.cells.scopes import VariableScope, variable_scope
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import GraphKeys


class Template:
    """A function wrapped to share its variables across calls; see `make_template`."""

    def __init__(
        self,
        name: str,
        func: Callable,
        create_scope_now: bool = False,
        unique_name: str | None = None,
        custom_getter: Callable | None = None,
    ):
        if name is None:
            raise ValueError("make_template: name cannot be None.")
        self._name, self._func = name, func
        self._unique_name, self._custom_getter = unique_name, custom_getter
        self._variable_scope: VariableScope | None = None
        self._variables_created = False
        if create_scope_now:
            with variable_scope(
                unique_name,
                default_name=None if unique_name else name,
                custom_getter=custom_getter,
                auxiliary_name_scope=False,
            ) as vs:
                self._variable_scope = vs

    def _call_func(self, args: tuple, kwargs: dict) -> Any:
        trainable_at_start = len(graph_lib.get_collection(GraphKeys.TRAINABLE_VARIABLES))
        result = self._func(*args, **kwargs)
        if self._variables_created:
            trainable = graph_lib.get_collection(GraphKeys.TRAINABLE_VARIABLES)
            if len(trainable) != trainable_at_start:
                created = [v.op.name for v in trainable[trainable_at_start:]]
                raise ValueError(
                    f"Template {self._name!r}: trainable variables {created} were created when "
                    "calling the template after the first time; perhaps you used sl.Variable "
                    "where you meant sl.get_variable"
                )
        self._variables_created = True
        return result

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._variable_scope is not None:
            with variable_scope(
                self._variable_scope, reuse=True if self._variables_created else None
            ):
                return self._call_func(args, kwargs)
        with variable_scope(
            self._unique_name,
            default_name=None if self._unique_name else self._name,
            custom_getter=self._custom_getter,
        ) as vs:
            self._variable_scope = vs
            return self._call_func(args, kwargs)

    @property
    def name(self) -> str:
        return self._name

    @property
    def func(self) -> Callable:
        return self._func

    @property
    def variable_scope(self) -> VariableScope | None:
        return self._variable_scope

    @property
    def variable_scope_name(self) -> str | None:
        """The scope's name (TF1 gives it without a trailing slash)."""
        return None if self._variable_scope is None else self._variable_scope.name

    def _scoped(self, key: str) -> list:
        if self._variable_scope is None:
            return []
        return graph_lib.get_collection(key, self._variable_scope.name + "/")

    @property
    def variables(self) -> list:
        return self.global_variables + self.local_variables

    @property
    def global_variables(self) -> list:
        return self._scoped(GraphKeys.GLOBAL_VARIABLES)

    @property
    def trainable_variables(self) -> list:
        return self._scoped(GraphKeys.TRAINABLE_VARIABLES)

    @property
    def non_trainable_variables(self) -> list:
        trainable = set(self.trainable_variables)
        return [v for v in self.global_variables if v not in trainable]

    @property
    def local_variables(self) -> list:
        return self._scoped(GraphKeys.LOCAL_VARIABLES)


@export("make_template")
def make_template(
    name_: str,
    func_: Callable,
    create_scope_now_: bool = False,
    unique_name_: str | None = None,
    custom_getter_: Callable | None = None,
    **kwargs: Any,
) -> Template:
    """Wraps `func_` so that the variables it creates with `get_variable` are shared by all
    calls (see the module text).

    Args:
      name_: the base name of the variable scope (made unique: `name_`, `name__1`, ...).
      func_: the function; it must create variables with `get_variable`.
      create_scope_now_: open the scope now rather than at the first call.
      unique_name_: use this exact scope name instead of a unique one.
      custom_getter_: a custom getter of the scope.
      **kwargs: bound to `func_` (`functools.partial`).

    Returns:
      A `Template`, callable like `func_`.

    >>> def scale_by_w(x):
    ...     return x * sl.get_variable("w", [], initializer=sl.ones_initializer())
    >>> scale = make_template("scale", scale_by_w)
    >>> a, b = scale(sl.constant(2.0)), scale(sl.constant(3.0))
    >>> [v.op.name for v in sl.global_variables()]
    ['scale/w']
    """
    if kwargs:
        func_ = functools.partial(func_, **kwargs)
    return Template(name_, func_, create_scope_now_, unique_name_, custom_getter_)
