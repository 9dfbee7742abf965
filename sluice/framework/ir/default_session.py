"""The default-session stack (TF1 keeps it beside the default graph): `Tensor.eval()`,
`Operation.run()` and `Variable.load()` use the innermost `with session:` or `as_default()`.

It holds sessions without knowing their class, so the IR never imports the session module.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

from sluice._export import export


class _DefaultSessionStack(threading.local):
    def __init__(self):
        self.stack: list[Any] = []


_stack = _DefaultSessionStack()


@contextlib.contextmanager
def default_session(session: Any) -> Iterator[Any]:
    """Makes `session` the default for the block."""
    stack = _stack.stack
    stack.append(session)
    try:
        yield session
    finally:
        if stack and stack[-1] is session:
            stack.pop()
        elif session in stack:
            stack.remove(session)


@export("get_default_session")
def get_default_session() -> Any:
    """The innermost default session, or None."""
    stack = _stack.stack
    return stack[-1] if stack else None
