"""Pooling over images: MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D and
GlobalMaxPooling2D (Keras 3 arguments, "channels_last" by default)."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.arguments import _data_format
from sluice._keras.layers.base import Layer
from sluice._keras.layers.convolutional.base_conv import (
    conv_output_length,
    image_format,
    spatial_dims,
    standardize_padding,
    standardize_tuple,
    with_spatial_dims,
)
from sluice.framework.ops.math import reduction_ops
from sluice.framework.ops.nn import pool_ops


class _Pooling2D(Layer):
    _op = None  # pool_ops.max_pool or pool_ops.avg_pool

    def __init__(
        self,
        pool_size: Any = (2, 2),
        strides: Any = None,
        padding: str = "valid",
        data_format: str | None = None,
        name: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(name=name, **kwargs)
        cls = type(self).__name__
        self.pool_size = standardize_tuple(pool_size, 2, f"{cls} pool_size")
        self.strides = (
            self.pool_size if strides is None else standardize_tuple(strides, 2, f"{cls} strides")
        )
        self.padding = standardize_padding(padding)
        self.data_format = _data_format(data_format)

    def call(self, inputs: Any) -> Any:
        return type(self)._op(
            inputs,
            ksize=list(self.pool_size),
            strides=list(self.strides),
            padding=self.padding.upper(),
            data_format=image_format(self.data_format == "channels_first"),
        )

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        spatial = tuple(
            conv_output_length(n, k, s, self.padding)
            for n, k, s in zip(
                spatial_dims(input_shape, 2, self.data_format), self.pool_size, self.strides
            )
        )
        channels = input_shape[-1] if self.data_format == "channels_last" else input_shape[1]
        return with_spatial_dims(input_shape, spatial, channels, self.data_format)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "pool_size": self.pool_size,
            "strides": self.strides,
            "padding": self.padding,
            "data_format": self.data_format,
        }


@export("layers.MaxPool2D", "layers.MaxPooling2D")
class MaxPooling2D(_Pooling2D):
    """The maximum of each `pool_size` window, moved by `strides` (default: `pool_size`)."""

    _op = staticmethod(pool_ops.max_pool)


@export("layers.AveragePooling2D", "layers.AvgPool2D")
class AveragePooling2D(_Pooling2D):
    """The mean of each `pool_size` window ("same" padding: over the window's inside part)."""

    _op = staticmethod(pool_ops.avg_pool)


class _GlobalPooling2D(Layer):
    _reduce = None

    def __init__(self, data_format: str | None = None, keepdims: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        self.data_format = _data_format(data_format)
        self.keepdims = bool(keepdims)

    def build(self, input_shape: Any) -> None:
        if input_shape is None or len(input_shape) != 4:
            raise ValueError(
                f"{type(self).__name__} {self.name!r} expects inputs of rank 4 (images), got "
                f"shape {input_shape}."
            )
        super().build(input_shape)

    def call(self, inputs: Any) -> Any:
        axes = [1, 2] if self.data_format == "channels_last" else [2, 3]
        return type(self)._reduce(inputs, axis=axes, keepdims=self.keepdims)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        last = self.data_format == "channels_last"
        channels = input_shape[-1] if last else input_shape[1]
        if not self.keepdims:
            return (input_shape[0], channels)
        return (input_shape[0], 1, 1, channels) if last else (input_shape[0], channels, 1, 1)

    def get_config(self) -> dict:
        return {**super().get_config(), "data_format": self.data_format, "keepdims": self.keepdims}


@export("layers.GlobalAveragePooling2D", "layers.GlobalAvgPool2D")
class GlobalAveragePooling2D(_GlobalPooling2D):
    """The mean over the spatial dimensions: [batch, h, w, c] -> [batch, c]."""

    _reduce = staticmethod(reduction_ops.reduce_mean)


@export("layers.GlobalMaxPooling2D", "layers.GlobalMaxPool2D")
class GlobalMaxPooling2D(_GlobalPooling2D):
    """The maximum over the spatial dimensions: [batch, h, w, c] -> [batch, c]."""

    _reduce = staticmethod(reduction_ops.reduce_max)
