"""TF1's `tf.contrib.framework` scoping of layer arguments: `arg_scope` and `add_arg_scope`.

    with sl.contrib.framework.arg_scope([fully_connected, conv2d], activation_fn=sl.nn.elu):
        y = fully_connected(x, 10)          # activation_fn=sl.nn.elu
        z = fully_connected(x, 10, activation_fn=None)  # the call's own argument wins

A function takes defaults from the enclosing scopes only when it is decorated with
`add_arg_scope` (all of `sl.contrib.layers`' layers are). Scopes nest: an inner scope adds to
or overrides the outer one's arguments for the same function. As in TF1, the stack of scopes is
one per process, not per graph.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any

from sluice._export import export

_SCOPES: list[dict[str, dict[str, Any]]] = [{}]
_DECORATED: dict[str, list[str]] = {}


def _key(func: Callable) -> str:
    return getattr(func, "_arg_scope_key", f"{func.__module__}.{func.__name__}")


@export("contrib.framework.current_arg_scope")
def current_arg_scope() -> dict[str, dict[str, Any]]:
    """The innermost scope: a dict from a decorated function's key to its default arguments."""
    return _SCOPES[-1]


@export("contrib.framework.has_arg_scope")
def has_arg_scope(func: Callable) -> bool:
    """Whether `func` was decorated with `add_arg_scope`."""
    return _key(func) in _DECORATED


@export("contrib.framework.arg_scoped_arguments")
def arg_scoped_arguments(func: Callable) -> list[str]:
    """The argument names of a decorated function (those a scope may set)."""
    if not has_arg_scope(func):
        raise ValueError(f"{func} is not decorated with @add_arg_scope")
    return list(_DECORATED[_key(func)])


@export("contrib.framework.add_arg_scope")
def add_arg_scope(func: Callable) -> Callable:
    """Lets `arg_scope` give `func` default keyword arguments; arguments of the call win."""
    key = f"{func.__module__}.{func.__qualname__}"

    @functools.wraps(func)
    def with_scope(*args: Any, **kwargs: Any) -> Any:
        scoped = current_arg_scope().get(key)
        if scoped:
            kwargs = {**scoped, **kwargs}
        return func(*args, **kwargs)

    with_scope._arg_scope_key = key
    _DECORATED[key] = list(inspect.signature(func).parameters)
    return with_scope


@export("contrib.framework.arg_scope")
@contextlib.contextmanager
def arg_scope(list_ops_or_scope: Any, **kwargs: Any) -> Iterator[dict[str, dict[str, Any]]]:
    """Sets default keyword arguments of the decorated functions in `list_ops_or_scope` (a list
    or tuple of them) inside the `with` block, on top of the enclosing scopes. Given a scope
    that an earlier `arg_scope` yielded (a dict), re-enters that scope instead (no kwargs then).

    Raises:
      ValueError: a function is not decorated with `add_arg_scope`, or a scope dict comes with
        keyword arguments.
      TypeError: `list_ops_or_scope` is neither a list, a tuple nor a scope dict.
    """
    if isinstance(list_ops_or_scope, dict):
        if kwargs:
            raise ValueError(
                "When attempting to re-use a scope by suppling a dictionary, kwargs must be empty."
            )
        scope = list_ops_or_scope
    elif isinstance(list_ops_or_scope, (list, tuple)):
        scope = dict(current_arg_scope())
        for op in list_ops_or_scope:
            if not has_arg_scope(op):
                raise ValueError(f"{op} is not decorated with @add_arg_scope")
            key = _key(op)
            scope[key] = {**scope.get(key, {}), **kwargs}
    else:
        raise TypeError("list_ops_or_scope must either be a list/tuple or reused scope (i.e. dict)")
    _SCOPES.append(scope)
    try:
        yield scope
    finally:
        _SCOPES.pop()
