"""Keras 3 initializers (`keras.initializers`): `init(shape, dtype=None) -> Tensor`.

The random ones draw as Keras 3 does (`keras/src/initializers/random_initializers.py`), with the
stateless draws of `sl.random`: an initializer made with an int `seed`, or with none (it then
takes one from Python's `random` when it is made, which `sl.utils.set_random_seed` seeds), gives
the same values on every call; one made with a `sl.random.SeedGenerator` gives new values on
each call. A draw from an int seed is a pure function of constants, so `init(shape)` outside a
model is a value, and the same model built again after the same `set_random_seed` starts from
the same weights. Two weights that must differ need two initializers (or a SeedGenerator): as in
Keras, one unseeded instance called twice gives the same values twice.

These classes are `sl.initializers.GlorotUniform`, ... (`keras.initializers`), beside TF1's
lower-case `sl.initializers.glorot_uniform`, ... (`tf.initializers`), which keep TF1's
meaning; and `sl.layers.initializers.*` as before.

>>> layer = sl.layers.Dense(4, kernel_initializer="he_normal")
>>> init = sl.initializers.RandomNormal(stddev=0.1, seed=3)
>>> layer = sl.layers.Dense(4, kernel_initializer=init)
>>> a, b = sl.Session().run([init((2, 3)), init((2, 3))])
>>> a.shape, bool((a == b).all())                      # an int seed: the same values
((2, 3), True)
>>> sl.initializers.serialize(init)["config"]
{'mean': 0.0, 'stddev': 0.1, 'seed': 3}
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras import config as keras_config
from sluice._keras import random as keras_random
from sluice._keras.saving import families, serialization
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.linalg import linalg_ops, matrix_diag_ops
from sluice.framework.ops.math import unary_ops
from sluice.framework.ops.random import random_ops


def _dtype(dtype: Any) -> dtypes.DType:
    return dtypes.as_dtype(dtype if dtype is not None else keras_config.floatx())


def _dims(shape: Any, who: str) -> list[int]:
    dims = shape.as_list() if hasattr(shape, "as_list") else list(shape)
    if any(d is None for d in dims):
        raise ValueError(f"{who} needs a fully known shape, got {dims}.")
    return [int(d) for d in dims]


@export("layers.initializers.Initializer", "initializers.Initializer")
class Initializer:
    """Base class: `__call__(shape, dtype=None)` returns the initial value (a Tensor);
    `get_config` returns the constructor's arguments."""

    def __call__(self, shape: Any, dtype: Any = None) -> Any:
        raise NotImplementedError(
            f"{type(self).__name__}: Initializer subclasses must implement `__call__()`."
        )

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> Initializer:
        return cls(**config)

    def clone(self) -> Initializer:
        """A new initializer of the same config (an unseeded one draws its own seed)."""
        return type(self).from_config(self.get_config())


# -- constants ------------------------------------------------------------------------------
def _filled(dims: list[int], value: Any, dtype: dtypes.DType) -> Tensor:
    return fill_ops.fill(dims, core_ops.constant(np.asarray(value, dtype=dtype)))


@export("layers.initializers.Constant", "initializers.Constant")
class Constant(Initializer):
    """`value` everywhere (a scalar), or `value` broadcast to the shape (an array)."""

    def __init__(self, value: Any = 0.0):
        self.value = value

    def __call__(self, shape: Any, dtype: Any = None) -> Any:
        dims, dtype = _dims(shape, "Constant"), _dtype(dtype)
        value = np.asarray(self.value, dtype=dtype)
        if value.ndim == 0:
            return _filled(dims, value, dtype)
        try:
            return core_ops.constant(np.broadcast_to(value, dims).copy())
        except ValueError:
            raise ValueError(
                f"Constant: a value of shape {value.shape} does not broadcast to {dims}."
            ) from None

    def get_config(self) -> dict:
        value = self.value
        return {"value": value.tolist() if isinstance(value, np.ndarray) else value}

    @classmethod
    def from_config(cls, config: dict) -> Constant:
        value = config.get("value", 0.0)
        if isinstance(value, dict):  # Keras 3 saves arrays as {"class_name": "__numpy__"}
            value = serialization.deserialize_keras_object(value)
        return cls(value)


@export("layers.initializers.Zeros", "initializers.Zeros")
class Zeros(Initializer):
    """0 everywhere."""

    def __call__(self, shape: Any, dtype: Any = None) -> Any:
        return _filled(_dims(shape, "Zeros"), 0, _dtype(dtype))


@export("layers.initializers.Ones", "initializers.Ones")
class Ones(Initializer):
    """1 everywhere."""

    def __call__(self, shape: Any, dtype: Any = None) -> Any:
        return _filled(_dims(shape, "Ones"), 1, _dtype(dtype))


@export("layers.initializers.Identity", "initializers.Identity", "initializers.IdentityInitializer")
class Identity(Initializer):
    """`gain` times the identity matrix (2-D shapes only)."""

    def __init__(self, gain: float = 1.0):
        self.gain = gain

    def __call__(self, shape: Any, dtype: Any = None) -> Any:
        dims = _dims(shape, "Identity")
        if len(dims) != 2:
            raise ValueError(
                "Identity matrix initializer can only be used for 2D matrices. "
                f"Received: shape={dims} of rank {len(dims)}."
            )
        return core_ops.constant((self.gain * np.eye(*dims)).astype(_dtype(dtype)))

    def get_config(self) -> dict:
        return {"gain": self.gain}


# -- random ---------------------------------------------------------------------------------
class RandomInitializer(Initializer):
    """An initializer that draws: `seed` is an int, a `sl.random.SeedGenerator` (or its config)
    or None (then an int from Python's `random`, taken now); see the module docstring."""

    def __init__(self, seed: Any = None):
        self._init_seed = seed
        if seed is None:
            seed = keras_random.make_default_seed()
        elif isinstance(seed, dict):
            seed = keras_random.SeedGenerator.from_config(seed.get("config", seed))
        elif isinstance(seed, bool) or not isinstance(
            seed, (int, np.integer, keras_random.SeedGenerator)
        ):
            raise ValueError(
                "`seed` argument should be an instance of `keras.random.SeedGenerator()` or an "
                f"integer. Received: seed={seed!r}"
            )
        self.seed = seed

    def _stream(self) -> Any:
        return keras_random.seed_stream(self.seed)

    def get_config(self) -> dict:
        seed = self._init_seed
        if isinstance(seed, keras_random.SeedGenerator):
            seed = {"module": "keras.random", "class_name": "SeedGenerator",
                    "config": seed.get_config(), "registered_name": None}  # fmt: skip
        return {"seed": seed}


@export("layers.initializers.RandomNormal", "initializers.RandomNormal")
class RandomNormal(RandomInitializer):
    """Draws from N(mean, stddev**2)."""

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: Any = None):
        self.mean, self.stddev = mean, stddev
        super().__init__(seed)

    def __call__(self, shape: Any, dtype: Any = None) -> Any:
        return random_ops.random_normal(
            _dims(shape, "RandomNormal"), self.mean, self.stddev, _dtype(dtype), self._stream()
        )

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, **super().get_config()}


@export("layers.initializers.TruncatedNormal", "initializers.TruncatedNormal")
class TruncatedNormal(RandomNormal):
    """Draws from N(mean, stddev**2), redrawing values more than two stddevs from the mean."""

    def __call__(self, shape: Any, dtype: Any = None) -> Any:
        return random_ops.truncated_normal(
            _dims(shape, "TruncatedNormal"), self.mean, self.stddev, _dtype(dtype), self._stream()
        )


@export("layers.initializers.RandomUniform", "initializers.RandomUniform")
class RandomUniform(RandomInitializer):
    """Draws uniformly from [minval, maxval)."""

    def __init__(self, minval: float = -0.05, maxval: float = 0.05, seed: Any = None):
        self.minval, self.maxval = minval, maxval
        super().__init__(seed)

    def __call__(self, shape: Any, dtype: Any = None) -> Any:
        return random_ops.random_uniform(
            _dims(shape, "RandomUniform"), self.minval, self.maxval, _dtype(dtype), self._stream()
        )

    def get_config(self) -> dict:
        return {"minval": self.minval, "maxval": self.maxval, **super().get_config()}


def compute_fans(shape: list[int], input_axes: Any = None, output_axes: Any = None) -> tuple:
    """(fan_in, fan_out) of a weight shape, as Keras computes them: the product of
    `input_axes`/`output_axes` when both are given; else a vector's length, a matrix's two
    dimensions, or for a convolution kernel `(..., in, out)` in and out times the receptive
    field.

    >>> compute_fans([3, 3, 8, 16])
    (72, 144)
    """
    if input_axes is not None and output_axes is not None:
        return (
            int(np.prod([shape[a] for a in input_axes])),
            int(np.prod([shape[a] for a in output_axes])),
        )
    if not shape:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    field = int(np.prod(shape[:-2]))
    return shape[-2] * field, shape[-1] * field


@export("layers.initializers.VarianceScaling", "initializers.VarianceScaling")
class VarianceScaling(RandomInitializer):
    """Draws with variance `scale / n`, n = fan_in, fan_out or their mean (`mode`): from a normal
    cut at two stddevs (`stddev = sqrt(scale / n) / .87962566`), an uncut normal
    (`sqrt(scale / n)`) or a uniform on `[-sqrt(3 scale / n), sqrt(3 scale / n)]`.

    Args:
      scale: a positive float.
      mode: "fan_in", "fan_out" or "fan_avg".
      distribution: "truncated_normal" (also "normal"), "untruncated_normal" or "uniform".
      seed: see `RandomInitializer`.
      input_axes, output_axes: the axes whose sizes are the fans (Keras 3.12's arguments).
    """

    def __init__(
        self,
        scale: float = 1.0,
        mode: str = "fan_in",
        distribution: str = "truncated_normal",
        seed: Any = None,
        input_axes: Any = None,
        output_axes: Any = None,
    ):
        if scale <= 0.0:
            raise ValueError(f"Argument `scale` must be positive float. Received: scale={scale}")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(
                f"Invalid `mode` argument: {mode!r}; use 'fan_in', 'fan_out' or 'fan_avg'."
            )
        distribution = distribution.lower()
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in ("truncated_normal", "untruncated_normal", "uniform"):
            raise ValueError(
                f"Invalid `distribution` argument: {distribution!r}; use 'truncated_normal', "
                "'untruncated_normal' or 'uniform'."
            )
        self.scale, self.mode, self.distribution = scale, mode, distribution
        self.input_axes, self.output_axes = input_axes, output_axes
        super().__init__(seed)

    def __call__(self, shape: Any, dtype: Any = None) -> Any:
        dims, dtype = _dims(shape, type(self).__name__), _dtype(dtype)
        fan_in, fan_out = compute_fans(dims, self.input_axes, self.output_axes)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution == "truncated_normal":
            stddev = math.sqrt(scale) / 0.87962566103423978  # the std of N(0, 1) cut at +-2
            return random_ops.truncated_normal(dims, 0.0, stddev, dtype, self._stream())
        if self.distribution == "untruncated_normal":
            return random_ops.random_normal(dims, 0.0, math.sqrt(scale), dtype, self._stream())
        limit = math.sqrt(3.0 * scale)
        return random_ops.random_uniform(dims, -limit, limit, dtype, self._stream())

    def get_config(self) -> dict:
        config = {"scale": self.scale, "mode": self.mode, "distribution": self.distribution}
        return {**config, **super().get_config(), **self._axes_config()}

    def _axes_config(self) -> dict:
        """`input_axes`/`output_axes` when given (left out otherwise, so that Keras versions
        before 3.12 load the file)."""
        axes = {"input_axes": self.input_axes, "output_axes": self.output_axes}
        return {k: v for k, v in axes.items() if v is not None}


def _variance_scaling_preset(class_name: str, scale: float, mode: str, distribution: str):
    class Preset(VarianceScaling):
        def __init__(self, seed: Any = None, input_axes: Any = None, output_axes: Any = None):
            super().__init__(scale, mode, distribution, seed, input_axes, output_axes)

        def get_config(self) -> dict:
            return {**RandomInitializer.get_config(self), **self._axes_config()}

    Preset.__name__ = Preset.__qualname__ = class_name
    Preset.__doc__ = (
        f"VarianceScaling(scale={scale}, mode={mode!r}, distribution={distribution!r})."
    )
    return Preset


GlorotUniform = _variance_scaling_preset("GlorotUniform", 1.0, "fan_avg", "uniform")


export("layers.initializers.GlorotUniform", "initializers.GlorotUniform")(GlorotUniform)


GlorotNormal = _variance_scaling_preset("GlorotNormal", 1.0, "fan_avg", "truncated_normal")


export("layers.initializers.GlorotNormal", "initializers.GlorotNormal")(GlorotNormal)


HeUniform = _variance_scaling_preset("HeUniform", 2.0, "fan_in", "uniform")


export("layers.initializers.HeUniform", "initializers.HeUniform")(HeUniform)


HeNormal = _variance_scaling_preset("HeNormal", 2.0, "fan_in", "truncated_normal")


export("layers.initializers.HeNormal", "initializers.HeNormal")(HeNormal)


LecunUniform = _variance_scaling_preset("LecunUniform", 1.0, "fan_in", "uniform")


export("layers.initializers.LecunUniform", "initializers.LecunUniform")(LecunUniform)


LecunNormal = _variance_scaling_preset("LecunNormal", 1.0, "fan_in", "truncated_normal")


export("layers.initializers.LecunNormal", "initializers.LecunNormal")(LecunNormal)


@export(
    "layers.initializers.Orthogonal",
    "initializers.Orthogonal",
    "initializers.OrthogonalInitializer",
)
class Orthogonal(RandomInitializer):
    """A (semi-)orthogonal matrix times `gain` (Keras's algorithm): Q of the QR decomposition of
    a normal draw of shape `(max(rows, cols), min(rows, cols))`, its columns' signs set by R's
    diagonal, transposed when rows < cols, where `rows` is the product of all dimensions but the
    last and `cols` the last; reshaped to `shape`."""

    def __init__(self, gain: float = 1.0, seed: Any = None):
        self.gain = gain
        super().__init__(seed)

    def __call__(self, shape: Any, dtype: Any = None) -> Any:
        dims, dtype = _dims(shape, "Orthogonal"), _dtype(dtype)
        if len(dims) < 2:
            raise ValueError(
                "The tensor to initialize must be at least two-dimensional. Received: "
                f"shape={dims} of rank {len(dims)}."
            )
        rows, cols = int(np.prod(dims[:-1])), dims[-1]
        flat = [max(rows, cols), min(rows, cols)]
        a = random_ops.random_normal(flat, dtype=dtype, seed=self._stream())
        q, r = linalg_ops.qr(a)
        q = q * unary_ops.sign(matrix_diag_ops.diag_part(r))
        if rows < cols:
            q = array_ops.transpose(q)
        return core_ops.constant(self.gain, dtype) * array_ops.reshape(q, dims)

    def get_config(self) -> dict:
        return {"gain": self.gain, **super().get_config()}


# -- get, serialize, deserialize ------------------------------------------------------------
FAMILY = families.Family(
    "initializer",
    "keras.initializers",
    (
        Initializer, Constant, Zeros, Ones, Identity, RandomNormal, TruncatedNormal,
        RandomUniform, VarianceScaling, GlorotUniform, GlorotNormal, HeUniform, HeNormal,
        LecunUniform, LecunNormal, Orthogonal,
    ),
    # Keras's aliases
    aliases={
        "zero": Zeros, "one": Ones, "normal": RandomNormal, "uniform": RandomUniform,
        "OrthogonalInitializer": Orthogonal, "IdentityInitializer": Identity,
    },
    unknown_name="Could not locate class {!r}",
)  # fmt: skip


@export("layers.initializers.get", "initializers.get")
def get(identifier: Any) -> Any:
    """An initializer from (Keras's `keras.initializers.get`):

      * a name: "glorot_uniform", "GlorotUniform", "zeros", ..., or one registered with
        `sl.saving.register_keras_serializable`: a new instance;
      * a config dict (`serialize`'s, or the older {"class_name", "config"}): `deserialize`;
      * a class: a new instance; an Initializer or a callable `(shape, dtype) -> Tensor`: itself;
      * an array: that value (the shape asked must be the array's);
      * None: None.

    Raises:
      ValueError: an unknown name, or anything else.
    """
    if isinstance(identifier, (np.ndarray, np.generic, Tensor)):
        return _from_value(identifier)
    return FAMILY.get(identifier)


def _from_value(value: Any) -> Any:
    value = value if isinstance(value, Tensor) else np.asarray(value)

    def initialize(shape: Any, dtype: Any = None) -> Any:
        dims = _dims(shape, "an array initializer")
        if list(value.shape) != dims:
            raise ValueError(
                f"Expected `shape` to be {tuple(value.shape)} for direct tensor as initializer. "
                f"Received shape={tuple(dims)}"
            )
        return fill_ops.cast(core_ops.convert_to_tensor(value), _dtype(dtype))

    return initialize


@export("layers.initializers.serialize", "initializers.serialize")
def serialize(initializer: Any) -> Any:
    """The config of an initializer as Keras 3 saves it: {"module": "keras.initializers",
    "class_name", "config", "registered_name"}; a custom (registered) class or a function as
    `sl.saving.serialize_keras_object` writes it."""
    return FAMILY.serialize(initializer)


@export("initializers.deserialize")
def deserialize(config: Any, custom_objects: dict | None = None) -> Any:
    """The initializer a `serialize` config describes: a class of `custom_objects` or of the
    registry first, then Keras's built-ins by class name.

    Raises:
      ValueError: a class name nobody knows.
    """
    return FAMILY.deserialize(config, custom_objects)


def clone(initializer: Any) -> Any:
    """A fresh copy of an Initializer (its own seed when unseeded), for a layer that initializes
    several weights from one argument; any other callable as it is."""
    return initializer.clone() if isinstance(initializer, Initializer) else initializer
