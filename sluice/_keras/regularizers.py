"""Keras 3 weight regularizers (`keras.regularizers`): `reg(weight) -> scalar Tensor`, added to
the training loss.

>>> layer = sl.layers.Dense(4, kernel_regularizer="l2")            # 0.01 * sum(kernel ** 2)
>>> layer = sl.layers.Dense(4, kernel_regularizer=sl.regularizers.L1L2(l1=1e-4, l2=1e-3))
>>> l2 = sl.regularizers.get("l2")
>>> kernel = sl.constant([[1.0, 2.0]])
>>> round(float(sl.Session().run(l2(kernel))), 6)   # 0.01 * (1 ** 2 + 2 ** 2)
0.05
"""

from __future__ import annotations

import math
from typing import Any

from sluice._export import export
from sluice._keras.saving import families
from sluice.framework.ops.composite import nn_impl_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.linalg import matrix_diag_ops
from sluice.framework.ops.math import math_ops, matmul_ops, reduction_ops, unary_ops


def validate_float_arg(value: Any, name: str) -> float:
    """`value` as a float, checked as Keras checks a penalty: a finite number >= 0.

    Raises:
      ValueError: anything else.
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or math.isinf(value)
        or math.isnan(value)
        or value < 0
    ):
        raise ValueError(
            f"Invalid value for argument {name}: expected a non-negative float. "
            f"Received: {name}={value!r}"
        )
    return float(value)


@export("layers.regularizers.Regularizer", "regularizers.Regularizer")
class Regularizer:
    """Base class: `__call__(x)` returns a scalar penalty; `get_config` the constructor's
    arguments."""

    def __call__(self, x: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement __call__().")

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> Regularizer:
        return cls(**config)


@export("layers.regularizers.L1L2", "regularizers.L1L2", "regularizers.l1_l2")
class L1L2(Regularizer):
    """l1 * sum(|x|) + l2 * sum(x ** 2)."""

    def __init__(self, l1: float = 0.0, l2: float = 0.0):
        self.l1, self.l2 = validate_float_arg(l1, "l1"), validate_float_arg(l2, "l2")

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


@export("layers.regularizers.L1", "regularizers.L1", "regularizers.l1")
class L1(L1L2):
    def __init__(self, l1: float = 0.01):
        super().__init__(l1=l1)

    def get_config(self) -> dict:
        return {"l1": self.l1}


@export("layers.regularizers.L2", "regularizers.L2", "regularizers.l2")
class L2(L1L2):
    def __init__(self, l2: float = 0.01):
        super().__init__(l2=l2)

    def get_config(self) -> dict:
        return {"l2": self.l2}


@export("regularizers.OrthogonalRegularizer", "regularizers.orthogonal_regularizer")
class OrthogonalRegularizer(Regularizer):
    """Pushes the rows (`mode="rows"`) or columns of a matrix to be orthogonal (Keras's):
    `factor * 0.5 * sum(|P - diag(P)|) / (n (n - 1) / 2)`, where P holds the dot products of
    the L2-normalized rows (columns) and n is their number.

    Raises:
      ValueError: a negative `factor`, another mode, or (when called) an input not of rank 2.
    """

    def __init__(self, factor: float = 0.01, mode: str = "rows"):
        self.factor = validate_float_arg(factor, "factor")
        if mode not in ("rows", "columns"):
            raise ValueError(
                "Invalid value for argument `mode`. Expected one of {'rows', 'columns'}. "
                f"Received: mode={mode!r}"
            )
        self.mode = mode

    def __call__(self, x: Any) -> Any:
        x = core_ops.convert_to_tensor(x)
        if x.shape.rank != 2:
            raise ValueError(
                f"Inputs to OrthogonalRegularizer must have rank 2. Received: inputs.shape="
                f"{x.shape}"
            )
        axis = 1 if self.mode == "rows" else 0
        unit = nn_impl_ops.l2_normalize(x, axis=axis)
        product = (
            matmul_ops.matmul(unit, unit, transpose_b=True)
            if self.mode == "rows"
            else matmul_ops.matmul(unit, unit, transpose_a=True)
        )
        size = x.shape[1 - axis]
        if size is None:
            raise ValueError(f"OrthogonalRegularizer needs the number of {self.mode} of {x}.")
        off_diagonal = product - matrix_diag_ops.matrix_diag(matrix_diag_ops.diag_part(product))
        pairs = size * (size - 1.0) / 2.0
        total = reduction_ops.reduce_sum(unary_ops.abs(off_diagonal))
        scale = core_ops.constant(self.factor * 0.5 / pairs, dtype=x.dtype)
        return scale * total

    def get_config(self) -> dict:
        return {"factor": self.factor, "mode": self.mode}


FAMILY = families.Family(
    "regularizer",
    "keras.regularizers",
    (Regularizer, L1L2, L1, L2, OrthogonalRegularizer),
    aliases={"l1_l2": L1L2},  # sl.regularizers.l1_l2, beside Keras's snake_case "l1l2"
)


@export("layers.regularizers.get", "regularizers.get")
def get(identifier: Any) -> Any:
    """A regularizer from a name ("l1", "l2", "l1_l2", "L2", ...: a new instance with the
    defaults, or one registered with `sl.saving.register_keras_serializable`), a config dict
    (`deserialize`), a class (a new instance) or a callable (itself); None gives None.

    Raises:
      ValueError: an unknown name, or anything else.
    """
    return FAMILY.get(identifier)


@export("layers.regularizers.serialize", "regularizers.serialize")
def serialize(regularizer: Any) -> Any:
    """The config of a regularizer as Keras 3 saves it ({"module": "keras.regularizers",
    "class_name", "config", "registered_name"}); a custom one or a function as
    `sl.saving.serialize_keras_object` writes it."""
    return FAMILY.serialize(regularizer)


@export("regularizers.deserialize")
def deserialize(config: Any, custom_objects: dict | None = None) -> Any:
    """The regularizer a `serialize` config describes: `custom_objects` and the registry
    first, then Keras's regularizers by class name."""
    return FAMILY.deserialize(config, custom_objects)
