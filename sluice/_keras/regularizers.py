"""Keras 3 weight regularizers: `reg(weight) -> scalar Tensor`, added to the training loss.

>>> layer = sl.layers.Dense(4, kernel_regularizer="l2")            # 0.01 * sum(kernel ** 2)
>>> layer = sl.layers.Dense(4, kernel_regularizer=sl.layers.regularizers.L1L2(l1=1e-4, l2=1e-3))
>>> l2 = sl.layers.regularizers.get("l2")
>>> kernel = sl.constant([[1.0, 2.0]])
>>> round(float(sl.Session().run(l2(kernel))), 6)   # 0.01 * (1 ** 2 + 2 ** 2)
0.05
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops, unary_ops


@export("layers.regularizers.Regularizer")
class Regularizer:
    def __call__(self, x: Any) -> Any:
        raise NotImplementedError

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> Regularizer:
        return cls(**config)


@export("layers.regularizers.L1L2")
class L1L2(Regularizer):
    """l1 * sum(|x|) + l2 * sum(x ** 2)."""

    def __init__(self, l1: float = 0.0, l2: float = 0.0):
        self.l1, self.l2 = float(l1), float(l2)

    def __call__(self, x: Any) -> Any:
        x = core_ops.convert_to_tensor(x)
        total = core_ops.constant(0.0, dtype=x.dtype)
        if self.l1:
            l1 = core_ops.convert_to_tensor(self.l1, dtype=x.dtype)
            total = math_ops.add(total, l1 * reduction_ops.reduce_sum(unary_ops.abs(x)))
        if self.l2:
            l2 = core_ops.convert_to_tensor(self.l2, dtype=x.dtype)
            total = math_ops.add(total, l2 * reduction_ops.reduce_sum(unary_ops.square(x)))
        return total

    def get_config(self) -> dict:
        return {"l1": self.l1, "l2": self.l2}


@export("layers.regularizers.L1")
class L1(L1L2):
    def __init__(self, l1: float = 0.01):
        super().__init__(l1=l1)

    def get_config(self) -> dict:
        return {"l1": self.l1}


@export("layers.regularizers.L2")
class L2(L1L2):
    def __init__(self, l2: float = 0.01):
        super().__init__(l2=l2)

    def get_config(self) -> dict:
        return {"l2": self.l2}


_CLASSES = {"L1L2": L1L2, "L1": L1, "L2": L2, "l1_l2": L1L2, "l1": L1, "l2": L2}


@export("layers.regularizers.get")
def get(identifier: Any) -> Any:
    """A regularizer from a name ("l1", "l2", "l1_l2"), a config dict, or a callable; None."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        if identifier not in _CLASSES:
            raise ValueError(f"Unknown regularizer {identifier!r}; known: {sorted(_CLASSES)}.")
        return _CLASSES[identifier]()
    if isinstance(identifier, dict) and "class_name" in identifier:
        cls = _CLASSES.get(identifier["class_name"])
        if cls is None:
            raise ValueError(f"Unknown regularizer class {identifier['class_name']!r}.")
        return cls.from_config(identifier.get("config", {}))
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret regularizer identifier: {identifier!r}.")


@export("layers.regularizers.serialize")
def serialize(regularizer: Any) -> Any:
    if isinstance(regularizer, Regularizer):
        return {"class_name": type(regularizer).__name__, "config": regularizer.get_config()}
    return getattr(regularizer, "__name__", regularizer)
