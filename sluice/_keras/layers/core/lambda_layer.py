"""`Lambda`: a layer around a Python function (saved as Keras saves it)."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice._keras.layers.tracking import shape_tuple
from sluice._keras.saving import serialization
from sluice._tf1.cells import nest
from sluice.framework.ir.graph import Graph
from sluice.framework.ops.core import core_ops


@export("layers.Lambda")
class Lambda(Layer):
    """Wraps graph ops as a layer: `function(inputs, **arguments)`, so that a functional model can
    replay them.

    Saving (Keras 3's format): a named function is saved by name, and must be registered with
    `sl.saving.register_keras_serializable()` or passed in `custom_objects` to load; a Python
    `lambda` is saved as bytecode, which loading refuses unless `safe_mode=False` is given (or
    `sl.config.enable_unsafe_deserialization()` was called), since loading it runs code from
    the file.

    >>> x = sl.Input((3,))
    >>> y = Lambda(lambda t: t * 2.0)(x)
    >>> sl.Model(x, y).predict(np.ones((1, 3)), verbose=0)
    array([[2., 2., 2.]], dtype=float32)
    """

    def __init__(
        self,
        function: Callable,
        output_shape: Any = None,
        mask: Any = None,
        arguments: dict | None = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        if not callable(function):
            raise TypeError(f"Lambda: `function` must be callable, got {function!r}.")
        self.function = function
        self.output_shape = output_shape
        self.mask = mask
        self.arguments = dict(arguments or {})
        self.supports_masking = mask is not None

    def call(self, inputs: Any) -> Any:
        return self.function(inputs, **self.arguments)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if callable(self.mask):
            return self.mask(inputs, mask)
        return self.mask

    def compute_output_shape(self, input_shape: Any) -> Any:
        """`output_shape` (a function of the input shape, or the shape without the batch), or
        the shape of `function`'s result on placeholders in a scratch graph."""
        if callable(self.output_shape):
            return self.output_shape(input_shape)
        nested = (
            isinstance(input_shape, list)
            and input_shape
            and isinstance(input_shape[0], (list, tuple))
        )
        if self.output_shape is not None:
            batch = input_shape[0][0] if nested else input_shape[0]
            return (batch,) + tuple(self.output_shape)
        shapes = [list(s) for s in input_shape] if nested else [list(input_shape)]
        with Graph().as_default():
            inputs = [core_ops.placeholder(self._dtype, s) for s in shapes]
            outputs = self.function(inputs if nested else inputs[0], **self.arguments)
        return nest.map_structure(shape_tuple, outputs)

    def get_config(self) -> dict:
        config = {**super().get_config(), "function": _function_config(self.function)}
        if self.output_shape is not None:
            config["output_shape"] = (
                _function_config(self.output_shape)
                if callable(self.output_shape) else list(self.output_shape)
            )  # fmt: skip
        if callable(self.mask):
            config["mask"] = _function_config(self.mask)
        elif self.mask is not None:
            raise ValueError(f"Lambda {self.name!r}: only a mask function can be saved.")
        config["arguments"] = serialization.serialize_keras_object(self.arguments)
        return config

    @classmethod
    def from_config(cls, config: dict) -> Lambda:
        """Rebuilds the layer; a Python lambda (bytecode) only outside safe mode."""
        config = dict(config)
        for key in ("function", "output_shape", "mask"):
            if isinstance(config.get(key), dict):
                config[key] = _function_from_config(config[key], key)
        config["arguments"] = serialization.deserialize_keras_object(config.get("arguments"))
        return cls(**config)


def _function_config(fn: Callable) -> Any:
    """A Lambda's function as Keras saves it: its name (a registered or built-in function), or
    {"class_name": "__lambda__", "config": {"code", "defaults", "closure"}}."""
    if isinstance(fn, types.FunctionType) and fn.__name__ == "<lambda>":
        return {"class_name": "__lambda__", "config": serialization.dump_function(fn)}
    return serialization.serialize_keras_object(fn)


def _function_from_config(config: dict, argument: str) -> Callable:
    if config.get("class_name") == "__lambda__":
        return serialization.load_function(
            config.get("config"),
            refusal=(
                f"The `{argument}` of this `Lambda` layer is a Python lambda. Deserializing it "
                "is unsafe. If you trust the source of the config artifact, you can override "
                "this error by passing `safe_mode=False` to the loading function (load_model, "
                "from_config), or calling `sl.config.enable_unsafe_deserialization()`."
            ),
        )
    fn = serialization.deserialize_keras_object(config)
    if not callable(fn):
        raise ValueError(f"Lambda: the `{argument}` in the config is not a function: {fn!r}.")
    return fn
