"""Pooling over volumes: MaxPooling3D, AveragePooling3D, GlobalMaxPooling3D and
GlobalAveragePooling3D (Keras 3 arguments, "channels_last" by default), on the engine's
MaxPool3D/AvgPool3D ops (NCDHW for channels_first)."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.arguments import _data_format
from sluice._keras.layers.base import Layer
from sluice._keras.layers.convolutional.base_conv import (
    conv_output_length,
    spatial_dims,
    standardize_padding,
    standardize_tuple,
    with_spatial_dims,
)
from sluice._keras.layers.convolutional.conv3d import volume_format
from sluice._keras.layers.input_spec import InputSpec
from sluice.framework.ops.math import reduction_ops
from sluice.framework.ops.nn import pool3d_ops


class Pooling3D(Layer):
    """A window reduction over [batch, depth, height, width, channels] (or channels first)."""

    _op = None  # pool3d_ops.max_pool3d or pool3d_ops.avg_pool3d

    def __init__(
        self,
        pool_size: Any = (2, 2, 2),
        strides: Any = None,
        padding: str = "valid",
        data_format: str | None = None,
        name: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(name=name, **kwargs)
        cls = type(self).__name__
        self.pool_size = standardize_tuple(pool_size, 3, f"{cls} pool_size")
        self.strides = (
            self.pool_size if strides is None else standardize_tuple(strides, 3, f"{cls} strides")
        )
        self.padding = standardize_padding(padding)
        self.data_format = _data_format(data_format)

    def build(self, input_shape: Any) -> None:
        _require_rank5(self, input_shape)

    def call(self, inputs: Any) -> Any:
        return type(self)._op(
            inputs,
            ksize=list(self.pool_size),
            strides=list(self.strides),
            padding=self.padding.upper(),
            data_format=volume_format(self.data_format == "channels_first"),
        )

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        spatial = tuple(
            conv_output_length(n, k, s, self.padding)
            for n, k, s in zip(
                spatial_dims(input_shape, 3, self.data_format), self.pool_size, self.strides
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


def _require_rank5(layer: Layer, input_shape: Any) -> None:
    if input_shape is None or len(input_shape) != 5:
        raise ValueError(
            f"{type(layer).__name__} {layer.name!r} expects inputs of rank 5 (volumes), got "
            f"shape {input_shape}."
        )
    layer.input_spec = InputSpec(ndim=5)


@export("layers.MaxPooling3D", "layers.MaxPool3D")
class MaxPooling3D(Pooling3D):
    """The maximum of each `pool_size` window (an int or 3 ints), moved by `strides` (default:
    `pool_size`); `padding` "valid" or "same".

    >>> MaxPooling3D(2)(sl.Input((4, 4, 4, 3))).shape
    TensorShape([None, 2, 2, 2, 3])
    """

    _op = staticmethod(pool3d_ops.max_pool3d)


@export("layers.AveragePooling3D", "layers.AvgPool3D")
class AveragePooling3D(Pooling3D):
    """The mean of each `pool_size` window ("same" padding: over the window's part inside the
    input); arguments as MaxPooling3D."""

    _op = staticmethod(pool3d_ops.avg_pool3d)


class GlobalPooling3D(Layer):
    """A reduction over the three spatial dimensions."""

    _reduce = None

    def __init__(self, data_format: str | None = None, keepdims: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        self.data_format = _data_format(data_format)
        self.keepdims = bool(keepdims)

    def build(self, input_shape: Any) -> None:
        _require_rank5(self, input_shape)

    def call(self, inputs: Any) -> Any:
        axes = [1, 2, 3] if self.data_format == "channels_last" else [2, 3, 4]
        return type(self)._reduce(inputs, axis=axes, keepdims=self.keepdims)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        last = self.data_format == "channels_last"
        channels = input_shape[-1] if last else input_shape[1]
        if not self.keepdims:
            return (input_shape[0], channels)
        ones = (1, 1, 1)
        return (input_shape[0], *ones, channels) if last else (input_shape[0], channels, *ones)

    def get_config(self) -> dict:
        return {**super().get_config(), "data_format": self.data_format, "keepdims": self.keepdims}


@export("layers.GlobalAveragePooling3D", "layers.GlobalAvgPool3D")
class GlobalAveragePooling3D(GlobalPooling3D):
    """The mean over the spatial dimensions: [batch, d, h, w, c] -> [batch, c] (keepdims:
    [batch, 1, 1, 1, c]).

    >>> GlobalAveragePooling3D()(sl.Input((2, 3, 4, 5))).shape
    TensorShape([None, 5])
    """

    _reduce = staticmethod(reduction_ops.reduce_mean)


@export("layers.GlobalMaxPooling3D", "layers.GlobalMaxPool3D")
class GlobalMaxPooling3D(GlobalPooling3D):
    """The maximum over the spatial dimensions: [batch, d, h, w, c] -> [batch, c]."""

    _reduce = staticmethod(reduction_ops.reduce_max)
