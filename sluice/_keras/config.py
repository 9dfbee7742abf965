"""`sl.config`: Keras's global settings: the default float dtype, the fuzz factor, the image
layout, the backend name, unsafe deserialization, traceback filtering, interactive logging, the
dtype policy and the debugging caps on epochs and steps (`keras.config`).

New layers, weights and `sl.Input`s take `floatx()` when no dtype is given; losses read
`epsilon()` when they build their graph (a model compiled before `set_epsilon` keeps the value
it was built with, as Keras's traced functions do).

>>> sl.config.floatx(), sl.config.epsilon(), sl.config.image_data_format(), sl.config.backend()
('float32', 1e-07, 'channels_last', 'jax')
>>> sl.config.set_floatx("float64")
>>> sl.layers.Dense(2).dtype
'float64'
>>> sl.config.set_floatx("float32")
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from collections.abc import Iterator
from typing import Any

from sluice._export import export
from sluice.framework.ir import dtypes

__all__ = [
    "DTypePolicy",
    "backend",
    "capped_epochs",
    "capped_steps",
    "disable_flash_attention",
    "disable_interactive_logging",
    "disable_traceback_filtering",
    "dtype_policy",
    "enable_flash_attention",
    "enable_interactive_logging",
    "enable_traceback_filtering",
    "enable_unsafe_deserialization",
    "epsilon",
    "floatx",
    "get_dtype_policy",
    "image_data_format",
    "is_flash_attention_enabled",
    "is_interactive_logging_enabled",
    "is_nnx_enabled",
    "is_traceback_filtering_enabled",
    "keras_home",
    "max_epochs",
    "max_steps_per_epoch",
    "set_backend",
    "set_dtype_policy",
    "set_epsilon",
    "set_floatx",
    "set_image_data_format",
    "set_max_epochs",
    "set_max_steps_per_epoch",
    "unsafe_deserialization_enabled",
]

_FLOAT_DTYPES = ("bfloat16", "float16", "float32", "float64")
_IMAGE_DATA_FORMATS = ("channels_last", "channels_first")

_settings = {
    "floatx": "float32",
    "epsilon": 1e-7,
    "image_data_format": "channels_last",
    "unsafe_deserialization": False,
    "traceback_filtering": True,
    "interactive_logging": True,
    "dtype_policy": None,  # None: DTypePolicy(floatx())
    # Keras reads these two from the environment once, when it is imported
    "max_epochs": None,
    "max_steps_per_epoch": None,
    "flash_attention": None,  # Keras's hint: None (allowed, the default) or False
}


@export("config.floatx")
def floatx() -> str:
    """The default float dtype of new layers, weights and inputs, by name ("float32")."""
    return _settings["floatx"]


@export("config.set_floatx")
def set_floatx(value: str) -> None:
    """Sets the default float dtype: "bfloat16", "float16", "float32" or "float64".

    Raises:
      ValueError: any other value.
    """
    name = str(getattr(value, "name", value))
    if name not in _FLOAT_DTYPES:
        raise ValueError(
            f"set_floatx: unknown float type {value!r}; expected one of {', '.join(_FLOAT_DTYPES)}."
        )
    _settings["floatx"] = name


@export("config.epsilon")
def epsilon() -> float:
    """The fuzz factor that keeps logs and divisions finite (1e-7)."""
    return _settings["epsilon"]


@export("config.set_epsilon")
def set_epsilon(value: float) -> None:
    """Sets the fuzz factor read by losses and metrics when they build their graph.

    Raises:
      ValueError: a value that is not a positive finite number.
    """
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if not 0.0 < number < float("inf"):
        raise ValueError(f"set_epsilon: expected a positive finite number, got {value!r}.")
    _settings["epsilon"] = number


@export("config.image_data_format")
def image_data_format() -> str:
    """The default layout of image tensors: "channels_last" (batch, height, width, channels),
    the default, or "channels_first" (batch, channels, height, width)."""
    return _settings["image_data_format"]


@export("config.set_image_data_format")
def set_image_data_format(data_format: str) -> None:
    """Sets the image layout that layers created from now on take when their `data_format` is
    None (a layer keeps the one it was created with, and saves it in its config).

    Raises:
      ValueError: neither "channels_last" nor "channels_first".
    """
    if data_format not in _IMAGE_DATA_FORMATS:
        raise ValueError(
            f"set_image_data_format: expected 'channels_last' or "
            f"'channels_first', got {data_format!r}."
        )
    _settings["image_data_format"] = data_format


@export("config.backend")
def backend() -> str:
    """The name of the backend that runs the kernels: always "jax"."""
    return "jax"


@export("config.enable_unsafe_deserialization")
def enable_unsafe_deserialization() -> None:
    """Allows loading Python bytecode (lambdas) from model configs from now on, as Keras's
    `keras.config.enable_unsafe_deserialization`. Only for files you trust."""
    _settings["unsafe_deserialization"] = True


@export("config.unsafe_deserialization_enabled")
def unsafe_deserialization_enabled() -> bool:
    """Whether `enable_unsafe_deserialization()` was called."""
    return _settings["unsafe_deserialization"]


class _SafeModeScopes(threading.local):
    def __init__(self) -> None:
        self.stack: list[bool] = []


_SAFE_MODE = _SafeModeScopes()


def in_safe_mode() -> bool | None:
    """The safe mode of the innermost `safe_mode_scope`; False after
    `enable_unsafe_deserialization()`; else None (the caller's default applies). Here, below
    every package that deserializes, so that TF1's cells read it as Keras's layers do."""
    if _SAFE_MODE.stack:
        return _SAFE_MODE.stack[-1]
    return False if unsafe_deserialization_enabled() else None


@contextlib.contextmanager
def safe_mode_scope(safe_mode: bool) -> Iterator[None]:
    """Deserializations inside refuse bytecode unless `safe_mode` is False (or unsafe
    deserialization was enabled globally)."""
    _SAFE_MODE.stack.append(bool(safe_mode) and not unsafe_deserialization_enabled())
    try:
        yield
    finally:
        _SAFE_MODE.stack.pop()


def keras_home() -> str:
    """Keras's folder for caches and settings: `$KERAS_HOME` when set, else `~/.keras`, or
    `/tmp/.keras` when the home folder cannot be written (Keras's rule)."""
    if "KERAS_HOME" in os.environ:
        return os.environ["KERAS_HOME"]
    base = os.path.expanduser("~")
    if not os.access(base, os.W_OK):
        base = "/tmp"
    return os.path.join(base, ".keras")


# -- traceback filtering --------------------------------------------------------------------------
@export("config.enable_traceback_filtering")
def enable_traceback_filtering() -> None:
    """Turns traceback filtering on (the default): an error raised by `fit`, `evaluate`,
    `predict` or a layer call shows the caller's frames, without sluice's own."""
    _settings["traceback_filtering"] = True


@export("config.disable_traceback_filtering")
def disable_traceback_filtering() -> None:
    """Turns traceback filtering off: errors keep every frame, sluice's included (to debug
    sluice itself)."""
    _settings["traceback_filtering"] = False


@export("config.is_traceback_filtering_enabled")
def is_traceback_filtering_enabled() -> bool:
    """Whether errors from Keras entry points hide sluice's frames (True unless disabled).

    >>> sl.config.is_traceback_filtering_enabled()
    True
    """
    return _settings["traceback_filtering"]


# -- interactive logging --------------------------------------------------------------------------
@export("config.enable_interactive_logging", "utils.enable_interactive_logging")
def enable_interactive_logging() -> None:
    """Progress bars and messages (fit's, `get_file`'s) go to stdout (the default)."""
    _settings["interactive_logging"] = True


@export("config.disable_interactive_logging", "utils.disable_interactive_logging")
def disable_interactive_logging() -> None:
    """Progress bars and messages go to the "sluice" logger at INFO level instead of stdout
    (Keras sends them to absl's logging): one line per epoch, no bar, shown only once the
    logger's level lets INFO through (`sl.logging.set_verbosity(sl.logging.INFO)`)."""
    _settings["interactive_logging"] = False


@export("config.is_interactive_logging_enabled", "utils.is_interactive_logging_enabled")
def is_interactive_logging_enabled() -> bool:
    """Whether progress output goes to stdout (True) or to the "sluice" logger (False)."""
    return _settings["interactive_logging"]


# -- dtype policies -------------------------------------------------------------------------------
_MIXED_POLICIES = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}  # -> compute dtype
_QUANTIZATION_MODES = ("int8", "float8", "int4", "ternary", "gptq", "awq")


@export(
    "DTypePolicy",
    "dtype_policies.DTypePolicy",
    "mixed_precision.DTypePolicy",
    "mixed_precision.Policy",
)
class DTypePolicy:
    """The dtypes a layer computes in and keeps its weights in (Keras 3's).

    A dtype name ("float32", "float64", "int32", ...) is both; "mixed_float16" and
    "mixed_bfloat16" compute in float16 or bfloat16 and keep float32 weights: a layer of such a
    policy casts its floating inputs to the compute dtype and reads its floating weights cast to
    it, so its outputs are in the compute dtype while the optimizer updates float32 weights.
    Quantized policies ("int8_from_float32", ...) are not implemented.

    Args:
      name: the policy's name (default: the global policy's, `sl.config.dtype_policy()`).

    Raises:
      TypeError: a name that is not a string.
      ValueError: a name that is no dtype and no mixed policy.
      NotImplementedError: a quantized policy.

    >>> policy = sl.DTypePolicy("mixed_float16")
    >>> policy.name, policy.compute_dtype, policy.variable_dtype
    ('mixed_float16', 'float16', 'float32')
    >>> sl.layers.Dense(4, dtype="mixed_bfloat16").compute_dtype
    'bfloat16'
    """

    def __init__(self, name: str | None = None):
        name = dtype_policy().name if name is None else name
        if not isinstance(name, str):
            raise TypeError(
                "'name' must be a string, such as 'mixed_float16'. "
                f"Received: name={name!r} (of type {type(name)})"
            )
        if name.startswith(_QUANTIZATION_MODES):
            raise NotImplementedError(
                f"DTypePolicy({name!r}): quantized policies are not implemented in sluice."
            )
        if name in _MIXED_POLICIES:
            self._compute_dtype, self._variable_dtype = _MIXED_POLICIES[name], "float32"
        else:
            try:
                dtype = dtypes.as_dtype(name).name
            except (TypeError, ValueError):
                raise ValueError(
                    f"Cannot convert '{name}' to a mixed precision DTypePolicy. Valid policies "
                    "include 'mixed_float16', 'mixed_bfloat16', and the name of any float dtype "
                    "such as 'float32'."
                ) from None
            self._compute_dtype = self._variable_dtype = dtype
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def compute_dtype(self) -> str:
        """The dtype of the layer's computations, inputs and outputs."""
        return self._compute_dtype

    @property
    def variable_dtype(self) -> str:
        """The dtype of the layer's weights (read cast to `compute_dtype` in its call)."""
        return self._variable_dtype

    @property
    def quantization_mode(self) -> None:
        return None

    def get_config(self) -> dict:
        return {"name": self._name}

    @classmethod
    def from_config(cls, config: dict) -> DTypePolicy:
        return cls(**config)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.name == self.name

    def __hash__(self) -> int:
        return hash((type(self), self._name))

    def __repr__(self) -> str:
        return f'<DTypePolicy "{self._name}">'


@export("dtype_policies.get")
def get_dtype_policy(identifier: Any) -> DTypePolicy:
    """A `DTypePolicy` from a layer's `dtype=` (Keras 3's `dtype_policies.get`): None (the
    global policy), a policy, its name, its config dict ({"class_name": "DTypePolicy",
    "config": {"name": ...}}) or a dtype.

    Raises:
      ValueError: anything else.
    """
    if identifier is None:
        return dtype_policy()
    if isinstance(identifier, DTypePolicy):
        return identifier
    if isinstance(identifier, dict):
        name = (identifier.get("config") or {}).get("name")
        if identifier.get("class_name") != "DTypePolicy" or not isinstance(name, str):
            raise ValueError(f"Cannot interpret {identifier!r} as a DTypePolicy config.")
        return DTypePolicy(name)
    if isinstance(identifier, str):
        return DTypePolicy(identifier)
    try:
        return DTypePolicy(dtypes.as_dtype(identifier).name)
    except (TypeError, ValueError):
        raise ValueError(f"Cannot interpret `dtype` argument. Received: {identifier!r}") from None


@export(
    "config.set_dtype_policy",
    "mixed_precision.set_dtype_policy",
    "mixed_precision.set_global_policy",
)
def set_dtype_policy(policy: Any) -> None:
    """Sets the global dtype policy, which layers made without `dtype=` take: a `DTypePolicy`
    or its name ("mixed_float16" for mixed precision).

    >>> sl.config.set_dtype_policy("mixed_float16")
    >>> sl.layers.Dense(10).dtype_policy
    <DTypePolicy "mixed_float16">
    >>> sl.config.set_dtype_policy("float32")

    Raises:
      ValueError: `policy` is neither a string nor a DTypePolicy.
      NotImplementedError: a quantized policy.
    """
    if isinstance(policy, str):
        policy = DTypePolicy(policy)
    elif not isinstance(policy, DTypePolicy):
        raise ValueError(
            "Invalid `policy` argument. Expected the string name of a policy (such as "
            f"'mixed_float16') or a `DTypePolicy` instance. Received: policy={policy!r} "
            f"(of type {type(policy)})"
        )
    _settings["dtype_policy"] = policy


@export(
    "config.dtype_policy",
    "mixed_precision.dtype_policy",
    "mixed_precision.global_policy",
)
def dtype_policy() -> DTypePolicy:
    """The global dtype policy: the one set, else `DTypePolicy(floatx())`.

    >>> sl.config.dtype_policy()
    <DTypePolicy "float32">
    """
    policy = _settings["dtype_policy"]
    return DTypePolicy(floatx()) if policy is None else policy


# -- caps on training, for debugging runs ---------------------------------------------------------
def _cap_from_environment(variable: str) -> int | None:
    value = os.environ.get(variable)
    if not value:
        return None
    try:
        return _checked_cap(int(value), variable)
    except ValueError as e:
        raise ValueError(f"${variable}={value!r}: expected a positive integer.") from e


def _checked_cap(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what}: expected a non-negative integer or None, got {value!r}.")
    return value or None  # 0: no cap, as Keras's `if max_epochs and ...`


_settings["max_epochs"] = _cap_from_environment("KERAS_MAX_EPOCHS")
_settings["max_steps_per_epoch"] = _cap_from_environment("KERAS_MAX_STEPS_PER_EPOCH")


@export("config.set_max_epochs")
def set_max_epochs(max_epochs: int | None) -> None:
    """Caps the number of epochs of every `fit` (None: no cap), to try a script quickly; also
    set by the environment variable `KERAS_MAX_EPOCHS`."""
    _settings["max_epochs"] = _checked_cap(max_epochs, "set_max_epochs")


@export("config.max_epochs")
def max_epochs() -> int | None:
    """The cap on `fit`'s epochs set by `set_max_epochs` or `KERAS_MAX_EPOCHS` (None: none)."""
    return _settings["max_epochs"]


@export("config.set_max_steps_per_epoch")
def set_max_steps_per_epoch(max_steps_per_epoch: int | None) -> None:
    """Caps the steps of each epoch of `fit`, and of each `evaluate` and `predict` (None: no
    cap), to try a script quickly; also set by `KERAS_MAX_STEPS_PER_EPOCH`."""
    _settings["max_steps_per_epoch"] = _checked_cap(max_steps_per_epoch, "set_max_steps_per_epoch")


@export("config.max_steps_per_epoch")
def max_steps_per_epoch() -> int | None:
    """The cap on steps per epoch set by `set_max_steps_per_epoch` or
    `KERAS_MAX_STEPS_PER_EPOCH` (None: none)."""
    return _settings["max_steps_per_epoch"]


def capped_epochs(epochs: int) -> int:
    """`epochs`, or `max_epochs()` when that is smaller (with Keras's warning)."""
    cap = max_epochs()
    if cap is not None and cap < epochs:
        warnings.warn(f"Limiting epochs to {cap}", stacklevel=3)
        return cap
    return epochs


def capped_steps(steps: int | None) -> int | None:
    """`steps` (per epoch; None: one pass over the data), or `max_steps_per_epoch()` when
    that is smaller (with Keras's warning)."""
    cap = max_steps_per_epoch()
    if cap is not None and (steps is None or cap < steps):
        warnings.warn(f"Limiting steps_per_epoch to {cap}", stacklevel=3)
        return cap
    return steps


# -- hints and backends -------------------------------------------------------------------------
@export("config.enable_flash_attention")
def enable_flash_attention() -> None:
    """Lets attention layers use flash attention where they can (Keras: a hint, the default;
    "enabling flash attention does not guarantee it will always be used"). sluice's
    `MultiHeadAttention` computes attention with its plain ops either way."""
    _settings["flash_attention"] = None


@export("config.disable_flash_attention")
def disable_flash_attention() -> None:
    """Asks attention layers not to use flash attention (Keras's hint; sluice's plain
    attention is unaffected)."""
    _settings["flash_attention"] = False


@export("config.is_flash_attention_enabled")
def is_flash_attention_enabled() -> bool | None:
    """False once `disable_flash_attention()` was called; otherwise None, as Keras returns
    (flash attention allowed, used where supported)."""
    return _settings.get("flash_attention")


@export("config.is_nnx_enabled")
def is_nnx_enabled() -> bool:
    """Whether Flax NNX integration is on: never in sluice (False), as Keras's default."""
    return False


@export("config.set_backend")
def set_backend(backend: str) -> None:
    """Keras's backend switch: sluice runs on JAX only, so "jax" is accepted (nothing to do)
    and any other backend is refused.

    Raises:
      ValueError: a backend other than "jax".
    """
    if backend != "jax":
        raise ValueError(
            f"set_backend({backend!r}): sluice's kernels are JAX functions; its only backend is "
            "'jax'."
        )
