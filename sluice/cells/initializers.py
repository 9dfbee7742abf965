"""TF1 initializers for cell weights: `init(shape, dtype=None, partition_info=None) -> Tensor`.

Random ones draw with `random_uniform`, whose seed follows TF1's `get_seed`: with a graph seed
(`sl.set_random_seed`) and no op seed, the same graph built again gives the same weights.

The Keras initializers (`sl.layers.initializers`) share `compute_fans` with these; they stay
separate classes because the contracts differ: TF1 fixes the dtype when the initializer is made
and takes `partition_info`, and its `constant_initializer` refuses a value of another shape where
Keras's `Constant` broadcasts it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sluice.framework.ir import dtypes
from sluice.framework.ops import core_ops, fill_ops, random_ops


def compute_fans(shape: list[int]) -> tuple[float, float]:
    """The fan-in and fan-out of TF1 and Keras (the same rule): a matrix [in, out]; a vector
    counts its length both ways; a convolution kernel multiplies by the receptive field."""
    if len(shape) < 1:
        return 1.0, 1.0
    if len(shape) == 1:
        return float(shape[0]), float(shape[0])
    if len(shape) == 2:
        return float(shape[0]), float(shape[1])
    receptive = float(np.prod(shape[:-2]))
    return shape[-2] * receptive, shape[-1] * receptive


class glorot_uniform_initializer:
    """Uniform in [-limit, limit] with limit = sqrt(6 / (fan_in + fan_out)) (TF1's default for
    floating variables)."""

    def __init__(self, seed: int | None = None, dtype: Any = dtypes.float32):
        self.seed = seed
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None):
        dtype = dtypes.as_dtype(self.dtype if dtype is None else dtype)
        fan_in, fan_out = compute_fans(list(shape))
        limit = math.sqrt(3.0 / max(1.0, (fan_in + fan_out) / 2.0))
        return random_ops.random_uniform(shape, -limit, limit, dtype=dtype, seed=self.seed)


class random_uniform_initializer:
    """Uniform in [minval, maxval)."""

    def __init__(
        self,
        minval: float = -0.05,
        maxval: float = 0.05,
        seed: int | None = None,
        dtype: Any = dtypes.float32,
    ):
        self.minval, self.maxval, self.seed = minval, maxval, seed
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None):
        dtype = dtypes.as_dtype(self.dtype if dtype is None else dtype)
        return random_ops.random_uniform(
            shape, self.minval, self.maxval, dtype=dtype, seed=self.seed
        )


class random_normal_initializer:
    """Normal with `mean` and `stddev` (TF1's `tf.random_normal_initializer`)."""

    def __init__(self, mean: float = 0.0, stddev: float = 1.0, seed: int | None = None,
                 dtype: Any = dtypes.float32):
        self.mean, self.stddev, self.seed = mean, stddev, seed
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None):
        dtype = dtypes.as_dtype(self.dtype if dtype is None else dtype)
        return random_ops.random_normal(shape, self.mean, self.stddev, dtype=dtype,
                                        seed=self.seed)


class truncated_normal_initializer(random_normal_initializer):
    """Normal with `mean` and `stddev`, redrawn beyond two standard deviations (TF1's
    `tf.truncated_normal_initializer`)."""

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None):
        dtype = dtypes.as_dtype(self.dtype if dtype is None else dtype)
        return random_ops.truncated_normal(shape, self.mean, self.stddev, dtype=dtype,
                                           seed=self.seed)


class constant_initializer:
    """Every element `value` (a scalar), or `value` itself (an array of the variable's shape)."""

    def __init__(self, value: Any = 0, dtype: Any = dtypes.float32):
        self.value = value
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None):
        dtype = dtypes.as_dtype(self.dtype if dtype is None else dtype)
        value = np.asarray(self.value, dtype=dtype)
        if value.ndim == 0:
            return fill_ops.fill(list(shape), core_ops.constant(value))
        if list(value.shape) != list(shape):
            raise ValueError(
                f"constant_initializer: the value has shape {list(value.shape)}, the variable "
                f"{list(shape)}."
            )
        return core_ops.constant(value)


class zeros_initializer(constant_initializer):
    def __init__(self, dtype: Any = dtypes.float32):
        super().__init__(0, dtype)


class ones_initializer(constant_initializer):
    def __init__(self, dtype: Any = dtypes.float32):
        super().__init__(1, dtype)
