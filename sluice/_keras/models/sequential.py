"""`Sequential`: a linear stack of layers, a `Model` whose `call` calls each layer on the
previous one's output.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sluice._export import export
from sluice._keras.layers import base, tracking
from sluice._keras.layers.core.input_layer import InputLayer, input_layer_of
from sluice._keras.models import input_rank
from sluice._keras.models.model import Model
from sluice._keras.saving import serialization
from sluice.framework.ir.graph import Tensor


@export("Sequential", "models.Sequential")
class Sequential(Model):
    """A linear stack of layers, each called on the previous one's output.

    >>> layers = sl.layers
    >>> model = sl.Sequential([sl.Input((28, 28, 1)), layers.Conv2D(8, 3), layers.Flatten(),
    ...                        layers.Dense(10)])
    >>> model.output_shape
    (None, 10)
    >>> model = sl.Sequential([layers.Dense(8, input_shape=(4,)), layers.Dense(1)])
    >>> model = sl.Sequential([layers.Dense(8), layers.Dense(1)])  # built by the first fit/predict
    >>> model.built, model.predict(np.ones((2, 4)), verbose=0).shape, model.built
    (False, (2, 1), True)
    """

    _named_outputs = True

    def __init__(
        self, layers: Iterable[Any] | None = None, trainable: bool = True, name: str | None = None
    ):
        super().__init__(trainable=trainable, name=name)
        self._input_spec: tuple | None = None  # (batch_shape, dtype, name) of the input
        for layer in layers or []:
            self.add(layer)

    def add(self, layer: Any) -> None:
        """Appends a layer (or sets the input, for an Input tensor or InputLayer)."""
        if isinstance(layer, Tensor):
            origin = input_layer_of(layer)
            if origin is None:
                raise TypeError(
                    "Sequential takes layers (and sl.Input(...) first); got a Tensor that is "
                    "not an input. Use a functional Model for graphs of tensors."
                )
            layer = origin
        if isinstance(layer, InputLayer):
            if self._layers or self._input_spec is not None:
                raise ValueError(
                    "An Input or InputLayer may only be the first layer of a Sequential."
                )
            self._input_spec = (layer.batch_shape, layer.dtype)
            return
        if not isinstance(layer, base.Layer):
            raise TypeError(f"Sequential.add takes layers, got {layer!r}.")
        if not layer.auto_named and any(
            layer.name == other.name for other in self._layers if not other.auto_named
        ):
            raise ValueError(
                f"All layers added to a Sequential model should have unique names. Name "
                f"{layer.name!r} is already the name of a layer in model {self.name!r}."
            )
        self._layers.append(layer)
        if (
            len(self._layers) == 1
            and self._input_spec is None
            and layer.declared_input_shape is not None
        ):
            self._input_spec = (layer.declared_input_shape, "float32")
        if self._input_struct is not None:  # already built: extend the inference graph
            with self._graph.as_default(), tracking.forward_pass(False):
                self._inference_outputs = layer(self._inference_outputs)
            self._reset_functions()
        elif self._input_spec is not None:
            self.build(*self._input_spec)

    def pop(self) -> base.Layer:
        """Removes the last layer (the inference graph is rebuilt if the model is built)."""
        if not self._layers:
            raise TypeError("There are no layers in the model.")
        layer = self._layers.pop()
        if self._input_struct is not None:
            self._inference_outputs = self._forward(self._input_struct, training=False)
            self._reset_functions()
        return layer

    def build(self, input_shape: Any = None, dtype: Any = None) -> None:
        if input_shape is None and self._input_spec is not None:
            input_shape, dtype = self._input_spec
        super().build(input_shape, dtype)

    def call(self, inputs: Any, training: bool | None = None, mask: Any = None) -> Any:
        x = input_rank.adjust_tensors(self, inputs)  # Keras's trailing axis of size 1
        for layer in self._layers:
            x = layer(x)
        return x

    @property
    def layers(self) -> list[base.Layer]:
        return list(self._layers)

    def get_config(self) -> dict:
        config = {"name": self.name, "trainable": self.trainable, "layers": []}
        if self._input_spec is not None:
            config["layers"].append(
                {
                    "class_name": "InputLayer",
                    "config": {"batch_shape": self._input_spec[0], "dtype": self._input_spec[1]},
                }
            )
        config["layers"] += [serialization.serialize(layer) for layer in self._layers]
        return config

    @classmethod
    def from_config(cls, config: dict) -> Sequential:
        entries = config.get("layers", [])
        if serialization.rebuilding_a_model_part():
            # a part of another model (Keras writes an InputLayer for every built Sequential):
            # left unbuilt, so that the model calling it builds it in its own graph
            entries = [c for c in entries if not _is_input_layer(c)]
        with serialization.rebuilding_model_parts():
            layers = [serialization.deserialize(_unnamed_input(c)) for c in entries]
        return cls(layers, trainable=config.get("trainable", True), name=config.get("name"))


def _is_input_layer(layer_config: Any) -> bool:
    return isinstance(layer_config, dict) and layer_config.get("class_name") == "InputLayer"


def _unnamed_input(layer_config: Any) -> Any:
    """An InputLayer config without its name: a Sequential reads only the input's shape and
    dtype, and the name (Keras writes "input_layer", ...) may be taken in the default graph,
    where an InputLayer is made, by a model built before this one was loaded."""
    if not _is_input_layer(layer_config):
        return layer_config
    inner = layer_config.get("config")
    if isinstance(inner, dict):
        inner = {k: v for k, v in inner.items() if k != "name"}
    return {**layer_config, "config": inner}
