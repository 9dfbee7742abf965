"""How a cell's constructor arguments are written in its `get_config()` and read back, as TF1's
cells (Keras layers) do: activations by name, initializers as `{"class_name", "config"}`, a
wrapped cell as `{"class_name": "BasicLSTMCell", "config": {...}}`, a wrapper's Python function
(a residual function, a dropout state filter) as its code, as TF1 writes it.
"""

from __future__ import annotations

import base64
import builtins
import inspect
import marshal
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from sluice._keras.config import in_safe_mode
from sluice._tf1.cells import initializers
from sluice.framework.ir import dtypes
from sluice.framework.ops.math import unary_ops
from sluice.framework.ops.nn import nn_ops


def _identity(x: Any) -> Any:
    return x


def _activations() -> dict[str, Callable]:
    return {
        "tanh": unary_ops.tanh, "sigmoid": unary_ops.sigmoid, "relu": nn_ops.relu,
        "relu6": nn_ops.relu6, "elu": nn_ops.elu, "selu": nn_ops.selu,
        "softplus": nn_ops.softplus, "softsign": nn_ops.softsign, "linear": _identity,
    }  # fmt: skip


def get_activation(identifier: Any) -> Callable | None:
    """A function from a name ('tanh', 'relu', ...) or the function itself (None stays None).

    Raises:
      ValueError: an unknown name, or something neither a name nor callable.
    """
    if identifier is None or callable(identifier):
        return identifier
    if isinstance(identifier, str):
        known = _activations()
        if identifier not in known:
            raise ValueError(
                f"Unknown activation function: {identifier!r}; known: {sorted(known)}, or pass "
                "the function itself."
            )
        return known[identifier]
    raise ValueError(f"Could not interpret activation function identifier: {identifier!r}")


def serialize_activation(fn: Callable) -> str:
    """The name of an activation ('tanh'); a function of the user's by its `__name__`."""
    for name, known in _activations().items():
        if fn is known:
            return name
    return getattr(fn, "__name__", repr(fn))


def serialize_initializer(init: Any) -> dict | None:
    """`{"class_name": ..., "config": {...}}` for an initializer object (None stays None)."""
    if init is None:
        return None
    if hasattr(init, "get_config"):
        return {"class_name": type(init).__name__, "config": init.get_config()}
    accepted = inspect.signature(type(init).__init__).parameters
    config = {}
    for key, value in vars(init).items():
        if key.startswith("_") or key not in accepted:
            continue
        if isinstance(value, (np.dtype, dtypes.DType)):
            value = value.name
        elif isinstance(value, np.ndarray):
            value = value.tolist()
        config[key] = value
    return {"class_name": type(init).__name__, "config": config}


def get_initializer(identifier: Any) -> Any:
    """An initializer from its serialized form (a TF1 initializer of `sluice.cells`), or the
    object itself (None stays None)."""
    if identifier is None or callable(identifier):
        return identifier
    if isinstance(identifier, dict) and "class_name" in identifier:
        cls = getattr(initializers, identifier["class_name"], None)
        if not isinstance(cls, type):
            raise ValueError(
                f"Unknown initializer class {identifier['class_name']!r} in a cell config; pass "
                "the initializer object instead."
            )
        return cls(**identifier.get("config", {}))
    raise ValueError(f"Could not interpret initializer identifier: {identifier!r}")


def serialize_cell(cell: Any) -> dict:
    return {"class_name": type(cell).__name__, "config": cell.get_config()}


def deserialize_cell(config: Any, classes: dict[str, type]) -> Any:
    """A new cell from `serialize_cell`'s dict (a cell object passes through)."""
    if not isinstance(config, dict):
        return config
    name = config.get("class_name")
    if name not in classes:
        raise ValueError(f"Unknown cell class {name!r} in a cell config; known: {sorted(classes)}.")
    return classes[name].from_config(dict(config.get("config", {})))


def function_config(fn: Callable, key: str, type_key: str, module_key: str) -> dict:
    """A wrapper's function as TF1 writes it (rnn_cell_wrapper_impl): under `key` a Python
    function's code, defaults and closure values (`[base64 of its marshalled code, defaults,
    closure]`, type "lambda", whatever its name), or another callable's name (type
    "function"); under `module_key` the module that defined it.
    """
    if isinstance(fn, types.FunctionType):
        closure = tuple(c.cell_contents for c in fn.__closure__) if fn.__closure__ else None
        code = base64.b64encode(marshal.dumps(fn.__code__)).decode("ascii")
        payload, kind = (code, fn.__defaults__, closure), "lambda"
    elif callable(fn):
        payload, kind = fn.__name__, "function"
    else:
        raise ValueError(f"Unrecognized function type for input: {type(fn)}")
    return {key: payload, type_key: kind, module_key: getattr(fn, "__module__", None)}


def function_from_config(
    config: dict, custom_objects: dict | None, key: str, type_key: str, module_key: str
) -> Callable:
    """The function `function_config` wrote into `config` (its type and module keys are taken
    out of `config`). A "lambda" is rebuilt from its code, with the globals of its module when
    that module is loaded and `custom_objects`; as in Keras, bytecode is refused while a file is
    loaded in safe mode. A "function" is looked up by name in `custom_objects`, then in its
    module.

    Raises:
      ValueError: bytecode in safe mode, or a function name that is not found.
      TypeError: an unknown function type.
    """
    module = sys.modules.get(config.pop(module_key, None) or "")
    kind = config.pop(type_key)
    payload = config[key]
    if kind == "function":
        for table in (custom_objects or {}, vars(module) if module else {}):
            if payload in table:
                return table[payload]
        raise ValueError(
            f"The function {payload!r} of this cell's config ({key}) is not known: pass it in "
            "custom_objects."
        )
    if kind != "lambda":
        raise TypeError(f"Unknown function type: {kind!r} ({type_key}).")
    if in_safe_mode():
        raise ValueError(
            f"The {key} of this cell's config is Python bytecode; loading it runs code from the "
            "file, which safe mode refuses. If you trust the file, load it with "
            "safe_mode=False or call `sl.config.enable_unsafe_deserialization()`."
        )
    code, defaults, closure = payload
    scope = {"__builtins__": builtins, **(vars(module) if module else {}), **(custom_objects or {})}
    fn_code = marshal.loads(base64.b64decode(code))
    if not isinstance(fn_code, types.CodeType):
        raise ValueError(f"The {key} of this cell's config does not hold a code object.")
    cells = tuple(types.CellType(v) for v in closure) if closure else None
    return types.FunctionType(
        fn_code, scope, fn_code.co_name, tuple(defaults) if defaults else None, cells
    )
