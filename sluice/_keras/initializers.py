"""Keras 3 initializers: `init(shape, dtype) -> Tensor` building the initial value in the graph.

Random initializers draw with sluice's random ops, whose seeds follow TF1's rules: with a graph
seed (`sl.utils.set_random_seed`) and no `seed` argument, the same model built again gets the
same weights. `Orthogonal` needs a QR decomposition, which no graph op provides: it computes
its matrix with NumPy when the graph is built, seeded the same way, and embeds it as a constant.

>>> layer = sl.layers.Dense(4, kernel_initializer="he_normal")
>>> init = sl.layers.initializers.RandomNormal(stddev=0.1, seed=3)
>>> layer = sl.layers.Dense(4, kernel_initializer=init)
>>> init((2, 3)).shape                                   # init(shape) -> a Tensor
TensorShape([2, 3])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sluice._export import export
from sluice._tf1.cells.initializers import compute_fans
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.random import random_ops


@export("layers.initializers.Initializer")
class Initializer:
    """Base class: `__call__(shape, dtype=None)` returns a Tensor; `get_config` its arguments."""

    def __call__(self, shape: Any, dtype: Any = None) -> Any:
        raise NotImplementedError

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> Initializer:
        return cls(**config)


@export("layers.initializers.Constant")
class Constant(Initializer):
    def __init__(self, value: float = 0.0):
        self.value = value

    def __call__(self, shape: Any, dtype: Any = None) -> Any:
        dtype = dtypes.as_dtype(dtype or "float32")
        value = np.asarray(self.value, dtype=dtype)
        if value.ndim == 0:
            return fill_ops.fill(list(shape), core_ops.constant(value))
        return core_ops.constant(np.broadcast_to(value, shape).copy())

    def get_config(self) -> dict:
        value = self.value
        return {"value": value.tolist() if isinstance(value, np.ndarray) else value}


@export("layers.initializers.Zeros")
class Zeros(Constant):
    def __init__(self):
        super().__init__(0.0)

    def get_config(self) -> dict:
        return {}


@export("layers.initializers.Ones")
class Ones(Constant):
    def __init__(self):
        super().__init__(1.0)

    def get_config(self) -> dict:
        return {}


@export("layers.initializers.RandomNormal")
class RandomNormal(Initializer):
    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape: Any, dtype: Any = None) -> Any:
        return random_ops.random_normal(
            list(shape), self.mean, self.stddev, dtype=dtype or "float32", seed=self.seed
        )

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


@export("layers.initializers.TruncatedNormal")
class TruncatedNormal(RandomNormal):
    """Normal values more than two standard deviations from the mean are redrawn."""

    def __call__(self, shape: Any, dtype: Any = None) -> Any:
        return random_ops.truncated_normal(
            list(shape), self.mean, self.stddev, dtype=dtype or "float32", seed=self.seed
        )


@export("layers.initializers.RandomUniform")
class RandomUniform(Initializer):
    def __init__(self, minval: float = -0.05, maxval: float = 0.05, seed: int | None = None):
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape: Any, dtype: Any = None) -> Any:
        return random_ops.random_uniform(
            list(shape), self.minval, self.maxval, dtype=dtype or "float32", seed=self.seed
        )

    def get_config(self) -> dict:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


@export("layers.initializers.VarianceScaling")
class VarianceScaling(Initializer):
    """Samples with variance `scale / n`, n = fan_in, fan_out or their mean (`mode`), from a
    truncated normal, an untruncated normal or a uniform distribution."""

    def __init__(
        self,
        scale: float = 1.0,
        mode: str = "fan_in",
        distribution: str = "truncated_normal",
        seed: int | None = None,
    ):
        if scale <= 0.0:
            raise ValueError(f"scale must be positive, got {scale}.")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"mode must be 'fan_in', 'fan_out' or 'fan_avg', got {mode!r}.")
        if distribution not in ("truncated_normal", "untruncated_normal", "uniform"):
            raise ValueError(
                "distribution must be 'truncated_normal', 'untruncated_normal' or 'uniform', "
                f"got {distribution!r}."
            )
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def __call__(self, shape: Any, dtype: Any = None) -> Any:
        dtype = dtype or "float32"
        fan_in, fan_out = compute_fans(list(shape))
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution == "truncated_normal":
            stddev = math.sqrt(scale) / 0.87962566103423978  # std of a unit normal cut at +-2
            return random_ops.truncated_normal(
                list(shape), 0.0, stddev, dtype=dtype, seed=self.seed
            )
        if self.distribution == "untruncated_normal":
            return random_ops.random_normal(
                list(shape), 0.0, math.sqrt(scale), dtype=dtype, seed=self.seed
            )
        limit = math.sqrt(3.0 * scale)
        return random_ops.random_uniform(list(shape), -limit, limit, dtype=dtype, seed=self.seed)

    def get_config(self) -> dict:
        return {
            "scale": self.scale,
            "mode": self.mode,
            "distribution": self.distribution,
            "seed": self.seed,
        }


def _variance_scaling_preset(class_name: str, scale: float, mode: str, distribution: str):
    class Preset(VarianceScaling):
        def __init__(self, seed: int | None = None):
            super().__init__(scale, mode, distribution, seed)

        def get_config(self) -> dict:
            return {"seed": self.seed}

    Preset.__name__ = Preset.__qualname__ = class_name
    Preset.__doc__ = (
        f"VarianceScaling(scale={scale}, mode={mode!r}, distribution={distribution!r})."
    )
    return Preset


GlorotUniform = _variance_scaling_preset("GlorotUniform", 1.0, "fan_avg", "uniform")


export("layers.initializers.GlorotUniform")(GlorotUniform)


GlorotNormal = _variance_scaling_preset("GlorotNormal", 1.0, "fan_avg", "truncated_normal")


export("layers.initializers.GlorotNormal")(GlorotNormal)


HeUniform = _variance_scaling_preset("HeUniform", 2.0, "fan_in", "uniform")


export("layers.initializers.HeUniform")(HeUniform)


HeNormal = _variance_scaling_preset("HeNormal", 2.0, "fan_in", "truncated_normal")


export("layers.initializers.HeNormal")(HeNormal)


LecunUniform = _variance_scaling_preset("LecunUniform", 1.0, "fan_in", "uniform")


export("layers.initializers.LecunUniform")(LecunUniform)


LecunNormal = _variance_scaling_preset("LecunNormal", 1.0, "fan_in", "truncated_normal")


export("layers.initializers.LecunNormal")(LecunNormal)


@export("layers.initializers.Orthogonal")
class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix times `gain`: Q of the QR decomposition of a normal matrix,
    sign-corrected (Keras's algorithm). Computed with NumPy at graph-building time from a seed
    drawn by TF1's rules (see the module docstring)."""

    def __init__(self, gain: float = 1.0, seed: int | None = None):
        self.gain, self.seed = gain, seed

    def __call__(self, shape: Any, dtype: Any = None) -> Any:
        shape = list(shape)
        if len(shape) < 2:
            raise ValueError(f"The Orthogonal initializer needs a shape of rank >= 2, got {shape}.")
        rows, cols = int(np.prod(shape[:-1])), shape[-1]
        rng = np.random.default_rng(list(random_ops.get_seed(self.seed)))
        a = rng.normal(size=(max(rows, cols), min(rows, cols)))
        q, r = np.linalg.qr(a)
        q *= np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        value = (self.gain * q.reshape(shape)).astype(dtypes.as_dtype(dtype or "float32"))
        return core_ops.constant(value)

    def get_config(self) -> dict:
        return {"gain": self.gain, "seed": self.seed}


@export("layers.initializers.Identity")
class Identity(Initializer):
    """`gain` times the identity matrix (2-D shapes only)."""

    def __init__(self, gain: float = 1.0):
        self.gain = gain

    def __call__(self, shape: Any, dtype: Any = None) -> Any:
        if len(shape) != 2:
            raise ValueError(f"The Identity initializer needs a 2-D shape, got {list(shape)}.")
        value = self.gain * np.eye(*shape)
        return core_ops.constant(value.astype(dtypes.as_dtype(dtype or "float32")))

    def get_config(self) -> dict:
        return {"gain": self.gain}


_CLASSES = {
    cls.__name__: cls
    for cls in (
        Constant,
        Zeros,
        Ones,
        RandomNormal,
        TruncatedNormal,
        RandomUniform,
        VarianceScaling,
        GlorotUniform,
        GlorotNormal,
        HeUniform,
        HeNormal,
        LecunUniform,
        LecunNormal,
        Orthogonal,
        Identity,
    )
}


_ALIASES = {
    "zeros": Zeros, "zero": Zeros, "ones": Ones, "one": Ones, "constant": Constant,
    "uniform": RandomUniform, "random_uniform": RandomUniform, "normal": RandomNormal,
    "random_normal": RandomNormal, "truncated_normal": TruncatedNormal,
    "variance_scaling": VarianceScaling, "glorot_uniform": GlorotUniform,
    "glorot_normal": GlorotNormal, "he_uniform": HeUniform, "he_normal": HeNormal,
    "lecun_uniform": LecunUniform, "lecun_normal": LecunNormal, "orthogonal": Orthogonal,
    "identity": Identity,
    # Keras 3's class names of these two (its `Orthogonal` and `Identity` are aliases)
    "OrthogonalInitializer": Orthogonal, "IdentityInitializer": Identity,
}  # fmt: skip


@export("layers.initializers.get")
def get(identifier: Any) -> Any:
    """An initializer from a name ("glorot_uniform"), a config dict, an Initializer or a
    callable `(shape, dtype) -> Tensor` (returned as is)."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        cls = _ALIASES.get(identifier) or _CLASSES.get(identifier)
        if cls is None:
            raise ValueError(f"Unknown initializer {identifier!r}; known: {sorted(_ALIASES)}.")
        return cls()
    if isinstance(identifier, dict) and "class_name" in identifier:
        cls = _CLASSES.get(identifier["class_name"]) or _ALIASES.get(identifier["class_name"])
        if cls is None:
            raise ValueError(f"Unknown initializer class {identifier['class_name']!r}.")
        return cls.from_config(identifier.get("config", {}))
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret initializer identifier: {identifier!r}.")


@export("layers.initializers.serialize")
def serialize(initializer: Any) -> Any:
    """A config dict for an Initializer (a name for a plain function)."""
    if isinstance(initializer, Initializer):
        return {"class_name": type(initializer).__name__, "config": initializer.get_config()}
    return getattr(initializer, "__name__", initializer)
