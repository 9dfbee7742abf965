"""`TimeDistributed`: one layer applied to every time step of its inputs."""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice._keras.saving import serialization
from sluice.framework.ops.array import array_ops, fill_ops, join_ops
from sluice.framework.ops.math import reduction_ops


def _merge_batch_and_time(x: Any) -> Any:
    """[batch, time, *rest] -> [batch * time, *rest]."""
    rest = x.shape.as_list()[2:]
    if None not in rest:
        return array_ops.reshape(x, [-1] + rest)
    return array_ops.reshape(
        x, join_ops.concat([np.array([-1], np.int32), fill_ops.shape(x)[2:]], axis=0)
    )


@export("layers.TimeDistributed")
class TimeDistributed(Layer):
    """Applies `layer` to every time step: the inputs [batch, time, *rest] are reshaped to
    [batch * time, *rest], passed through `layer`, and the outputs reshaped back to
    [batch, time, *output_rest]. Semantics, as plain Python:

        outputs = stack([layer(inputs[:, t]) for t in range(time)], axis=1)

    `layer` itself is called (not a copy), so its weights are the wrapper's:
    `time_distributed/dense/kernel`.

    Masks (as tf.keras): a mask [batch, time] marks whole steps; it is the outputs' mask, and
    `layer` gets none. A mask [batch, time, *inner] (e.g. from an Embedding over
    [batch, time, words]) is passed to `layer` as [batch * time, *inner] when its `call` takes
    one; the outputs' mask is then [batch, time]: a step is valid when any of its entries is.

    Args:
      layer: the Layer to apply (or its {"class_name", "config"} dict).

    >>> y = TimeDistributed(sl.layers.Dense(8))(sl.Input((10, 16)))
    >>> y.shape
    TensorShape([None, 10, 8])
    """

    def __init__(self, layer: Any, **kwargs: Any):
        if isinstance(layer, dict):
            if kwargs.get("dtype") is not None:  # an explicit dtype applies to the rebuilt layer
                layer = {**layer, "config": {**layer["config"], "dtype": kwargs["dtype"]}}
            layer = serialization.deserialize(layer)
        if not isinstance(layer, Layer):
            raise ValueError(
                "Please initialize `TimeDistributed` layer with a `Layer` instance. "
                f"Received: {layer!r}"
            )
        super().__init__(**kwargs)
        self.layer = layer
        self.supports_masking = True

    def build(self, input_shape: tuple) -> None:
        if len(input_shape) < 3:
            raise ValueError(
                f"TimeDistributed {self.name!r} expects inputs of rank >= 3 "
                f"[batch, time, ...], got shape {tuple(input_shape)}."
            )

    def call(self, inputs: Any, training: bool = False, mask: Any = None) -> Any:
        kwargs: dict = {"training": training}
        if mask is not None and mask.shape.rank > 2 and "mask" in self.layer._call_arguments():
            kwargs["mask"] = array_ops.reshape(mask, [-1] + mask.shape.as_list()[2:])
        y = self.layer(_merge_batch_and_time(inputs), **kwargs)
        static = y.shape.as_list()[1:]
        steps = fill_ops.shape(inputs)[:2]
        if None in static:
            shape = join_ops.concat([steps, fill_ops.shape(y)[1:]], axis=0)
        else:
            shape = join_ops.concat([steps, np.array(static, np.int32)], axis=0)
        outputs = array_ops.reshape(y, shape)
        outputs.set_shape(inputs.shape.as_list()[:2] + static)
        return outputs

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if mask is None or mask.shape.rank == 2:
            return mask
        return reduction_ops.reduce_any(mask, axis=list(range(2, mask.shape.rank)))

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        step = self.layer.compute_output_shape((input_shape[0],) + tuple(input_shape[2:]))
        return (input_shape[0], input_shape[1]) + tuple(step[1:])

    def get_config(self) -> dict:
        return {**super().get_config(), "layer": serialization.serialize(self.layer)}
