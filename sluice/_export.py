"""Public names are declared where they are defined, as TensorFlow's `tf_export` and Keras 3's
`keras_export` do.

    @export("nn.relu", "math.relu")
    def relu(features, name=None): ...

    float32 = DType("float32")
    export("float32", "dtypes.float32")(float32)

A path is relative to the `sluice` package: `"nn.relu"` is `sl.nn.relu`, `"Session"` is
`sl.Session`; its last part is the public name, which may differ from the object's own name
(`export("print")(print_v2)`). One object may have many paths, TF1 aliases included
(`sl.nn.rnn_cell.LSTMCell` and `sl.contrib.rnn.LSTMCell`). `sluice/_namespaces.py` builds every
public namespace from these declarations when `sluice` is imported, and the Keras
serialization registry reads them too.

This module imports nothing of sluice, so any module can declare its names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

# public path ("nn.relu") -> the object it names, in the order the declarations ran
_DECLARED: dict[str, Any] = {}
# where each path was declared, for the error when two modules claim one path
_DECLARED_IN: dict[str, str] = {}


def _check_path(path: str) -> None:
    if not path or not all(part.isidentifier() for part in path.split(".")):
        raise ValueError(f"export: {path!r} is not a dotted path of identifiers")


def export(*paths: str) -> Callable[[T], T]:
    """Declares the public paths of a function, class or value; returns it unchanged.

    Args:
      *paths: dotted paths relative to `sluice` ("train.AdamOptimizer", "Session").

    Raises:
      ValueError: a path is not a dotted identifier, or another object already has it.

    >>> import sluice as sl
    >>> from sluice._export import public_paths
    >>> public_paths(sl.nn.rnn_cell.LSTMCell)
    ['nn.rnn_cell.LSTMCell', 'contrib.rnn.LSTMCell']
    """
    for path in paths:
        _check_path(path)

    def declare(obj: T) -> T:
        where = getattr(obj, "__module__", None) or "a module"
        for path in paths:
            if path in _DECLARED and _DECLARED[path] is not obj:
                raise ValueError(
                    f"export: {path!r} is declared twice, in {_DECLARED_IN[path]} and in "
                    f"{where}; a public path names one object"
                )
            _DECLARED[path] = obj
            _DECLARED_IN[path] = where
        return obj

    return declare


class Lazy:
    """A public value loaded when asked for: an optional dependency's class
    (`sl.summary.Summary` is tensorboardX's proto), so that importing sluice never needs it."""

    def __init__(self, load: Callable[[], Any]):
        self.load = load


def export_lazy(path: str, load: Callable[[], Any]) -> None:
    """Declares `path` as a value that `load()` returns when the name is looked up."""
    export(path)(Lazy(load))


# public module path ("distribution.launch") -> the module `python -m sluice.<path>` runs
_COMMANDS: dict[str, str] = {}


def export_command(module_name: str, path: str) -> None:
    """Declares that `python -m sluice.<path>` runs the module `module_name` (a command line
    tool, such as the multi-process launcher); called by that module with its `__name__`."""
    _check_path(path)
    _COMMANDS[path] = module_name


def commands() -> dict[str, str]:
    """Every declared command: public path -> the module it runs (a copy)."""
    return dict(_COMMANDS)


def declared() -> dict[str, Any]:
    """Every declared path and the object it names (a copy)."""
    return dict(_DECLARED)


def public_paths(obj: Any) -> list[str]:
    """The declared paths of `obj`, in the order they were declared."""
    return [path for path, value in _DECLARED.items() if value is obj]
