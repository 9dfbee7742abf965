"""Pooling over all steps: GlobalAveragePooling1D, GlobalMaxPooling1D, over [batch, steps,
channels] ("channels_last") or [batch, channels, steps] ("channels_first"; None means
`sl.config.image_data_format()`)."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.arguments import _data_format
from sluice._keras.layers.base import Layer
from sluice._keras.layers.pooling.pooling1d import check_rank, layout_1d
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.math import math_ops, reduction_ops


class _GlobalPooling1D(Layer):
    def __init__(self, data_format: str | None = None, keepdims: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        self.data_format = _data_format(data_format)
        self.keepdims = bool(keepdims)

    @property
    def steps_axis(self) -> int:
        return 2 if self.data_format == "channels_first" else 1

    def build(self, input_shape: Any) -> None:
        check_rank(self, input_shape, 3, layout_1d(self.data_format))
        super().build(input_shape)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return None  # the steps are gone

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        first = self.data_format == "channels_first"
        channels = input_shape[1] if first else input_shape[2]
        if not self.keepdims:
            return (input_shape[0], channels)
        return (input_shape[0], channels, 1) if first else (input_shape[0], 1, channels)

    def get_config(self) -> dict:
        return {**super().get_config(), "data_format": self.data_format, "keepdims": self.keepdims}


@export("layers.GlobalAveragePooling1D", "layers.GlobalAvgPool1D")
class GlobalAveragePooling1D(_GlobalPooling1D):
    """The mean over the steps: [batch, steps, channels] (or [batch, channels, steps]) ->
    [batch, channels].

    With a mask [batch, steps] (e.g. from `Embedding(mask_zero=True)`), the mean of the masked-in
    steps only: `sum(inputs * mask) / sum(mask)`, as Keras.

    >>> GlobalAveragePooling1D()(sl.Input((10, 3))).shape.as_list()
    [None, 3]
    """

    def __init__(self, data_format: str | None = None, keepdims: bool = False, **kwargs: Any):
        super().__init__(data_format=data_format, keepdims=keepdims, **kwargs)
        self.supports_masking = True

    def call(self, inputs: Any, mask: Any = None) -> Any:
        axis = [self.steps_axis]
        if mask is None:
            return reduction_ops.reduce_mean(inputs, axis=axis, keepdims=self.keepdims)
        channel_axis = 1 if self.data_format == "channels_first" else 2
        weights = array_ops.expand_dims(fill_ops.cast(mask, inputs.dtype), channel_axis)
        total = reduction_ops.reduce_sum(inputs * weights, axis=axis, keepdims=self.keepdims)
        count = reduction_ops.reduce_sum(weights, axis=axis, keepdims=self.keepdims)
        return math_ops.truediv(total, count)


@export("layers.GlobalMaxPooling1D", "layers.GlobalMaxPool1D")
class GlobalMaxPooling1D(_GlobalPooling1D):
    """The maximum over the steps: [batch, steps, channels] (or [batch, channels, steps]) ->
    [batch, channels] (a mask is ignored, as in Keras).

    >>> GlobalMaxPooling1D(keepdims=True)(sl.Input((10, 3))).shape.as_list()
    [None, 1, 3]
    """

    def __init__(self, data_format: str | None = None, keepdims: bool = False, **kwargs: Any):
        super().__init__(data_format=data_format, keepdims=keepdims, **kwargs)
        self.supports_masking = True

    def call(self, inputs: Any) -> Any:
        return reduction_ops.reduce_max(inputs, axis=[self.steps_axis], keepdims=self.keepdims)
