"""`sl.config`: Keras's global settings: the default float dtype, the fuzz factor, the image
layout, the backend name and unsafe deserialization.

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

from sluice._export import export

__all__ = [
    "backend",
    "enable_unsafe_deserialization",
    "epsilon",
    "floatx",
    "image_data_format",
    "set_epsilon",
    "set_floatx",
    "set_image_data_format",
    "unsafe_deserialization_enabled",
]

_FLOAT_DTYPES = ("bfloat16", "float16", "float32", "float64")
_IMAGE_DATA_FORMATS = ("channels_last", "channels_first")

_settings = {
    "floatx": "float32",
    "epsilon": 1e-7,
    "image_data_format": "channels_last",
    "unsafe_deserialization": False,
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
