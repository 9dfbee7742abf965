"""The `keras.ops` nodes that Keras 3 writes into functional configs, read back as layers.

Keras 3 records each `keras.ops` call on symbolic tensors as a node of the model, saved as
{"module": "keras.src.ops.numpy", "class_name": "Add", "config": {"name": "add"}} with the
call's arguments (tensors, and constants such as the 2.0 of `x * 2.0`). Python operators make
them (`x + y` is `Add`, `x * 2.0` is `Multiply`), and so do layers: an `Embedding` with
`mask_zero=True` hands its mask to the next layer as a `NotEqual(ids, 0)` node. Each class here
is a weightless layer that computes the same op, so such files load; sluice saves them under
the same names, so Keras reads them back. Other `keras.ops` classes are not known: a file using
one fails to load with an error naming it.

>>> x = sl.Input((3,))
>>> model = sl.Model(x, Multiply()(x, 2.0))
>>> model.predict(np.ones((1, 3), np.float32), verbose=0)
array([[2., 2., 2.]], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sluice._keras.layers.base import Layer
from sluice._keras.saving import serialization
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops

MODULE = "keras.src.ops.numpy"


def _as_tensor(value: Any, like: Any) -> Tensor:
    """A constant argument as a tensor of the other argument's dtype (Keras's `x * 2.0`)."""
    if isinstance(value, Tensor):
        return value
    dtype = like.dtype if isinstance(like, Tensor) else None
    return core_ops.convert_to_tensor(value, dtype=dtype)


class _Binary(Layer):
    """An element-wise op of two arguments (tensors or numbers, broadcast)."""

    op: Callable[[Tensor, Tensor], Tensor]

    def __init__(self, name: str | None = None, **kwargs: Any):
        super().__init__(name=name, **kwargs)

    def __call__(self, x1: Any, x2: Any, **kwargs: Any) -> Any:
        if not isinstance(x1, Tensor) and not isinstance(x2, Tensor):
            raise TypeError(
                f"{type(self).__name__} (keras.ops node {self.name!r}) needs a tensor argument; "
                f"got {x1!r} and {x2!r}."
            )
        return super().__call__(x1, x2, **kwargs)

    def call(self, x1: Any, x2: Any) -> Tensor:
        return type(self).op(_as_tensor(x1, x2), _as_tensor(x2, x1))

    def compute_mask(self, inputs: Any, mask: Any = None) -> None:
        return None  # Keras's operations drop masks

    def get_config(self) -> dict:
        return {"name": self.name}


def _binary(class_name: str, op: Callable[[Tensor, Tensor], Tensor]) -> type:
    return type(class_name, (_Binary,), {"op": staticmethod(op), "__doc__": f"keras.ops {op}."})


Add = _binary("Add", math_ops.add)
Subtract = _binary("Subtract", math_ops.subtract)
Multiply = _binary("Multiply", math_ops.multiply)
Divide = _binary("Divide", math_ops.divide)
TrueDivide = _binary("TrueDivide", math_ops.divide)
Maximum = _binary("Maximum", math_ops.maximum)
Minimum = _binary("Minimum", math_ops.minimum)
Power = _binary("Power", math_ops.pow)
Equal = _binary("Equal", math_ops.equal)
NotEqual = _binary("NotEqual", math_ops.not_equal)
Greater = _binary("Greater", math_ops.greater)
GreaterEqual = _binary("GreaterEqual", math_ops.greater_equal)
Less = _binary("Less", math_ops.less)
LessEqual = _binary("LessEqual", math_ops.less_equal)
LogicalAnd = _binary("LogicalAnd", math_ops.logical_and)
LogicalOr = _binary("LogicalOr", math_ops.logical_or)


class Concatenate(Layer):
    """`keras.ops.concatenate(xs, axis)`: its node's argument is the list of tensors."""

    def __init__(self, axis: int = 0, name: str | None = None, **kwargs: Any):
        super().__init__(name=name, **kwargs)
        self.axis = int(axis)

    def call(self, xs: Any) -> Tensor:
        if not isinstance(xs, (list, tuple)) or not xs:
            raise ValueError(
                f"Concatenate (keras.ops node {self.name!r}) takes a non-empty list of tensors, "
                f"got {xs!r}."
            )
        return join_ops.concat(list(xs), axis=self.axis)

    def compute_mask(self, inputs: Any, mask: Any = None) -> None:
        return None

    def get_config(self) -> dict:
        return {"axis": self.axis}  # Keras's Concatenate operation takes no name


OPERATIONS: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        Add,
        Subtract,
        Multiply,
        Divide,
        TrueDivide,
        Maximum,
        Minimum,
        Power,
        Equal,
        NotEqual,
        Greater,
        GreaterEqual,
        Less,
        LessEqual,
        LogicalAnd,
        LogicalOr,
        Concatenate,
    )
}
# Keras 3 names these by their module in a saved config: keras.src.ops.numpy.Add, ...
for _name, _operation in OPERATIONS.items():
    serialization.register_builtin(f"{MODULE}.{_name}", _operation)


# The op type a Python operator makes in sluice -> the operation class it makes in Keras 3.
_OF_OP_TYPE = {
    "AddV2": "Add", "Sub": "Subtract", "Mul": "Multiply", "RealDiv": "TrueDivide",
    "Maximum": "Maximum", "Minimum": "Minimum", "Pow": "Power",
}  # fmt: skip


def keras_node_form(layer: Any) -> tuple[str, dict, list] | None:
    """How Keras 3 would save a `GraphOpLayer` that is one operator (`x + y`, `x * 2.0`) or one
    concatenation (`sl.concat([a, b], -1)`): (the operation's class name, its config, the node's
    arguments: ("input", i) for the layer's i-th input, a number, or a list of these). None for
    any other program, which is saved as a GraphOpLayer (only sluice reads those)."""
    decoded = getattr(layer, "_decoded", None)
    if (
        not decoded
        or len(decoded) > 2
        or getattr(layer, "results", None) != [[len(decoded) - 1, 0]]
    ):
        return None
    *constants, (op_type, refs, _) = decoded

    def argument(ref: list) -> Any:
        """("input", i), or the number a scalar Const holds, or None."""
        if ref[0] == "input":
            return ("input", ref[1])
        const_type, _, attrs = constants[ref[1]] if ref[1] < len(constants) else (None, [], {})
        value = attrs.get("value")
        if const_type != "Const" or not isinstance(value, np.ndarray) or value.ndim != 0:
            return None
        return value.item()

    args = [argument(ref) for ref in refs]
    if None in args or not any(isinstance(a, tuple) for a in args):
        return None
    if op_type == "ConcatV2" and all(isinstance(a, tuple) for a in args[:-1]):
        if isinstance(args[-1], int):
            return "Concatenate", {"axis": args[-1]}, [args[:-1]]
        return None
    name = _OF_OP_TYPE.get(op_type)
    if name is None or len(args) != 2:
        return None
    return name, {"name": layer.name}, args
