"""`BaseConvTranspose`: the base of Conv1DTranspose and Conv2DTranspose, over `BaseConv`.

The transposed convolutions are `conv2d_backprop_input`, the gradient of a forward convolution
whose filter is the layer's kernel [kernel_h, kernel_w, filters, in_channels]: for each spatial
dimension the transposed output of Keras (`padding`, `output_padding`, `dilation_rate`) is the
input of a forward convolution with explicit padding (before, after) = (k - 1 - left,
k - 1 - right), where (left, right) is the padding Keras's JAX backend gives `lax.conv_transpose`
and k the dilated kernel size. A negative `after` (output_padding, or strides > kernel size)
means trailing outputs no kernel tap reaches: they are zeros, appended with `pad`. The 1-D one
runs the 2-D op on a height-1 image. channels_first runs the op in NCHW (see `base_conv`).
"""

from __future__ import annotations

from typing import Any

from sluice._keras.layers.convolutional.base_conv import (
    BaseConv,
    image_format,
    spatial_dims,
    standardize_tuple,
    with_spatial_dims,
)
from sluice.framework.ops.array import array_ops, fill_ops, join_ops
from sluice.framework.ops.nn import conv_ops


def transpose_padding(
    kernel: int, stride: int, padding: str, output_padding: int | None, dilation: int
) -> tuple[int, int]:
    """The (left, right) padding Keras's JAX backend gives `lax.conv_transpose`."""
    kernel = (kernel - 1) * dilation + 1
    if padding == "valid":
        if output_padding is None:
            output_padding = max(kernel, stride) - kernel
        return kernel - 1, kernel - 1 + output_padding
    if output_padding is None:
        pad_len = stride + kernel - 2
    else:
        pad_len = kernel + kernel % 2 - 2 + output_padding
    left = min(pad_len // 2 + pad_len % 2, kernel - 1)
    return left, pad_len - left


def transpose_output_length(
    size: int | None,
    kernel: int,
    stride: int,
    padding: str,
    output_padding: int | None,
    dilation: int,
) -> int | None:
    """Keras's `compute_conv_transpose_output_shape` for one dimension."""
    if size is None:
        return None
    kernel = (kernel - 1) * dilation + 1
    if padding == "valid":
        if output_padding is None:
            output_padding = max(kernel, stride) - kernel
        return (size - 1) * stride + kernel + output_padding
    if output_padding is None:
        return size * stride
    return (size - 1) * stride + kernel % 2 + output_padding


class BaseConvTranspose(BaseConv):
    """A transposed convolution of rank 1 or 2: the kernel is [*kernel_size, filters, in]."""

    config_keys = BaseConv.config_keys + ("output_padding",)

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        output_padding: Any = None,
        data_format: str | None = None,
        dilation_rate: Any = 1,
        **kwargs: Any,
    ):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate,
                         **kwargs)  # fmt: skip
        self.output_padding = None
        if output_padding is not None:
            self.output_padding = standardize_tuple(
                output_padding, self.rank, f"{type(self).__name__} output_padding", True
            )
            if any(p >= s for p, s in zip(self.output_padding, self.strides)):
                raise ValueError(
                    f"{type(self).__name__}: each output_padding must be smaller than its "
                    f"stride, got output_padding={self.output_padding}, strides={self.strides}."
                )

    def kernel_shape(self, channels: int) -> tuple:
        return self.kernel_size + (self.filters, channels)

    def call(self, inputs: Any) -> Any:
        output_padding = self.output_padding or (None,) * self.rank
        if self.rank == 2:
            y = self._transpose2d(
                inputs, self.kernel, self.strides, output_padding, self.dilation_rate
            )
            return self.finish(y)
        op = output_padding[0]
        axis = 2 if self.channels_first else 1  # the height-1 axis, before the steps
        y = self._transpose2d(
            array_ops.expand_dims(inputs, axis),
            array_ops.expand_dims(self.kernel, 0),
            (1,) + self.strides,
            (None if op is None else 0, op),
            (1,) + self.dilation_rate,
        )
        return self.finish(array_ops.squeeze(y, [axis]))

    def _transpose2d(self, x: Any, kernel: Any, strides, output_padding, dilations) -> Any:
        """The transposed convolution of a 4-D `x` (see the module docstring)."""
        first = self.channels_first
        spatial = x.shape.as_list()[2:4] if first else x.shape.as_list()[1:3]
        if None in spatial:
            raise ValueError(
                f"{type(self).__name__} {self.name!r} needs inputs of known spatial size, got "
                f"{x.shape}."
            )
        sizes, pads, crops = [], [], []
        for n, k, s, p, d in zip(spatial, kernel.shape.as_list()[:2], strides, output_padding,
                                 dilations):  # fmt: skip
            left, right = transpose_padding(k, s, self.padding, p, d)
            span = (k - 1) * d + 1
            before, after = span - 1 - left, span - 1 - right
            length = transpose_output_length(n, k, s, self.padding, p, d)
            sizes.append(length - max(0, -after))
            pads.append([before, max(0, after)])
            crops.append([0, max(0, -after)])
        batch = fill_ops.shape(x)[0]
        # sizes, paddings and crops in the data format's order
        none = [[0, 0]]
        if first:
            input_sizes = join_ops.stack([batch, self.filters, sizes[0], sizes[1]])
            pads, crops = none * 2 + pads, none * 2 + crops
        else:
            input_sizes = join_ops.stack([batch, sizes[0], sizes[1], self.filters])
            pads, crops = none + pads + none, none + crops + none
        y = conv_ops.conv2d_backprop_input(
            input_sizes,
            kernel,
            x,
            strides=list(strides),
            padding=pads,
            data_format=image_format(first),
            dilations=list(dilations),
        )
        if any(c[1] for c in crops):
            y = join_ops.pad(y, crops)
        return y

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        spatial = tuple(
            transpose_output_length(n, k, s, self.padding, p, d)
            for n, k, s, p, d in zip(
                spatial_dims(input_shape, self.rank, self.data_format),
                self.kernel_size,
                self.strides,
                self.output_padding or (None,) * self.rank,
                self.dilation_rate,
            )
        )
        return with_spatial_dims(input_shape, spatial, self.filters, self.data_format)
