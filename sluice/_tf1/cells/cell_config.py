"""How a cell's constructor arguments are written in its `get_config()` and read back, as TF1's
cells (Keras layers) do: activations by name, initializers as `{"class_name", "config"}`, a
wrapped cell as `{"class_name": "BasicLSTMCell", "config": {...}}`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

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
