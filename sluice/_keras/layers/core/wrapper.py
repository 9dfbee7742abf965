"""`Wrapper`: the base of layers that hold another layer and augment it (Keras 3's)."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice._keras.saving import serialization


def _rebuilt(layer: Any, dtype: Any, custom_objects: dict | None = None) -> Any:
    """`layer`, or the layer its serialized dict describes (with `dtype` when one is given, so
    that a wrapper rebuilt in another dtype computes in it throughout)."""
    if not isinstance(layer, dict):
        return layer
    if dtype is not None:
        layer = {**layer, "config": {**layer.get("config", {}), "dtype": dtype}}
    return serialization.deserialize(layer, custom_objects)


@export("layers.Wrapper")
class Wrapper(Layer):
    """A layer around `layer`: it builds `layer` as its child (the inner weights are
    `<wrapper>/<layer>/<weight>`) and saves it in its config under "layer". Subclasses write
    `call` (and usually `compute_output_shape`).

    Args:
      layer: the Layer to wrap (or its serialized {"class_name", "config"} dict, rebuilt with
        the wrapper's `dtype` when one is given).
    """

    def __init__(self, layer: Any, **kwargs: Any):
        layer = _rebuilt(layer, kwargs.get("dtype"))
        if not isinstance(layer, Layer):
            raise ValueError(
                f"Layer {layer} supplied to Wrapper isn't a supported layer type. Please ensure "
                "wrapped layer is a valid Keras layer."
            )
        super().__init__(**kwargs)
        self.layer = layer

    def build(self, input_shape: Any = None) -> None:
        self._build_sublayer(self.layer, input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "layer": serialization.serialize(self.layer)}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> Wrapper:
        config = dict(config)
        layer = _rebuilt(config.pop("layer"), config.get("dtype"), custom_objects)
        return cls(layer, **config)
