"""Keras 3 weight constraints (`keras.constraints`): `constraint(w) -> w projected`.

A layer's `kernel_constraint=` (or `add_weight(constraint=...)`) is kept on the weight's
Variable; after each optimizer step the optimizer writes `constraint(new value)` instead of the
new value, as Keras applies `variable.constraint` after every update
(`keras/src/optimizers/base_optimizer.py`) and TF1's optimizers project `Variable.constraint`.

>>> layer = sl.layers.Dense(4, kernel_constraint=sl.constraints.MaxNorm(2.0))
>>> w = sl.constant([[3.0, 0.5], [4.0, 0.5]])      # column norms 5 and ~0.71
>>> np.round(sl.Session().run(sl.constraints.MaxNorm(2.0)(w)).astype(float), 4).tolist()
[[1.2, 0.5], [1.6, 0.5]]
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import config as keras_config
from sluice._keras.saving import families
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops, unary_ops


def _norms(w: Tensor, axis: Any) -> Tensor:
    return unary_ops.sqrt(reduction_ops.reduce_sum(unary_ops.square(w), axis=axis, keepdims=True))


def _const(w: Tensor, value: float) -> Tensor:
    return core_ops.constant(value, dtype=w.dtype)


def _rescaled(w: Tensor, norms: Tensor, desired: Tensor) -> Tensor:
    """`w * desired / (epsilon + norms)`, Keras's rescaling."""
    return w * (desired / (_const(w, keras_config.epsilon()) + norms))


@export("constraints.Constraint")
class Constraint:
    """Base class: `__call__(w)` returns the projected weight (by default `w` itself);
    `get_config` the constructor's arguments."""

    def __call__(self, w: Any) -> Any:
        return w

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> Constraint:
        return cls(**config)


@export("constraints.MaxNorm", "constraints.max_norm")
class MaxNorm(Constraint):
    """Rescales the weights incident to each unit (the slices along `axis`) to a norm of at most
    `max_value`: `w * clip(norm, 0, max_value) / (epsilon + norm)`.

    Args:
      max_value: the largest norm.
      axis: the axis (or axes) the norms are taken over: 0 for a Dense kernel
        `(input_dim, units)`, [0, 1, 2] for a channels-last Conv2D kernel.
    """

    def __init__(self, max_value: float = 2, axis: Any = 0):
        self.max_value, self.axis = max_value, axis

    def __call__(self, w: Any) -> Any:
        w = core_ops.convert_to_tensor(w)
        norms = _norms(w, self.axis)
        desired = math_ops.minimum(
            math_ops.maximum(norms, _const(w, 0.0)), _const(w, self.max_value)
        )
        return _rescaled(w, norms, desired)

    def get_config(self) -> dict:
        return {"max_value": self.max_value, "axis": self.axis}


@export("constraints.NonNeg", "constraints.non_neg")
class NonNeg(Constraint):
    """max(w, 0)."""

    def __call__(self, w: Any) -> Any:
        w = core_ops.convert_to_tensor(w)
        return math_ops.maximum(w, _const(w, 0.0))


@export("constraints.UnitNorm", "constraints.unit_norm")
class UnitNorm(Constraint):
    """Rescales the weights incident to each unit to norm 1: `w / (epsilon + norm)` (`axis` as
    in `MaxNorm`)."""

    def __init__(self, axis: Any = 0):
        self.axis = axis

    def __call__(self, w: Any) -> Any:
        w = core_ops.convert_to_tensor(w)
        return w / (_const(w, keras_config.epsilon()) + _norms(w, self.axis))

    def get_config(self) -> dict:
        return {"axis": self.axis}


@export("constraints.MinMaxNorm", "constraints.min_max_norm")
class MinMaxNorm(Constraint):
    """Rescales the weights incident to each unit towards a norm in [min_value, max_value]:
    the new norm is `rate * clip(norm, min_value, max_value) + (1 - rate) * norm` (`rate` 1:
    strictly; `axis` as in `MaxNorm`)."""

    def __init__(
        self, min_value: float = 0.0, max_value: float = 1.0, rate: float = 1.0, axis: Any = 0
    ):
        self.min_value, self.max_value, self.rate, self.axis = min_value, max_value, rate, axis

    def __call__(self, w: Any) -> Any:
        w = core_ops.convert_to_tensor(w)
        norms = _norms(w, self.axis)
        clipped = math_ops.minimum(
            math_ops.maximum(norms, _const(w, self.min_value)), _const(w, self.max_value)
        )
        desired = _const(w, self.rate) * clipped + _const(w, 1.0 - self.rate) * norms
        return _rescaled(w, norms, desired)

    def get_config(self) -> dict:
        return {
            "min_value": self.min_value,
            "max_value": self.max_value,
            "rate": self.rate,
            "axis": self.axis,
        }


FAMILY = families.Family(
    "constraint", "keras.constraints", (Constraint, MaxNorm, MinMaxNorm, NonNeg, UnitNorm)
)


@export("constraints.get")
def get(identifier: Any) -> Any:
    """A constraint from a name ("max_norm", "NonNeg", ...: a new instance with the defaults,
    or one registered with `sl.saving.register_keras_serializable`), a config dict
    (`deserialize`), a class (a new instance) or a callable (itself); None gives None.

    Raises:
      ValueError: an unknown name, or anything else.
    """
    return FAMILY.get(identifier)


@export("constraints.serialize")
def serialize(constraint: Any) -> Any:
    """The config of a constraint as Keras 3 saves it ({"module": "keras.constraints",
    "class_name", "config", "registered_name"}); a custom one or a function as
    `sl.saving.serialize_keras_object` writes it; None for None."""
    return FAMILY.serialize(constraint)


@export("constraints.deserialize")
def deserialize(config: Any, custom_objects: dict | None = None) -> Any:
    """The constraint a `serialize` config describes: `custom_objects` and the registry first,
    then Keras's constraints by class name."""
    return FAMILY.deserialize(config, custom_objects)
