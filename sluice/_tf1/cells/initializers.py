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

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.linalg import linalg_ops
from sluice.framework.ops.math import math_ops, reduction_ops, unary_ops
from sluice.framework.ops.random import random_ops


def _scale_shape(shape: Any, partition_info: Any) -> list[int]:
    """The shape fans are computed from: a partitioned variable's full shape (TF1's
    `partition_info.full_shape`), so each part is scaled as the whole variable would be."""
    return list(shape if partition_info is None else partition_info.full_shape)


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


@export(
    "glorot_uniform_initializer",
    "initializers.glorot_uniform",
    "nn.rnn_cell.glorot_uniform_initializer",
)
class glorot_uniform_initializer:
    """Uniform in [-limit, limit] with limit = sqrt(6 / (fan_in + fan_out)) (TF1's default for
    floating variables)."""

    def __init__(self, seed: int | None = None, dtype: Any = dtypes.float32):
        self.seed = seed
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None):
        dtype = dtypes.as_dtype(self.dtype if dtype is None else dtype)
        fan_in, fan_out = compute_fans(_scale_shape(shape, partition_info))
        limit = math.sqrt(3.0 / max(1.0, (fan_in + fan_out) / 2.0))
        return random_ops.random_uniform(shape, -limit, limit, dtype=dtype, seed=self.seed)


@export(
    "random_uniform_initializer",
    "initializers.random_uniform",
    "nn.rnn_cell.random_uniform_initializer",
)
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


@export(
    "random_normal_initializer",
    "initializers.random_normal",
    "nn.rnn_cell.random_normal_initializer",
)
class random_normal_initializer:
    """Normal with `mean` and `stddev` (TF1's `tf.random_normal_initializer`)."""

    def __init__(
        self,
        mean: float = 0.0,
        stddev: float = 1.0,
        seed: int | None = None,
        dtype: Any = dtypes.float32,
    ):
        self.mean, self.stddev, self.seed = mean, stddev, seed
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None):
        dtype = dtypes.as_dtype(self.dtype if dtype is None else dtype)
        return random_ops.random_normal(shape, self.mean, self.stddev, dtype=dtype, seed=self.seed)


@export(
    "truncated_normal_initializer",
    "initializers.truncated_normal",
    "nn.rnn_cell.truncated_normal_initializer",
)
class truncated_normal_initializer(random_normal_initializer):
    """Normal with `mean` and `stddev`, redrawn beyond two standard deviations (TF1's
    `tf.truncated_normal_initializer`)."""

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None):
        dtype = dtypes.as_dtype(self.dtype if dtype is None else dtype)
        return random_ops.truncated_normal(
            shape, self.mean, self.stddev, dtype=dtype, seed=self.seed
        )


@export("constant_initializer", "initializers.constant", "nn.rnn_cell.constant_initializer")
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


@export("zeros_initializer", "initializers.zeros", "nn.rnn_cell.zeros_initializer")
class zeros_initializer(constant_initializer):
    def __init__(self, dtype: Any = dtypes.float32):
        super().__init__(0, dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None):
        dtype = dtypes.as_dtype(self.dtype if dtype is None else dtype)
        return fill_ops.zeros(list(shape), dtype)  # TF1's zeros: b"" for strings


@export("ones_initializer", "initializers.ones", "nn.rnn_cell.ones_initializer")
class ones_initializer(constant_initializer):
    def __init__(self, dtype: Any = dtypes.float32):
        super().__init__(1, dtype)


# -- variance scaling and its named cases -------------------------------------------------------
_TRUNCATED_STDDEV = 0.87962566103423978  # the stddev of a unit normal truncated to [-2, 2]
_MODES = ("fan_in", "fan_out", "fan_avg")
_DISTRIBUTIONS = ("normal", "uniform", "truncated_normal", "untruncated_normal")


@export("variance_scaling_initializer", "initializers.variance_scaling")
class variance_scaling_initializer:
    """Draws with variance `scale / n`, n the fan-in, fan-out or their mean (`mode`), from
    `distribution` (TF1 `tf.variance_scaling_initializer`):

    - "truncated_normal" (TF1's default) or "normal" (its old name): a normal truncated at two
      standard deviations, of stddev `sqrt(scale / n) / 0.8796...` so that the truncated draw
      has the asked variance;
    - "untruncated_normal": a normal of stddev `sqrt(scale / n)`;
    - "uniform": uniform in [-limit, limit], limit = `sqrt(3 * scale / n)`.

    Raises:
      ValueError: scale not positive, an unknown mode or distribution.

    >>> init = variance_scaling_initializer(2.0, "fan_in", "uniform", seed=1)
    >>> bool(sl.Session().run(init([100, 10])).max() <= (3 * 2.0 / 100) ** 0.5)
    True
    """

    def __init__(
        self,
        scale: float = 1.0,
        mode: str = "fan_in",
        distribution: str = "truncated_normal",
        seed: int | None = None,
        dtype: Any = dtypes.float32,
    ):
        if scale <= 0.0:
            raise ValueError(
                f"variance_scaling_initializer: `scale` must be a positive float, got {scale}"
            )
        if mode not in _MODES:
            raise ValueError(
                f"variance_scaling_initializer: invalid `mode` {mode!r}; expected one of {_MODES}"
            )
        distribution = distribution.lower()
        if distribution not in _DISTRIBUTIONS:
            raise ValueError(
                f"variance_scaling_initializer: invalid `distribution` "
                f"{distribution!r}; expected one of {_DISTRIBUTIONS}"
            )
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None):
        dtype = dtypes.as_dtype(self.dtype if dtype is None else dtype)
        if not dtypes.is_floating(dtype):
            raise TypeError(
                f"variance_scaling_initializer: expected a floating dtype, got {dtype.name}"
            )
        fan_in, fan_out = compute_fans(_scale_shape(shape, partition_info))
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution in ("normal", "truncated_normal"):
            stddev = math.sqrt(scale) / _TRUNCATED_STDDEV
            return random_ops.truncated_normal(shape, 0.0, stddev, dtype=dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_ops.random_normal(
                shape, 0.0, math.sqrt(scale), dtype=dtype, seed=self.seed
            )
        limit = math.sqrt(3.0 * scale)
        return random_ops.random_uniform(shape, -limit, limit, dtype=dtype, seed=self.seed)

    def get_config(self) -> dict:
        return {
            "scale": self.scale,
            "mode": self.mode,
            "distribution": self.distribution,
            "seed": self.seed,
            "dtype": self.dtype.name,
        }


@export("glorot_normal_initializer", "initializers.glorot_normal")
class glorot_normal_initializer(variance_scaling_initializer):
    """A truncated normal of variance 2 / (fan_in + fan_out) (Glorot & Bengio 2010)."""

    def __init__(self, seed: int | None = None, dtype: Any = dtypes.float32):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)


@export("initializers.he_normal")
def he_normal(seed: int | None = None) -> variance_scaling_initializer:
    """A truncated normal of variance 2 / fan_in (He et al. 2015)."""
    return variance_scaling_initializer(2.0, "fan_in", "truncated_normal", seed)


@export("initializers.he_uniform")
def he_uniform(seed: int | None = None) -> variance_scaling_initializer:
    """Uniform in [-limit, limit], limit = sqrt(6 / fan_in)."""
    return variance_scaling_initializer(2.0, "fan_in", "uniform", seed)


@export("initializers.lecun_normal")
def lecun_normal(seed: int | None = None) -> variance_scaling_initializer:
    """A truncated normal of variance 1 / fan_in (LeCun 1998)."""
    return variance_scaling_initializer(1.0, "fan_in", "truncated_normal", seed)


@export("initializers.lecun_uniform")
def lecun_uniform(seed: int | None = None) -> variance_scaling_initializer:
    """Uniform in [-limit, limit], limit = sqrt(3 / fan_in)."""
    return variance_scaling_initializer(1.0, "fan_in", "uniform", seed)


@export("uniform_unit_scaling_initializer", "initializers.uniform_unit_scaling")
class uniform_unit_scaling_initializer:
    """Uniform in [-limit, limit], limit = `factor * sqrt(3 / input_size)`, input_size the
    product of every dimension but the last (TF1's deprecated `uniform_unit_scaling_initializer`,
    which keeps the scale of the inputs through a linear layer)."""

    def __init__(self, factor: float = 1.0, seed: int | None = None, dtype: Any = dtypes.float32):
        self.factor, self.seed = factor, seed
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None):
        dtype = dtypes.as_dtype(self.dtype if dtype is None else dtype)
        scale_shape = _scale_shape(shape, partition_info)
        input_size = max(float(np.prod(scale_shape[:-1])) if len(scale_shape) else 1.0, 1.0)
        limit = math.sqrt(3.0 / input_size) * self.factor
        return random_ops.random_uniform(shape, -limit, limit, dtype=dtype, seed=self.seed)


@export("initializers.identity")
class identity_initializer:
    """`gain` times the identity matrix; 2-D shapes only (TF1 `tf.initializers.identity`).

    Raises:
      ValueError: the shape is not 2-D.
    """

    def __init__(self, gain: float = 1.0, dtype: Any = dtypes.float32):
        self.gain = gain
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None):
        dtype = dtypes.as_dtype(self.dtype if dtype is None else dtype)
        shape = list(shape)
        if len(shape) != 2:
            raise ValueError(
                f"Identity matrix initializer can only be used for 2D matrices, got shape {shape}"
            )
        return core_ops.constant(self.gain * np.eye(*shape), dtype=dtype)


@export("orthogonal_initializer", "initializers.orthogonal")
class orthogonal_initializer:
    """A (semi-)orthogonal matrix times `gain` (Saxe et al. 2014; TF1
    `tf.orthogonal_initializer`): the shape is flattened to [prod(shape[:-1]), shape[-1]], a
    normal matrix of the taller orientation is QR-factorized, Q's columns take the signs of R's
    diagonal (so Q is uniformly distributed), and the result is transposed back if needed.

    Raises:
      ValueError: the shape has fewer than two dimensions.
    """

    def __init__(self, gain: float = 1.0, seed: int | None = None, dtype: Any = dtypes.float32):
        self.gain, self.seed = gain, seed
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None):
        dtype = dtypes.as_dtype(self.dtype if dtype is None else dtype)
        shape = list(shape)
        if len(shape) < 2:
            raise ValueError(
                f"orthogonal_initializer: the tensor to initialize must be at least "
                f"two-dimensional, got shape {shape}"
            )
        rows, cols = int(np.prod(shape[:-1])), int(shape[-1])
        flat = (max(rows, cols), min(rows, cols))
        a = random_ops.random_normal(flat, dtype=dtype, seed=self.seed)
        q, r = linalg_ops.qr(a, full_matrices=False)
        diagonal = reduction_ops.reduce_sum(r * core_ops.constant(np.eye(flat[1]), dtype=dtype), 0)
        q = q * unary_ops.sign(diagonal)
        if rows < cols:
            q = array_ops.transpose(q)
        return math_ops.multiply(self.gain, array_ops.reshape(q, shape))
